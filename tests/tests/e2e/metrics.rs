//! Prometheus metrics end to end: a real Prometheus scrapes a controller's metrics listener during a
//! deployment of two real agents (one task fails on one node), and PromQL through its HTTP API reads
//! the expected values; every query of the Grafana dashboard in `packaging/` runs against it too. One
//! agent writes its own metrics file, which a real node_exporter serves through its textfile collector
//! to the same Prometheus.

use plinth_e2e::*;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const LONG: Duration = Duration::from_secs(120);

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("a free port")
        .local_addr()
        .expect("its address")
        .port()
}

/// A Prometheus server scraping its targets every second, its storage in a temporary directory;
/// killed on drop.
struct Prometheus {
    _dir: tempfile::TempDir,
    child: Child,
    url: String,
}

impl Prometheus {
    /// Scrapes each (job, target) every second.
    fn start(jobs: &[(&str, &str)]) -> Prometheus {
        let binary = needs::prometheus();
        let dir = tempfile::tempdir().expect("a temporary directory");
        let config = dir.path().join("prometheus.yml");
        let mut text = String::from(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n",
        );
        for (job, target) in jobs {
            text.push_str(&format!(
                "  - job_name: {job}\n    static_configs:\n      - targets: ['{target}']\n"
            ));
        }
        std::fs::write(&config, text).expect("the configuration");
        let port = free_port();
        let log = std::fs::File::create(dir.path().join("prometheus.log")).expect("a log file");
        let child = Command::new(binary)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("the log"))
            .stderr(log)
            .spawn()
            .expect("prometheus starts");
        let p = Prometheus {
            _dir: dir,
            child,
            url: format!("http://127.0.0.1:{port}"),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(r) = client().get(format!("{}/-/ready", p.url)).send() {
                if r.status().is_success() {
                    return p;
                }
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("prometheus did not become ready:\n{}", p.log());
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self._dir.path().join("prometheus.log")).unwrap_or_default()
    }

    /// Runs an instant query; the whole answer.
    fn query(&self, expr: &str) -> Value {
        client()
            .get(format!("{}/api/v1/query", self.url))
            .query(&[("query", expr)])
            .send()
            .and_then(|r| r.json::<Value>())
            .unwrap_or_else(|e| panic!("query {expr}: {e}"))
    }

    /// The one value of a query answering one series (`None` when it answers none).
    fn value(&self, expr: &str) -> Option<f64> {
        let answer = self.query(expr);
        assert_eq!(answer["status"], "success", "{expr}: {answer:#}");
        let result = answer["data"]["result"].as_array().expect("a vector");
        assert!(result.len() <= 1, "{expr} answers one series: {answer:#}");
        result
            .first()
            .map(|s| s["value"][1].as_str().unwrap().parse().unwrap())
    }

