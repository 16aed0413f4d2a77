//! Provisioning end to end, with a real virtual machine: it has three empty disks of different sizes
//! and serials and boots from the network first, on a network of the test's own (a bridge with the
//! controller on its address, the machine's NIC on a tap, dnsmasq in a namespace, configured by
//! `plinth-controller netboot dnsmasq-config`; all removed on every path). Its firmware's iPXE gets
//! an address and the boot script from dnsmasq, boots the discovery image from the controller's boot
//! listener, and the agent registers as its enrolled name. Then, from the discovery image:
//! - a provision task whose hints match no disk fails, naming every disk and why, and writes nothing;
//! - a provision task whose image is no disk image fails before writing;
//! - Fuel's provision graph from the corpus, as written, with the cluster's `provision` settings:
//!   the master's tasks (the image build, fuel-agent's input) go to the agent on the controller's
//!   host (`--master-node`), and the node's `system_provision` writes a real Debian image (qcow2 with
//!   zstd-compressed clusters, served by the controller, its digest sealed into the signed list) onto
//!   the disk the hints choose, grows its root, and reboots; the installed system's agent, with the
//!   same key, reports the task done, and the graph's netboot switch and reboot follow.
//!
//! The node is then `provisioned` (which image, which disk), and a deployment runs a puppet task and a
//! shell task in the installed system, whose root is on the hinted disk. Last, Fuel's deletion graph
//! from the corpus, as written, erases the disk and sends the node back to the discovery image, where
//! it registers again as the same node with a new key. Needs root (to build the images and the
//! network), qemu and dnsmasq; KVM when it works here, else TCG.

use plinth_e2e::images::{disk_image, netboot_image, Scratch};
use plinth_e2e::netns::{require_root, unique, Bridge, Dnsmasq, Guarded, Netns, Tap};
use plinth_e2e::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Long enough for a TCG boot on a busy two-core machine.
const BOOT: Duration = Duration::from_secs(900);

const MAC: &str = "52:54:00:9e:70:35";

/// The machine's disks: name, size, serial. The hints choose the third; the default would take the
/// second (the smallest of at least 4 GiB).
const DISKS: [(&str, &str, &str); 3] = [
    ("small", "2G", "PL-SMALL-1"),
    ("data", "6G", "PL-DATA-2"),
    ("root", "8G", "PL-ROOT-3"),
];

/// A machine booting from the network first, then its disks; killed on drop.
struct Vm {
    console: PathBuf,
    _qemu: Guarded,
    started: Instant,
}

impl Vm {
    /// Boots the machine with its NIC on `tap` (the test's bridge): its firmware's iPXE asks dnsmasq
    /// for an address and a boot file.
    fn boot(home: &Path, accel: &str, tap: &str) -> Vm {
        let console = home.join("vm.console");
        let mut qemu = Command::new(plinth_e2e::needs::qemu());
        qemu.args(["-accel", accel, "-m", "2048", "-smp", "2"])
            .args(["-display", "none", "-monitor", "none"])
            .arg("-serial")
            .arg(format!("file:{}", console.display()))
            .args(["-boot", "order=nc"])
            .args([
                "-netdev",
                &format!("tap,id=n0,ifname={tap},script=no,downscript=no"),
            ])
            .args([
                "-device",
                &format!("virtio-net-pci,netdev=n0,mac={MAC},bootindex=0"),
            ]);
        // A BIOS boots its first hard disk only (SeaBIOS and real firmware alike): the firmware's disk
        // order puts the disk the hints choose first, as an operator sets a server's BIOS. The kernel
        // names the disks in the order they sit on the bus, so it is still the third (vdc).
        let order = [2, 3, 1];
        for (i, (name, _, serial)) in DISKS.iter().enumerate() {
            let file = home.join(format!("{name}.img"));
            qemu.args([
                "-drive",
                &format!(
                    "file={},format=raw,if=none,id=d{i},cache=unsafe",
                    file.display()
                ),
            ])
            .args([
                "-device",
                &format!(
                    "virtio-blk-pci,drive=d{i},serial={serial},bootindex={}",
                    order[i]
                ),
            ]);
        }
        qemu.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(home.join("vm.qemu.err")).unwrap());
        let child = qemu.spawn().expect("qemu starts");
        Vm {
            console,
            _qemu: Guarded::new(child, Duration::from_secs(5)),
            started: Instant::now(),
        }
    }

    fn tail(&self, lines: usize) -> String {
        let text = std::fs::read(&self.console).unwrap_or_default();
        tail(&String::from_utf8_lossy(&text), lines)
    }
}

