//! Unknown keys on the corpus: every key of Fuel's task files (the deployment graph and the provision,
//! deletion and net-verification graphs) and of Nailgun's release fixture is a known key, and so is
//! every key Plinth itself writes when it serializes a release, a cluster or a node.

use plinth_common::graph::{key_findings, text_key_findings, DocumentKind, Finding};
use serde_json::Value;

use crate::support;
use support::{corpus, fuel_release_and_cluster};

fn task_files() -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    support::yaml_files(&corpus().join("fuel-library"), &mut files);
    files.retain(|f| f.file_name().is_some_and(|n| n == "tasks.yaml"));
    files
}

fn say(findings: &[Finding]) -> String {
    findings
        .iter()
        .map(|f| f.message.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn fuels_task_files_have_no_unknown_key() {
    let files = task_files();
    assert!(
        files.len() >= 40,
        "the corpus's task files: {}",
        files.len()
    );
    let mut findings = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("readable");
        findings.extend(text_key_findings(
            DocumentKind::Tasks,
            &text,
            &f.display().to_string(),
        ));
    }
    assert!(findings.is_empty(), "{}", say(&findings));
}

#[test]
fn nailguns_release_fixture_has_no_unknown_key() {
    let text = std::fs::read_to_string(corpus().join("fuel-web/openstack.yaml")).expect("fixture");
    let findings = text_key_findings(DocumentKind::Release, &text, "openstack.yaml");
    assert!(findings.is_empty(), "{}", say(&findings));
}

#[test]
fn what_plinth_writes_of_fuels_release_and_cluster_has_no_unknown_key() {
    let (release, cluster) = fuel_release_and_cluster();
    let release: Value = serde_json::to_value(&release).expect("serializes");
    let findings = key_findings(DocumentKind::Release, &release, None, "release");
    assert!(findings.is_empty(), "{}", say(&findings));
    let mut cluster: Value = serde_json::to_value(&cluster).expect("serializes");
    let node = plinth_common::model::Node::new(1, "node-1", &["controller"]);
    cluster["nodes"] = Value::Array(vec![serde_json::to_value(&node).expect("serializes")]);
    let findings = key_findings(DocumentKind::Cluster, &cluster, None, "cluster");
    assert!(findings.is_empty(), "{}", say(&findings));
}

#[test]
fn a_misspelling_in_fuels_own_file_is_found_on_its_line() {
    let path =
        corpus().join("fuel-library/deployment/puppet/osnailyfacter/modular/hosts/tasks.yaml");
    let text = std::fs::read_to_string(&path).expect("readable");
    let (line, _) = text
        .lines()
        .enumerate()
        .find(|(_, l)| l.trim_start().starts_with("requires:"))
        .expect("a requires");
    let misspelt = text.replacen("requires:", "requries:", 1);
    let findings = text_key_findings(DocumentKind::Tasks, &misspelt, "hosts/tasks.yaml");
    assert_eq!(findings.len(), 1, "{}", say(&findings));
    assert_eq!(findings[0].line, Some(line + 1));
    assert!(
        findings[0].message.contains("(did you mean `requires`?)"),
        "{}",
        findings[0].message
    );
}
