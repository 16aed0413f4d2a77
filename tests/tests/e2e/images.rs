//! Booted images end to end, as an image builder makes them: a Debian root file system from
//! `packaging/make-image` (built once per run, cached under `target/`), the agent put in with `plinth-agent
//! image inject`, three nodes booted from that one image with `systemd-nspawn --boot`, each in a network
//! namespace of its own with a veth to the controller's bridge. They make their own keys at first boot,
//! are accepted, and deploy a graph through a two-group strategy: a shell task, `copy_files`, a puppet
//! run (puppet is in the image) and a reboot that really reboots them, with the deployment going on after
//! it. Then one node's image is replaced by a new one and the node rebooted: it keeps its identity and is
//! not discovered again. Needs root; everything is torn down at the end, also on failure.

use plinth_e2e::images::{base_rootfs, copy_tree, inject, make_image, Container, Scratch};
use plinth_e2e::netns::{require_root, unique, Bridge, Netns};
use plinth_e2e::*;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Long enough for a puppet run and a reboot on a busy two-core machine.
const LONG: Duration = Duration::from_secs(1200);

const STRATEGY: &str = r#"
schema: shipyard/DeploymentStrategy/v1
metadata: {name: two-groups}
data:
  groups:
    - name: first
      critical: true
      depends_on: []
      selectors: [{node_names: [plnode1]}]
      success_criteria: {minimum_successful_nodes: 1}
    - name: rest
      critical: true
      depends_on: [first]
      selectors: [{node_names: [plnode2, plnode3]}]
      success_criteria: {percent_successful_nodes: 100}
  phases: [{name: deploy, graph_type: deploy, timeout: 1200}]
"#;

const MANIFEST: &str =
    "file { '/etc/motd':\n  content => \"managed by plinth through puppet\\n\",\n}\n";

fn task(id: &str, kind: &str, requires: &[&str], parameters: Value) -> Value {
    json!({"id": id, "type": kind, "tags": ["*"], "requires": requires, "parameters": parameters})
}

fn graph() -> Value {
    json!({"deploy": {"tasks": [
        task("hello", "shell", &[], json!({
            "cmd": "cat /proc/sys/kernel/random/boot_id > /root/boot-before && hostname > /root/hello",
            "retries": 0, "timeout": 120})),
        task("manifest", "copy_files", &["hello"], json!({
            "files": [{"src": "site.pp", "dst": "/etc/plinth-demo/site.pp"}]})),
        task("motd", "puppet", &["manifest"], json!({
            "cwd": "/etc/plinth-demo", "puppet_manifest": "site.pp", "timeout": 900, "retries": 0})),
        task("reboot", "reboot", &["motd"], json!({"timeout": 900})),
        task("after-reboot", "shell", &["reboot"], json!({
            "cmd": "cat /proc/sys/kernel/random/boot_id > /root/boot-after", "retries": 0, "timeout": 120})),
    ]}})
}

fn node<'a>(nodes: &'a Value, name: &str) -> &'a Value {
    nodes
        .as_array()
        .and_then(|a| a.iter().find(|n| n["name"] == name))
        .unwrap_or_else(|| panic!("no node {name} in {nodes:#}"))
}