fn provision_task(id: &str, image: &str, hints: Value) -> Value {
    json!({"id": id, "type": "provision", "tags": ["*"], "parameters": {
        "image": image, "root_device": hints, "grow_last_partition": true,
        "ssh_authorized_keys": ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGq6UCwHfBlJ2Y3mBpF7s5O8qv0ZQ1f5c1n9Wc3yJ5Ul plinth@test"],
        "timeout": 2400}})
}

/// The node's record.
fn node(c: &Controller, id: u64) -> Value {
    c.api.get(&format!("/nodes/{id}")).expect("the node")
}

#[test]
#[ignore = "slow: builds a discovery and a disk image and provisions a VM under qemu; scripts/test.sh runs it with --ignored"]
fn slow_a_vm_is_provisioned_from_its_discovery_image_runs_puppet_installed_and_is_erased() {
    require_root("building images");
    plinth_e2e::needs::qemu();
    let work = Scratch::new("12G");
    let netboot = work.path().join("netboot");
    let built = Instant::now();
    netboot_image(&netboot);
    eprintln!(
        "built the discovery image in {:.1} s",
        built.elapsed().as_secs_f64()
    );

    // The controller, its boot listener, and the files it serves: the image, and a file that is no
    // disk image.
    let config = work.path().join("controller.toml");
    std::fs::write(&config, "").unwrap();
    let token = "provision-enrol-7c2d";
    // The network: a bridge (the controller on its address, the machine's NIC on it through a tap)
    // and a namespace plugged into it for dnsmasq.
    let dnsmasq_bin = crate::power::bmc_support::program("dnsmasq", "dnsmasq-base");
    let u = unique(4);
    let bridge = Bridge::new(&format!("plpv{u}"), 4);
    let ns = Netns::new(&format!("plinth-pv-{u}"));
    let inner = format!("plvi{u}");
    bridge.plug(&ns, &format!("plvo{u}"), &inner, Some(2));
    let tap = Tap::new(&format!("plvt{u}"), &bridge);
    let mut c = Controller::start_listening(
        &bridge.address,
        &[
            "--enrollment-token",
            token,
            "--master-node",
            "ctl",
            "--config",
            config.to_str().unwrap(),
        ],
    );
    // The agent on the controller's own host, which takes the tasks Fuel's graphs place on `master`.
    let _master = Agent::start_with(
        &c,
        "ctl",
        &[],
        &c.public_key(),
        &format!("enrollment_token = \"{token}\""),
    );
    let files = c.data_dir().join("files/images");
    std::fs::create_dir_all(&files).unwrap();
    let built = Instant::now();
    let raw = work.path().join("debian.raw");
    disk_image(&raw);
    let status = Command::new("qemu-img")
        .args([
            "convert",
            "-f",
            "raw",
            "-O",
            "qcow2",
            "-c",
            "-o",
            "compression_type=zstd",
        ])
        .arg(&raw)
        .arg(files.join("debian.qcow2"))
        .status()
        .expect("qemu-img runs");
    assert!(status.success());
    std::fs::remove_file(&raw).unwrap();
    std::fs::write(
        files.join("not-an-image.html"),
        "<html>404 Not Found</html>\n",
    )
    .unwrap();
    eprintln!(
        "built the disk image in {:.1} s",
        built.elapsed().as_secs_f64()
    );

    let boot_port = crate::netboot::with_boot_listener(
        &mut c,
        &config,
        &netboot,
        &bridge.address,
        &bridge.address,
    );
    let dnsmasq = Dnsmasq::for_boot(
        &c,
        &ns,
        &dnsmasq_bin,
        (&bridge, &inner),
        &format!("http://{}:{boot_port}", bridge.address),
        work.path(),
    );
    let enrollment = format!("nodes:\n  - name: pv-01\n    macs: [\"{MAC}\"]\n    rack: r1\n");
    let a = c.api.raw(
        "POST",
        "/enrollments",
        Some(&c.api.token),
        Some(("application/yaml", enrollment.into_bytes())),
    );
    assert_eq!(a.status, 201, "{}", a.body);

    for (name, size, _) in DISKS {
        let out = Command::new("qemu-img")
            .args(["create", "-q", "-f", "raw"])
            .arg(work.path().join(format!("{name}.img")))
            .arg(size)
            .status()
            .unwrap();
        assert!(out.success());
    }
    let accel = crate::netboot::accelerator(&netboot.join("vmlinuz"), work.path());
    let vm = Vm::boot(work.path(), accel, &tap.name);
    let mut id = 0;
    let registered = wait_for(BOOT, || {
        id = c
            .api
            .node_ids()
            .iter()
            .find(|(n, _)| n == "pv-01")
            .map_or(0, |(_, id)| *id);
        id != 0
    });
    assert!(
        registered,
        "the machine registers: {}\ndnsmasq: {}",
        vm.tail(80),
        dnsmasq.said()
    );
    eprintln!(
        "the discovery image registered {:.1} s after power-on ({accel})",
        vm.started.elapsed().as_secs_f64()
    );
    let discovered = node(&c, id);
    let key = discovered["node_key"].clone();
    let disks = discovered["facts"]["disks"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for (_, _, serial) in DISKS {
        assert!(
            disks.iter().any(|d| d["serial"] == serial),
            "its facts show the disk {serial}: {disks:#?}"
        );
    }

    let graphs = json!({
        "unmatched": {"tasks": [provision_task("provision", "images/debian.qcow2", json!({"serial": "NO-SUCH-DISK"}))]},
        "bad-image": {"tasks": [provision_task("provision", "images/not-an-image.html", json!({"serial": "PL-ROOT-3"}))]},
        "provision": {"tasks": fuel_graph("provision")},
        "default": {"tasks": [
            {"id": "manifest", "type": "upload_file", "tags": ["*"], "parameters": {
                "path": "/root/motd.pp",
                "data": "file { '/etc/motd': content => \"provisioned by Plinth\\n\" }\n"}},
            {"id": "motd", "type": "puppet", "tags": ["*"], "requires": ["manifest"], "parameters": {
                "puppet_manifest": "/root/motd.pp", "cwd": "/", "timeout": 900}},
            json!({"id": "where", "type": "shell", "tags": ["*"], "requires": ["motd"], "parameters": {"timeout": 120, "cmd": "findmnt -no SOURCE /; cat /etc/hostname; cat /etc/motd; df -B1 --output=size / | tail -1"}}),
        ]},
        "deletion": {"tasks": fuel_graph("deletion")},
    });
    // Fuel's deletion graph places its tasks by role (`/.*/`): the node has one.
    let release = c.api.ok(
        "POST",
        "/releases",
        Some(
            &json!({"name": "provision", "version": "1", "graphs": graphs,
            "roles_metadata": {"compute": {"name": "Compute"}}}),
        ),
    );
    let cluster = c.api.ok(
        "POST",
        "/clusters",
        Some(&json!({"name": "provision", "release_id": release["id"]})),
    )["id"]
        .as_u64()
        .expect("the cluster's id");
    c.api.ok(
        "PUT",
        &format!("/clusters/{cluster}/nodes"),
        Some(&json!({"nodes": [{"id": id, "roles": ["compute"]}]})),
    );
    // What Fuel's `system_provision` takes (`$.provision.*`), as the cluster's settings.
    let settings = provision_task(
        "",
        "images/debian.qcow2",
        json!({"serial": "s== PL-ROOT-3", "size": ">= 7"}),
    )["parameters"]
        .as_object()
        .expect("parameters")
        .iter()
        .map(|(k, v)| (k.clone(), json!({ "value": v })))
        .collect::<serde_json::Map<_, _>>();
    c.api.ok(
        "PATCH",
        &format!("/clusters/{cluster}/attributes"),
        Some(&json!({"editable": {"provision": settings}})),
    );

    // Hints that match no disk: the task fails, naming the disks and why, before writing anything.
    let dep = c.api.deploy(cluster, "graph_type=unmatched");
    let report = c.api.wait_deployment(dep, BOOT);
    assert_eq!(report["status"], "failed", "{report:#}");
    let line = task_line(&report, "pv-01", "provision").expect("the task's line");
    let message = line["message"].as_str().unwrap_or_default();
    for (_, _, serial) in DISKS {
        assert!(
            message.contains(serial) || message.contains("vd"),
            "{message}"
        );
    }
    assert!(message.contains("NO-SUCH-DISK"), "{message}");

    // A file that is no disk image: refused by its bytes, nothing written.
    let dep = c.api.deploy(cluster, "graph_type=bad-image");
    let report = c.api.wait_deployment(dep, BOOT);
    assert_eq!(report["status"], "failed", "{report:#}");
    let line = task_line(&report, "pv-01", "provision").expect("the task's line");
    let message = line["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("format") || message.contains("image"),
        "{message}"
    );
    assert!(
        message.contains("nothing was written") || !message.contains("wiped"),
        "{message}"
    );

    // The real image, onto the hinted disk; the task ends in the installed system.
    let started = Instant::now();
    let dep = c.api.deploy(cluster, "graph_type=provision");
    let provisioning = wait_for(BOOT, || node(&c, id)["status"] == "provisioning");
    assert!(
        provisioning,
        "the node shows it is being provisioned: {}",
        vm.tail(40)
    );
    let report = c.api.wait_deployment(dep, BOOT * 2);
    assert_eq!(report["status"], "success", "{report:#}\n{}", vm.tail(80));
    eprintln!(
        "provisioned and back in the installed system in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let line = task_line(&report, "pv-01", "system_provision").expect("the task's line");
    let details = &line["details"]["provision"];
    eprintln!(
        "steps: image written in {:.1} s ({} bytes written, {} zeroed); reboot asked to the installed \
         system's agent back: {:.1} s",
        details["write_seconds"].as_f64().unwrap_or(0.0),
        details["bytes_written"],
        details["bytes_zeroed"],
        line["details"]["seconds"].as_f64().unwrap_or(0.0),
    );
    assert_eq!(details["disk"], "/dev/vdc", "{line:#}");
    assert_eq!(details["format"], "qcow2", "{line:#}");
    for (node, task, status) in [
        ("ctl", "build_deploy_image", "skipped"),
        ("ctl", "upload_provision_info_master", "skipped"),
        ("pv-01", "move_to_bootstrap", "succeeded"),
        ("pv-01", "cobbler_disable_netboot", "succeeded"),
        ("pv-01", "node_reboot", "succeeded"),
    ] {
        assert_eq!(
            task_line(&report, node, task).map(|t| t["status"].clone()),
            Some(json!(status)),
            "{node}: {task}: {report:#}"
        );
    }
    let after = node(&c, id);
    assert_eq!(after["node_key"], key, "the same key: {after:#}");
    assert_eq!(after["status"], "provisioned", "{after:#}");
    let record = &after["provisioned"];
    assert_eq!(record["image"], "images/debian.qcow2", "{after:#}");
    assert_eq!(record["disk"], "/dev/vdc", "{after:#}");
    assert_eq!(record["disk_serial"], "PL-ROOT-3", "{after:#}");
    assert_eq!(
        after["admission"], "accepted",
        "no new admission: {after:#}"
    );

    // The installed system runs puppet; its root is on the hinted disk, grown to the disk's size.
    let dep = c.api.deploy(cluster, "graph_type=default");
    let report = c.api.wait_deployment(dep, BOOT);
    assert_eq!(report["status"], "success", "{report:#}\n{}", vm.tail(60));
    let out = task_line(&report, "pv-01", "where").expect("where")["stdout_tail"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(out.contains("/dev/vdc"), "{out}");
    assert!(
        out.contains("pv-01"),
        "the host name the controller knows: {out}"
    );
    assert!(out.contains("provisioned by Plinth"), "{out}");
    let size: u64 = out
        .lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or(0);
    assert!(
        size > 6 << 30,
        "the root file system was grown to the 8 GiB disk: {out}"
    );
    assert_eq!(node(&c, id)["status"], "ready");

    // Fuel's deletion graph, as written: the disk is erased and the node boots its discovery image
    // again, registering as the same node with a new key.
    let dep = c.api.deploy(cluster, "graph_type=deletion");
    let report = c.api.wait_deployment(dep, BOOT);
    assert_eq!(report["status"], "success", "{report:#}\n{}", vm.tail(60));
    let erase = task_line(&report, "pv-01", "node_erase").expect("node_erase");
    assert!(
        erase["message"]
            .as_str()
            .unwrap_or_default()
            .contains("/dev/vdc"),
        "{erase:#}"
    );
    let back = wait_for(BOOT, || {
        let n = node(&c, id);
        n["node_key"] != key && n["facts"]["os"]["id"] == "debian"
    });
    assert!(
        back,
        "the node comes back in its discovery image: {}",
        vm.tail(80)
    );
    let facts = node(&c, id)["facts"].clone();
    let root = facts["disks"]
        .as_array()
        .and_then(|d| d.iter().find(|d| d["serial"] == "PL-ROOT-3").cloned())
        .unwrap_or_default();
    assert!(
        root["mounts"].as_array().is_none_or(|m| m.is_empty()),
        "{root:#}"
    );
}

/// A graph of Fuel's library in the corpus, as JSON tasks.
fn fuel_graph(name: &str) -> Value {
    let path = corpus().join(format!("fuel-library/graphs/{name}/tasks.yaml"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml_ng::from_str(&text).expect("the corpus's YAML")
}

fn corpus() -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/corpus")).to_path_buf()
}
