//! Hostile and unlucky nodes: one bad result, one odd poll or one flood never wedges a node, a deployment
//! or the controller, and nothing acknowledged is lost. Real controller and agent processes on loopback;
//! hostile nodes are `plinth_e2e::rogue` clients with keys of their own.

use plinth_e2e::rogue::{self, Rogue};
use plinth_e2e::*;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::time::{Duration, Instant};

const LONG: Duration = Duration::from_secs(120);

fn facts(host: &str) -> Value {
    json!({"hostname": host})
}

/// A cluster of the given nodes running one default graph; returns its id.
fn cluster(c: &Controller, name: &str, tasks: Vec<Value>, nodes: &[u64]) -> u64 {
    c.api
        .cluster_with_graph(name, json!({"default": {"tasks": tasks}}), nodes)
}

fn node_id(c: &Controller, name: &str) -> u64 {
    c.api
        .node_ids()
        .into_iter()
        .find(|(n, _)| n == name)
        .map(|(_, id)| id)
        .unwrap_or_else(|| panic!("no node named {name}"))
}

/// Item 1: a node deleted and registered again while its task ran. The old task's result is refused for
/// good; the agent settles it and goes on, so the next deployment's results arrive and it succeeds.
#[test]
fn a_refused_result_never_holds_back_the_results_after_it() {
    let c = Controller::start_with(&["--auto-accept", "--phase-timeout", "6"]);
    let agent = Agent::start(&c, "lone", &[]);
    let id = c.api.wait_nodes(1)[0].1;
    let cid = cluster(
        &c,
        "refused",
        vec![shell("slow", &["*"], "sleep 14; echo slow-done > slow")],
        &[id],
    );
    let first = c.api.deploy(cid, "");
    let report = c.api.wait_deployment(first, LONG);
    assert_eq!(
        report["status"], "failed",
        "the phase timed out: {report:#}"
    );
    // The task still runs on the node; the operator deletes the node, which registers again.
    c.api.ok("DELETE", &format!("/nodes/{id}"), None);
    wait_until("the node to register again", LONG, || {
        c.api.node_ids().iter().any(|(_, n)| *n != id)
    });
    let again = c.api.node_ids()[0].1;
    wait_until("the old task to end", LONG, || {
        agent.work().join("slow").exists()
    });
    // Its result belongs to a node that no longer exists: refused, and visible to the operator.
    wait_until("the refusal to be recorded", LONG, || {
        c.api
            .get(&format!("/nodes/{again}/refusals"))
            .is_ok_and(|r| r.as_array().is_some_and(|a| !a.is_empty()))
    });
    let refusals = c.api.get(&format!("/nodes/{again}/refusals")).unwrap();
    assert!(
        refusals[0]["reason"]
            .as_str()
            .unwrap()
            .contains("was not issued to this node"),
        "{refusals:#}"
    );
    c.api.ok(
        "PUT",
        &format!("/clusters/{cid}/nodes"),
        Some(&json!({"nodes": [{"id": again}]})),
    );
    let release = c.api.get(&format!("/clusters/{cid}")).unwrap()["release_id"].clone();
    c.api.ok(
        "PUT",
        &format!("/releases/{release}/deployment_graphs/default/"),
        Some(&json!({"tasks": [shell("quick", &["*"], "echo quick > quick")]})),
    );
    let second = c.api.deploy(cid, "");
    let report = c.api.wait_deployment(second, LONG);
    assert_eq!(
        report["status"],
        "success",
        "the refused result did not hold back the next: {report:#}\n{}",
        agent.log()
    );
    let quarantine = read(&agent.dir.path().join("state/journal/refused.jsonl"));
    assert!(
        quarantine.is_ok_and(|q| q.contains("not issued")),
        "the agent keeps the refused result with its reason"
    );
}