#[test]
fn three_nodes_from_one_image_deploy_reboot_and_keep_their_identity_across_a_new_image() {
    require_root("booting images");
    let base = base_rootfs();
    let u = unique(0);
    let bridge = Bridge::new(&format!("plbr{u}"), 0);
    // No auto-accept: the nodes come in discovered and an operator accepts them.
    let c = Controller::start_listening(&bridge.address, &[]);
    let key = c.public_key();
    let cert = c.cert_path().display().to_string();
    let files = c.data_dir().join("files");
    std::fs::create_dir_all(&files).unwrap();
    std::fs::write(files.join("site.pp"), MANIFEST).unwrap();

    // The image: the base, the agent injected; nothing node-specific in it.
    let work = Scratch::new("3G");
    let image = work.path().join("image-1");
    copy_tree(&base, &image);
    // The builder left an SSH host key in the tree (as installing openssh-server does): inject says so.
    std::fs::create_dir_all(image.join("etc/ssh")).unwrap();
    std::fs::write(image.join("etc/ssh/ssh_host_ed25519_key"), "builder's key").unwrap();
    let (out, err) = inject(&[
        "--root",
        &image.display().to_string(),
        "--controller",
        &c.url,
        "--controller-public-key",
        &key,
        "--controller-cert",
        &cert,
        "--tags",
        "web",
    ]);
    assert!(out.contains("/usr/bin/plinth-agent"), "{out}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("warning: node-specific file in the image: /etc/ssh/ssh_host_ed25519_key"),
        "{err}"
    );
    std::fs::remove_file(image.join("etc/ssh/ssh_host_ed25519_key")).unwrap();
    assert!(!image.join("etc/hostname").exists());
    assert_eq!(std::fs::read(image.join("etc/machine-id")).unwrap(), b"");
    assert!(!image.join("var/lib/plinth-agent/node.key").exists());

    let mut nodes: Vec<Container> = (1..=3u8)
        .map(|i| {
            let ns = Arc::new(Netns::new(&format!("pln{u}{i}")));
            bridge.plug(&ns, &format!("plv{u}{i}"), "pl0", Some(10 + i));
            Container::boot(&format!("plnode{i}"), work.path(), ns, &image)
        })
        .collect();
    let consoles = |nodes: &[Container]| {
        nodes
            .iter()
            .map(|n| format!("--- {} ---\n{}", n.name, tail(&n.console(), 40)))
            .collect::<Vec<_>>()
            .join("\n")
    };

    // Each node made its own key at first boot, on its persistent state, and came in discovered.
    let booted = Instant::now();
    let mut listed = Value::Null;
    let found = wait_for(LONG, || {
        listed = c.api.get("/nodes").unwrap_or(Value::Null);
        listed.as_array().is_some_and(|a| a.len() == 3)
    });
    assert!(
        found,
        "three nodes register: {listed:#}\n{}",
        consoles(&nodes)
    );
    eprintln!(
        "three nodes registered {:.1} s after their boot started",
        booted.elapsed().as_secs_f64()
    );
    let mut keys = Vec::new();
    for n in &nodes {
        let line = node(&listed, &n.name);
        assert_eq!(line["admission"], "discovered", "{line:#}");
        assert!(n.state().join("node.key").exists());
        keys.push(line["node_key"].as_str().unwrap().to_string());
    }
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 3, "three nodes, three keys: {listed:#}");
    let mut ids = Vec::new();
    for n in &nodes {
        let id = node(&listed, &n.name)["id"].as_u64().unwrap();
        c.api.ok("POST", &format!("/nodes/{id}/accept"), None);
        ids.push(id);
    }

    // Deploy through two groups: plnode1 first, then the other two.
    let cluster = c.api.cluster_with_graph("images", graph(), &ids);
    let created = c.api.raw(
        "POST",
        &format!("/clusters/{cluster}/strategies/"),
        Some(&c.api.token),
        Some(("application/yaml", STRATEGY.as_bytes().to_vec())),
    );
    assert_eq!(created.status, 201, "{}", created.body);
    let started = Instant::now();
    let dep = c.api.deploy(cluster, "strategy=two-groups");
    let report = c.api.wait_deployment(dep, LONG);
    assert_eq!(
        report["status"],
        "success",
        "{report:#}\n{}",
        consoles(&nodes)
    );
    eprintln!(
        "the deployment (shell, copy_files, puppet, reboot) took {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let order: Vec<&str> = report["order"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(order, ["first", "rest"], "{report:#}");
    for n in &nodes {
        for t in ["hello", "manifest", "motd", "reboot", "after-reboot"] {
            let line = task_line(&report, &n.name, t).unwrap_or_else(|| panic!("{t}: {report:#}"));
            assert_eq!(line["status"], "succeeded", "{} {t}: {line:#}", n.name);
        }
        // Puppet changed the node, the node really rebooted (systemd-nspawn ended with 133 and was
        // started again, with a new boot id), and the task after the reboot ran in the new boot.
        assert_eq!(
            read(&n.path("/etc/motd")).unwrap(),
            "managed by plinth through puppet\n"
        );
        assert_eq!(read(&n.path("/root/hello")).unwrap().trim(), n.name);
        assert_eq!(n.boots(), 2, "{} booted twice", n.name);
        let before = read(&n.path("/root/boot-before")).unwrap();
        let after = read(&n.path("/root/boot-after")).unwrap();
        assert_ne!(before, after, "{}: a new boot", n.name);
    }
    let motd = task_line(&report, "plnode1", "motd").unwrap();
    assert_eq!(motd["details"]["summary"]["changed"], 1, "{motd:#}");

    // A new image (the agent injected again, with a new tag) replaces plnode1's root file system; the
    // node boots from it, keeps its key on its persistent state, and is the same accepted node.
    // The new image is made in one command by make-image, from the same base.
    let image2 = work.path().join("image-2");
    let agent = bin("plinth-agent").display().to_string();
    make_image(&[
        "--from",
        &base.display().to_string(),
        "--agent",
        &agent,
        "--controller",
        &c.url,
        "--controller-public-key",
        &key,
        "--controller-cert",
        &cert,
        "--tags",
        "web,image-2",
        &image2.display().to_string(),
    ]);
    let key_before = std::fs::read(nodes[0].state().join("node.key")).unwrap();
    let line_before = node(&listed, "plnode1").clone();
    let replaced = Instant::now();
    nodes[0].replace_image(&image2);
    eprintln!(
        "plnode1 shut down and booted from the new image in {:.1} s",
        replaced.elapsed().as_secs_f64()
    );
    let mut now = Value::Null;
    let upgraded = wait_for(LONG, || {
        now = c.api.get("/nodes").unwrap_or(Value::Null);
        now.as_array().is_some_and(|a| {
            a.iter()
                .any(|n| n["name"] == "plnode1" && says_tag(n, "image-2"))
        })
    });
    assert!(
        upgraded,
        "plnode1 comes back from the new image: {now:#}\n{}",
        consoles(&nodes)
    );
    eprintln!(
        "plnode1 registered from the new image {:.1} s after the image was replaced",
        replaced.elapsed().as_secs_f64()
    );
    assert!(
        !nodes[0].path("/root/hello").exists(),
        "the old root file system is gone"
    );
    assert_eq!(now.as_array().unwrap().len(), 3, "no new node: {now:#}");
    let line = node(&now, "plnode1");
    assert_eq!(line["id"], line_before["id"]);
    assert_eq!(line["node_key"], line_before["node_key"]);
    assert_eq!(
        line["admission"], "accepted",
        "not discovered again: {line:#}"
    );
    assert_eq!(
        std::fs::read(nodes[0].state().join("node.key")).unwrap(),
        key_before
    );
}

/// Whether the node carries `tag`, or said it does when it registered again (an accepted node's word is
/// kept apart as `reported`; the operator's record stands).
fn says_tag(node: &Value, tag: &str) -> bool {
    [&node["tags"], &node["reported"]["tags"]]
        .iter()
        .any(|t| t.as_array().is_some_and(|t| t.iter().any(|t| t == tag)))
}

/// The newest Debian kernel and its initramfs in `/boot` (scripts/test.sh installs linux-image-amd64).
fn debian_kernel() -> (String, String) {
    let mut kernels: Vec<String> = std::fs::read_dir("/boot")
        .expect("/boot")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("vmlinuz-"))
        .collect();
    kernels.sort();
    let kernel = kernels
        .pop()
        .expect("a Debian kernel in /boot (apt-get install linux-image-amd64)");
    let version = kernel.trim_start_matches("vmlinuz-");
    let initrd = format!("/boot/initrd.img-{version}");
    assert!(
        std::path::Path::new(&initrd).exists(),
        "{initrd} is missing"
    );
    (format!("/boot/{kernel}"), initrd)
}

