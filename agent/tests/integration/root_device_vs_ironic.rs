//! Plinth's root device choice against Ironic's own code: many disk sets and hint sets (hand-written
//! and generated), each answered by Plinth's matcher and by ironic-lib's `match_root_device_hints`
//! (ironic-python-agent's `guess_root_disk` without hints) run in Python, from the virtual environment
//! `scripts/ironic-venv.sh` makes (named by `PLINTH_IRONIC_VENV`; the test fails, never skips, without
//! it). The answers must be the same, except where a difference `docs/PROVISIONING.md` lists applies to
//! the case; the hand-written cases of each such difference assert the difference itself.

use plinth_agent::root_device::{choose, device_path, Hints};
use plinth_common::wire::Disk;
use serde_json::{json, Value};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

const GIB: u64 = 1 << 30;

/// How many cases are generated.
const GENERATED: usize = 3000;

/// The Python of the virtual environment.
fn python() -> PathBuf {
    let how = "export PLINTH_IRONIC_VENV=\"$(scripts/ironic-venv.sh)\" (scripts/test.sh does)";
    let dir = std::env::var_os("PLINTH_IRONIC_VENV")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("PLINTH_IRONIC_VENV is needed and missing: {how}"));
    let python = dir.join("python");
    assert!(python.exists(), "{} is missing: {how}", python.display());
    python
}

/// Ironic's answer to one case.
#[derive(Debug, Clone, PartialEq)]
enum Ironic {
    /// It chose this device path, or none.
    Chose(Option<String>),
    /// It refused the hints or failed while matching.
    Failed(String),
}

/// Plinth's answer to one case.
#[derive(Debug, Clone, PartialEq)]
enum Plinth {
    /// It chose this device path, or none.
    Chose(Option<String>),
    /// It refused the hints; `true` when the refusal is one of those stricter than Ironic.
    Refused(String, bool),
}

/// One case: the disks in the facts' order, and the hints (`null` for none).
#[derive(Debug, Clone)]
struct Case {
    disks: Vec<Disk>,
    hints: Value,
}

/// A disk as Ironic's agent lists it; `None` for devices it does not list (optical and floppy drives,
/// empty devices).
fn ironic_device(disk: &Disk) -> Option<Value> {
    if disk.name.starts_with("sr") || disk.name.starts_with("fd") || disk.size_bytes == 0 {
        return None;
    }
    Some(json!({
        "name": device_path(disk),
        "size": disk.size_bytes,
        "model": disk.model,
        "vendor": disk.vendor,
        "serial": disk.serial,
        "wwn": disk.wwn,
        "wwn_with_extension": disk.wwn_with_extension,
        "wwn_vendor_extension": disk.wwn_vendor_extension,
        "rotational": disk.rotational,
        "hctl": disk.hctl,
        "by_path": disk.by_path.first().map(|l| format!("/dev/disk/by-path/{l}")),
    }))
}

/// Ironic's answers to every case, from one run of Python.
fn ironic(cases: &[Case]) -> Vec<Ironic> {
    let input: Vec<Value> = cases
        .iter()
        .map(|c| {
            let devices: Vec<Value> = c.disks.iter().filter_map(ironic_device).collect();
            json!({"devices": devices, "hints": c.hints})
        })
        .collect();
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/integration/ironic_choose.py");
    let mut child = Command::new(python())
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python starts");
    let mut stdin = child.stdin.take().unwrap();
    let body = serde_json::to_vec(&input).unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&body));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(
        out.status.success(),
        "Ironic's matcher failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answers: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    answers
        .into_iter()
        .map(|a| match a.get("error") {
            Some(e) => Ironic::Failed(e.as_str().unwrap_or_default().to_string()),
            None => Ironic::Chose(a["chosen"].as_str().map(str::to_string)),
        })
        .collect()
}

