//! The web console in a real browser (headless Chromium over WebDriver) against a real controller and
//! real agents: sign in, see the nodes and their facts, the graph, a strategy's groups; start a
//! deployment, watch its groups and nodes change state live, read a failure's output, cancel it; a
//! read-only token sees but cannot act; nothing a user wrote becomes markup. Screenshots of each page
//! go to `target/console-screenshots/`.
//!
//! Nodes are accepted and given roles from the browser too.
//!
//! Pages are checked by measurement too, at 1024 and 1920 px wide (`Browser::measure_layout`): no cell's
//! content wider or taller than its box (unless cut with an ellipsis, its whole text in its title, in a
//! column allowed to cut), no two rows overlapping, header cells over their columns, graph boxes holding
//! their text.
//!
//! `console_with_a_big_fleet` (ignored; run by hand, see docs/BENCHMARKS.md) measures the nodes page
//! with 10,000 nodes and the live deployment page with 1,000.

use plinth_e2e::browser::{screenshot_dir, Browser, Ellipsised, LayoutCheck};
use plinth_e2e::{bin, wait_until, Agent, Controller};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(60);

fn read_only_token(c: &Controller) -> String {
    let (ok, out, err) = c.command(&["token", "create", "--name", "viewer", "--read-only"]);
    assert!(ok, "token create: {err}");
    out.trim().to_string()
}

/// The window widths every measured page is checked at.
const WIDTHS: [(u32, u32); 2] = [(1024, 900), (1920, 1000)];

/// The 1-based column of a cell named by `measure_layout` (its last `:nth-child(k)`).
fn column(selector: &str) -> usize {
    selector
        .rsplit(":nth-child(")
        .next()
        .and_then(|t| t.trim_end_matches(')').parse().ok())
        .unwrap_or(0)
}

/// Measures the page as it is at each of [`WIDTHS`] (the screenshot `WHAT-WIDTH.png` of each): nothing
/// clipped, overlapping or misaligned, and only cells of the columns `may_cut` (1-based) cut with an
/// ellipsis. `ready` runs after each resize, before measuring. Answers what was cut, by width.
fn check_layout(
    b: &Browser,
    what: &str,
    check: &LayoutCheck<'_>,
    may_cut: &[usize],
    ready: impl Fn(u32),
) -> Vec<(u32, Vec<Ellipsised>)> {
    let mut cut = Vec::new();
    for (width, height) in WIDTHS {
        let (inner, _) = b.set_window_size(width, height).unwrap();
        assert_eq!(inner, u64::from(width), "the window's inner width");
        ready(width);
        let layout = b.measure_layout(check).unwrap();
        let shot = b.screenshot(&format!("{what}-{width}")).unwrap();
        assert!(
            layout.measured > 0,
            "{what} at {width} px: nothing measured"
        );
        assert!(
            layout.offences.is_empty(),
            "{what} at {width} px: {} offence(s) (screenshot {shot:?}):\n{}",
            layout.offences.len(),
            layout.report()
        );
        for e in &layout.ellipsised {
            assert!(
                may_cut.contains(&column(&e.selector)),
                "{what} at {width} px: {} cut with an ellipsis: {:?} (title {:?}, screenshot {shot:?})",
                e.selector,
                e.text,
                e.title
            );
        }
        cut.push((width, layout.ellipsised));
    }
    b.set_window_size(1400, 1000).unwrap();
    cut
}

fn sign_in(b: &Browser, url: &str, token: &str) {
    b.goto(&format!("{url}/ui/#/login")).unwrap();
    b.wait_for("#token", WAIT).unwrap();
    b.type_into("#token", token).unwrap();
    b.click("#login-submit").unwrap();
    b.wait_for("#who .badge", WAIT).unwrap();
}

