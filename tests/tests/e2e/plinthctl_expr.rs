//! `plinthctl expr eval` and `expr shell`: YAQL offline with the controller's engine, as task authors
//! run it (files, standard input, old and new states, errors with a caret).

use plinth_e2e::*;
use serde_json::{json, Value};
use std::io::Write;
use std::process::{Command, Stdio};

fn plinthctl(args: &[&str], stdin: &str) -> (i32, String, String) {
    let mut child = Command::new(bin("plinthctl"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("plinthctl runs");
    child
        .stdin
        .take()
        .expect("piped")
        .write_all(stdin.as_bytes())
        .expect("stdin");
    let out = child.wait_with_output().expect("plinthctl ends");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

fn json_of(out: &str) -> Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

#[test]
fn eval_reads_data_from_a_file_or_standard_input() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data.yaml");
    std::fs::write(
        &data,
        "nodes:\n  - {name: a, status: ready, roles: [controller]}\n  - {name: b, status: error, roles: [compute]}\n",
    )
    .unwrap();
    let data = data.to_str().unwrap();

    let (code, out, err) = plinthctl(
        &[
            "expr",
            "eval",
            "$.nodes.where($.status = 'ready').select($.name)",
            "--data",
            data,
        ],
        "",
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(json_of(&out), json!(["a"]));

    let (code, out, err) = plinthctl(
        &[
            "expr",
            "eval",
            "$.nodes.len() + 1",
            "--data",
            "-",
            "-o",
            "json",
        ],
        r#"{"nodes": [1, 2, 3]}"#,
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), "4");

    // No data: `$` is an empty mapping; the controller's own helpers are there.
    let (code, out, err) = plinthctl(&["expr", "eval", "versionCompare('1.10', '1.9')"], "");
    assert_eq!(code, 0, "{err}");
    assert_eq!(json_of(&out), json!(1));
}

#[test]
fn eval_compares_old_and_new_states() {
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("old.json");
    let new = dir.path().join("new.yaml");
    std::fs::write(&old, r#"{"storage": {"ceph": false}, "nodes": [1]}"#).unwrap();
    std::fs::write(&new, "storage: {ceph: true}\nnodes: [1]\n").unwrap();
    let (old, new) = (old.to_str().unwrap(), new.to_str().unwrap());
    let eval = |expr: &str| {
        let (code, out, err) = plinthctl(&["expr", "eval", expr, "--old", old, "--new", new], "");
        assert_eq!(code, 0, "{expr}: {err}");
        json_of(&out)
    };
    assert_eq!(eval("changed($.storage)"), json!(true));
    assert_eq!(eval("changed($.nodes)"), json!(false));
    assert_eq!(eval("old($.storage.ceph)"), json!(false));
    assert_eq!(eval("new($.storage.ceph)"), json!(true));

    // Without an old state, everything changed.
    let (code, out, _) = plinthctl(&["expr", "eval", "changed($.nodes)", "--new", new], "");
    assert_eq!(code, 0);
    assert_eq!(json_of(&out), json!(true));

    // `--old` alone is refused.
    let (code, _, err) = plinthctl(&["expr", "eval", "changed($)", "--old", old], "");
    assert_eq!(code, 2);
    assert!(err.contains("--old needs --new"), "{err}");
}

#[test]
fn errors_exit_2_with_the_message_and_a_caret() {
    let (code, out, err) = plinthctl(&["expr", "eval", "$.a.where("], "");
    assert_eq!(code, 2, "{out}");
    assert!(err.contains("syntax error at column"), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    let expr_line = lines.iter().position(|l| l.contains("$.a.where(")).unwrap();
    assert!(lines[expr_line + 1].trim() == "^", "{err}");

    let (code, _, err) = plinthctl(&["expr", "eval", "$.missing", "--data", "-"], "{}");
    assert_eq!(code, 2);
    assert!(
        err.contains("key not found: missing") && err.contains('^'),
        "{err}"
    );

    let (code, _, err) = plinthctl(&["expr", "eval", "$", "--data", "/nonexistent.json"], "");
    assert_eq!(code, 2);
    assert!(err.contains("cannot read /nonexistent.json"), "{err}");

    let (code, _, err) = plinthctl(&["expr", "eval", "$", "--data", "-"], "a: [1,\n");
    assert_eq!(code, 2);
    assert!(err.contains("<stdin>:"), "{err}");
}

#[test]
fn the_shell_evaluates_piped_lines_until_the_end_of_input() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data.json");
    std::fs::write(&data, r#"{"a": [1, 2, 3]}"#).unwrap();
    let (code, out, err) = plinthctl(
        &["expr", "shell", "--data", data.to_str().unwrap()],
        "$.a.sum()\n\n# a comment\n$.a[\n$.a.select($ * 2)\n",
    );
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "6");
    assert!(lines[1].starts_with("error: syntax error"), "{out}");
    assert!(lines.iter().any(|l| l.trim() == "^"), "{out}");
    assert_eq!(*lines.last().unwrap(), "[2,4,6]");
}
