//! The Debian packages: `packaging/build-debs.sh` builds them from the binaries this workspace built, and
//! they install into a throwaway root (`dpkg --root`, maintainer scripts run without chroot under
//! `DPKG_ROOT`) with their binaries, units enabled, conffiles, the controller's system user and data
//! directories owned right; the installed binaries run; a purge removes the data.

use plinth_e2e::*;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

fn top() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Builds the packages; returns their paths.
fn build(out: &Path) -> Vec<PathBuf> {
    let o = Command::new(top().join("packaging/build-debs.sh"))
        .arg(bin_dir())
        .arg(out)
        .env("DEB_COMPRESSION", "none")
        .output()
        .expect("build-debs.sh runs");
    assert!(
        o.status.success(),
        "build-debs.sh failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let debs: Vec<PathBuf> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(PathBuf::from)
        .collect();
    assert_eq!(debs.len(), 2, "{debs:?}");
    debs
}

/// An empty root with what dpkg and useradd need.
fn throwaway_root(root: &Path) {
    for d in ["var/lib/dpkg/info", "var/lib/dpkg/updates", "etc"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    for (file, text) in [
        ("var/lib/dpkg/status", ""),
        ("var/lib/dpkg/available", ""),
        ("etc/passwd", "root:x:0:0:root:/root:/bin/sh\n"),
        ("etc/group", "root:x:0:\n"),
        ("etc/shadow", "root:*:19000:0:99999:7:::\n"),
        ("etc/gshadow", "root:*::\n"),
    ] {
        std::fs::write(root.join(file), text).unwrap();
    }
}

fn dpkg(root: &Path, args: &[&str]) -> std::process::Output {
    let out = Command::new("dpkg")
        .arg(format!("--root={}", root.display()))
        .args([
            "--force-script-chrootless",
            "--force-not-root",
            "--force-depends",
            "--log=/dev/null",
        ])
        .args(args)
        .output()
        .expect("dpkg runs");
    assert!(
        out.status.success(),
        "dpkg {args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn version_of(binary: &Path) -> String {
    let out = Command::new(binary)
        .arg("--version")
        .output()
        .unwrap_or_else(|e| panic!("{} runs: {e}", binary.display()));
    assert!(
        out.status.success(),
        "{} --version failed",
        binary.display()
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn packages_install_into_a_throwaway_root_and_their_binaries_run() {
    let tmp = tempfile::tempdir().unwrap();
    let debs = build(&tmp.path().join("out"));
    let root = tmp.path().join("root");
    throwaway_root(&root);
    let mut args = vec!["-i"];
    let paths: Vec<String> = debs.iter().map(|d| d.display().to_string()).collect();
    args.extend(paths.iter().map(String::as_str));
    dpkg(&root, &args);

    let version = env!("CARGO_PKG_VERSION");
    for (bin, name) in [
        ("usr/bin/plinth-agent", "plinth-agent"),
        ("usr/bin/plinth-controller", "plinth-controller"),
        ("usr/bin/plinthctl", "plinthctl"),
    ] {
        assert_eq!(version_of(&root.join(bin)), format!("{name} {version}"));
    }

    // Each binary's man page and shell completions, made by the binary itself.
    for name in ["plinth-agent", "plinth-controller", "plinthctl"] {
        let man = root.join(format!("usr/share/man/man1/{name}.1.gz"));
        let page = Command::new("zcat").arg(&man).output().expect("zcat runs");
        let page = String::from_utf8_lossy(&page.stdout);
        assert!(
            page.contains(&format!(".TH {name}")),
            "{name}'s man page: {page}"
        );
        for completion in [
            format!("usr/share/bash-completion/completions/{name}"),
            format!("usr/share/zsh/vendor-completions/_{name}"),
            format!("usr/share/fish/vendor_completions.d/{name}.fish"),
        ] {
            let text = std::fs::read_to_string(root.join(&completion)).unwrap_or_default();
            assert!(text.contains(name), "{completion}: {text}");
        }
    }
    let page = Command::new("zcat")
        .arg(root.join("usr/share/man/man1/plinthctl.1.gz"))
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&page.stdout).contains("controller"),
        "plinthctl's page names its options"
    );
    // bash completes plinthctl's commands, and a command's options, from the installed script.
    let complete = |words: &str| {
        let script = format!(
            "source {}; COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); \
             _plinthctl plinthctl \"${{COMP_WORDS[-1]}}\" \"${{COMP_WORDS[-2]}}\"; \
             printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            root.join("usr/share/bash-completion/completions/plinthctl")
                .display()
        );
        let out = Command::new("bash").args(["-c", &script]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let commands = complete("plinthctl ''");
    assert!(
        commands.lines().any(|l| l == "nodes") && commands.lines().any(|l| l == "deploy"),
        "{commands}"
    );
    let options = complete("plinthctl nodes list --to");
    assert!(options.lines().any(|l| l == "--token"), "{options}");

    // The controller's system user, and its data directory owned by it, private.
    let passwd = std::fs::read_to_string(root.join("etc/passwd")).unwrap();
    let plinth = passwd
        .lines()
        .find(|l| l.starts_with("plinth:"))
        .unwrap_or_else(|| panic!("no plinth user in {passwd}"));
    let uid: u32 = plinth.split(':').nth(2).unwrap().parse().unwrap();
    assert_ne!(uid, 0);
    assert!(plinth.ends_with(":/usr/sbin/nologin"), "{plinth}");
    let data = std::fs::metadata(root.join("var/lib/plinth-controller")).unwrap();
    assert_eq!((data.uid(), data.mode() & 0o777), (uid, 0o700));
    let agent_state = std::fs::metadata(root.join("var/lib/plinth-agent")).unwrap();
    assert_eq!((agent_state.uid(), agent_state.mode() & 0o777), (0, 0o700));
    // The controller's configuration is readable by its group only.
    let conf = std::fs::metadata(root.join("etc/plinth/controller.toml")).unwrap();
    assert_eq!(conf.permissions().mode() & 0o777, 0o640);

    // Units installed and enabled.
    for unit in ["plinth-agent.service", "plinth-controller.service"] {
        assert!(root.join("lib/systemd/system").join(unit).exists());
        let wants = root
            .join("etc/systemd/system/multi-user.target.wants")
            .join(unit);
        assert!(
            std::fs::symlink_metadata(&wants).is_ok(),
            "{unit} is not enabled"
        );
    }

    // Default configurations are conffiles: an edited one survives an upgrade.
    let status = std::fs::read_to_string(root.join("var/lib/dpkg/status")).unwrap();
    assert!(status.contains(" /etc/plinth/agent.toml "), "{status}");
    assert!(status.contains(" /etc/plinth/controller.toml "), "{status}");
    std::fs::write(
        root.join("etc/plinth/agent.toml"),
        "# edited by the operator\n",
    )
    .unwrap();
    let agent_deb = paths.iter().find(|p| p.contains("plinth-agent_")).unwrap();
    let out = dpkg(&root, &["--force-confold", "-i", agent_deb]);
    assert_eq!(
        std::fs::read_to_string(root.join("etc/plinth/agent.toml")).unwrap(),
        "# edited by the operator\n",
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    // A purge removes the agent's state.
    std::fs::write(root.join("var/lib/plinth-agent/node.key"), "key").unwrap();
    dpkg(&root, &["--purge", "plinth-agent"]);
    assert!(!root.join("var/lib/plinth-agent").exists());
    assert!(!root.join("usr/bin/plinth-agent").exists());
}