fn plinth(case: &Case) -> Plinth {
    match Hints::parse(&case.hints) {
        Err(e) => Plinth::Refused(e.to_string(), e.stricter_than_ironic()),
        Ok(hints) => Plinth::Chose(choose(&case.disks, Some(&hints)).ok().map(device_path)),
    }
}

/// Adds `what` to `found` when it applies and is not there yet.
fn note(found: &mut Vec<&'static str>, applies: bool, what: &'static str) {
    if applies && !found.contains(&what) {
        found.push(what);
    }
}

/// The operators, longest first.
const OPERATORS: [&str; 17] = [
    "<range-in>",
    "<all-in>",
    "<or>",
    "<in>",
    "s==",
    "s!=",
    "s<=",
    "s>=",
    "s<",
    "s>",
    "==",
    "!=",
    "<=",
    ">=",
    "<",
    ">",
    "=",
];

/// The values written in an expression: its words once the operators are taken out.
fn words(expr: &str) -> Vec<String> {
    let mut text = expr.to_lowercase();
    for op in OPERATORS {
        text = text.replace(op, " ");
    }
    text.split_whitespace().map(str::to_string).collect()
}

/// Whether Python's percent-encoding changes `text` (anything but letters, digits and `_.-~/`).
fn encoded(text: &str) -> bool {
    text.chars()
        .any(|c| !(c.is_ascii_alphanumeric() || "_.-~/".contains(c)))
}

/// The documented differences that apply to a case (empty when Plinth and Ironic must agree).
fn differences(case: &Case) -> Vec<&'static str> {
    let mut found = Vec::new();
    let listed: Vec<&Disk> = case
        .disks
        .iter()
        .filter(|d| ironic_device(d).is_some())
        .collect();
    note(
        &mut found,
        listed
            .iter()
            .any(|d| d.read_only == Some(true) || !d.mounts.is_empty()),
        "read-only and in-use disks are never chosen",
    );
    let Some(hints) = case.hints.as_object().filter(|h| !h.is_empty()) else {
        note(
            &mut found,
            listed.iter().any(|d| d.removable == Some(true)),
            "the default choice passes removable disks over",
        );
        return found;
    };
    note(
        &mut found,
        hints.contains_key("by_path") && listed.iter().any(|d| d.by_path.len() > 1),
        "any of several by-path names matches",
    );
    for (name, value) in hints {
        let Some(expr) = value.as_str() else { continue };
        let expr = expr.trim().to_lowercase();
        note(
            &mut found,
            name == "size" && expr.starts_with("<or>"),
            "size <or> compares numbers",
        );
        note(
            &mut found,
            expr.contains("<all-in>"),
            "<all-in> is containment",
        );
        if name == "size" || name == "rotational" {
            continue;
        }
        note(
            &mut found,
            listed.iter().any(|d| text_of(d, name).is_none()),
            "an absent value satisfies no hint",
        );
        note(
            &mut found,
            (name == "name" || name == "by_path")
                && words(&expr).iter().any(|w| !w.starts_with('/')),
            "name and by_path without their directory",
        );
        let compares_parts = ["<in>", "<all-in>", "s<", "s>"]
            .iter()
            .any(|op| expr.starts_with(op));
        let values_encoded = listed
            .iter()
            .any(|d| text_of(d, name).is_some_and(|v| encoded(&v)))
            || words(&expr).iter().any(|w| encoded(w));
        note(
            &mut found,
            compares_parts && values_encoded,
            "texts compare as texts, not percent-encoded",
        );
    }
    found
}

/// A disk's text for a hint, as Ironic's agent gives it.
fn text_of(disk: &Disk, hint: &str) -> Option<String> {
    let v = match hint {
        "model" => disk.model.clone(),
        "vendor" => disk.vendor.clone(),
        "serial" => disk.serial.clone(),
        "wwn" => disk.wwn.clone(),
        "wwn_with_extension" => disk.wwn_with_extension.clone(),
        "wwn_vendor_extension" => disk.wwn_vendor_extension.clone(),
        "hctl" => disk.hctl.clone(),
        "name" => Some(device_path(disk)),
        "by_path" => disk
            .by_path
            .first()
            .map(|l| format!("/dev/disk/by-path/{l}")),
        _ => None,
    };
    v.filter(|s| !s.trim().is_empty())
}