/// Item 1: a sync that removed 60,000 paths reports a result that fits, counts kept.
#[test]
fn a_huge_result_is_cut_to_fit_and_keeps_its_counts() {
    let c = Controller::start();
    let agent = Agent::start(&c, "syncer", &[]);
    let id = c.api.wait_nodes(1)[0].1;
    let src = c.data_dir().join("files/site");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("keep"), "kept\n").unwrap();
    let dst = agent.work().join("mirror");
    std::fs::create_dir_all(&dst).unwrap();
    for i in 0..60_000 {
        std::fs::write(dst.join(format!("stale-file-with-a-long-name-{i:06}")), "").unwrap();
    }
    let cid = cluster(
        &c,
        "huge",
        vec![json!({"id": "mirror", "type": "sync", "tags": ["*"],
                    "parameters": {"src": "site", "dst": dst, "retries": 0}})],
        &[id],
    );
    let dep = c.api.deploy(cid, "");
    let report = c.api.wait_deployment(dep, LONG);
    assert_eq!(report["status"], "success", "{report:#}\n{}", agent.log());
    let line = task_line(&report, "syncer", "mirror").unwrap();
    assert_eq!(line["details"]["truncated"]["/removed"], 60_000, "{line:#}");
    assert!(line["message"].as_str().unwrap().contains("60000 removed"));
}

/// Item 1: each result of a batch gets its own verdict; a bad one refuses only itself.
#[test]
fn results_are_judged_one_by_one() {
    let c = Controller::start();
    let node = Rogue::new(&c, 7);
    assert_eq!(node.register("judged", &[], facts("judged")).status, 200);
    let id = node_id(&c, "judged");
    let cid = cluster(
        &c,
        "judged",
        vec![shell("a", &["*"], "true"), shell("b", &["*"], "true")],
        &[id],
    );
    let dep = c.api.deploy(cid, "");
    let list = node.wait_list(0, LONG);
    let mut huge = rogue::result(&list, "a", 1, "succeeded");
    huge["stdout_tail"] = json!("x".repeat(100_000));
    let mut stranger = rogue::result(&list, "never-issued", 1, "succeeded");
    stranger["revision"] = json!(list["revision"]);
    let answer = node.results(&[
        huge,
        stranger,
        rogue::result(&list, "a", 1, "succeeded"),
        rogue::result(&list, "b", 1, "succeeded"),
    ]);
    assert_eq!(answer.status, 200, "{}", answer.body);
    let verdicts: Vec<&str> = answer.body["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(verdicts, ["refused", "refused", "accepted", "accepted"]);
    assert!(answer.body["verdicts"][0]["reason"]
        .as_str()
        .unwrap()
        .contains("more than the limit"));
    let again = node.results(&[rogue::result(&list, "b", 1, "succeeded")]);
    assert_eq!(again.body["verdicts"][0]["verdict"], "duplicate");
    let report = c.api.wait_deployment(dep, LONG);
    assert_eq!(report["status"], "success");
    let notices = report["notices"].to_string();
    assert!(
        notices.contains("result_refused") && notices.contains("never-issued"),
        "refused results show in the report: {notices}"
    );
}

/// Item 2: a node that polled with `after = u64::MAX` while discovered moves no revision: once
/// accepted it is deployed like any other, and the deployment ends.
#[test]
fn a_huge_after_from_a_node_moves_no_revision() {
    let c = Controller::start_with(&[]);
    let node = Rogue::new(&c, 8);
    assert_eq!(node.register("greedy", &[], facts("greedy")).status, 200);
    assert_eq!(node.poll(u64::MAX, 0).status, 204);
    let honest = Agent::start(&c, "honest", &[]);
    let nodes = c.api.wait_nodes(2);
    for (_, id) in &nodes {
        c.api.ok("POST", &format!("/nodes/{id}/accept"), None);
    }
    assert_eq!(node.poll(u64::MAX, 0).status, 204);
    let ids: Vec<u64> = nodes.iter().map(|(_, id)| *id).collect();
    let cid = cluster(&c, "greedy", vec![shell("t", &["*"], "true")], &ids);
    let dep = c.api.deploy(cid, "");
    let list = node.wait_list(0, LONG);
    assert!(
        list["revision"].as_u64().unwrap() < 100,
        "revisions are the controller's: {list:#}"
    );
    let answer = node.results(&[rogue::result(&list, "t", 1, "succeeded")]);
    assert_eq!(answer.body["verdicts"][0]["verdict"], "accepted");
    let report = c.api.wait_deployment(dep, LONG);
    assert_eq!(
        report["status"],
        "success",
        "{report:#}\n{}\n{}",
        c.log(),
        honest.log()
    );
    assert!(!c.log().contains("Invalid column type"));
}

/// Item 3: what an accepted node says of itself is facts: it cannot take another node's name, pick
/// its tags or give itself a primary tag; what it said is shown apart.
#[test]
fn a_registering_node_cannot_rename_itself_or_pick_its_tags() {
    let c = Controller::start();
    let _web = Agent::start(&c, "web1", &["web"]);
    c.api.wait_nodes(1);
    let node = Rogue::new(&c, 9);
    assert_eq!(node.register("db1", &["db"], facts("db1")).status, 200);
    c.api.wait_nodes(2);
    let again = node.register(
        "web1",
        &["web", "db", "controller", "primary-controller"],
        facts("web1"),
    );
    assert_eq!(again.status, 200, "{}", again.body);
    let nodes = c.api.get("/nodes").unwrap();
    let names: Vec<&str> = nodes
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 2);
    assert_ne!(names[0], names[1], "names stay unique: {nodes:#}");
    let me = nodes
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["node_key"] == node.fingerprint.as_str())
        .unwrap();
    assert_eq!(me["name"], "db1");
    assert_eq!(me["tags"], json!(["db"]));
    assert_eq!(me["reported"]["name"], "web1");
    assert_eq!(
        me["reported"]["tags"],
        json!(["web", "db", "controller"]),
        "a primary tag is never taken from a node: {me:#}"
    );
    // A new node asking for a taken name gets one of its own.
    let twin = Rogue::new(&c, 10);
    assert_eq!(twin.register("web1", &[], facts("web1")).status, 200);
    let nodes = c.api.get("/nodes").unwrap();
    let mut names: Vec<String> = nodes
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), 3, "{nodes:#}");
}

