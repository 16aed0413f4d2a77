//! Backups taken while the controller serves, restored into a new data directory: the deployment that
//! was running goes on with real agents, and no result acknowledged before the backup is lost. What a
//! backup leaves out (secrets, unless asked) and what a restore refuses (a wrong passphrase, a data
//! directory in use) are checked too.

use plinth_e2e::*;
use serde_json::json;
use std::time::Duration;

const LONG: Duration = Duration::from_secs(120);

#[test]
fn a_backup_taken_mid_deployment_restores_and_the_deployment_goes_on() {
    let mut c = Controller::start();
    let agents = [Agent::start(&c, "bk-1", &[]), Agent::start(&c, "bk-2", &[])];
    let ids: Vec<u64> = c.api.wait_nodes(2).iter().map(|(_, id)| *id).collect();
    std::fs::create_dir_all(c.data_dir().join("files")).unwrap();
    std::fs::write(c.data_dir().join("files/motd"), "served file\n").unwrap();
    // Both agents run on this host: they copy the served file to one place.
    let copies = tempfile::tempdir().unwrap();
    let copied = copies.path().join("motd");
    let graph = json!({"default": {"tasks": [
        shell("first", &["*"], "echo first > first.out"),
        {"id": "hold", "type": "shell", "tags": ["*"], "requires": ["first"],
         "parameters": {"cmd": "touch holding; while [ ! -e go ]; do sleep 0.1; done", "timeout": 600, "retries": 0}},
        {"id": "after", "type": "copy_files", "tags": ["*"], "requires": ["hold"],
         "parameters": {"files": [{"src": "motd", "dst": copied}]}},
    ]}});
    let cid = c.api.cluster_with_graph("backup", graph, &ids);
    let dep = c.api.deploy(cid, "");
    for a in &agents {
        let holding = a.work().join("holding");
        wait_until("the agents to hold", LONG, || holding.exists());
    }
    wait_until("both `first` results to be acknowledged", LONG, || {
        let report = c.api.get(&format!("/deployments/{dep}")).unwrap();
        agents.iter().all(|a| {
            task_line(&report, &a.name, "first").is_some_and(|t| t["status"] == "succeeded")
        })
    });

    let dir = tempfile::tempdir().unwrap();
    let passphrase = dir.path().join("passphrase");
    std::fs::write(&passphrase, "correct horse battery staple\n").unwrap();
    let sealed = dir.path().join("sealed.backup");
    let plain = dir.path().join("plain.backup");
    let (ok, out, err) = c.command(&[
        "backup",
        "--to",
        sealed.to_str().unwrap(),
        "--with-secrets",
        "--passphrase-file",
        passphrase.to_str().unwrap(),
    ]);
    assert!(ok, "a backup while the controller serves: {err}");
    assert!(
        out.contains("secrets included") && out.contains("encrypted"),
        "{out}"
    );
    let (ok, _, err) = c.command(&["backup", "--to", plain.to_str().unwrap()]);
    assert!(ok, "{err}");
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&sealed).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600, "a backup is private");
    let sealed_bytes = std::fs::read(&sealed).unwrap();
    assert!(
        !sealed_bytes.windows(12).any(|w| w == b"served file\n"),
        "an encrypted backup shows nothing"
    );

    // The controller is lost; its data directory too.
    c.kill();
    let lost = dir.path().join("lost-data");
    std::fs::rename(c.data_dir(), &lost).unwrap();
    let restore =
        |from: &std::path::Path, into: &std::path::Path, pass: Option<&std::path::Path>| {
            let mut args = vec![
                "--data-dir".to_string(),
                into.display().to_string(),
                "restore".into(),
                "--from".into(),
                from.display().to_string(),
            ];
            if let Some(p) = pass {
                args.extend(["--passphrase-file".into(), p.display().to_string()]);
            }
            let out = std::process::Command::new(bin("plinth-controller"))
                .args(&args)
                .output()
                .unwrap();
            (
                out.status.success(),
                String::from_utf8_lossy(&out.stdout).into_owned(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            )
        };
    // Refused: no passphrase, a wrong one, a directory in use.
    let (ok, _, err) = restore(&sealed, &c.data_dir(), None);
    assert!(
        !ok && err.contains("encrypted") && err.contains("--passphrase-file"),
        "{err}"
    );
    let wrong = dir.path().join("wrong");
    std::fs::write(&wrong, "tr0ub4dor&3\n").unwrap();
    let (ok, _, err) = restore(&sealed, &c.data_dir(), Some(&wrong));
    assert!(!ok && err.contains("passphrase is wrong"), "{err}");
    assert!(!c.data_dir().exists(), "a failed restore leaves nothing");
    let (ok, _, err) = restore(&sealed, &lost, Some(&passphrase));
    assert!(!ok && err.contains("not empty"), "{err}");
    // The plain backup holds no secret.
    let bare = dir.path().join("bare");
    let (ok, out, err) = restore(&plain, &bare, None);
    assert!(ok, "{err}");
    assert!(out.contains("no secrets"), "{out}");
    assert!(!bare.join("signing.key").exists() && !bare.join("tls/key.pem").exists());
    assert!(!bare.join("admin.token").exists() && bare.join("tls/cert.pem").exists());
    assert_eq!(
        std::fs::read_to_string(bare.join("files/motd")).unwrap(),
        "served file\n"
    );
    let check = std::process::Command::new(bin("plinth-controller"))
        .args(["--data-dir", bare.to_str().unwrap(), "check"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&check.stdout);
    assert!(check.status.success(), "{said}");
    assert!(
        said.contains("0 operator tokens"),
        "its tokens were left out: {said}"
    );

    // The sealed one, restored into a new data directory, takes the deployment on.
    let (ok, out, err) = restore(&sealed, &c.data_dir(), Some(&passphrase));
    assert!(ok, "{out}{err}");
    assert!(
        !c.data_dir().join("controller-id").exists(),
        "a restored controller is one of its own"
    );
    let (ok, said, err) = c.command(&["check"]);
    assert!(ok, "{said}{err}");
    assert!(
        said.contains(&format!("running deployment {dep}: its state reads")),
        "{said}"
    );
    c.restart();
    for a in &agents {
        std::fs::write(a.work().join("go"), "").unwrap();
    }
    let report = c.api.wait_deployment(dep, LONG);
    assert_eq!(report["status"], "success", "{report:#}");
    for a in &agents {
        for task in ["first", "hold", "after"] {
            assert_eq!(
                task_line(&report, &a.name, task).map(|t| t["status"].clone()),
                Some(json!("succeeded")),
                "{} {task}: {report:#}",
                a.name
            );
        }
    }
    assert_eq!(read(&copied).unwrap(), "served file\n");
}
