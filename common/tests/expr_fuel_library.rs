//! Every `yaql_exp` in Fuel's real deployment graphs parses (and its canonical text parses back
//! to the same tree).

use std::path::{Path, PathBuf};

use plinth_common::expr::Expression;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_yaml_ng::Value as Y;
use std::fmt;

fn root() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/corpus/fuel-library"
    ))
}

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            yaml_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            out.push(p);
        }
    }
}

/// Collects the strings under `yaql_exp` keys while deserializing, so that documents with
/// duplicate keys (Fuel has some) still load.
struct Collect<'o> {
    out: &'o mut Vec<String>,
    take: bool,
}

impl<'de> DeserializeSeed<'de> for Collect<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Collect<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        if self.take {
            self.out.push(v.to_string());
        }
        Ok(())
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq
            .next_element_seed(Collect {
                out: &mut *self.out,
                take: false,
            })?
            .is_some()
        {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<Y>()? {
            let take = key.as_str() == Some("yaql_exp");
            map.next_value_seed(Collect {
                out: &mut *self.out,
                take,
            })?;
        }
        Ok(())
    }
}

#[test]
fn every_yaql_exp_in_fuel_library_parses() {
    let mut files = Vec::new();
    yaml_files(&root(), &mut files);
    assert!(!files.is_empty(), "no YAML under {}", root().display());
    let mut exprs = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        for doc in serde_yaml_ng::Deserializer::from_str(&text) {
            let seed = Collect {
                out: &mut exprs,
                take: false,
            };
            if let Err(e) = seed.deserialize(doc) {
                panic!("{}: {e}", f.display());
            }
        }
    }
    assert_eq!(exprs.len(), 206, "Fuel's library has 206 yaql_exp");
    let mut failures = Vec::new();
    for e in &exprs {
        match Expression::parse(e) {
            Ok(parsed) => {
                let again = Expression::parse(&parsed.to_string());
                if again.as_ref().ok() != Some(&parsed) {
                    failures.push(format!("round trip of {e:?} via {:?}", parsed.to_string()));
                }
            }
            Err(err) => failures.push(err.to_string()),
        }
    }
    println!("{} yaql_exp in {} files", exprs.len(), files.len());
    assert!(
        failures.is_empty(),
        "{} of {} fail:\n{}",
        failures.len(),
        exprs.len(),
        failures.join("\n")
    );
}
