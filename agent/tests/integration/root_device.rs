//! `plinth-agent root-device` run as a process: a match prints the device and exits 0, no match exits 1
//! with one sentence, bad hints or a bad facts file exit 2 naming the cause.

use serde_json::json;
use std::path::Path;
use std::process::{Command, Output};

const GIB: u64 = 1 << 30;

fn root_device(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_plinth-agent"))
        .arg("root-device")
        .args(args)
        .output()
        .expect("plinth-agent runs")
}

/// Facts as `plinth-agent facts` prints them: a USB stick, a 480 GB SSD, a 4 TB disk.
fn facts_file(dir: &Path) -> String {
    let facts = json!({
        "hostname": "node-7",
        "disks": [
            {"name": "sda", "size_bytes": 16 * GIB, "model": "Cruzer Blade", "removable": true,
             "rotational": false, "read_only": false},
            {"name": "sdb", "size_bytes": 480_103_981_056u64, "model": "INTEL SSDSC2KB48",
             "serial": "BTYF0123456A480BGN", "rotational": false, "removable": false},
            {"name": "sdc", "size_bytes": 4_000_787_030_016u64, "model": "ST4000NM0035-1V4",
             "serial": "ZC1A2B3C", "rotational": true, "removable": false, "hctl": "1:0:0:0"}
        ],
        "nics": []
    });
    let path = dir.join("facts.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&facts).unwrap()).unwrap();
    path.to_str().unwrap().to_string()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn a_match_prints_the_device_and_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let facts = facts_file(dir.path());
    for (hints, device) in [
        (r#"{"rotational": true}"#, "/dev/sdc"),
        (r#"{"size": ">= 400", "model": "<in> intel"}"#, "/dev/sdb"),
        (r#"{"serial": "zc1a2b3c"}"#, "/dev/sdc"),
        (r#"{"name": "sda"}"#, "/dev/sda"),
    ] {
        let out = root_device(&["--hints", hints, "--facts", &facts]);
        assert_eq!(out.status.code(), Some(0), "{hints}: {}", text(&out.stderr));
        assert_eq!(text(&out.stdout), format!("{device}\n"), "{hints}");
    }
    // No hints: the smallest fixed disk of at least 4 GiB, not the USB stick.
    let out = root_device(&["--facts", &facts]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "/dev/sdb\n");
}

#[test]
fn no_match_exits_1_with_one_sentence() {
    let dir = tempfile::tempdir().unwrap();
    let facts = facts_file(dir.path());
    let out = root_device(&[
        "--hints",
        r#"{"size": ">= 1000", "rotational": false}"#,
        "--facts",
        &facts,
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert_eq!(
        text(&out.stderr),
        "no disk matches the root device hints: sda fails size \">= 1000\" (it has 16.00 GiB); sdb \
         fails size \">= 1000\" (it has 447.13 GiB); sdc fails rotational false (it has true).\n"
    );
}

#[test]
fn bad_hints_or_facts_exit_2_naming_the_cause() {
    let dir = tempfile::tempdir().unwrap();
    let facts = facts_file(dir.path());
    let garbage = dir.path().join("garbage.json");
    std::fs::write(&garbage, "{\"disks\": 5}").unwrap();
    let missing = dir.path().join("missing.json");
    let cases: Vec<(Vec<&str>, String)> = vec![
        (
            vec!["--hints", r#"{"size": "big"}"#, "--facts", &facts],
            "root device hint \"size\" is not a whole number of GiB".into(),
        ),
        (
            vec!["--hints", r#"{"colour": "red"}"#, "--facts", &facts],
            "unknown root device hint \"colour\"".into(),
        ),
        (
            vec!["--hints", "{size: 10", "--facts", &facts],
            "the root device hints are not JSON".into(),
        ),
        (
            vec!["--hints", "{}", "--facts", garbage.to_str().unwrap()],
            format!("the facts file {} is not the JSON", garbage.display()),
        ),
        (
            vec!["--facts", missing.to_str().unwrap()],
            format!("cannot read the facts file {}", missing.display()),
        ),
    ];
    for (args, message) in cases {
        let out = root_device(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            text(&out.stderr).contains(&message),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn without_facts_it_reads_this_machine() {
    // Every disk of this machine is ruled out by a hint no disk has; the sentence names them all.
    let out = root_device(&["--hints", r#"{"serial": "no such serial anywhere"}"#]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with("no disk matches the root device hints: "),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}
