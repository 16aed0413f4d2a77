//! The matcher's unit tests: Ironic's own cases (ironic-lib's `test_utils.py`) rewritten as data, then
//! every operator and hint, the refusals, the default choice and the sentence that says why no disk
//! was chosen.

use super::grammar::{self, Op};
use super::operators::{Comparison, GIB};
use super::parse::Test;
use super::*;
use serde_json::{json, Value};

fn disk(name: &str, gib: u64) -> Disk {
    Disk {
        name: name.into(),
        size_bytes: gib * GIB,
        removable: Some(false),
        read_only: Some(false),
        ..Disk::default()
    }
}

fn tests_of(hints: Value) -> Vec<(&'static str, Test)> {
    Hints::parse(&hints)
        .unwrap_or_else(|e| panic!("{hints}: {e}"))
        .hints
        .into_iter()
        .map(|h| (h.name.as_str(), h.test))
        .collect()
}

fn text(cmp: Comparison, values: &[&str]) -> Test {
    Test::Text(cmp, values.iter().map(|v| v.to_string()).collect())
}

fn refused(hints: Value) -> HintError {
    match Hints::parse(&hints) {
        Ok(h) => panic!("{hints} was accepted: {h:?}"),
        Err(e) => e,
    }
}

fn chosen(disks: &[Disk], hints: Value) -> Option<String> {
    let hints = Hints::parse(&hints).unwrap_or_else(|e| panic!("{hints}: {e}"));
    choose(disks, Some(&hints)).ok().map(|d| d.name.clone())
}

// Ironic's ParseRootDeviceTestCase.

#[test]
fn ironic_hints_without_operators_default_to_equality() {
    let parsed = tests_of(json!({
        "wwn": "123456", "model": "FOO model", "size": 12345, "serial": "foo-serial",
        "vendor": "foo VENDOR with space", "name": "/dev/sda", "wwn_with_extension": "123456111",
        "wwn_vendor_extension": "111", "rotational": true, "hctl": "1:0:0:0",
        "by_path": "/dev/disk/by-path/1:0:0:0"}));
    let eq = Comparison::Eq;
    assert_eq!(
        parsed,
        vec![
            ("wwn", text(eq, &["123456"])),
            ("model", text(eq, &["foo model"])),
            ("size", Test::Size(eq, vec![12345])),
            ("serial", text(eq, &["foo-serial"])),
            ("vendor", text(eq, &["foo vendor with space"])),
            ("name", text(eq, &["/dev/sda"])),
            ("wwn_with_extension", text(eq, &["123456111"])),
            ("wwn_vendor_extension", text(eq, &["111"])),
            ("rotational", Test::Flag(true)),
            ("hctl", text(eq, &["1:0:0:0"])),
            ("by_path", text(eq, &["/dev/disk/by-path/1:0:0:0"])),
        ]
    );
}

#[test]
fn ironic_hints_with_operators_keep_them() {
    let parsed = tests_of(json!({
        "wwn": "s== 123456", "model": "s== foo MODEL", "size": ">= 12345", "serial": "s!= foo-serial",
        "vendor": "s== foo VENDOR with space", "name": "<or> /dev/sda <or> /dev/sdb",
        "wwn_with_extension": "s!= 123456111", "wwn_vendor_extension": "s== 111",
        "rotational": true, "hctl": "s== 1:0:0:0", "by_path": "s== /dev/disk/by-path/1:0:0:0"}));
    use Comparison::*;
    assert_eq!(
        parsed,
        vec![
            ("wwn", text(Eq, &["123456"])),
            ("model", text(Eq, &["foo model"])),
            ("size", Test::Size(Ge, vec![12345])),
            ("serial", text(Ne, &["foo-serial"])),
            ("vendor", text(Eq, &["foo vendor with space"])),
            ("name", text(Or, &["/dev/sda", "/dev/sdb"])),
            ("wwn_with_extension", text(Ne, &["123456111"])),
            ("wwn_vendor_extension", text(Eq, &["111"])),
            ("rotational", Test::Flag(true)),
            ("hctl", text(Eq, &["1:0:0:0"])),
            ("by_path", text(Eq, &["/dev/disk/by-path/1:0:0:0"])),
        ]
    );
}

