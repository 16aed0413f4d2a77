//! Reading a [`Json`] straight from text (a state read back from the store), without a
//! `serde_json::Value` in between: with `Deserialize` (each key its own string), or through
//! [`SharedKeys`] (keys shared with every map read with the same [`Keys`]).

use std::fmt;
use std::io;

use serde::de::{Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use super::{Json, Key, Keys, Number};

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        d.deserialize_any(JsonVisitor(None))
    }
}

/// Reads a [`Json`] whose map keys are shared through these [`Keys`].
pub struct SharedKeys<'k>(pub &'k mut Keys);

impl<'de> DeserializeSeed<'de> for SharedKeys<'_> {
    type Value = Json;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Json, D::Error> {
        d.deserialize_any(JsonVisitor(Some(self.0)))
    }
}

impl Json {
    /// Reads one JSON document from `reader` (nothing but white space may follow it), sharing
    /// its keys through `keys`.
    pub fn read_with<R: io::Read>(reader: R, keys: &mut Keys) -> serde_json::Result<Json> {
        let mut de = serde_json::Deserializer::from_reader(reader);
        let value = SharedKeys(keys).deserialize(&mut de)?;
        de.end()?;
        Ok(value)
    }
}

/// Builds values; with keys to share, each map's keys come from there.
struct JsonVisitor<'k>(Option<&'k mut Keys>);

impl JsonVisitor<'_> {
    fn key(&mut self, text: &str) -> Key {
        match self.0.as_deref_mut() {
            Some(keys) => keys.key(text),
            None => Key::from(text),
        }
    }

    /// The value, or the equal one already read with the same keys.
    fn share(&mut self, value: Json) -> Json {
        match self.0.as_deref_mut() {
            Some(keys) => keys.share(value),
            None => value,
        }
    }

    fn next<'de, A: SeqAccess<'de>>(&mut self, seq: &mut A) -> Result<Option<Json>, A::Error> {
        match self.0.as_deref_mut() {
            Some(keys) => seq.next_element_seed(SharedKeys(keys)),
            None => seq.next_element::<Json>(),
        }
    }

    fn value<'de, A: MapAccess<'de>>(&mut self, map: &mut A) -> Result<Json, A::Error> {
        match self.0.as_deref_mut() {
            Some(keys) => map.next_value_seed(SharedKeys(keys)),
            None => map.next_value::<Json>(),
        }
    }
}

impl<'de> Visitor<'de> for JsonVisitor<'_> {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_none<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Json, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_bool<E>(self, b: bool) -> Result<Json, E> {
        Ok(Json::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Json, E> {
        Ok(Json::Number(n.into()))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Json, E> {
        Ok(Json::Number(n.into()))
    }

    fn visit_f64<E>(self, x: f64) -> Result<Json, E> {
        // As serde_json: a float JSON cannot write (NaN, infinity) reads as null.
        Ok(Number::from_f64(x).map_or(Json::Null, Json::Number))
    }

    fn visit_str<E>(self, s: &str) -> Result<Json, E> {
        Ok(Json::String(s.into()))
    }

    fn visit_string<E>(self, s: String) -> Result<Json, E> {
        Ok(Json::String(s.into()))
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(item) = self.next(&mut seq)? {
            items.push(item);
        }
        Ok(self.share(Json::Array(items.into())))
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Json, A::Error> {
        let mut entries: Vec<(Key, Json)> = Vec::new();
        while let Some(k) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            let key = self.key(&k);
            entries.push((key, self.value(&mut map)?));
        }
        Ok(match self.0.as_deref_mut() {
            Some(keys) => {
                let map = Json::object_with(entries, keys);
                keys.share(map)
            }
            None => Json::object(entries),
        })
    }
}
