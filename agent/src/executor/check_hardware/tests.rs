use super::assign::assign;
use super::bound::{Bound, Op};
use super::profile::{DiskWant, NicWant};
use super::*;
use crate::testutil;
use plinth_common::wire::{Cpu, Disk, Facts, Memory, Nic, TaskKind};
use serde_json::{json, Value};

const GIB: u64 = 1 << 30;

fn bound(v: Value) -> Result<Bound, String> {
    Bound::parse(&v)
}

fn profile(v: Value) -> Result<Profile, ProfileError> {
    Profile::parse(v.as_object().unwrap())
}

fn disk(name: &str, gib: u64, rotational: Option<bool>) -> Disk {
    Disk {
        name: name.into(),
        size_bytes: gib * GIB,
        rotational,
        removable: Some(false),
        ..Disk::default()
    }
}

fn nic(name: &str, speed: Option<u32>, link_up: Option<bool>) -> Nic {
    Nic {
        name: name.into(),
        speed_mbps: speed,
        link_up,
        ..Nic::default()
    }
}

/// A machine of 2 CPUs, 7961 MiB, two disks (vda 20 GiB SSD, vdb 8 GiB), one 1 Gb/s NIC and a loopback.
fn small_machine() -> Facts {
    Facts {
        cpu: Some(Cpu {
            threads: 2,
            ..Cpu::default()
        }),
        memory: Some(Memory {
            total_bytes: 7961 * (1 << 20) + 123,
            swap_bytes: 0,
        }),
        disks: vec![disk("vda", 20, Some(false)), disk("vdb", 8, Some(true))],
        nics: vec![
            nic("eth0", Some(1000), Some(true)),
            Nic {
                virtual_device: true,
                ..nic("lo", None, Some(true))
            },
        ],
        ..Facts::default()
    }
}

fn verdict(v: Value, facts: &Facts) -> Verdict {
    compare(&profile(v).unwrap(), facts, Some("x86_64"))
}

// --- comparisons ---

#[test]
fn every_operator_reads_and_compares_as_written() {
    for (text, op) in [
        ("== 4", Op::Eq),
        ("!= 4", Op::Ne),
        ("< 4", Op::Lt),
        ("<= 4", Op::Le),
        ("> 4", Op::Gt),
        (">= 4", Op::Ge),
        (">=4", Op::Ge),
        ("  >=   4 ", Op::Ge),
        ("4", Op::Eq),
    ] {
        assert_eq!(bound(json!(text)), Ok(Bound { op, value: 4 }), "{text}");
    }
    assert_eq!(
        bound(json!(4)),
        Ok(Bound {
            op: Op::Eq,
            value: 4
        })
    );
    let holds = |text: &str, have: u64| bound(json!(text)).unwrap().holds(have);
    assert!(holds(">= 4", 4) && holds(">= 4", 5) && !holds(">= 4", 3));
    assert!(holds("> 4", 5) && !holds("> 4", 4));
    assert!(holds("<= 4", 4) && !holds("<= 4", 5));
    assert!(holds("< 4", 3) && !holds("< 4", 4));
    assert!(holds("== 4", 4) && !holds("4", 5));
    assert!(holds("!= 4", 5) && !holds("!= 4", 4));
}

#[test]
fn a_comparison_shows_as_written_and_equality_as_the_number() {
    assert_eq!(bound(json!(">=4")).unwrap().to_string(), ">= 4");
    assert_eq!(bound(json!("== 4")).unwrap().to_string(), "4");
    assert_eq!(bound(json!("!= 0")).unwrap().to_string(), "!= 0");
}

#[test]
fn what_is_no_comparison_of_whole_numbers_is_refused_with_the_reason() {
    for (value, says) in [
        (json!("= 4"), "`=` is no operator here"),
        (json!(">== 4"), "`=` is no operator here"),
        (json!(">="), "no number after it"),
        (json!("s>= 4"), "not a comparison of whole numbers"),
        (json!("<or> 4 <or> 8"), "not a comparison of whole numbers"),
        (json!(">= 4.5"), "not a comparison of whole numbers"),
        (json!(">= -1"), "not a comparison of whole numbers"),
        (json!("lots"), "not a comparison of whole numbers"),
        (json!(-1), "not a whole number"),
        (json!(2.5), "not a whole number"),
        (json!(true), "expected a whole number"),
        (json!(">= 99999999999999999999999"), "too large"),
    ] {
        let e = bound(value.clone()).unwrap_err();
        assert!(e.contains(says), "{value}: {e}");
    }
}