/// Item 4: a finished deployment's record is final: late results of any attempt and status are refused
/// and change nothing.
#[test]
fn results_after_a_deployment_finished_never_change_its_report() {
    let c = Controller::start();
    let node = Rogue::new(&c, 11);
    assert_eq!(node.register("late", &[], facts("late")).status, 200);
    let id = node_id(&c, "late");
    let cid = cluster(&c, "late", vec![shell("t", &["*"], "true")], &[id]);
    let dep = c.api.deploy(cid, "");
    let list = node.wait_list(0, LONG);
    node.results(&[rogue::result(&list, "t", 1, "succeeded")]);
    let before = c.api.wait_deployment(dep, LONG);
    assert_eq!(before["status"], "success");
    for (attempt, status) in [
        (1, "failed"),
        (2, "failed"),
        (7, "interrupted"),
        (1, "running"),
    ] {
        let a = node.results(&[rogue::result(&list, "t", attempt, status)]);
        assert_eq!(a.body["verdicts"][0]["verdict"], "refused", "{}", a.body);
        assert!(a.body["verdicts"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("final"));
    }
    let after = c.api.get(&format!("/deployments/{dep}")).unwrap();
    assert_eq!(before, after, "the report did not change");
}

/// Item 8: asking for the events of deployments that do not exist holds no memory.
#[test]
fn watching_missing_deployments_holds_no_memory() {
    let c = Controller::start();
    let (ok, token, _) = c.command(&["token", "create", "--name", "watcher", "--read-only"]);
    assert!(ok);
    let token = token.trim().to_string();
    let http = c.api.http();
    let base = c.rss_kib();
    for id in 1_000..4_000u64 {
        let resp = http
            .get(format!("{}/api/v1/deployments/{id}/events", c.url))
            .bearer_auth(&token)
            .send()
            .unwrap();
        assert_eq!(resp.status().as_u16(), 404);
    }
    let grown = c.rss_kib().saturating_sub(base);
    assert!(
        grown < 40 * 1024,
        "3,000 requests for missing deployments grew the controller by {grown} KiB"
    );
}

/// Item 9: a body that trickles is cut off, and floods of idle connections (no handshake, unknown keys)
/// never lock out the operator or an accepted agent.
#[test]
fn slow_bodies_and_idle_floods_never_lock_out_operators_or_agents() {
    let c = Controller::start_with(&[
        "--auto-accept",
        "--max-untrusted-connections",
        "64",
        "--max-connections-per-address",
        "48",
    ]);
    let agent = Agent::start(&c, "steady", &[]);
    let id = c.api.wait_nodes(1)[0].1;
    let addr = c.url.trim_start_matches("https://").to_string();
    // 300 connections that never say anything, and 40 TLS connections of unknown keys that idle.
    let mut idle = Vec::new();
    for _ in 0..300 {
        if let Ok(s) = std::net::TcpStream::connect(&addr) {
            idle.push(s);
        }
    }
    let mut tls_idle = Vec::new();
    for seed in 0..40u8 {
        let config = rogue::raw_tls_config(&c, Some(100 + seed));
        let tcp = std::net::TcpStream::connect(&addr).unwrap();
        let conn = rustls::ClientConnection::new(config, "127.0.0.1".try_into().unwrap()).unwrap();
        let mut stream = rustls::StreamOwned::new(conn, tcp);
        let _ = stream.flush();
        tls_idle.push(stream);
    }
    // The operator gets in, and an accepted agent deploys, while the flood is held.
    let started = Instant::now();
    let nodes = c.api.send("GET", "/nodes", None);
    assert_eq!(nodes.status, 200, "{}", nodes.body);
    let cid = cluster(&c, "flood", vec![shell("t", &["*"], "echo ok > ok")], &[id]);
    let dep = c.api.deploy(cid, "");
    let report = c.api.wait_deployment(dep, LONG);
    assert_eq!(report["status"], "success", "{report:#}\n{}", agent.log());
    assert!(started.elapsed() < Duration::from_secs(60));

    // A body trickled a byte at a time (here to the agent API, by an unknown key) is answered 408 and
    // the connection closed.
    let config = rogue::raw_tls_config(&c, Some(99));
    let tcp = std::net::TcpStream::connect(&addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let conn = rustls::ClientConnection::new(config, "127.0.0.1".try_into().unwrap()).unwrap();
    let mut slow = rustls::StreamOwned::new(conn, tcp);
    write!(
        slow,
        "POST /agent/v1/register HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         Content-Length: 100000\r\n\r\n{{"
    )
    .unwrap();
    slow.flush().unwrap();
    slow.sock
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let trickle_start = Instant::now();
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match slow.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => break,
        }
        if String::from_utf8_lossy(&answer).contains("\r\n\r\n") {
            break;
        }
        let _ = slow.write_all(b" ");
        let _ = slow.flush();
        assert!(
            trickle_start.elapsed() < Duration::from_secs(120),
            "a trickled body is never cut off"
        );
    }
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");

    // A body sent with a request that takes none (here a poll, by an unknown key) is never read: the
    // answer comes at once, and the connection is closed after it rather than kept for the body.
    let tcp = std::net::TcpStream::connect(&addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let conn = rustls::ClientConnection::new(
        rogue::raw_tls_config(&c, Some(98)),
        "127.0.0.1".try_into().unwrap(),
    )
    .unwrap();
    let mut bodied = rustls::StreamOwned::new(conn, tcp);
    write!(
        bodied,
        "GET /agent/v1/tasks?nonce={}&after=0&wait=0 HTTP/1.1\r\nHost: x\r\n\
         Content-Length: 100000\r\n\r\n{{",
        "ab".repeat(16)
    )
    .unwrap();
    bodied.flush().unwrap();
    let mut answer = Vec::new();
    let closed = loop {
        match bodied.read(&mut buf) {
            Ok(0) => break true,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break true,
            Err(e) => panic!("the connection was not closed after the answer: {e}"),
        }
    };
    let answer = String::from_utf8_lossy(&answer);
    assert!(closed && answer.starts_with("HTTP/1.1 4"), "{answer}");
    drop(idle);
    drop(tls_idle);
}

/// Item 10: registrations of new keys are bounded per address and in all; sizes are bounded; the node
/// list pages.
#[test]
fn registration_floods_are_bounded_and_the_node_list_pages() {
    let c = Controller::start_with(&[
        "--registrations-per-minute",
        "40",
        "--max-discovered-nodes",
        "8",
    ]);
    // A burst of a quarter of a minute's worth, then 429.
    let mut statuses = Vec::new();
    for seed in 0..14u8 {
        statuses.push(
            Rogue::new(&c, 20 + seed)
                .register(&format!("flood-{seed}"), &[], facts("f"))
                .status,
        );
    }
    assert_eq!(&statuses[..8], &[200; 8], "{statuses:?}");
    assert_eq!(statuses[8], 503, "at most 8 discovered nodes: {statuses:?}");
    assert!(statuses[10..].contains(&429), "{statuses:?}");
    // Facts and labels are bounded, and the error names the field.
    let big = Rogue::new(&c, 60).register("big", &[], json!({"hostname": "x".repeat(300_000)}));
    assert_eq!(big.status, 400, "{}", big.body);
    assert!(big.body.to_string().contains("facts"));
    let many_tags: Vec<String> = (0..100).map(|i| format!("t{i}")).collect();
    let refs: Vec<&str> = many_tags.iter().map(String::as_str).collect();
    let tagged = Rogue::new(&c, 61).register("tagged", &refs, facts("t"));
    assert_eq!(tagged.status, 400);
    assert!(tagged.body.to_string().contains("tags"));
    // Pages of the node list, and filters.
    let page = c
        .api
        .http()
        .get(format!(
            "{}/api/v1/nodes?admission=discovered&limit=3",
            c.url
        ))
        .bearer_auth(&c.api.token)
        .send()
        .unwrap();
    let marker = page.headers()["x-next-marker"]
        .to_str()
        .unwrap()
        .to_string();
    let link = page.headers()["link"].to_str().unwrap().to_string();
    assert!(
        link.contains(&format!("marker={marker}")) && link.contains("admission=discovered"),
        "the next page keeps the filters: {link}"
    );
    let first: Value = page.json().unwrap();
    assert_eq!(first.as_array().unwrap().len(), 3);
    let rest = c
        .api
        .get(&format!("/nodes?limit=100&marker={marker}"))
        .unwrap();
    assert_eq!(rest.as_array().unwrap().len(), 5);
    let discovered = c.api.get("/nodes?admission=discovered&limit=100").unwrap();
    assert_eq!(discovered.as_array().unwrap().len(), 8);
    assert_eq!(c.api.get("/nodes?admission=accepted").unwrap(), json!([]));
}

/// Agents registering all at once are written by groups: each is answered for itself, the bound on
/// discovered nodes holds across a group (the ones over it are refused, the others get in), and names
/// stay unique.
#[test]
fn agents_registering_at_once_are_each_answered_and_the_bound_holds() {
    let c = Controller::start_with(&[
        "--registrations-per-minute",
        "100000",
        "--max-discovered-nodes",
        "20",
    ]);
    let statuses: Vec<u16> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..32u8)
            .map(|seed| {
                let c = &c;
                scope.spawn(move || {
                    Rogue::new(c, 100 + seed)
                        .register("same-hostname", &[], facts("same-hostname"))
                        .status
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        20,
        "20 discovered nodes are the most kept: {statuses:?}"
    );
    assert!(
        statuses.iter().all(|s| *s == 200 || *s == 503),
        "the others are told there is no room: {statuses:?}"
    );
    let nodes = c.api.get("/nodes?limit=100").unwrap();
    let names: std::collections::BTreeSet<String> = nodes
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        names.len(),
        20,
        "every node stored has its own name: {names:?}"
    );
}

/// Item 12: a result acknowledged to a node survives the controller killed right after.
#[test]
fn an_acknowledged_result_survives_the_controller_killed_right_after() {
    let mut c = Controller::start();
    let node = Rogue::new(&c, 12);
    assert_eq!(node.register("durable", &[], facts("durable")).status, 200);
    let id = node_id(&c, "durable");
    let cid = cluster(
        &c,
        "durable",
        vec![shell("a", &["*"], "true"), shell("b", &["*"], "true")],
        &[id],
    );
    let dep = c.api.deploy(cid, "");
    let list = node.wait_list(0, LONG);
    let ack = node.results(&[rogue::result(&list, "a", 1, "succeeded")]);
    assert_eq!(ack.body["verdicts"][0]["verdict"], "accepted");
    c.kill();
    c.restart();
    let report = c.api.get(&format!("/deployments/{dep}")).unwrap();
    assert_eq!(
        task_line(&report, "durable", "a").map(|t| t["status"].clone()),
        Some(json!("succeeded")),
        "{report:#}"
    );
    let node = Rogue::new(&c, 12);
    let ack = node.results(&[rogue::result(&list, "b", 1, "succeeded")]);
    assert_eq!(ack.body["verdicts"][0]["verdict"], "accepted");
    assert_eq!(c.api.wait_deployment(dep, LONG)["status"], "success");
}

/// Item 13: a revoked token stops working at once, without a restart, and the refusal is audited.
#[test]
fn a_revoked_token_stops_working_at_once() {
    let c = Controller::start();
    let (ok, token, _) = c.command(&["token", "create", "--name", "ci"]);
    assert!(ok);
    let token = token.trim().to_string();
    assert_eq!(c.api.raw("GET", "/nodes", Some(&token), None).status, 200);
    let (ok, _, err) = c.command(&["token", "revoke", "ci"]);
    assert!(ok, "{err}");
    assert_eq!(c.api.raw("GET", "/nodes", Some(&token), None).status, 401);
    let (_, listed, _) = c.command(&["token", "list"]);
    let line = listed.lines().find(|l| l.starts_with("ci ")).unwrap();
    assert!(
        !line.ends_with(" -"),
        "token list shows it revoked: {listed}"
    );
    assert!(c.log().contains("refused a revoked token"));
    let (ok, _, err) = c.command(&["token", "revoke", "ci"]);
    assert!(!ok && err.contains("not found"), "{err}");
}

/// Item 14: a list an agent refuses shows in the deployment's events and report, with the reason; text
/// from nodes cannot forge log lines.
#[test]
fn a_refused_list_shows_in_the_deployment_and_node_text_is_escaped_in_logs() {
    let c = Controller::start_with(&["--auto-accept", "--phase-timeout", "8"]);
    // An agent pinned to another key refuses every list.
    let wrong = plinth_common::signing::public_key_to_text(
        &plinth_common::signing::signing_key_from_seed([42; 32]).verifying_key(),
    );
    let agent = Agent::start_with(&c, "pinned-wrong", &[], &wrong, "");
    let id = c.api.wait_nodes(1)[0].1;
    let cid = cluster(&c, "refusing", vec![shell("t", &["*"], "true")], &[id]);
    let dep = c.api.deploy(cid, "");
    let report = c.api.wait_deployment(dep, LONG);
    let notices = report["notices"].to_string();
    assert!(
        notices.contains("list_refused") && notices.contains("signature"),
        "{report:#}\n{}",
        agent.log()
    );
    let refusals = c.api.get(&format!("/nodes/{id}/refusals")).unwrap();
    assert_eq!(refusals[0]["kind"], "list");

    let node = Rogue::new(&c, 13);
    assert_eq!(node.register("liar", &[], facts("liar")).status, 200);
    let forged = "ok\n2026-01-01T00:00:00Z  INFO plinth_controller: all good \u{1b}[2J";
    let a = node.send(
        "POST",
        "/refusals",
        Some(&json!({"reason": forged, "claimed_revision": 1})),
    );
    assert_eq!(a.status, 204);
    let log = c.log();
    assert!(!log.contains('\u{1b}'), "no terminal escapes from a node");
    assert!(
        !log.lines().any(|l| l.starts_with("2026-01-01T00:00:00Z")),
        "no forged log line"
    );
}