// Hand-written cases.

fn disk(name: &str, bytes: u64) -> Disk {
    Disk {
        name: name.into(),
        size_bytes: bytes,
        removable: Some(false),
        read_only: Some(false),
        rotational: Some(true),
        ..Disk::default()
    }
}

/// A rack server's disks: two SATA disks, an NVMe drive, a USB stick, an optical drive.
fn server() -> Vec<Disk> {
    let mut nvme = disk("nvme0n1", 1_000_204_886_016);
    nvme.model = Some("Samsung SSD 970 EVO 1TB".into());
    nvme.serial = Some("S467NX0M123456".into());
    nvme.wwn = Some("eui.0025388b71b2f3a4".into());
    nvme.rotational = Some(false);
    nvme.by_path = vec!["pci-0000:3b:00.0-nvme-1".into()];
    let mut sda = disk("sda", 480_103_981_056);
    sda.model = Some("INTEL SSDSC2KB48".into());
    sda.vendor = Some("ATA".into());
    sda.serial = Some("BTYF0123456A480BGN".into());
    sda.wwn = Some("0x55cd2e414f1a2b3c".into());
    sda.wwn_with_extension = Some("0x55cd2e414f1a2b3c".into());
    sda.hctl = Some("0:0:0:0".into());
    sda.rotational = Some(false);
    sda.by_path = vec!["pci-0000:00:17.0-ata-1".into()];
    let mut sdb = disk("sdb", 4_000_787_030_016);
    sdb.model = Some("ST4000NM0035-1V4".into());
    sdb.vendor = Some("ATA".into());
    sdb.serial = Some("ZC1A2B3C".into());
    sdb.wwn = Some("0x5000c500a1b2c3d4".into());
    sdb.wwn_with_extension = Some("0x5000c500a1b2c3d4".into());
    sdb.hctl = Some("1:0:0:0".into());
    sdb.by_path = vec!["pci-0000:00:17.0-ata-2".into()];
    let mut sdc = disk("sdc", 16 * GIB);
    sdc.model = Some("Cruzer Blade".into());
    sdc.vendor = Some("SanDisk".into());
    sdc.hctl = Some("6:0:0:0".into());
    sdc.removable = Some(true);
    sdc.by_path = vec!["pci-0000:00:14.0-usb-0:2:1.0-scsi-0:0:0:0".into()];
    let mut sr0 = disk("sr0", GIB);
    sr0.removable = Some(true);
    vec![nvme, sda, sdb, sdc, sr0]
}

/// Cases where Plinth and Ironic agree.
fn agreements() -> Vec<Case> {
    let hints = [
        json!({"size": ">= 1000"}),
        json!({"size": "<= 500", "rotational": false}),
        json!({"rotational": true}),
        json!({"model": "<in> samsung"}),
        json!({"model": "ST4000NM0035-1V4"}),
        json!({"vendor": "ata", "rotational": "no"}),
        json!({"serial": "s== ZC1A2B3C"}),
        json!({"serial": "s!= ZC1A2B3C"}),
        json!({"wwn": "0x5000C500A1B2C3D4"}),
        json!({"wwn_with_extension": "0x55cd2e414f1a2b3c"}),
        json!({"hctl": "1:0:0:0"}),
        json!({"hctl": "<or> 1:0:0:0 <or> 0:0:0:0"}),
        json!({"by_path": "/dev/disk/by-path/pci-0000:00:17.0-ata-2"}),
        json!({"name": "/dev/sdb"}),
        json!({"name": "<in> nvme"}),
        json!({"name": "s== /dev/sdc"}),
        json!({"model": "cruzer blade"}),
        json!({"size": "== 1", "name": "/dev/sr0"}),
        json!({"size": 16}),
        json!({"size": "16"}),
        json!({"size": "< 16"}),
        json!({"size": "foo"}),
        json!({"size": -1}),
        json!({"rotational": "sometimes"}),
        json!({"model": 42}),
        json!({"colour": "red"}),
        json!({"model": "s=="}),
        json!({"model": "  "}),
    ];
    hints
        .into_iter()
        .map(|hints| Case {
            disks: server(),
            hints,
        })
        .collect()
}