#[test]
fn ironic_parse_cases_as_data() {
    use Comparison::*;
    let accepted: Vec<(Value, Test)> = vec![
        (json!({"name": "s== /dev/sdb"}), text(Eq, &["/dev/sdb"])),
        (json!({"size": 12345}), Test::Size(Eq, vec![12345])),
        (json!({"size": "12345"}), Test::Size(Eq, vec![12345])),
        (json!({"size": ">= 123"}), Test::Size(Ge, vec![123])),
        (json!({"size": "123"}), Test::Size(Eq, vec![123])),
        (
            json!({"size": "<or> 123 <or> 456 <or> 789"}),
            Test::Size(Or, vec![123, 456, 789]),
        ),
        (
            json!({"model": "<or> foo <or> foo bar <or> bar"}),
            text(Or, &["foo", "foo bar", "bar"]),
        ),
        (
            json!({"model": "s== test string with space"}),
            text(Eq, &["test string with space"]),
        ),
        (json!({"model": "s!= SpongeBob"}), text(Ne, &["spongebob"])),
        (
            json!({"model": "no operators"}),
            text(Eq, &["no operators"]),
        ),
        (json!({"model": "NoSpace"}), text(Eq, &["nospace"])),
    ];
    for (hints, want) in accepted {
        assert_eq!(tests_of(hints.clone())[0].1, want, "{hints}");
    }
    for yes in [
        json!(true),
        json!("true"),
        json!("on"),
        json!("y"),
        json!("yes"),
    ] {
        assert_eq!(
            tests_of(json!({ "rotational": yes }))[0].1,
            Test::Flag(true)
        );
    }
    for no in [
        json!(false),
        json!("false"),
        json!("off"),
        json!("n"),
        json!("no"),
    ] {
        assert_eq!(
            tests_of(json!({ "rotational": no }))[0].1,
            Test::Flag(false)
        );
    }
    assert!(Hints::parse(&json!({})).unwrap().is_empty());

    let refusals: Vec<Value> = vec![
        json!({"size": "not-int"}),
        json!({"size": -123}),
        json!({"size": 0}),
        json!({"size": "<or> 123 <or> non-int <or> 789"}),
        json!({"rotational": "not-bool"}),
        json!({"wwn": 123}),
        json!({"wwn_with_extension": 123}),
        json!({"wwn_vendor_extension": 123}),
        json!({"model": 123}),
        json!({"serial": 123}),
        json!({"vendor": 123}),
        json!({"name": 123}),
        json!({"hctl": 123}),
        json!({"by_path": 123}),
        json!({"non-existent": "foo"}),
        json!({"size": ""}),
    ];
    for hints in refusals {
        let e = refused(hints.clone());
        assert!(
            !e.stricter_than_ironic(),
            "{hints}: Ironic refuses it too: {e}"
        );
    }
}

// Ironic's MatchRootDeviceTestCase.

fn ironic_devices() -> Vec<Disk> {
    let mut sda = disk("sda", 60);
    sda.model = Some("ok model".into());
    sda.serial = Some("fakeserial".into());
    let mut sdb = disk("sdb", 120);
    sdb.model = Some("big model".into());
    sdb.serial = Some("veryfakeserial".into());
    sdb.rotational = Some(true);
    let mut sdc = disk("sdc", 10);
    sdc.model = Some("small model".into());
    sdc.serial = Some("veryveryfakeserial".into());
    sdc.rotational = Some(false);
    vec![sda, sdb, sdc]
}

#[test]
fn ironic_match_cases_as_data() {
    let devices = ironic_devices();
    let cases: Vec<(Value, Option<&str>)> = vec![
        (json!({"size": ">= 70"}), Some("sdb")),
        (json!({"rotational": false}), Some("sdc")),
        (json!({"size": ">=100", "rotational": true}), Some("sdb")),
        (
            json!({"size": ">= 50", "model": "s==big model", "serial": "s==veryfakeserial"}),
            Some("sdb"),
        ),
        (
            json!({"size": "<= 20", "model": "<or> model 5 <or> foomodel <or> small model <or>",
                   "serial": "s== veryveryfakeserial"}),
            Some("sdc"),
        ),
        (
            json!({"rotational": false, "model": "<in> small"}),
            Some("sdc"),
        ),
        (
            json!({"size": "120", "model": "big model", "serial": "veryfakeserial"}),
            Some("sdb"),
        ),
        (json!({"size": ">=50", "model": "s==foo"}), None),
        (json!({"size": ">= 10"}), Some("sda")),
        (json!({"size": ">= 100500"}), None),
        (json!({"name": "s== /dev/sda"}), Some("sda")),
    ];
    for (hints, want) in cases {
        assert_eq!(chosen(&devices, hints.clone()).as_deref(), want, "{hints}");
    }
    // A blank attribute matches nothing.
    let mut blank = disk("sda", 10);
    blank.model = Some(" ".into());
    assert_eq!(chosen(&[blank], json!({"model": "foo"})), None);
}

