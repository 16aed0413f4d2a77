//! `Run::graph_type_of`: the graph type of the phase whose list a node holds, by revision (what the
//! controller labels a task's duration by).

use crate::run_support::{result, Case, Driver};
use plinth_common::wire::ResultStatus;

const CASE: &str = "
strategy:
  phases:
    - {name: prepare, graph_type: prepare}
    - {name: deploy, graph_type: deploy}
  groups:
    - {name: all, critical: true, depends_on: [], selectors: []}
nodes: [n1]
graphs:
  prepare:
    tasks: {n1: [p]}
  deploy:
    tasks: {n1: [d]}
";

#[test]
fn a_lists_graph_type_is_its_phases_while_the_node_holds_it() {
    let case: Case = serde_yaml_ng::from_str(CASE).expect("the case");
    let mut run = case.run().expect("the run");
    let mut driver = Driver::default();
    let mut fx = run.start(0);
    driver.apply(&mut run, &mut fx);
    let first = driver.revision_of(1);
    assert_eq!(run.graph_type_of(1, first), Some("prepare"));
    assert_eq!(run.graph_type_of(1, first + 1), None, "no such revision");
    assert_eq!(run.graph_type_of(2, first), None, "no such node");
    let mut fx = run.results(1, 1, &[result(first, "p", ResultStatus::Succeeded, 1)]);
    driver.apply(&mut run, &mut fx);
    let second = driver.revision_of(1);
    assert!(second > first);
    assert_eq!(run.graph_type_of(1, second), Some("deploy"));
    assert_eq!(
        run.graph_type_of(1, first),
        None,
        "the node holds the next phase's list now"
    );
}