/// Cases of each documented difference: the case, Ironic's answer, Plinth's.
fn documented() -> Vec<(&'static str, Case, Ironic, Plinth)> {
    let chose = |d: Option<&str>| Ironic::Chose(d.map(str::to_string));
    let ours = |d: Option<&str>| Plinth::Chose(d.map(str::to_string));
    let case = |disks: Vec<Disk>, hints: Value| Case { disks, hints };
    let mut usb_first = server();
    usb_first[3].size_bytes = 8 * GIB;
    let mut read_only = server();
    read_only[1].read_only = Some(true);
    let mut in_use = server();
    in_use[1].mounts = vec!["/".into()];
    in_use.remove(3);
    let mut no_vendor = server();
    no_vendor[0].vendor = None;
    let stricter = |text: &str| Plinth::Refused(text.into(), true);
    vec![
        (
            "the default choice passes removable disks over",
            case(usb_first, json!(null)),
            chose(Some("/dev/sdc")),
            ours(Some("/dev/sda")),
        ),
        (
            "read-only disks are never chosen",
            case(read_only, json!({"size": "<= 500"})),
            chose(Some("/dev/sda")),
            ours(Some("/dev/sdc")),
        ),
        (
            "disks holding the running system's mounts are never chosen",
            case(in_use, json!(null)),
            chose(Some("/dev/sda")),
            ours(Some("/dev/nvme0n1")),
        ),
        (
            "name without /dev/",
            case(server(), json!({"name": "sdb"})),
            chose(None),
            ours(Some("/dev/sdb")),
        ),
        (
            "by_path without its directory",
            case(server(), json!({"by_path": "pci-0000:00:17.0-ata-2"})),
            chose(None),
            ours(Some("/dev/sdb")),
        ),
        (
            "size <or> compares numbers",
            case(server(), json!({"size": "<or> 16 <or> 32"})),
            chose(None),
            ours(Some("/dev/sdc")),
        ),
        (
            "an absent value satisfies no hint",
            case(no_vendor.clone(), json!({"vendor": "none"})),
            chose(Some("/dev/nvme0n1")),
            ours(None),
        ),
        (
            "an absent value satisfies no hint, s!= too",
            case(no_vendor, json!({"vendor": "s!= ata"})),
            chose(Some("/dev/nvme0n1")),
            ours(Some("/dev/sdc")),
        ),
        (
            "texts compare as texts, not percent-encoded",
            case(server(), json!({"model": "<in> 20"})),
            chose(Some("/dev/nvme0n1")),
            ours(None),
        ),
        (
            "<all-in> is containment",
            case(server(), json!({"model": "<all-in> samsung <all-in> 1tb"})),
            Ironic::Failed("SyntaxError".into()),
            ours(Some("/dev/nvme0n1")),
        ),
        (
            "string operators on the size are refused",
            case(server(), json!({"size": "s!= 16"})),
            chose(Some("/dev/nvme0n1")),
            stricter("root device hint \"size\" cannot use the operator \"s!=\""),
        ),
        (
            "= is refused",
            case(server(), json!({"size": "= 16"})),
            chose(Some("/dev/nvme0n1")),
            stricter("root device hint \"size\" uses \"=\""),
        ),
        (
            "a one-value operator written twice is refused",
            case(server(), json!({"model": "s== cruzer blade s== samsung"})),
            chose(Some("/dev/sdc")),
            stricter("gives \"s==\" more than one value"),
        ),
        (
            "a blank value in a list is refused",
            case(server(), json!({"hctl": "<or> 9:0:0:0 <or>  <or> 1:0:0:0"})),
            chose(None),
            stricter("has an empty value between two \"<or>\""),
        ),
        (
            "numeric operators on texts are refused",
            case(server(), json!({"serial": ">= 5"})),
            Ironic::Failed("ValueError".into()),
            stricter("root device hint \"serial\" cannot use the operator \">=\""),
        ),
    ]
}