// The grammar.

#[test]
fn the_grammar_reads_the_operator_as_oslo_utils_does() {
    let cases: &[(&str, Option<Option<Op>>)] = &[
        ("foo", Some(None)),
        ("foo bar", Some(None)),
        ("s== foo", Some(Some(Op::TextEq))),
        ("s==foo", Some(Some(Op::TextEq))),
        ("== 1", Some(Some(Op::Eq))),
        ("= 1", Some(Some(Op::LegacyEq))),
        ("<= 1", Some(Some(Op::Le))),
        ("< 1", Some(Some(Op::Lt))),
        (">= 1", Some(Some(Op::Ge))),
        ("> 1", Some(Some(Op::Gt))),
        ("!= 1", Some(Some(Op::Ne))),
        ("s!= a", Some(Some(Op::TextNe))),
        ("s<= a", Some(Some(Op::TextLe))),
        ("s< a", Some(Some(Op::TextLt))),
        ("s>= a", Some(Some(Op::TextGe))),
        ("s> a", Some(Some(Op::TextGt))),
        ("<in> a", Some(Some(Op::In))),
        ("<all-in> a b", Some(Some(Op::AllIn))),
        ("<or> a <or> b", Some(Some(Op::Or))),
        ("<range-in> ( 1 2 )", Some(Some(Op::RangeIn))),
        // `<or>` with no value reads as `<` and the value `or>`, as in oslo.utils.
        ("<or>", Some(Some(Op::Lt))),
        ("<or> <or> a", Some(Some(Op::Lt))),
        ("<range-in> ( 1 )", Some(Some(Op::Lt))),
        // An operator with no value.
        ("s==", None),
        ("s== ", None),
        ("<in>", None),
        ("==", None),
        ("s== s== a", None),
        // A value may not start with an operator; `!` alone is no operator.
        ("!a", Some(None)),
        ("sx", Some(None)),
    ];
    for (expr, want) in cases {
        assert_eq!(grammar::head(expr), *want, "{expr:?}");
    }
    assert_eq!(
        grammar::values("<or> a <or> b c <or>", Op::Or),
        vec!["a", "b c"]
    );
    assert_eq!(grammar::values("s== a s== b", Op::TextEq), vec!["a", "b"]);
    assert_eq!(grammar::normalize("  Big MODEL\u{1f} "), "big model");
}

// Every operator on texts.

#[test]
fn every_text_operator() {
    let mut d = disk("sda", 100);
    d.model = Some("  Samsung SSD 970 EVO ".into());
    let holds = |expr: &str| chosen(std::slice::from_ref(&d), json!({ "model": expr })).is_some();
    let cases: &[(&str, bool)] = &[
        ("samsung ssd 970 evo", true),
        ("SAMSUNG SSD 970 EVO", true),
        ("s== samsung ssd 970 evo", true),
        ("s== samsung", false),
        ("s!= samsung", true),
        ("s!= samsung ssd 970 evo", false),
        ("s< t", true),
        ("s< samsung", false),
        ("s<= samsung ssd 970 evo", true),
        ("s<= samsung ssd", false),
        ("s> samsung", true),
        ("s> t", false),
        ("s>= samsung ssd 970 evo", true),
        ("s>= t", false),
        ("<in> ssd 970", true),
        ("<in> 980", false),
        ("<all-in> samsung <all-in> evo", true),
        ("<all-in> samsung <all-in> pro", false),
        ("<or> crucial <or> samsung ssd 970 evo", true),
        ("<or> crucial <or> samsung", false),
    ];
    for (expr, want) in cases {
        assert_eq!(holds(expr), *want, "{expr}");
    }
}