#[test]
fn an_operator_watches_and_drives_a_deployment_from_the_browser() {
    // Nodes wait as discovered until accepted: one is accepted in the browser.
    let c = Controller::start_with(&[]);
    let gate = tempfile::tempdir().unwrap();
    let go = gate.path().join("go");
    let _a = Agent::start(&c, "web-1", &["a"]);
    let _b = Agent::start(&c, "db-1", &["b"]);
    let ids = c.api.wait_nodes(2);
    let id_of = |n: &str| ids.iter().find(|(name, _)| name == n).unwrap().1;
    c.api
        .ok("POST", &format!("/nodes/{}/accept", id_of("web-1")), None);
    let hold = format!(
        "echo holding; while [ ! -e {} ]; do sleep 0.2; done",
        go.display()
    );
    let graph = json!({"deploy": {"tasks": [
        {"id": "prepare", "type": "shell", "tags": ["a", "b", "c"], "parameters": {"cmd": "true", "timeout": 60, "retries": 0}},
        {"id": "hold", "type": "shell", "tags": ["a"], "requires": ["prepare"], "parameters": {"cmd": hold, "timeout": 600, "retries": 0}},
        {"id": "boom", "type": "shell", "tags": ["b"], "requires": ["prepare"],
         "parameters": {"cmd": "echo boom-out; echo 'boom-err <b>not bold</b>' >&2; exit 3", "timeout": 60, "retries": 0}},
        // Skipped when boom fails: the console shows boom as the node's task, not this last one.
        {"id": "cleanup", "type": "shell", "tags": ["b"], "requires": ["boom"], "parameters": {"cmd": "true", "timeout": 60, "retries": 0}},
        {"id": "finish", "type": "shell", "tags": ["a"], "requires": ["hold"], "parameters": {"cmd": "true", "timeout": 60, "retries": 0}},
    ]}, "maintenance": {"tasks": [
        {"id": "drain", "type": "shell", "tags": ["b"], "parameters": {"cmd": "true"}},
        {"id": "restart", "type": "shell", "tags": ["a"], "cross_depends": [{"name": "drain", "tags": ["b"]}], "parameters": {"cmd": "true"}},
    ]}});
    // A name that would be markup if the console ever put text into HTML.
    let evil = "<img src=x id=pwn>lab";
    let b = Browser::start().unwrap();
    // A long phase name makes the failed node's reason long enough to wrap at 1024 px.
    let phase = "deploy-databases-first-then-the-web-tier-in-every-rack-of-the-whole-fleet";
    let strategy = format!("groups:\n  - {{name: databases, critical: false, depends_on: [], selectors: [{{node_tags: [b]}}], success_criteria: {{percent_successful_nodes: 100}}}}\n  - {{name: web, critical: true, depends_on: [], selectors: [{{node_tags: [a]}}]}}\n  - {{name: apps, critical: false, depends_on: [], selectors: [{{node_tags: [c]}}]}}\nphases: [{{name: {phase}, graph_type: deploy}}]\nmax_concurrent_groups: 3\n");
    // The console is served with its policy; the token is not in the page or its address.
    let page = c.api.http().get(format!("{}/ui/", c.url)).send().unwrap();
    assert_eq!(page.status(), 200);
    let csp = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"),
        "{csp}"
    );

    // Sign in with a wrong token first: refused, and the page says so.
    b.goto(&format!("{}/ui/", c.url)).unwrap();
    b.wait_for("#token", WAIT).unwrap();
    b.type_into("#token", "plt_wrong").unwrap();
    b.click("#login-submit").unwrap();
    b.wait_text("#login-error", WAIT, |t| t.contains("unknown or revoked"))
        .unwrap();
    sign_in(&b, &c.url, &c.api.token);

    // Accept the discovered node from the nodes page.
    b.goto(&format!("{}/ui/#/nodes?admission=discovered", c.url))
        .unwrap();
    b.wait_text("#node-count", WAIT, |t| t == "1 node(s)")
        .unwrap();
    b.click("#nodes-list .vrow").unwrap();
    b.wait_for("#node-accept", WAIT).unwrap();
    b.click("#node-accept").unwrap();
    wait_until("db-1 accepted", WAIT, || {
        c.api.get(&format!("/nodes/{}", id_of("db-1"))).unwrap()["admission"] == "accepted"
    });
    b.wait_text("#node-count", WAIT, |t| t == "0 node(s)")
        .unwrap();

    // A release with a role, a cluster holding web-1; db-1 joins it with that role from the browser.
    let release = c.api.ok(
        "POST",
        "/releases",
        Some(&json!({"name": "lab", "version": "1", "graphs": graph,
                     "roles_metadata": {"database": {"name": "Database"}}})),
    );
    let cluster = c.api.ok(
        "POST",
        "/clusters",
        Some(&json!({"name": evil, "release_id": release["id"]})),
    )["id"]
        .as_u64()
        .unwrap();
    c.api.ok(
        "PUT",
        &format!("/clusters/{cluster}/nodes"),
        Some(&json!({"nodes": [{"id": id_of("web-1")}]})),
    );
    b.goto(&format!("{}/ui/#/nodes?name=db", c.url)).unwrap();
    b.wait_text("#node-count", WAIT, |t| t == "1 node(s)")
        .unwrap();
    b.click("#nodes-list .vrow").unwrap();
    b.wait_for("#node-assign", WAIT).unwrap();
    b.type_into("#node-cluster", &cluster.to_string()).unwrap();
    b.type_into("#node-roles", "database").unwrap();
    b.click("#node-assign button").unwrap();
    wait_until("db-1 assigned with its role", WAIT, || {
        let n = c.api.get(&format!("/nodes/{}", id_of("db-1"))).unwrap();
        n["cluster_id"] == cluster && n["pending_roles"] == json!(["database"])
    });
    let r = c.api.raw(
        "PUT",
        &format!("/clusters/{cluster}/strategies/rollout/"),
        Some(&c.api.token),
        Some(("application/yaml", strategy.as_bytes().to_vec())),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    b.goto(&format!("{}/ui/#/clusters", c.url)).unwrap();
    b.wait_for("#clusters .cluster-name", WAIT).unwrap();
    assert_eq!(b.text("#clusters .cluster-name").unwrap(), evil);
    assert_eq!(b.count("#pwn").unwrap(), 0, "a cluster name became markup");
    let url = b.eval("return location.href").unwrap();
    assert!(
        !url.as_str().unwrap().contains(&c.api.token),
        "token in the address: {url}"
    );
    let stored = b
        .eval("return JSON.stringify(localStorage) + JSON.stringify(sessionStorage) + document.cookie")
        .unwrap();
    assert!(
        !stored.as_str().unwrap().contains(&c.api.token),
        "token stored: {stored}"
    );
    b.screenshot("clusters").unwrap();
    check_layout(
        &b,
        "clusters",
        &LayoutCheck {
            cells: "main td, main th, main .row > *, main .card",
            rows: "main tr",
            ..Default::default()
        },
        &[],
        |_| {},
    );

    // Nodes: both, with facts; filtering by tag is done by the server.
    b.goto(&format!("{}/ui/#/nodes", c.url)).unwrap();
    b.wait_text("#node-count", WAIT, |t| t == "2 node(s)")
        .unwrap();
    b.type_into("#filter-tag", "b").unwrap();
    b.click("#filter-apply").unwrap();
    b.wait_text("#node-count", WAIT, |t| t == "1 node(s)")
        .unwrap();
    assert_eq!(b.text("#nodes-list .node-name").unwrap(), "db-1");
    b.click("#nodes-list .vrow").unwrap();
    b.wait_text("#node-cpu", WAIT, |t| t.contains("threads"))
        .unwrap();
    // The node's agent, as it said at registration.
    let agent = format!("{} (protocol ", env!("CARGO_PKG_VERSION"));
    b.wait_text("#node-agent", WAIT, |t| t.starts_with(&agent))
        .unwrap();
    b.screenshot("nodes").unwrap();

    // A third node (tag c, its own group) that will succeed beside the failing and the running one.
    let _app = Agent::start(&c, "app-1", &["c"]);
    let ids = c.api.wait_nodes(3);
    let app = ids.iter().find(|(name, _)| name == "app-1").unwrap().1;
    c.api.ok("POST", &format!("/nodes/{app}/accept"), None);
    c.api.ok(
        "PUT",
        &format!("/clusters/{cluster}/nodes"),
        Some(&json!({"nodes": [{"id": app}]})),
    );

    // The graph: four tasks laid out, "parents for" finish highlights hold and prepare.
    b.goto(&format!("{}/ui/#/cluster/{cluster}/graph/deploy", c.url))
        .unwrap();
    b.wait_for("#graph .gnode", WAIT).unwrap();
    assert_eq!(b.count("#graph .gnode").unwrap(), 5);
    // Each box: the task's id, its type and its placement.
    let lines = b
        .eval("return [...document.querySelectorAll('#graph .gnode[data-task=prepare] text')].map((t) => t.textContent)")
        .unwrap();
    assert_eq!(lines, json!(["prepare", "shell", "tags: a, b, c"]));
    check_layout(
        &b,
        "graph",
        &LayoutCheck {
            boxes: "#graph .gnode",
            cells: "main h1, main > .row",
            ..Default::default()
        },
        &[],
        |_| {},
    );
    b.select("#parents-for", "finish").unwrap();
    b.wait_text("#graph-info", WAIT, |t| t == "2 task(s) before finish")
        .unwrap();
    assert_eq!(b.count("#graph .gnode.hl").unwrap(), 2);
    b.screenshot("graph").unwrap();
    // A cross-node wait is drawn as its own (dashed) edge.
    b.goto(&format!(
        "{}/ui/#/cluster/{cluster}/graph/maintenance",
        c.url
    ))
    .unwrap();
    b.wait_text("#graph-info", WAIT, |t| t == "2 tasks, 1 edges")
        .unwrap();
    assert_eq!(b.count("#graph path.edge.cross").unwrap(), 1);

    // The cluster: the strategy's groups with the nodes each selects; checks; then a deployment.
    b.goto(&format!("{}/ui/#/cluster/{cluster}", c.url))
        .unwrap();
    b.wait_text(
        "#strategies [data-group=databases] .group-nodes",
        WAIT,
        |t| t == "db-1",
    )
    .unwrap();
    b.select("#checks-graph-type", "deploy").unwrap();
    b.click("#checks-run").unwrap();
    b.wait_for("#checks .badge", WAIT).unwrap();
    b.screenshot("cluster").unwrap();
    check_layout(
        &b,
        "cluster",
        &LayoutCheck {
            cells: "main td, main th, main .row > *, main .card",
            rows: "main tr",
            ..Default::default()
        },
        &[],
        |_| {},
    );
    // A dry run first: resolved and shown, nothing started.
    b.select("#deploy-strategy", "rollout").unwrap();
    b.click("#deploy-dry-run").unwrap();
    b.click("#deploy-start").unwrap();
    b.wait_text("#dry-run-output [data-node=db-1]", WAIT, |t| {
        t.contains("prepare \u{2192} boom")
    })
    .unwrap();
    assert_eq!(c.api.get("/deployments").unwrap(), json!([]));
    b.click("#deploy-dry-run").unwrap();
    b.click("#deploy-start").unwrap();
    b.wait_for("#dep-head", WAIT).unwrap();
    let marker = b
        .eval("window.plinthMarker = 7; return location.hash")
        .unwrap();
    let dep: u64 = marker
        .as_str()
        .unwrap()
        .trim_start_matches("#/deployment/")
        .parse()
        .unwrap();

    // Live, without reloading: the databases group fails with its output, web keeps running.
    b.wait_for("#groups [data-group=databases][data-state=failed]", WAIT)
        .unwrap();
    b.wait_for("#groups [data-group=web][data-state=running]", WAIT)
        .unwrap();
    b.wait_text("#live", WAIT, |t| t == "live").unwrap();
    assert_eq!(
        b.eval("return window.plinthMarker").unwrap(),
        json!(7),
        "the page reloaded"
    );
    assert!(b.count("#events .event").unwrap() > 0);
    b.wait_for("#dep-filter option[value=failure]", WAIT)
        .unwrap();
    b.select("#dep-filter", "failure").unwrap();
    b.wait_text("#dep-nodes .dep-node-name", WAIT, |t| t == "db-1")
        .unwrap();
    b.click("#dep-nodes .vrow").unwrap();
    let out = b
        .wait_text("#node-tasks pre.stderr", WAIT, |t| t.contains("boom-err"))
        .unwrap();
    assert!(
        out.contains("<b>not bold</b>"),
        "output shown as text: {out}"
    );
    assert_eq!(b.count("#node-tasks pre.stderr b").unwrap(), 0);
    b.wait_text("#node-reason", WAIT, |t| t.contains("boom"))
        .unwrap();
    b.screenshot("deployment-live").unwrap();
    // The failed node's row: the task that failed it (not the skipped last one), its progress short
    // of its total and marked failed.
    assert_eq!(b.text("#dep-nodes .dep-node-task").unwrap(), "boom");
    let progress = b.text("#dep-nodes .progress").unwrap();
    assert_eq!(progress, "1/3 \u{2717}", "{progress}");
    assert_eq!(b.count("#dep-nodes .progress.failed").unwrap(), 1);
    b.wait_text("#dep-failures [data-node=db-1] .failure-task", WAIT, |t| {
        t == "task boom"
    })
    .unwrap();

    // All three nodes: one failed, one running, one succeeded; each group's counts say so.
    b.wait_for("#groups [data-group=apps][data-state=succeeded]", WAIT)
        .unwrap();
    b.eval("const f = document.getElementById('dep-filter'); f.value = ''; f.dispatchEvent(new Event('change'));")
        .unwrap();
    b.wait_text("#dep-nodes .vlist", WAIT, |t| {
        t.contains("db-1") && t.contains("web-1") && t.contains("app-1")
    })
    .unwrap();
    b.wait_text("#groups [data-group=web] .group-counts", WAIT, |t| {
        t == "1 running of 1"
    })
    .unwrap();
    assert_eq!(
        b.text("#groups [data-group=apps] .group-counts").unwrap(),
        "1 ok of 1"
    );
    assert_eq!(
        b.text("#groups [data-group=databases] .group-counts")
            .unwrap(),
        "1 failed of 1"
    );
    let summary = c.api.get(&format!("/deployments/{dep}/summary")).unwrap();
    let reason = summary["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "db-1")
        .unwrap()["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(reason.contains(phase), "{reason}");
    // The list is as tall as its rows: the events follow it, with no empty box between.
    let slack = b
        .eval("const box = document.querySelector('#dep-nodes .vlist'); return box.clientHeight - box.scrollHeight;")
        .unwrap();
    assert_eq!(slack, json!(0), "empty space in the nodes list");
    let dep_check = LayoutCheck {
        cells: "#dep-nodes .cell, #dep-failures .failure > *, #groups .group > *, #dep-head .row > *, #dep-node .card, #events .event",
        rows: "#dep-nodes .vrow, #dep-nodes .vhead, #dep-failures .failure, #groups .group, #events .event",
        aligned: &[("#dep-nodes .vhead", "#dep-nodes .vrow")],
        boxes: "",
    };
    // Cut with an ellipsis only: the node's name, phase, task and reason (all whole in the title, and
    // the reason whole in the failed nodes' list and the node's card).
    // Side by side (1920 px), the events start right under the list, only their heading between.
    let events_under_the_list = |width: u32| {
        if width < 1500 {
            return;
        }
        let gap = b
            .eval("return document.getElementById('events').getBoundingClientRect().top - document.querySelector('#dep-nodes .vlist').getBoundingClientRect().bottom")
            .unwrap();
        assert!(
            gap.as_f64().unwrap() < 60.0,
            "events {gap} px below the list"
        );
    };
    let cut = check_layout(
        &b,
        "deployment-live",
        &dep_check,
        &[2, 4, 6, 7],
        events_under_the_list,
    );
    for (width, cut) in &cut {
        if let Some(e) = cut.iter().find(|e| e.selector.contains("dep-node-reason")) {
            assert_eq!(e.title, reason, "at {width} px");
        }
    }
    // The reason wraps in the failed nodes' list at 1024 px: its row grows (measured above: not clipped).
    b.set_window_size(1024, 900).unwrap();
    let lines = b
        .eval("const r = document.querySelector('#dep-failures .failure-reason'); return Math.round(r.getBoundingClientRect().height / parseFloat(getComputedStyle(r).lineHeight));")
        .unwrap();
    assert!(
        lines.as_u64().unwrap() >= 2,
        "the reason fits one line: {lines}"
    );
    assert_eq!(
        b.eval("return [...document.querySelectorAll('#dep-nodes .vrow')].find((r) => r.querySelector('.dep-node-name').textContent === 'db-1').querySelector('.dep-node-reason').title")
            .unwrap(),
        json!(reason)
    );
    b.set_window_size(1400, 1000).unwrap();

    // A read-only token in a second browser sees the same deployment but cannot cancel or start.
    let ro = read_only_token(&c);
    let viewer = Browser::start().unwrap();
    sign_in(&viewer, &c.url, &ro);
    assert_eq!(viewer.text("#who .badge").unwrap(), "read_only");
    viewer
        .goto(&format!("{}/ui/#/deployment/{dep}", c.url))
        .unwrap();
    viewer.wait_for("#groups [data-group=web]", WAIT).unwrap();
    assert_eq!(
        viewer
            .eval("return document.getElementById('dep-cancel').disabled")
            .unwrap(),
        json!(true)
    );
    viewer
        .goto(&format!("{}/ui/#/cluster/{cluster}", c.url))
        .unwrap();
    viewer.wait_for("#deploy-start", WAIT).unwrap();
    assert_eq!(
        viewer
            .eval("return document.getElementById('deploy-start').disabled")
            .unwrap(),
        json!(true)
    );
    drop(viewer);

    // Cancel (two clicks), and the page shows the final report.
    b.click("#dep-cancel").unwrap();
    b.click("#dep-cancel").unwrap();
    b.wait_text("#dep-status", WAIT, |t| t == "cancelled")
        .unwrap();
    b.wait_for("#final", WAIT).unwrap();
    let report: Value = c.api.get(&format!("/deployments/{dep}")).unwrap();
    assert_eq!(report["status"], "cancelled", "{report:#}");
    b.screenshot("deployment-cancelled").unwrap();
    // Finished: nothing to cancel, so no Cancel button; its events are still there.
    assert_eq!(b.count("#dep-cancel").unwrap(), 0);
    b.goto(&format!("{}/ui/#/clusters", c.url)).unwrap();
    b.wait_for("#clusters", WAIT).unwrap();
    b.goto(&format!("{}/ui/#/deployment/{dep}", c.url)).unwrap();
    b.wait_text("#live", WAIT, |t| t == "finished").unwrap();
    assert_eq!(b.count("#dep-cancel").unwrap(), 0);
    assert!(b.count("#events .event").unwrap() > 0);
    check_layout(
        &b,
        "deployment-finished",
        &dep_check,
        &[2, 4, 6, 7],
        events_under_the_list,
    );

    // The nodes page: each node's cluster by name; the failed one in error, why, and a link to the
    // deployment that failed it.
    wait_until("db-1 in error", WAIT, || {
        c.api.get(&format!("/nodes/{}", id_of("db-1"))).unwrap()["status"] == "error"
    });
    b.goto(&format!("{}/ui/#/nodes", c.url)).unwrap();
    b.wait_text("#node-count", WAIT, |t| t == "3 node(s)")
        .unwrap();
    let rows = b
        .eval("return [...document.querySelectorAll('#nodes-list .vrow')].map((r) => [r.querySelector('.node-name').textContent, r.querySelector('.node-cluster').textContent, r.querySelector('.node-error').textContent, r.querySelector('.node-error a')?.getAttribute('href') ?? null])")
        .unwrap();
    let row = |name: &str| {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|r| r[0] == name)
            .unwrap_or_else(|| panic!("no row for {name}: {rows}"))
            .clone()
    };
    let db = row("db-1");
    assert_eq!(db[1], evil, "{db}");
    let why = db[2].as_str().unwrap();
    assert!(why.contains("task boom failed"), "{why}");
    assert_eq!(db[3], format!("#/deployment/{dep}"));
    assert_eq!(row("web-1")[1], evil);
    assert_eq!(row("web-1")[2], "");
    assert_eq!(b.count("#pwn").unwrap(), 0, "a cluster name became markup");
    b.click("#nodes-list .vrow:nth-child(1)").unwrap();
    b.wait_for("#node-detail .card", WAIT).unwrap();
    // Cut with an ellipsis only: name, cluster, roles, tags and the error's reason.
    check_layout(
        &b,
        "nodes",
        &LayoutCheck {
            cells: "#nodes-list .cell, #node-detail .card",
            rows: "#nodes-list .vrow, #nodes-list .vhead",
            aligned: &[("#nodes-list .vhead", "#nodes-list .vrow")],
            boxes: "",
        },
        &[2, 3, 9, 10, 11],
        |_| {},
    );
    b.click(&format!("#nodes-list a[href='#/deployment/{dep}']"))
        .unwrap();
    b.wait_text("#dep-status", WAIT, |t| t == "cancelled")
        .unwrap();
    b.goto(&format!("{}/ui/#/deployments", c.url)).unwrap();
    b.wait_text("#deployments", WAIT, |t| t.contains("cancelled"))
        .unwrap();
    b.screenshot("deployments").unwrap();
    check_layout(
        &b,
        "deployments",
        &LayoutCheck {
            cells: "main td, main th, main .row > *, main .card",
            rows: "main tr",
            ..Default::default()
        },
        &[],
        |_| {},
    );
    std::fs::write(&go, "").unwrap();
    // Nothing was blocked by the page's policy and no script failed along the way.
    assert_eq!(b.eval("return window.plinthErrors").unwrap(), json!([]));
    assert!(screenshot_dir().join("deployment-live.png").exists());
}

/// Percentiles of a list of milliseconds.
fn stats(v: &Value) -> String {
    let mut xs: Vec<f64> = v
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_f64)
        .collect();
    xs.sort_by(f64::total_cmp);
    if xs.is_empty() {
        return "none".into();
    }
    let p = |q: f64| xs[((xs.len() - 1) as f64 * q).round() as usize];
    format!(
        "n={} median={:.1} ms p95={:.1} ms max={:.1} ms",
        xs.len(),
        p(0.5),
        p(0.95),
        p(1.0)
    )
}