// Generated cases.

/// SplitMix64: a small deterministic generator, so every run tests the same cases.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())].clone()
    }
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

fn some(items: &[&str]) -> Vec<Option<String>> {
    items
        .iter()
        .map(|s| (!s.is_empty()).then(|| s.to_string()))
        .collect()
}

fn generated_disks(rng: &mut Rng) -> Vec<Disk> {
    let mut names = vec![
        "fd0", "mmcblk0", "nvme0n1", "nvme1n1", "sda", "sdaa", "sdb", "sdc", "sr0", "vda",
    ];
    let count = 1 + rng.below(5);
    let mut chosen: Vec<&str> = (0..count)
        .map(|_| names.remove(rng.below(names.len())))
        .collect();
    chosen.sort();
    let sizes = [
        0,
        GIB,
        2 * GIB,
        4 * GIB - 512,
        4 * GIB,
        8 * GIB,
        10 * GIB,
        16 * GIB,
        60 * GIB,
        100 * GIB,
        100 * GIB + 512,
        120 * GIB,
        480_103_981_056,
        500 * GIB,
        1_000_204_886_016,
    ];
    let models = some(&[
        "Samsung SSD 970 EVO",
        "ST500DM002-1BD14",
        "big model",
        "small model",
        "QEMU HARDDISK",
        "INTEL_SSDSC2KB48",
        "Micron_5300",
    ]);
    let vendors = some(&["ATA", "QEMU", "0x1af4", "SanDisk"]);
    let serials = some(&["S1", "s2", "Z1D2ABCD", "fakeserial", "veryfakeserial"]);
    let wwns = some(&[
        "0x5000c500a1b2c3d4",
        "0x5000c500a1b2c3d5",
        "eui.0025388b71b2f3a4",
    ]);
    let extensions = some(&["0x600508b1001c4d5e", "0x0a1b2c3d"]);
    let hctls = some(&["0:0:0:0", "1:0:0:0", "2:0:1:0"]);
    let paths = [
        "pci-0000:00:1f.2-ata-1",
        "pci-0000:00:1f.2-ata-2",
        "pci-0000:3b:00.0-nvme-1",
        "virtio-pci-0000:00:05.0",
    ];
    chosen
        .into_iter()
        .map(|name| {
            let mut d = disk(name, rng.pick(&sizes));
            // Now and then a value the disk does not report.
            fn maybe(rng: &mut Rng, value: Option<String>) -> Option<String> {
                value.filter(|_| !rng.chance(3))
            }
            d.model = {
                let v = rng.pick(&models);
                maybe(rng, v)
            };
            d.vendor = {
                let v = rng.pick(&vendors);
                maybe(rng, v)
            };
            d.serial = {
                let v = rng.pick(&serials);
                maybe(rng, v)
            };
            d.wwn = {
                let v = rng.pick(&wwns);
                maybe(rng, v)
            };
            d.wwn_with_extension = match (&d.wwn, rng.pick(&extensions)) {
                (Some(w), Some(e)) => Some(format!("{w}{}", e.trim_start_matches("0x"))),
                (w, None) => w.clone(),
                (None, _) => None,
            };
            d.wwn_vendor_extension = {
                let v = rng.pick(&extensions);
                maybe(rng, v)
            };
            d.hctl = {
                let v = rng.pick(&hctls);
                maybe(rng, v)
            };
            d.by_path = (0..rng.pick(&[1, 1, 1, 1, 1, 1, 1, 1, 0, 2]))
                .map(|_| rng.pick(&paths).to_string())
                .collect();
            d.rotational = rng.pick(&[Some(true), Some(false), Some(false), Some(true), None]);
            d.removable = Some(rng.chance(5));
            d.read_only = Some(rng.chance(2));
            if rng.chance(2) {
                d.mounts = vec!["/".into()];
            }
            d
        })
        .collect()
}