#[test]
fn comparisons_read_the_text_not_its_percent_encoding() {
    // Ironic compares percent-encoded texts, so there `<in> 20` holds for every model with a space
    // ("%20"); here it holds only for a model with "20" in it.
    let mut d = disk("sda", 100);
    d.model = Some("Samsung SSD 970".into());
    assert_eq!(
        chosen(std::slice::from_ref(&d), json!({"model": "<in> 20"})),
        None
    );
    // And `:` sorts after digits, as in the text, not before them as "%3A" would.
    d.hctl = Some("1:0:0:0".into());
    assert!(chosen(std::slice::from_ref(&d), json!({"hctl": "s> 10"})).is_some());
}

// Every operator on the size, which is exact in GiB.

#[test]
fn every_size_operator() {
    let d = Disk {
        size_bytes: 100 * GIB + 1,
        ..disk("sda", 0)
    };
    let exact = disk("sdb", 100);
    let holds = |disk: &Disk, expr: Value| {
        chosen(std::slice::from_ref(disk), json!({ "size": expr })).is_some()
    };
    assert!(holds(&exact, json!(100)));
    assert!(holds(&exact, json!("100")));
    assert!(holds(&exact, json!("== 100")));
    assert!(!holds(&d, json!(100)), "a byte more is not 100 GiB");
    assert!(holds(&d, json!("!= 100")));
    assert!(!holds(&exact, json!("!= 100")));
    assert!(holds(&d, json!("> 100")));
    assert!(!holds(&exact, json!("> 100")));
    assert!(holds(&exact, json!(">= 100")));
    assert!(holds(&exact, json!("<= 100")));
    assert!(!holds(&d, json!("<= 100")));
    assert!(holds(&exact, json!("< 101")));
    assert!(!holds(&exact, json!("< 100")));
    assert!(holds(&exact, json!("<or> 50 <or> 100")));
    assert!(!holds(&d, json!("<or> 50 <or> 100")));
    assert!(holds(&exact, json!("+100")));
}

// Every hint.

#[test]
fn every_hint_reads_its_own_attribute() {
    let mut d = disk("nvme0n1", 100);
    d.model = Some("M".into());
    d.vendor = Some("ATA".into());
    d.serial = Some("S1".into());
    d.wwn = Some("0x5000".into());
    d.wwn_with_extension = Some("0x5000abc".into());
    d.wwn_vendor_extension = Some("0xabc".into());
    d.hctl = Some("2:0:0:0".into());
    d.by_path = vec![
        "pci-0000:00:1f.2-ata-1".into(),
        "pci-0000:00:1f.2-ata-1.0".into(),
    ];
    d.rotational = Some(false);
    let other = disk("sda", 100);
    let disks = [other, d];
    let pick = |hints: Value| chosen(&disks, hints);
    for hints in [
        json!({"model": "m"}),
        json!({"vendor": "ata"}),
        json!({"serial": "S1"}),
        json!({"wwn": "0x5000"}),
        json!({"wwn_with_extension": "0x5000ABC"}),
        json!({"wwn_vendor_extension": "0xabc"}),
        json!({"hctl": "2:0:0:0"}),
        json!({"by_path": "/dev/disk/by-path/pci-0000:00:1f.2-ata-1"}),
        json!({"by_path": "pci-0000:00:1f.2-ata-1.0"}),
        json!({"by_path": "<in> ata-1.0"}),
        json!({"name": "/dev/nvme0n1"}),
        json!({"name": "nvme0n1"}),
        json!({"name": "<or> nvme0n1 <or> /dev/nvme1n1"}),
        json!({"name": "<in> nvme"}),
        json!({"rotational": "0"}),
        json!({"rotational": 0}),
        json!({"size": 100, "rotational": false}),
    ] {
        assert_eq!(pick(hints.clone()).as_deref(), Some("nvme0n1"), "{hints}");
    }
    // Each attribute is its own: the WWN is not matched against its extended form.
    assert_eq!(pick(json!({"wwn": "0x5000abc"})), None);
    assert_eq!(pick(json!({"name": "s!= sda"})).as_deref(), Some("nvme0n1"));
}

