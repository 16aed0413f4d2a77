//! Prometheus metrics end to end: a real Prometheus scrapes a controller's metrics listener during a
//! deployment of two real agents (one task fails on one node), and PromQL through its HTTP API reads
//! the expected values; every query of the Grafana dashboard in `packaging/` runs against it too.

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

/// A Prometheus server scraping one target every second, its storage in a temporary directory;
/// killed on drop.
struct Prometheus {
    _dir: tempfile::TempDir,
    child: Child,
    url: String,
}

impl Prometheus {
    fn start(target: &str) -> Prometheus {
        let binary = needs::prometheus();
        let dir = tempfile::tempdir().expect("a temporary directory");
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  \
                 - job_name: plinth\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .expect("the configuration");
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
    let prometheus = Prometheus::start(&listen);
    let _agents = [
        Agent::start(&c, "ok-1", &["web"]),
        Agent::start(&c, "bad-1", &["bad"]),
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
        prometheus.value("plinth_task_duration_seconds_count{outcome=\"succeeded\"}"),
        Some(2.0),
        "`everywhere` succeeded on both nodes"
    );
    assert_eq!(
        prometheus.value("plinth_task_duration_seconds_count{outcome=\"failed\"}"),
        Some(1.0),
        "`breaks` failed on one node"
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