/// A hint value taken from one of the disks (so that hints match), or made up.
fn text_value(rng: &mut Rng, disks: &[Disk], hint: &str) -> String {
    let from_disk = rng.pick(disks);
    let value = text_of(&from_disk, hint).unwrap_or_else(|| "none".into());
    match rng.below(6) {
        0 => value.to_uppercase(),
        1 => format!("  {value} "),
        2 => "made-up".into(),
        _ => value,
    }
}

fn text_hint(rng: &mut Rng, disks: &[Disk], hint: &str) -> Value {
    if rng.chance(2) {
        return json!(rng.below(100));
    }
    let value = text_value(rng, disks, hint);
    let op = rng.pick(&[
        "", "", "", "", "s==", "s==", "s==", "s!=", "s!=", "s<", "s<=", "s>", "s>=", "<in>",
        "<in>", "<or>", "<or>", "<or>", "=", "<all-in>", "garbage",
    ]);
    let expr = match op {
        "" => value,
        "<in>" => {
            let part: String = value.trim().chars().take(1 + rng.below(4)).collect();
            format!("<in> {part}")
        }
        "<or>" => {
            let other = text_value(rng, disks, hint);
            let mut e = format!("<or> {value} <or> {other}");
            if rng.chance(30) {
                e.push_str(" <or>");
            }
            e
        }
        "garbage" => rng
            .pick(&["s==", "<in>", "<=", " ", "<or> <or> x"])
            .to_string(),
        op if rng.chance(20) => format!("{op}{}", value.trim()),
        op => format!("{op} {value}"),
    };
    let expr = match hint {
        "name" if rng.chance(15) => expr.replace("/dev/", ""),
        _ => expr,
    };
    json!(expr)
}

fn size_hint(rng: &mut Rng, disks: &[Disk]) -> Value {
    let from_disk = rng.pick(disks).size_bytes / GIB;
    let gib = match rng.below(5) {
        0 => 1 + rng.below(2000) as u64,
        _ => from_disk.max(1) + rng.pick(&[0, 0, 1]),
    };
    let op = rng.pick(&[
        "", "", "", "==", "==", "!=", "<", "<", "<=", ">", ">", ">=", ">=", ">=", "<or>", "s==",
        "=",
    ]);
    match op {
        "" if rng.chance(50) => json!(gib),
        "" => json!(gib.to_string()),
        "<or>" => json!(format!("<or> {gib} <or> {}", gib + 1)),
        op if rng.chance(10) => json!(format!("{op} zero")),
        op => json!(format!("{op} {gib}")),
    }
}

fn generated_case(rng: &mut Rng) -> Case {
    let disks = generated_disks(rng);
    let names = [
        "size",
        "size",
        "model",
        "model",
        "vendor",
        "serial",
        "serial",
        "wwn",
        "wwn_with_extension",
        "wwn_vendor_extension",
        "hctl",
        "by_path",
        "name",
        "name",
        "rotational",
    ];
    let mut hints = serde_json::Map::new();
    if !rng.chance(10) {
        for _ in 0..1 + rng.below(3) {
            let name = rng.pick(&names);
            let value = match name {
                "size" => size_hint(rng, &disks),
                "rotational" => rng.pick(&[
                    json!(true),
                    json!(false),
                    json!("yes"),
                    json!("0"),
                    json!(1),
                    json!("maybe"),
                ]),
                _ => text_hint(rng, &disks, name),
            };
            hints.insert(name.to_string(), value);
        }
        if rng.chance(2) {
            hints.insert("colour".into(), json!("red"));
        }
    }
    Case {
        disks,
        hints: Value::Object(hints),
    }
}

