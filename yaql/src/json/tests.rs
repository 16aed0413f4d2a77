use proptest::prelude::*;
use serde_json::json;

use super::*;

fn any_json() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        (-1e9f64..1e9).prop_map(|x| json!(x)),
        // Short ones are held in the value, those over 24 bytes on the heap.
        "[a-z\"\\\\é]{0,6}".prop_map(serde_json::Value::String),
        "[a-zé ]{20,40}".prop_map(serde_json::Value::String),
    ];
    leaf.prop_recursive(4, 64, 24, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::Array),
            // Up to 24 keys, so maps both below and above `INDEXED` are made.
            prop::collection::vec(("[a-z]{1,3}", inner), 0..24)
                .prop_map(|kv| serde_json::Value::Object(kv.into_iter().collect())),
        ]
    })
}

proptest! {
    /// A converted tree writes the same text as the `serde_json` value it came from, reads back from
    /// that text as `serde_json` does, and converts back to an equal value.
    #[test]
    fn a_tree_writes_reads_and_converts_as_serde_json(v in any_json()) {
        let j = Json::from(&v);
        let text = serde_json::to_string(&v).unwrap();
        prop_assert_eq!(serde_json::to_string(&j).unwrap(), text.clone());
        // Read back as serde_json reads it (its float parsing is not exact without its
        // `float_roundtrip` feature, so compare with what it reads rather than with `v`).
        let read: Json = serde_json::from_str(&text).unwrap();
        let read_serde: serde_json::Value = serde_json::from_str(&text).unwrap();
        prop_assert!(read == read_serde);
        prop_assert_eq!(j.to_value(), v.clone());
        prop_assert!(j == v);
    }

    /// Trees built through one `Keys`, each of them twice, share their equal lists and maps and
    /// still write the text `serde_json` writes, whether converted or read from text.
    #[test]
    fn trees_built_through_one_keys_share_equal_parts_and_write_the_same(
        vs in prop::collection::vec(any_json(), 1..6)
    ) {
        let twice: Vec<&serde_json::Value> = vs.iter().chain(vs.iter()).collect();
        let mut keys = Keys::default();
        let converted: Vec<Json> = twice.iter().map(|v| Json::from_ref_with(v, &mut keys)).collect();
        let mut keys = Keys::default();
        let read: Vec<Json> = twice
            .iter()
            .map(|v| Json::read_with(v.to_string().as_bytes(), &mut keys).unwrap())
            .collect();
        // What serde_json reads back from each tree's text (its float parsing is not exact).
        let reread: Vec<serde_json::Value> =
            twice.iter().map(|v| serde_json::from_str(&v.to_string()).unwrap()).collect();
        for (built, expected) in [(&converted, twice.clone()), (&read, reread.iter().collect())] {
            for (v, j) in expected.iter().zip(built.iter()) {
                prop_assert_eq!(serde_json::to_string(j).unwrap(), serde_json::to_string(v).unwrap());
            }
            for (first, again) in built[..vs.len()].iter().zip(&built[vs.len()..]) {
                if let (Some(a), Some(b)) = (first.as_object(), again.as_object()) {
                    prop_assert_eq!(a.addr(), b.addr());
                }
            }
        }
    }

    /// Every key of every map is found, whether the map is scanned or indexed.
    #[test]
    fn every_key_is_found(kv in prop::collection::vec(("[a-z]{1,3}", any::<i64>()), 0..60)) {
        let v = serde_json::Value::Object(kv.into_iter().map(|(k, n)| (k, json!(n))).collect());
        let j = Json::from(&v);
        let (m, jm) = (v.as_object().unwrap(), j.as_object().unwrap());
        for (k, n) in m {
            prop_assert!(jm.get(k).is_some_and(|x| x == n));
        }
        prop_assert!(jm.get("not-a-key").is_none());
        prop_assert_eq!(jm.keys().collect::<Vec<_>>(), m.keys().map(String::as_str).collect::<Vec<_>>());
    }
}

/// The key `hostname` as the map holds it.
fn hostname_key(j: &Json) -> Key {
    let (key, _) = j.as_object().unwrap().get_key_value("hostname").unwrap();
    key.clone()
}