    /// Waits until `expr` answers `want`.
    fn wait_value(&self, expr: &str, want: f64) {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut last = None;
        while Instant::now() < deadline {
            last = self.value(expr);
            if last == Some(want) {
                return;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        panic!("{expr} stayed {last:?}, not {want}:\n{}", self.log());
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Debian's node_exporter with only its textfile collector, reading `dir`; killed on drop.
struct NodeExporter {
    child: Child,
    listen: String,
}

impl NodeExporter {
    fn start(dir: &std::path::Path) -> NodeExporter {
        let listen = format!("127.0.0.1:{}", free_port());
        let child = Command::new(needs::node_exporter())
            .arg(format!("--web.listen-address={listen}"))
            .arg("--collector.disable-defaults")
            .arg("--collector.textfile")
            .arg(format!("--collector.textfile.directory={}", dir.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("node_exporter starts");
        let e = NodeExporter { child, listen };
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if e.metrics().is_some() {
                return e;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("node_exporter did not answer on {}", e.listen);
    }

    /// What it serves now.
    fn metrics(&self) -> Option<String> {
        client()
            .get(format!("http://{}/metrics", self.listen))
            .send()
            .ok()
            .filter(|r| r.status().is_success())
            .and_then(|r| r.text().ok())
    }
}

impl Drop for NodeExporter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn client() -> reqwest::blocking::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client")
}

/// Every `expr` of a Grafana dashboard, in order.
fn dashboard_queries(dashboard: &Value) -> Vec<String> {
    fn walk(v: &Value, found: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                for (k, v) in map {
                    match (k.as_str(), v) {
                        ("expr", Value::String(e)) => found.push(e.clone()),
                        _ => walk(v, found),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|i| walk(i, found)),
            _ => {}
        }
    }
    let mut found = Vec::new();
    walk(dashboard, &mut found);
    found
}

#[test]
fn prometheus_scrapes_a_deployment_and_the_dashboard_queries_answer() {
    let metrics_port = free_port();
    let listen = format!("127.0.0.1:{metrics_port}");
    let c = Controller::start_with(&["--auto-accept", "--metrics-listen", &listen]);
    let began = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after the epoch")
        .as_secs_f64();
    // The agent on `bad-1` writes its metrics where node_exporter's textfile collector reads them.
    let textfiles = tempfile::tempdir().expect("a temporary directory");
    let exporter = NodeExporter::start(textfiles.path());
    let prometheus = Prometheus::start(&[("plinth", &listen), ("node", &exporter.listen)]);
    let textfile = textfiles.path().join("plinth_agent.prom");
    let _agents = [
        Agent::start(&c, "ok-1", &["web"]),
        Agent::start_with(
            &c,
            "bad-1",
            &["bad"],
            &c.public_key(),
            &format!("metrics_textfile = \"{}\"", textfile.display()),
        ),
    ];
    let nodes = c.api.wait_nodes(2);
    let graph = json!({"default": {"tasks": [
        shell("everywhere", &["*"], "echo hello"),
        {"id": "breaks", "type": "shell", "tags": ["bad"], "requires": ["everywhere"],
         "parameters": {"cmd": "echo broken >&2; exit 3", "retries": 0, "timeout": 30}},
    ]}});
    let ids: Vec<u64> = nodes.iter().map(|(_, id)| *id).collect();
    let cid = c.api.cluster_with_graph("metrics", graph, &ids);
    let dep = c.api.deploy(cid, "graph_type=default");
    let report = c.api.wait_deployment(dep, LONG);
    let status = report["status"].as_str().expect("a status").to_string();
    assert_ne!(
        status,
        "success",
        "one task failed: {report:#}\n{}",
        c.log()
    );
    assert_ne!(status, "running", "{report:#}");

    // A scrape after the end: the deployment counts under its final status.
    prometheus.wait_value(&format!("plinth_deployments{{status=\"{status}\"}}"), 1.0);
    assert_eq!(
        prometheus.value("plinth_deployments{status=\"running\"}"),
        Some(0.0)
    );
    assert_eq!(
        prometheus.value("sum(plinth_deployments)"),
        Some(1.0),
        "one deployment in all"
    );
    assert_eq!(
        prometheus.value(
            "plinth_task_duration_seconds_count{graph_type=\"default\",outcome=\"succeeded\"}"
        ),
        Some(2.0),
        "`everywhere` succeeded on both nodes"
    );
    assert_eq!(
        prometheus
            .value("plinth_task_duration_seconds_count{graph_type=\"default\",outcome=\"failed\"}"),
        Some(1.0),
        "`breaks` failed on one node"
    );
    assert_eq!(
        prometheus.value("sum(plinth_task_duration_seconds_count)"),
        Some(3.0),
        "every task under its graph type: {:#}",
        prometheus.query("plinth_task_duration_seconds_count")
    );
    // One group ran one phase of the default graph; a node failed it, so its criteria were not met.
    assert_eq!(
        prometheus.value(
            "plinth_phase_duration_seconds_count{graph_type=\"default\",outcome=\"failed\"}"
        ),
        Some(1.0),
        "{:#}",
        prometheus.query("plinth_phase_duration_seconds_count")
    );
    assert_eq!(
        prometheus.value("sum(plinth_phase_duration_seconds_count)"),
        Some(1.0)
    );
    let deployment = format!(
        "plinth_deployment_duration_seconds_count{{graph_type=\"default\",status=\"{status}\"}}"
    );
    assert_eq!(prometheus.value(&deployment), Some(1.0), "{deployment}");
    let took = prometheus
        .value(&deployment.replace("_count", "_sum"))
        .expect("the deployment's time");
    let phase_took = prometheus
        .value("sum(plinth_phase_duration_seconds_sum)")
        .expect("the phase's time");
    assert!(
        took > 0.0 && took < LONG.as_secs_f64() && phase_took <= took,
        "deployment {took} s, its phase {phase_took} s"
    );
    let accepted = prometheus
        .value("plinth_results_total{verdict=\"accepted\"}")
        .expect("accepted results");
    assert!(
        accepted >= 3.0,
        "at least the three ended tasks: {accepted}"
    );
    assert_eq!(
        prometheus.value("sum(plinth_results_total{verdict=\"refused\"}) or vector(0)"),
        Some(0.0)
    );
    let published = prometheus
        .value("plinth_lists_published_total")
        .expect("lists published");
    assert!(
        published >= 2.0,
        "a list for each node at least: {published}"
    );
    assert_eq!(prometheus.value("plinth_agents_connected"), Some(2.0));
    assert_eq!(
        prometheus.value("sum(plinth_agents{admission=\"accepted\"})"),
        Some(2.0)
    );
    assert_eq!(prometheus.value("plinth_lease_holder"), Some(1.0));
    let polls = prometheus
        .value("sum(plinth_polls_total)")
        .expect("polls answered");
    assert!(polls >= 2.0, "polls answered: {polls}");
    for kind in ["progress", "results"] {
        let n = prometheus
            .value(&format!(
                "plinth_store_transaction_duration_seconds_count{{kind=\"{kind}\"}}"
            ))
            .expect("store transactions");
        assert!(n >= 1.0, "{kind} transactions: {n}");
    }
    assert_eq!(
        prometheus.value("plinth_registrations_limited_total"),
        Some(0.0)
    );

    // The agent's own metrics, through node_exporter: `everywhere` succeeded and `breaks` failed on
    // its node, every result acknowledged, nothing refused.
    let node = |expr: &str| {
        if expr.contains("{}") {
            expr.replace("{}", "{job=\"node\"}")
        } else {
            expr.replace('}', ",job=\"node\"}")
        }
    };
    prometheus.wait_value(
        &node("plinth_agent_task_duration_seconds_count{outcome=\"succeeded\"}"),
        1.0,
    );
    prometheus.wait_value(
        &node("plinth_agent_task_duration_seconds_count{outcome=\"failed\"}"),
        1.0,
    );
    prometheus.wait_value(&node("plinth_agent_journal_backlog{}"), 0.0);
    assert_eq!(
        prometheus.value(&node("sum(plinth_agent_task_duration_seconds_count{})")),
        Some(2.0)
    );
    assert_eq!(
        prometheus.value(&node("sum(plinth_agent_lists_refused_total{})")),
        Some(0.0)
    );
    assert_eq!(
        prometheus.value(&node("plinth_agent_results_refused_total{}")),
        Some(0.0)
    );
    let revision = prometheus
        .value(&node("plinth_agent_list_revision{}"))
        .expect("the revision accepted");
    assert!(revision >= 1.0, "revision {revision}");
    let accepted_at = prometheus
        .value(&node("plinth_agent_list_accepted_timestamp_seconds{}"))
        .expect("when it was accepted");
    assert!(
        accepted_at >= began.floor() && accepted_at <= began + LONG.as_secs_f64(),
        "accepted at {accepted_at}, the test began at {began}"
    );
    assert_eq!(
        prometheus.value("node_textfile_scrape_error"),
        Some(0.0),
        "node_exporter read the file"
    );
    // Typed as the agent wrote them (an untyped family would mean the format was not read).
    let served = exporter.metrics().expect("node_exporter's metrics");
    for line in [
        "# TYPE plinth_agent_lists_refused_total counter",
        "# TYPE plinth_agent_task_duration_seconds histogram",
        "# TYPE plinth_agent_journal_backlog gauge",
    ] {
        assert!(
            served.lines().any(|l| l == line),
            "{line} missing in:\n{served}"
        );
    }

    // Every query of the dashboard is valid and answers data.
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../packaging/grafana/plinth-controller.json");
    let dashboard: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("the dashboard"))
            .expect("the dashboard is JSON");
    let queries = dashboard_queries(&dashboard);
    assert!(queries.len() >= 10, "queries: {queries:?}");
    // Rates need two scrapes of a series: a query may wait for the next ones.
    for expr in &queries {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let answer = prometheus.query(expr);
            assert_eq!(answer["status"], "success", "{expr}: {answer:#}");
            let result = answer["data"]["result"].as_array().expect("a vector");
            if !result.is_empty() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{expr} answers no data: {answer:#}"
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    // On the main listener, /metrics takes an operator's token.
    let http = c.api.http();
    let without = http.get(format!("{}/metrics", c.url)).send().unwrap();
    assert_eq!(without.status().as_u16(), 401);
    let with = http
        .get(format!("{}/metrics", c.url))
        .bearer_auth(&c.api.token)
        .send()
        .unwrap();
    assert_eq!(with.status().as_u16(), 200);
    let text = with.text().unwrap();
    assert!(
        text.contains("plinth_lists_published_total") && text.ends_with("# EOF\n"),
        "{text}"
    );
}

#[test]
fn on_postgresql_the_pool_is_measured() {
    let pg = needs::postgres();
    let url = pg.fresh_database().expect("a database");
    let listen = format!("127.0.0.1:{}", free_port());
    let c = Controller::start_with(&["--database-url", &url, "--metrics-listen", &listen]);
    let text = client()
        .get(format!("http://{listen}/metrics"))
        .send()
        .and_then(|r| r.text())
        .unwrap_or_else(|e| panic!("metrics: {e}\n{}", c.log()));
    let value = |name: &str| -> f64 {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{name} missing in:\n{text}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    assert!(value("plinth_database_connections_max") >= 1.0, "{text}");
    let in_use = value("plinth_database_connections{state=\"in_use\"}");
    let idle = value("plinth_database_connections{state=\"idle\"}");
    assert!(
        in_use + idle >= 1.0,
        "the controller has opened its pool: {text}"
    );
}

#[test]
fn a_cancelled_deployment_times_its_phase_as_cancelled_and_the_agent_counts_the_interruption() {
    let listen = format!("127.0.0.1:{}", free_port());
    let c = Controller::start_with(&["--auto-accept", "--metrics-listen", &listen]);
    let textfiles = tempfile::tempdir().expect("a temporary directory");
    let textfile = textfiles.path().join("plinth_agent.prom");
    let agent = Agent::start_with(
        &c,
        "cancel-1",
        &[],
        &c.public_key(),
        &format!("metrics_textfile = \"{}\"", textfile.display()),
    );
    let ids: Vec<u64> = c.api.wait_nodes(1).iter().map(|(_, id)| *id).collect();
    let graph = json!({"default": {"tasks": [shell("long", &["*"], "touch started; sleep 47")]}});
    let cid = c.api.cluster_with_graph("cancelled", graph, &ids);
    let dep = c.api.deploy(cid, "");
    let started = agent.work().join("started");
    wait_until("the long task to start", LONG, || started.exists());
    let (ok, out, err) = c.plinthctl(&["deploy", "cancel", &dep.to_string()]);
    assert!(ok, "{out}{err}");
    let report = c.api.wait_deployment(dep, LONG);
    assert_eq!(report["status"], "cancelled", "{report:#}");

    let value_in = |text: &str, series: &str| -> Option<f64> {
        text.lines()
            .find(|l| l.starts_with(&format!("{series} ")))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
    };
    // The phase was running when the deployment was cancelled.
    let text = client()
        .get(format!("http://{listen}/metrics"))
        .send()
        .and_then(|r| r.text())
        .unwrap_or_else(|e| panic!("metrics: {e}\n{}", c.log()));
    for (series, want) in [
        (
            "plinth_phase_duration_seconds_count{graph_type=\"default\",outcome=\"cancelled\"}",
            1.0,
        ),
        (
            "plinth_phase_duration_seconds_count{graph_type=\"default\",outcome=\"failed\"}",
            0.0,
        ),
        (
            "plinth_deployment_duration_seconds_count{graph_type=\"default\",status=\"cancelled\"}",
            1.0,
        ),
    ] {
        assert_eq!(value_in(&text, series), Some(want), "{series} in:\n{text}");
    }
    // The agent ended the running task: one interrupted attempt in its file.
    let interrupted = "plinth_agent_task_duration_seconds_count{outcome=\"interrupted\"}";
    wait_until("the agent's file to count the interruption", LONG, || {
        let text = std::fs::read_to_string(&textfile).unwrap_or_default();
        value_in(&text, interrupted) == Some(1.0)
    });
    let text = std::fs::read_to_string(&textfile).expect("the agent's metrics");
    assert!(
        value_in(&text, "plinth_agent_list_revision").is_some_and(|r| r >= 2.0),
        "the list and the order to stop were accepted:\n{text}"
    );
}