#[test]
fn sizes_compare_in_bytes_without_rounding() {
    let ge = bound(json!(">= 100")).unwrap();
    assert!(ge.holds_in(u128::from(100 * GIB), GIB));
    assert!(!ge.holds_in(u128::from(100 * GIB - 1), GIB));
    let eq = bound(json!(100)).unwrap();
    assert!(!eq.holds_in(u128::from(100 * GIB + 1), GIB));
    // No overflow at the top of the range.
    assert!(!bound(json!(u64::MAX))
        .unwrap()
        .holds_in(u128::from(u64::MAX), GIB));
}

// --- the profile's parameters ---

#[test]
fn a_profile_reads_every_field() {
    let p = profile(json!({
        "cpus": ">= 4", "memory_mb": 8192, "arch": "amd64",
        "disks": [{"size_gb": ">= 100", "rotational": false}, {"size_gb": ">= 1000"}, {}],
        "nics": [{"speed_mbps": ">= 10000", "link_up": "true"}],
        "timeout": 30, "retries": 1,
    }))
    .unwrap();
    assert_eq!(
        p.cpus,
        Some(Bound {
            op: Op::Ge,
            value: 4
        })
    );
    assert_eq!(
        p.memory_mb,
        Some(Bound {
            op: Op::Eq,
            value: 8192
        })
    );
    assert_eq!(
        p.arch.as_deref(),
        Some("x86_64"),
        "Debian's name read as the kernel's"
    );
    assert_eq!(p.disks.len(), 3);
    assert_eq!(p.disks[0].rotational, Some(false));
    assert_eq!(p.disks[2], DiskWant::default());
    assert_eq!(
        p.nics,
        vec![NicWant {
            speed_mbps: Some(Bound {
                op: Op::Ge,
                value: 10000
            }),
            link_up: Some(true)
        }]
    );
}

#[test]
fn bad_parameters_name_the_field() {
    for (params, field, says) in [
        (
            json!({"cpu": 4}),
            "cpu",
            "no parameter of check_hardware tasks",
        ),
        (json!({"cpus": "=> 4"}), "cpus", "`=` is no operator"),
        (
            json!({"memory_mb": "8 GB"}),
            "memory_mb",
            "not a comparison",
        ),
        (
            json!({"disks": {"size_gb": 1}}),
            "disks",
            "list of mappings",
        ),
        (json!({"disks": [{}, 5]}), "disks[1]", "must be a mapping"),
        (
            json!({"disks": [{"size_gib": 100}]}),
            "disks[0].size_gib",
            "unknown (known: size_gb, rotational)",
        ),
        (
            json!({"disks": [{"size_gb": "<in> 100"}]}),
            "disks[0].size_gb",
            "not a comparison",
        ),
        (
            json!({"disks": [{"rotational": "maybe"}]}),
            "disks[0].rotational",
            "true or false",
        ),
        (
            json!({"nics": [{"speed": 1000}]}),
            "nics[0].speed",
            "unknown",
        ),
        (
            json!({"nics": [{"link_up": 1}]}),
            "nics[0].link_up",
            "true or false",
        ),
        (json!({"arch": "x86 64"}), "arch", "architecture's name"),
        (json!({"arch": 64}), "arch", "architecture's name"),
        (json!({}), "profile", "asks for nothing"),
        (
            json!({"timeout": 10, "cpus": null}),
            "profile",
            "asks for nothing",
        ),
    ] {
        let e = profile(params.clone()).unwrap_err();
        assert_eq!(e.field, field, "{params}: {e}");
        assert!(e.message.contains(says), "{params}: {e}");
    }
    let many: Vec<Value> = (0..=super::profile::MAX_ITEMS).map(|_| json!({})).collect();
    let e = profile(json!({ "disks": many })).unwrap_err();
    assert!(e.message.contains("at most 256"), "{e}");
}

#[test]
fn the_task_refuses_bad_parameters_as_a_param_error_naming_task_and_field() {
    let task = testutil::task(
        "check-hw",
        TaskKind::CheckHardware,
        json!({"disks": [{"size_gb": ">= 1", "spins": true}]}),
    );
    let e = crate::executor::prepare(&task, false).unwrap_err();
    assert_eq!(e.task, "check-hw");
    assert_eq!(e.field, "disks[0].spins");
    assert_eq!(
        e.to_string(),
        "task check-hw: parameter `disks[0].spins`: is unknown (known: size_gb, rotational)"
    );
    let task = testutil::task(
        "t",
        TaskKind::CheckHardware,
        json!({"cpus": 1, "timeout": 0}),
    );
    assert_eq!(
        crate::executor::prepare(&task, false).unwrap_err().field,
        "timeout"
    );
}

// --- the comparison ---