#[test]
fn maps_equal_in_any_order_and_keys_are_shared() {
    let a = Json::from(json!({"a": 1, "b": [true, null]}));
    let b = Json::from(json!({"b": [true, null], "a": 1}));
    assert_eq!(a, b);
    assert_ne!(a, Json::from(json!({"a": 1, "b": [true]})));
    assert_ne!(a, Json::from(json!({"a": 1.0, "b": [true, null]})));

    let mut keys = Keys::default();
    let x = Json::from_value_with(json!({"hostname": "a"}), &mut keys);
    let y = Json::from_value_with(json!({"hostname": "b"}), &mut keys);
    assert!(Arc::ptr_eq(&hostname_key(&x), &hostname_key(&y)));
}

#[test]
fn maps_read_with_shared_keys_share_them() {
    let mut keys = Keys::default();
    let text = r#"[{"hostname": "a", "x": [{"hostname": "b"}]}, {"hostname": "c"}]"#;
    let read = Json::read_with(text.as_bytes(), &mut keys).expect("reads");
    assert_eq!(
        read,
        serde_json::from_str::<serde_json::Value>(text).unwrap()
    );
    let (a, c) = (&read[0], &read[1]);
    assert!(Arc::ptr_eq(&hostname_key(a), &hostname_key(c)));
    assert!(Arc::ptr_eq(&hostname_key(a), &hostname_key(&a["x"][0])));
    assert!(
        Json::read_with(&b"{} x"[..], &mut keys).is_err(),
        "nothing may follow"
    );
}

#[test]
fn a_key_written_twice_keeps_its_first_place_and_last_value() {
    let read: Json = serde_json::from_str(r#"{"b": 1, "a": 2, "b": 3}"#).unwrap();
    let as_serde: serde_json::Value = serde_json::from_str(r#"{"b": 1, "a": 2, "b": 3}"#).unwrap();
    assert_eq!(read.to_string(), as_serde.to_string());
    assert_eq!(read.to_string(), r#"{"b":3,"a":2}"#);
}

#[test]
fn a_value_is_three_words() {
    assert_eq!(std::mem::size_of::<Json>(), 24);
}

#[test]
fn two_machines_facts_share_what_they_have_alike() {
    let facts = |mac: &str| {
        json!({"hostname": mac, "os": {"id": "debian", "version_id": "12"},
               "nics": [{"name": "eth0", "mac": mac, "addresses": ["192.0.2.2/24"]},
                        {"name": "lo", "mac": null, "addresses": ["127.0.0.1/8"]}]})
    };
    let mut keys = Keys::default();
    let a = Json::from_value_with(facts("02:fc:00:00:00:01"), &mut keys);
    let b = Json::from_value_with(facts("02:fc:00:00:00:02"), &mut keys);
    let at = |j: &Json| j.as_object().map(Object::addr);
    assert_eq!(
        at(&a["os"]),
        at(&b["os"]),
        "the same operating system, held once"
    );
    assert_eq!(
        at(&a["nics"][1]),
        at(&b["nics"][1]),
        "the loopback interface too"
    );
    assert_ne!(at(&a["nics"][0]), at(&b["nics"][0]), "each its own MAC");
    assert_ne!(at(&a), at(&b));
    let shape = |j: &Json| j.as_object().unwrap().shape().clone();
    assert!(
        shape(&a["nics"][0]).same(&shape(&b["nics"][0])),
        "maps with the same keys in the same order hold them once"
    );
    assert_eq!(a["nics"][0]["mac"], "02:fc:00:00:00:01");
    assert_eq!(b["nics"][0]["mac"], "02:fc:00:00:00:02");
    // The same entries in another order are another map: it must write its own order.
    let c = Json::from_value_with(json!({"version_id": "12", "id": "debian"}), &mut keys);
    assert_ne!(c.as_object().map(Object::addr), at(&a["os"]));
    assert_eq!(c.to_string(), r#"{"version_id":"12","id":"debian"}"#);
    // 1 and 1.0 are different numbers, written differently.
    let one = Json::from_value_with(json!({"n": 1}), &mut keys);
    let float = Json::from_value_with(json!({"n": 1.0}), &mut keys);
    assert_eq!(float.to_string(), r#"{"n":1.0}"#);
    assert_ne!(
        one.as_object().map(Object::addr),
        float.as_object().map(Object::addr)
    );
}