#[test]
#[ignore = "a benchmark: 10,000 simulated nodes; run by hand (docs/BENCHMARKS.md)"]
fn console_with_a_big_fleet() {
    let c = Controller::start_with(&[
        "--auto-accept",
        "--registrations-per-minute",
        "1000000",
        "--max-discovered-nodes",
        "20000",
        "--max-connections-per-address",
        "4096",
        "--max-untrusted-connections",
        "4096",
    ]);
    let token_file = c.data_dir().join("admin.token");
    let log = c.dir.path().join("loadgen.log");
    let loadgen = |args: &[&str]| {
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .unwrap();
        std::process::Command::new(bin("plinth-loadgen"))
            .args(args)
            .args(["--controller", &c.url, "--cert"])
            .arg(c.cert_path())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .expect("plinth-loadgen starts")
    };
    let loadgen_log = || std::fs::read_to_string(&log).unwrap_or_default();
    let b = Browser::start().unwrap();
    sign_in(&b, &c.url, &c.api.token);

    // A live deployment of 1,000 simulated nodes (the seed's five groups) answering after about 2 s.
    let mut phases = loadgen(&[
        "phases",
        "--nodes",
        "1000",
        "--answer-delay-ms",
        "2000",
        "--token-file",
        token_file.to_str().unwrap(),
    ]);
    let mut dep = 0;
    wait_until("a running deployment", Duration::from_secs(300), || {
        if let Ok(Some(status)) = phases.try_wait() {
            panic!("plinth-loadgen phases ended ({status}): {}", loadgen_log());
        }
        dep = c
            .api
            .get("/deployments")
            .ok()
            .and_then(|d| d.as_array()?.iter().find(|d| d["status"] == "running")?["id"].as_u64())
            .unwrap_or(0);
        dep != 0
    });
    b.goto(&format!("{}/ui/#/deployment/{dep}", c.url)).unwrap();
    b.wait_for("#groups .group", WAIT).unwrap();
    let first = b
        .eval("return window.plinthDeploymentFirstRenderMs")
        .unwrap();
    b.wait_text("#live", WAIT, |t| t == "live" || t == "ended")
        .unwrap();
    b.screenshot("deployment-1000").unwrap();
    b.wait_text("#dep-status", Duration::from_secs(600), |t| t != "running")
        .unwrap();
    let refresh = b.eval("return window.plinthRefreshMs").unwrap();
    let draw = b.eval("return window.plinthDrawMs").unwrap();
    assert!(phases.wait().unwrap().success(), "{}", loadgen_log());
    println!(
        "deployment page, 1,000 nodes: first render {first} ms; refresh (summary fetch + draw) {}; draw alone {}",
        stats(&refresh),
        stats(&draw)
    );

    // 10,000 nodes (the 1,000 above and 9,000 more) on the nodes page.
    let mut reg = loadgen(&["poll", "--nodes", "10000", "--seconds", "1"]);
    assert!(reg.wait().unwrap().success(), "{}", loadgen_log());
    b.goto(&format!("{}/ui/#/nodes", c.url)).unwrap();
    b.wait_text("#node-count", Duration::from_secs(120), |t| {
        t == "10000 node(s)"
    })
    .unwrap();
    let first = b.eval("return window.plinthFirstPageMs").unwrap();
    let all = b.eval("return window.plinthNodesLoadedMs").unwrap();
    // Scrolling the list: the time to draw a new window of rows and lay it out.
    let scroll = b
        .eval("const list = window.plinthNodesList; const box = list.el; const t = []; for (let i = 1; i <= 50; i++) { box.scrollTop = i * 5000; const s = performance.now(); list.refresh(); void box.lastChild.lastChild.offsetTop; t.push(performance.now() - s); } return t;")
        .unwrap();
    let filter_start = Instant::now();
    b.type_into("#filter-name", "sim-999").unwrap();
    b.click("#filter-apply").unwrap();
    b.wait_text("#node-count", WAIT, |t| t == "11 node(s)")
        .unwrap();
    let filtered = filter_start.elapsed();
    b.screenshot("nodes-10000").unwrap();
    println!(
        "nodes page, 10,000 nodes: first page (2,000) shown {first} ms; all loaded {all} ms; scroll redraw {}; name filter round trip {:.0} ms",
        stats(&scroll),
        filtered.as_secs_f64() * 1000.0
    );
}