#[test]
fn every_difference_is_named_in_one_message() {
    let v = verdict(
        json!({
            "cpus": ">= 4", "memory_mb": ">= 8192", "arch": "aarch64",
            "disks": [{"size_gb": ">= 10", "rotational": false}, {"size_gb": ">= 1000"}],
            "nics": [{"speed_mbps": ">= 10000"}],
        }),
        &small_machine(),
    );
    assert!(!v.passed());
    assert_eq!(
        v.message(),
        "the hardware differs from the profile: \
         cpus: expected >= 4, has 2; \
         memory_mb: expected >= 8192, has 7961; \
         arch: expected aarch64, has x86_64; \
         disk 2 (size_gb >= 1000): no disk left that matches (vda went to disk 1; vdb has 8.00 GiB); \
         nic 1 (speed_mbps >= 10000): no NIC left that matches (eth0 has 1000 Mb/s)"
    );
    assert_eq!(v.disks, vec![Some("vda".to_string()), None]);
    assert_eq!(v.details()["differences"].as_array().unwrap().len(), 5);
    assert_eq!(v.details()["disks"], json!(["vda", null]));
}

#[test]
fn a_machine_that_meets_the_profile_is_told_what_matched() {
    let v = verdict(
        json!({
            "cpus": 2, "memory_mb": "> 4096", "arch": "x86_64",
            "disks": [{"size_gb": ">= 4"}, {"size_gb": ">= 10", "rotational": false}],
            "nics": [{"speed_mbps": ">= 1000", "link_up": true}],
        }),
        &small_machine(),
    );
    assert!(v.passed(), "{}", v.message());
    // The first disk asked for took vdb, so that the second could have vda, the only SSD.
    assert_eq!(
        v.message(),
        "the hardware matches the profile: cpus 2 (2); memory_mb 7961 (> 4096); arch x86_64; \
         disk 1 (size_gb >= 4): vdb, 8.00 GiB; \
         disk 2 (size_gb >= 10, rotational false): vda, 20.00 GiB; \
         nic 1 (speed_mbps >= 1000, link_up true): eth0, 1000 Mb/s"
    );
    assert_eq!(v.nics, vec![Some("eth0".to_string())]);
}

#[test]
fn each_expected_disk_needs_a_disk_of_its_own() {
    let v = verdict(json!({"disks": [{}, {}, {}]}), &small_machine());
    assert_eq!(
        v.differences,
        vec!["disk 3 (any): no disk left that matches (vda went to disk 1; vdb went to disk 2)"]
    );
    // The order the profile lists them in does not matter.
    let facts = Facts {
        disks: vec![disk("sda", 1000, None), disk("sdb", 200, None)],
        ..Facts::default()
    };
    for disks in [
        json!([{"size_gb": ">= 100"}, {"size_gb": ">= 1000"}]),
        json!([{"size_gb": ">= 1000"}, {"size_gb": ">= 100"}]),
    ] {
        let v = verdict(json!({ "disks": disks }), &facts);
        assert!(v.passed(), "{disks}: {}", v.message());
    }
}

#[test]
fn disks_that_are_no_hardware_of_the_node_are_named_and_not_counted() {
    let facts = Facts {
        disks: vec![
            Disk {
                removable: Some(true),
                ..disk("sda", 16, None)
            },
            disk("sr0", 1, None),
            disk("vdc", 0, None),
            disk("vdd", 50, None),
        ],
        ..Facts::default()
    };
    let v = verdict(
        json!({"disks": [{"size_gb": ">= 10", "rotational": false}]}),
        &facts,
    );
    assert_eq!(
        v.differences,
        vec![
            "disk 1 (size_gb >= 10, rotational false): no disk left that matches (sda is removable; \
             sr0 is an optical drive; vdc is empty; vdd does not say whether it is rotational)"
        ]
    );
    let v = verdict(
        json!({"disks": [{"rotational": true, "size_gb": "< 10"}]}),
        &Facts {
            disks: vec![disk("vda", 20, Some(false))],
            ..Facts::default()
        },
    );
    assert_eq!(
        v.differences,
        vec!["disk 1 (size_gb < 10, rotational true): no disk left that matches (vda has 20.00 GiB and is not rotational)"]
    );
    let v = verdict(json!({"disks": [{}]}), &Facts::default());
    assert_eq!(
        v.differences,
        vec!["disk 1 (any): no disk left that matches (the node reports no disks)"]
    );
}

