//! `plinth-agent image inject` on a root file system tree built here: the injected binary runs, the
//! unit is enabled, and bad input exits 2 naming what is wrong, writing nothing.

use std::path::Path;
use std::process::Command;

fn agent() -> Command {
    Command::new(env!("CARGO_BIN_EXE_plinth-agent"))
}

fn tree(dir: &Path) -> std::path::PathBuf {
    let root = dir.join("rootfs");
    for d in [
        "etc/systemd/system",
        "usr/bin",
        "lib/systemd/system",
        "var/lib",
    ] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    root
}

#[test]
fn inject_into_a_tree_then_the_injected_agent_runs() {
    let dir = tempfile::tempdir().unwrap();
    let root = tree(dir.path());
    let cert = dir.path().join("controller.pem");
    let c = rcgen::generate_simple_self_signed(vec!["ctl".to_string()]).unwrap();
    std::fs::write(&cert, c.cert.pem()).unwrap();
    let key = plinth_common::signing::public_key_to_text(
        &plinth_common::signing::signing_key_from_seed([9; 32]).verifying_key(),
    );
    let out = agent()
        .args(["image", "inject", "--root"])
        .arg(&root)
        .args([
            "--controller",
            "https://10.20.0.2:7443,https://10.20.0.3:7443",
            "--controller-public-key",
            &key,
        ])
        .arg("--controller-cert")
        .arg(&cert)
        .args(["--tags", "compute,ssd"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(listed.contains("/etc/systemd/system/multi-user.target.wants/plinth-agent.service"));

    let injected = Command::new(root.join("usr/bin/plinth-agent"))
        .arg("--version")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&injected.stdout).trim(),
        format!("plinth-agent {}", env!("CARGO_PKG_VERSION"))
    );
    let config = std::fs::read_to_string(root.join("etc/plinth/agent.toml")).unwrap();
    assert!(config.contains("tags = [\"compute\", \"ssd\"]"), "{config}");
    assert!(
        config.contains("controllers = [\"https://10.20.0.2:7443\", \"https://10.20.0.3:7443\"]"),
        "{config}"
    );
    assert!(
        config.contains("controller_cert = \"/etc/plinth/controller.pem\""),
        "{config}"
    );
}

#[test]
fn bad_input_exits_2_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = tree(dir.path());
    let out = agent()
        .args(["image", "inject", "--root"])
        .arg(&root)
        .args([
            "--controller",
            "http://plain",
            "--controller-public-key",
            "AAAA",
        ])
        .args(["--controller-cert", "/nonexistent.pem"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("controller"), "{err}");
    assert!(!root.join("usr/bin/plinth-agent").exists());
}
