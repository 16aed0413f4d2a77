//! No input makes the renderer panic: sites of random documents (random layers, labels, selectors, actions,
//! paths and substitutions, some of them malformed) render or fail with an error.

use plinth_deckhand::{render, Options};
use serde_json::{json, Value};

use crate::support::docs;

/// A small deterministic generator (xorshift), so that a failure repeats.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

const PATHS: &[&str] = &[
    ".", ".a", "a", "$.a", ".data.a", ".a.b", ".a[0]", ".a[3].b", ".b[x]", "..", ".a[", "$",
    ".'q.k'", ".c.d.e", "",
];

fn value(rng: &mut Rng, depth: usize) -> Value {
    match if depth > 2 {
        rng.below(4)
    } else {
        rng.below(6)
    } {
        0 => json!(null),
        1 => json!(rng.below(3)),
        2 => json!(rng.pick(&["x", "PATTERN", "a-PATTERN-b", ""])),
        3 => json!(true),
        4 => Value::Array((0..rng.below(3)).map(|_| value(rng, depth + 1)).collect()),
        _ => {
            let mut map = serde_json::Map::new();
            for _ in 0..rng.below(4) {
                map.insert(
                    rng.pick(&["a", "b", "c", "d"]).to_string(),
                    value(rng, depth + 1),
                );
            }
            Value::Object(map)
        }
    }
}

fn document(rng: &mut Rng, n: usize) -> Value {
    let mut doc = json!({
        "schema": rng.pick(&["x/A/v1", "x/B/v1", "deckhand/Passphrase/v1"]),
        "metadata": {
            "schema": rng.pick(&["metadata/Document/v1", "metadata/Control/v1"]),
            "name": rng.pick(&["n1", "n2", "n3", "n4"]),
            "labels": {rng.pick(&["k", "j"]): rng.pick(&["1", "2"])},
            "layeringDefinition": {"layer": rng.pick(&["global", "region", "site", "", "nowhere"]),
                                   "abstract": rng.below(3) == 0},
        },
        "data": value(rng, 0),
    });
    if rng.below(2) == 0 {
        doc["metadata"]["layeringDefinition"]["parentSelector"] =
            json!({rng.pick(&["k", "j"]): rng.pick(&["1", "2"])});
    }
    if rng.below(2) == 0 {
        let actions: Vec<Value> = (0..rng.below(3))
            .map(|_| json!({"method": rng.pick(&["merge", "replace", "delete", "patch"]), "path": rng.pick(PATHS)}))
            .collect();
        doc["metadata"]["layeringDefinition"]["actions"] = Value::Array(actions);
    }
    if rng.below(3) == 0 {
        doc["metadata"]["replacement"] = json!(true);
    }
    if rng.below(3) == 0 {
        let subs: Vec<Value> = (0..rng.below(3))
            .map(|_| {
                let mut dest = json!({"path": rng.pick(PATHS)});
                if rng.below(2) == 0 {
                    dest["pattern"] = json!(rng.pick(&["PATTERN", "[", "a+"]));
                }
                if rng.below(3) == 0 {
                    dest["recurse"] = json!({"depth": rng.below(3) as i64 - 1});
                }
                json!({"src": {"schema": rng.pick(&["x/A/v1", "x/B/v1", "deckhand/Passphrase/v1"]),
                               "name": rng.pick(&["n1", "n2", "n3", "n4"]), "path": rng.pick(PATHS)},
                       "dest": if rng.below(4) == 0 { json!([dest]) } else { dest }})
            })
            .collect();
        doc["metadata"]["substitutions"] = Value::Array(subs);
    }
    if rng.below(4) == 0 {
        doc["metadata"]["storagePolicy"] = json!("encrypted");
    }
    doc["metadata"]["name"] = json!(format!(
        "{}-{n}",
        doc["metadata"]["name"].as_str().unwrap_or("")
    ));
    doc
}

#[test]
fn random_sites_render_or_fail_without_panicking() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut rendered, mut failed) = (0, 0);
    for _ in 0..3000 {
        let mut values = vec![json!({"schema": "deckhand/LayeringPolicy/v1",
            "metadata": {"schema": "metadata/Control/v1", "name": "lp"},
            "data": {"layerOrder": ["global", "region", "site"]}})];
        for n in 0..rng.below(8) {
            values.push(document(&mut rng, n % 3));
        }
        for cleartext in [false, true] {
            match render(
                &docs(&values),
                &Options {
                    cleartext_secrets: cleartext,
                },
            ) {
                Ok(_) => rendered += 1,
                Err(e) => {
                    assert!(!e.to_string().is_empty());
                    failed += 1;
                }
            }
        }
    }
    assert!(
        rendered > 100 && failed > 100,
        "{rendered} rendered, {failed} failed"
    );
}