#[test]
#[ignore = "slow: boots a virtual machine under TCG; scripts/test.sh runs it with --ignored"]
fn slow_a_disk_image_boots_under_qemu_and_registers_from_the_kernel_command_line() {
    require_root("booting images");
    plinth_e2e::needs::qemu();
    let base = base_rootfs();
    let (kernel, initrd) = debian_kernel();
    let u = unique(9);
    let bridge = Bridge::new(&format!("plbq{u}"), 1);
    // Admission by the enrollment token alone: no auto-accept, no operator.
    let token = "enrol-7d1c2b";
    let c = Controller::start_listening(&bridge.address, &["--enrollment-token", token]);
    let work = Scratch::new("2G");

    // An ext4 disk image of the root file system; the agent injected into it with --disk, without the
    // controller's address, tags or token: the kernel command line gives them.
    let disk = work.path().join("disk.raw");
    make_image(&[
        "--from",
        &base.display().to_string(),
        "--no-agent",
        "--format",
        "ext4",
        &disk.display().to_string(),
    ]);
    let (out, _) = inject(&[
        "--disk",
        &disk.display().to_string(),
        "--controller-public-key",
        &c.public_key(),
        "--controller-cert",
        &c.cert_path().display().to_string(),
    ]);
    assert!(out.contains("/etc/plinth/agent.toml"), "{out}");

    // The network: a namespace holding a bridge with the machine's tap and a veth to the controller's
    // bridge.
    let ns = Netns::new(&format!("plq{u}"));
    bridge.plug(&ns, &format!("plvq{u}"), "uplink", None);
    for args in [
        vec!["link", "add", "br0", "type", "bridge"],
        vec!["link", "set", "br0", "up"],
        vec!["link", "set", "uplink", "master", "br0"],
        vec!["tuntap", "add", "tap0", "mode", "tap"],
        vec!["link", "set", "tap0", "master", "br0"],
        vec!["link", "set", "tap0", "up"],
    ] {
        let mut full = vec!["-n", ns.name.as_str()];
        full.extend(args);
        plinth_e2e::netns::ip(&full);
    }
    let address = bridge.host(50);
    let cmdline = format!(
        "root=/dev/vda rw console=ttyS0 net.ifnames=0 ip={address}:::255.255.255.0::eth0:off \
         plinth.controller={} plinth.tags=vm,qemu plinth.token={token} plinth.name=vm1",
        c.url
    );
    let console = work.path().join("console.log");
    let booted = Instant::now();
    let _vm = plinth_e2e::netns::Guarded::new(
        ns.command("qemu-system-x86_64")
            .args(["-accel", "tcg", "-m", "768", "-smp", "1", "-no-reboot"])
            .args(["-display", "none", "-monitor", "none"])
            .arg("-serial")
            .arg(format!("file:{}", console.display()))
            .args(["-kernel", &kernel, "-initrd", &initrd, "-append", &cmdline])
            .arg("-drive")
            .arg(format!("file={},format=raw,if=virtio", disk.display()))
            .args(["-netdev", "tap,id=n0,ifname=tap0,script=no,downscript=no"])
            .args(["-device", "virtio-net-pci,netdev=n0"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(work.path().join("qemu.err")).unwrap())
            .spawn()
            .expect("qemu starts"),
        Duration::from_secs(5),
    );
    let mut listed = Value::Null;
    let registered = wait_for(Duration::from_secs(900), || {
        listed = c.api.get("/nodes").unwrap_or(Value::Null);
        listed.as_array().is_some_and(|a| !a.is_empty())
    });
    let console_text = || {
        let text =
            String::from_utf8_lossy(&std::fs::read(&console).unwrap_or_default()).into_owned();
        let err = std::fs::read_to_string(work.path().join("qemu.err")).unwrap_or_default();
        format!("{}\nqemu: {err}", tail(&text, 60))
    };
    assert!(registered, "the machine registers: {}", console_text());
    eprintln!(
        "the machine registered {:.1} s after qemu started (TCG)",
        booted.elapsed().as_secs_f64()
    );
    let line = node(&listed, "vm1");
    assert_eq!(
        line["admission"], "accepted",
        "the token admits it: {line:#}"
    );
    let tags: Vec<&str> = line["tags"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(tags, ["vm", "qemu"], "{line:#}");
    // The node reports the interface the kernel command line's ip= named as the one it booted from.
    let shown = c.api.get(&format!("/nodes/{}", line["id"])).unwrap();
    let nics = shown["facts"]["nics"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        nics.iter().any(|n| n["name"] == "eth0" && n["pxe"] == true),
        "{shown:#}"
    );
}

#[test]
fn a_failing_test_leaves_no_container_namespace_bridge_or_mount_behind() {
    require_root("booting images");
    let base = base_rootfs();
    let u = unique(5);
    let names: std::sync::Mutex<Option<(String, String, std::path::PathBuf)>> = Default::default();
    let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let bridge = Bridge::new(&format!("plbf{u}"), 2);
        let work = Scratch::new("1G");
        let ns = Arc::new(Netns::new(&format!("plf{u}")));
        bridge.plug(&ns, &format!("plvf{u}"), "pl0", Some(10));
        *names.lock().unwrap() = Some((
            bridge.name.clone(),
            ns.name.clone(),
            work.path().to_path_buf(),
        ));
        let image = work.path().join("image");
        copy_tree(&base, &image);
        let node = Container::boot("plfail", work.path(), ns, &image);
        let up = wait_for(Duration::from_secs(300), || {
            node.console().contains("Reached target")
        });
        assert!(up, "the node boots: {}", node.console());
        panic!("a test fails while its node runs");
    }));
    assert!(failed.is_err(), "the test body failed");
    let (bridge, ns, scratch) = names.lock().unwrap().clone().expect("the names");
    let netns = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&netns.stdout).contains(&ns),
        "the namespace is gone"
    );
    let link = std::process::Command::new("ip")
        .args(["link", "show", &bridge])
        .output()
        .unwrap();
    assert!(!link.status.success(), "the bridge is gone");
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    assert!(
        !mounts.contains(&scratch.display().to_string()),
        "nothing stays mounted: {mounts}"
    );
    let ps = std::process::Command::new("ps")
        .args(["-eo", "args"])
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&ps.stdout).contains("--machine=plfail"),
        "the container is stopped"
    );
}