#[test]
fn nics_compare_speed_and_link_and_virtual_ones_do_not_count() {
    let facts = Facts {
        nics: vec![
            nic("eno1", None, Some(false)),
            nic("eno2", Some(25000), Some(true)),
            Nic {
                virtual_device: true,
                ..nic("bond0", Some(50000), Some(true))
            },
        ],
        ..Facts::default()
    };
    let v = verdict(
        json!({"nics": [{"speed_mbps": ">= 10000"}, {"speed_mbps": ">= 10000"}, {"link_up": true}]}),
        &facts,
    );
    assert_eq!(
        v.differences,
        vec![
            "nic 2 (speed_mbps >= 10000): no NIC left that matches (eno1 reports no speed; eno2 went to nic 1)",
            "nic 3 (link_up true): no NIC left that matches (eno1 has its link down; eno2 went to nic 1)",
        ]
    );
    let v = verdict(json!({"nics": [{}]}), &Facts::default());
    assert_eq!(
        v.differences,
        vec!["nic 1 (any): no NIC left that matches (the node reports no physical NICs)"]
    );
}

#[test]
fn what_the_node_does_not_report_is_a_difference() {
    let p = profile(json!({"cpus": ">= 1", "memory_mb": ">= 1", "arch": "x86_64"})).unwrap();
    let v = compare(&p, &Facts::default(), None);
    assert_eq!(
        v.differences,
        vec![
            "cpus: expected >= 1, the node reports none",
            "memory_mb: expected >= 1, the node reports none",
            "arch: expected x86_64, the node reports none",
        ]
    );
    // The node's `arm64` is read as the kernel's name too.
    let p = profile(json!({"arch": "aarch64"})).unwrap();
    assert!(compare(&p, &Facts::default(), Some("arm64")).passed());
}

#[test]
fn assignment_is_as_large_as_can_be() {
    // want 0 fits items 0 and 1, want 1 only item 0, want 2 only item 1: two of three can be met.
    let fits = |w: usize, h: usize| matches!((w, h), (0, 0) | (0, 1) | (1, 0) | (2, 1));
    let got = assign(3, 2, fits);
    assert_eq!(got.iter().filter(|m| m.is_some()).count(), 2);
    assert_eq!(got, vec![Some(1), Some(0), None]);
    assert_eq!(assign(2, 0, |_, _| true), vec![None, None]);
    assert_eq!(assign(0, 3, |_, _| true), Vec::<Option<usize>>::new());
}

// --- on this machine ---

fn this_machine_cpus() -> u64 {
    crate::facts::collect(&crate::facts::Sources::live(Default::default()))
        .cpu
        .map(|c| u64::from(c.threads))
        .unwrap()
}

async fn run_here(params: Value) -> crate::executor::Outcome {
    let dir = tempfile::tempdir().unwrap();
    let (_t, sd) = crate::shutdown::channel();
    let ctx = testutil::attempt(dir.path(), sd);
    let task = testutil::task("check-hw", TaskKind::CheckHardware, params);
    let prepared = crate::executor::prepare(&task, false).unwrap();
    prepared.executor.run(&ctx).await
}

#[tokio::test]
async fn this_machine_passes_a_profile_it_meets_and_fails_one_it_does_not() {
    let arch = machine_arch().unwrap();
    let ok = run_here(json!({"cpus": ">= 1", "memory_mb": ">= 16", "arch": arch})).await;
    assert_eq!(ok.status, ResultStatus::Succeeded, "{}", ok.message);
    assert!(
        ok.message.starts_with(&format!(
            "the hardware matches the profile: cpus {} (>= 1); memory_mb ",
            this_machine_cpus()
        )),
        "{}",
        ok.message
    );
    let bad = run_here(json!({"cpus": ">= 4096", "memory_mb": ">= 16"})).await;
    assert_eq!(bad.status, ResultStatus::Failed);
    assert_eq!(
        bad.message,
        format!(
            "the hardware differs from the profile: cpus: expected >= 4096, has {}",
            this_machine_cpus()
        )
    );
    assert_eq!(bad.details["matched"].as_array().unwrap().len(), 1);
    // `uname -m` is what the kernel says, as the profile names it.
    let uname = std::process::Command::new("uname")
        .arg("-m")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&uname.stdout).trim(), arch);
}

#[tokio::test]
async fn a_check_in_a_noop_deployment_is_reported_skipped_without_running() {
    let dir = tempfile::tempdir().unwrap();
    let (_t, sd) = crate::shutdown::channel();
    let ctx = testutil::attempt(dir.path(), sd);
    let task = testutil::task("t", TaskKind::CheckHardware, json!({"cpus": ">= 4096"}));
    let outcome = crate::executor::prepare(&task, true)
        .unwrap()
        .executor
        .run(&ctx)
        .await;
    assert_eq!(outcome.status, ResultStatus::Skipped, "{}", outcome.message);
    // Its parameters are still checked.
    let task = testutil::task("t", TaskKind::CheckHardware, json!({"cpus": "lots"}));
    assert!(crate::executor::prepare(&task, true).is_err());
}