#[test]
fn plinth_chooses_as_ironic_does_but_where_a_documented_difference_applies() {
    let agreed = agreements();
    let documented = documented();
    let mut rng = Rng(0x0005_eed0_f120_1c00);
    let generated: Vec<Case> = (0..GENERATED).map(|_| generated_case(&mut rng)).collect();

    let mut all: Vec<Case> = agreed.clone();
    all.extend(documented.iter().map(|(_, c, _, _)| c.clone()));
    all.extend(generated.iter().cloned());
    let answers = ironic(&all);

    // Hand-written agreements.
    for (case, theirs) in agreed.iter().zip(&answers) {
        let ours = plinth(case);
        let same = match (&ours, theirs) {
            (Plinth::Chose(a), Ironic::Chose(b)) => a == b,
            (Plinth::Refused(_, stricter), Ironic::Failed(_)) => !stricter,
            _ => false,
        };
        assert!(same, "{}: Plinth {ours:?}, Ironic {theirs:?}", case.hints);
    }
    // Each documented difference, as documented.
    for ((what, case, want_theirs, want_ours), theirs) in
        documented.iter().zip(&answers[agreed.len()..])
    {
        match (want_theirs, theirs) {
            (Ironic::Failed(kind), Ironic::Failed(got)) => {
                assert!(got.starts_with(kind.as_str()), "{what}: Ironic {got}")
            }
            (want, got) => assert_eq!(want, got, "{what}: Ironic's answer"),
        }
        let ours = plinth(case);
        match (want_ours, &ours) {
            (Plinth::Refused(text, true), Plinth::Refused(got, true)) => {
                assert!(got.contains(text.as_str()), "{what}: {got}")
            }
            (want, got) => assert_eq!(want, got, "{what}: Plinth's answer"),
        }
        assert_ne!(
            format!("{ours:?}"),
            format!("{theirs:?}"),
            "{what}: no difference"
        );
    }
    // Generated cases: the same answer unless a documented difference applies.
    let (mut same, mut explained, mut refused_alike) = (0, 0, 0);
    let mut reasons: std::collections::BTreeMap<&str, usize> = Default::default();
    for (case, theirs) in generated
        .iter()
        .zip(&answers[agreed.len() + documented.len()..])
    {
        let ours = plinth(case);
        let agree = match (&ours, theirs) {
            (Plinth::Chose(a), Ironic::Chose(b)) => a == b,
            (Plinth::Refused(_, false), Ironic::Failed(_)) => {
                refused_alike += 1;
                true
            }
            _ => false,
        };
        if agree {
            same += 1;
            continue;
        }
        let why = differences(case);
        let stricter = matches!(ours, Plinth::Refused(_, true));
        assert!(
            stricter || !why.is_empty(),
            "Plinth {ours:?} and Ironic {theirs:?} differ with no documented reason:\nhints {}\ndisks {}",
            case.hints,
            serde_json::to_string(&case.disks).unwrap()
        );
        explained += 1;
        let first = if stricter {
            "refused as stricter"
        } else {
            why[0]
        };
        *reasons.entry(first).or_default() += 1;
    }
    println!(
        "{} generated cases: {same} answered alike ({refused_alike} of them refused by both), \
         {explained} differing where a documented difference applies: {reasons:?}",
        generated.len()
    );
    assert!(
        same * 4 >= generated.len() * 3,
        "too few generated cases answered alike to compare much: {same} of {}",
        generated.len()
    );
}