#[test]
fn make_image_refuses_bad_arguments_naming_what_is_wrong() {
    require_root("make-image");
    let run = |args: &[&str]| {
        let out = std::process::Command::new(
            plinth_e2e::images::workspace().join("packaging/make-image"),
        )
        .args(args)
        .output()
        .expect("make-image runs");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, err) = run(&["--format", "zip", "out"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("--format is dir, ext4, qcow2, netboot or disk, not zip"),
        "{err}"
    );
    let (code, err) = run(&["--format", "disk", "--disk-format", "vhd", "out"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("--disk-format is raw or qcow2, not vhd"),
        "{err}"
    );
    let (code, err) = run(&["--no-agent"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("name OUT"), "{err}");
    let empty = tempfile::tempdir().unwrap();
    let (code, err) = run(&[
        "--no-agent",
        "--from",
        &empty.path().display().to_string(),
        &empty.path().join("out").display().to_string(),
    ]);
    assert_eq!(code, Some(2));
    assert!(err.contains("is not a root file system tree"), "{err}");
    // A disk needs a kernel in the tree.
    let tree = empty.path().join("tree");
    std::fs::create_dir_all(tree.join("etc")).unwrap();
    std::fs::create_dir_all(tree.join("lib/systemd")).unwrap();
    std::fs::write(tree.join("etc/os-release"), "ID=debian\n").unwrap();
    std::fs::write(tree.join("lib/systemd/systemd"), "").unwrap();
    std::fs::set_permissions(
        tree.join("lib/systemd/systemd"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let (code, err) = run(&[
        "--no-agent",
        "--from",
        &tree.display().to_string(),
        "--format",
        "disk",
        &empty.path().join("disk.raw").display().to_string(),
    ]);
    assert_eq!(code, Some(2));
    assert!(err.contains("the tree has no kernel in /boot"), "{err}");
    assert!(!empty.path().join("disk.raw").exists());
    let (code, err) = run(&["--bogus", "out"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("unknown option --bogus"), "{err}");
}