#[test]
fn a_value_the_disk_does_not_report_satisfies_no_hint() {
    // Ironic reads a missing value as the text "none", so there `"vendor": "none"` and
    // `"vendor": "s!= x"` match a disk that reports no vendor.
    let disks = [disk("sda", 100)];
    for hints in [
        json!({"vendor": "none"}),
        json!({"vendor": "s!= x"}),
        json!({"serial": "<in> n"}),
        json!({"rotational": true}),
        json!({"rotational": false}),
        json!({"hctl": "s< 9"}),
        json!({"by_path": "s!= x"}),
    ] {
        assert_eq!(chosen(&disks, hints.clone()), None, "{hints}");
    }
}

// Refusals.

#[test]
fn refusals_name_the_hint_and_the_cause() {
    let cases: Vec<(Value, &str, bool)> = vec![
        (json!([1]), "JSON object", false),
        (
            json!({"size": 1, "colour": "red", "Size": 2}),
            "unknown root device hint \"colour\", \"Size\"",
            false,
        ),
        (
            json!({"model": 5}),
            "\"model\" must be a string, not 5",
            false,
        ),
        (
            json!({"size": "12.5"}),
            "\"size\" is not a whole number of GiB: \"12.5\"",
            false,
        ),
        (
            json!({"size": 12.0}),
            "\"size\" is not a whole number",
            false,
        ),
        (
            json!({"size": true}),
            "\"size\" is not a whole number",
            false,
        ),
        (
            json!({"size": "<range-in> ( 10 20 )"}),
            "\"size\" is not a whole number",
            false,
        ),
        (
            json!({"size": "> 0"}),
            "\"size\" must be a positive number",
            false,
        ),
        (
            json!({"rotational": "maybe"}),
            "\"rotational\" is not a Boolean",
            false,
        ),
        (
            json!({"rotational": 2}),
            "\"rotational\" is not a Boolean",
            false,
        ),
        (
            json!({"rotational": null}),
            "\"rotational\" is not a Boolean",
            false,
        ),
        (json!({"serial": "   "}), "\"serial\" is empty", false),
        (json!({"serial": "s=="}), "\"serial\" cannot be read", false),
        (
            json!({"size": "s== 10"}),
            "\"size\" cannot use the operator \"s==\"",
            true,
        ),
        (
            json!({"size": "<in> 10"}),
            "\"size\" cannot use the operator \"<in>\"",
            true,
        ),
        (
            json!({"size": "<all-in> 10"}),
            "cannot use the operator \"<all-in>\"",
            true,
        ),
        (
            json!({"model": "> 5"}),
            "\"model\" cannot use the operator \">\"",
            true,
        ),
        (
            json!({"model": "<or>"}),
            "\"model\" cannot use the operator \"<\"",
            true,
        ),
        (
            json!({"model": "<range-in> ( a b c )"}),
            "cannot use the operator \"<range-in>\"",
            true,
        ),
        (json!({"size": "= 10"}), "\"size\" uses \"=\"", true),
        (
            json!({"model": "s== a s== b"}),
            "\"model\" gives \"s==\" more than one value",
            true,
        ),
        (
            json!({"model": "<in> a <in> b"}),
            "gives \"<in>\" more than one value",
            true,
        ),
        (
            json!({"size": "> 5 > 6"}),
            "gives \">\" more than one value",
            true,
        ),
        (
            json!({"model": "<or> a <or>  <or> b"}),
            "\"model\" has an empty value between two \"<or>\"",
            true,
        ),
    ];
    for (hints, message, stricter) in cases {
        let e = refused(hints.clone());
        assert!(e.to_string().contains(message), "{hints}: {e}");
        assert_eq!(e.stricter_than_ironic(), stricter, "{hints}: {e}");
    }
}

#[test]
fn null_and_empty_hints_are_no_hints() {
    let disks = [disk("sda", 200), disk("sdb", 100)];
    for hints in [json!(null), json!({})] {
        let parsed = Hints::parse(&hints).unwrap();
        assert!(parsed.is_empty());
        assert_eq!(choose(&disks, Some(&parsed)).unwrap().name, "sdb");
    }
}

// The default choice and the disks never chosen.

