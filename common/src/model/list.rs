//! One string or a list of strings, as Fuel writes `tags`, `role`, `groups`, `requires` and the like.

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::fmt;

/// A list of strings that may be written as a single string (`role: '*'`), a list (`role: [a, b]`) or
/// `null` (an empty list). Always written back as a list.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct StringList(pub Vec<String>);

impl StringList {
    /// The strings.
    pub fn as_slice(&self) -> &[String] {
        &self.0
    }

    /// True when there is no string.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Iterates over the strings.
    pub fn iter(&self) -> std::slice::Iter<'_, String> {
        self.0.iter()
    }
}

impl<S: Into<String>> FromIterator<S> for StringList {
    fn from_iter<I: IntoIterator<Item = S>>(iter: I) -> Self {
        StringList(iter.into_iter().map(Into::into).collect())
    }
}

impl<'a> IntoIterator for &'a StringList {
    type Item = &'a String;
    type IntoIter = std::slice::Iter<'a, String>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl Serialize for StringList {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for StringList {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = StringList;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or a list of strings")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<StringList, E> {
                Ok(StringList(vec![v.to_string()]))
            }
            fn visit_unit<E: de::Error>(self) -> Result<StringList, E> {
                Ok(StringList::default())
            }
            fn visit_none<E: de::Error>(self) -> Result<StringList, E> {
                Ok(StringList::default())
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<StringList, D::Error> {
                d.deserialize_any(V)
            }
            fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<StringList, A::Error> {
                Err(de::Error::custom(
                    "expected a string or a list of strings, not a mapping",
                ))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<StringList, A::Error> {
                let mut out = Vec::new();
                while let Some(item) = seq.next_element::<String>()? {
                    out.push(item);
                }
                Ok(StringList(out))
            }
        }
        deserializer.deserialize_any(V)
    }
}