#[test]
fn the_default_is_the_smallest_fixed_disk_of_at_least_4_gib() {
    let mut usb = disk("sda", 8);
    usb.removable = Some(true);
    let tiny = disk("sdb", 2);
    let big = disk("sdc", 500);
    let small = disk("sdd", 100);
    let twin = disk("sde", 100);
    let disks = [usb, tiny, big, small, twin];
    assert_eq!(
        choose(&disks, None).unwrap().name,
        "sdd",
        "the name breaks ties"
    );
}

/// A USB stick, a disk of 1.5 GiB, a read-only disk, the running system's disk and an optical drive.
fn traps() -> Vec<Disk> {
    let mut usb = disk("sda", 8);
    usb.removable = Some(true);
    usb.model = Some("Cruzer".into());
    let tiny = Disk {
        size_bytes: 3 * GIB / 2,
        ..disk("sdb", 0)
    };
    let mut ro = disk("sdc", 100);
    ro.read_only = Some(true);
    let mut root = disk("sdd", 100);
    root.mounts = vec!["/".into(), "[SWAP]".into()];
    let optical = disk("sr0", 1);
    vec![usb, tiny, ro, root, optical]
}

#[test]
fn hints_may_choose_a_removable_or_small_disk_but_never_an_unusable_one() {
    let disks = traps();
    assert_eq!(
        chosen(&disks, json!({"model": "cruzer"})).as_deref(),
        Some("sda")
    );
    assert_eq!(
        chosen(&disks, json!({"size": "< 2"})).as_deref(),
        Some("sdb")
    );
    assert_eq!(chosen(&disks, json!({"size": 100})), None);
    assert_eq!(chosen(&disks, json!({"name": "sr0"})), None);
}

#[test]
fn no_disk_says_why_in_one_sentence() {
    let e = choose(&traps(), None).unwrap_err();
    assert_eq!(
        e.to_string(),
        "no disk can be chosen without root device hints: sda is removable (hints can still choose \
         it); sdb is smaller than 4 GiB (1.50 GiB; hints can still choose it); sdc is read-only; sdd \
         holds the running system's /, [SWAP]; sr0 is an optical drive."
    );
    let mut sde = disk("sde", 100);
    sde.model = Some("Big Disk".into());
    let disks = [disk("sda", 50), sde];
    let hints = Hints::parse(&json!({"size": ">= 60", "model": "small"})).unwrap();
    let e = choose(&disks, Some(&hints)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "no disk matches the root device hints: sda fails size \">= 60\" (it has 50.00 GiB); sde \
         fails model \"small\" (it has \"Big Disk\")."
    );
    let hints = Hints::parse(&json!({"serial": "x"})).unwrap();
    assert_eq!(
        choose(&disks, Some(&hints)).unwrap_err().to_string(),
        "no disk matches the root device hints: sda fails serial \"x\" (it reports none); sde fails \
         serial \"x\" (it reports none)."
    );
    assert_eq!(
        choose(&[], None).unwrap_err().to_string(),
        "no disk can be chosen without root device hints: the facts list no disks."
    );
}

#[test]
fn no_expression_makes_it_panic() {
    // Every string of up to four of these pieces, as every kind of hint, parsed and matched.
    let pieces = [
        "<or>",
        "<all-in>",
        "<range-in>",
        "<in>",
        "s==",
        "s<",
        "=",
        "<",
        "!",
        " ",
        "\u{1f}",
        "é",
        "a",
        "0",
        "-",
        "(",
        "/",
    ];
    let mut d = disk("sda", 10);
    d.model = Some("é a".into());
    d.hctl = Some("0:0:0:0".into());
    d.by_path = vec!["a".into()];
    let mut exprs = vec![String::new()];
    for _ in 0..4 {
        let longer: Vec<String> = exprs
            .iter()
            .flat_map(|e| pieces.iter().map(move |p| format!("{e}{p}")))
            .collect();
        exprs.extend(longer);
        exprs.sort();
        exprs.dedup();
    }
    assert!(exprs.len() > 80_000);
    for expr in &exprs {
        for hint in ["model", "size", "rotational", "name", "by_path"] {
            if let Ok(hints) = Hints::parse(&json!({ hint: expr })) {
                let _ = choose(std::slice::from_ref(&d), Some(&hints)).map_err(|e| e.to_string());
            }
        }
    }
}
