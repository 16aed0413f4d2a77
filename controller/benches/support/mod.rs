//! What the store benchmarks share: a cluster with accepted nodes and a deployment running on them.

use plinth_controller::store::postgres::{scratch::ScratchPostgres, PgStore};
use plinth_controller::store::sqlite::SqliteStore;
use plinth_controller::store::*;
use std::collections::BTreeMap;

/// Both backends, fresh: SQLite in a temporary file (WAL, `synchronous=FULL`), PostgreSQL on a scratch
/// server of this machine with `fsync` on, over TLS.
pub struct Backends {
    // Declared first, dropped first: the stores close before their file and server go.
    sqlite: SqliteStore,
    pg: PgStore,
    _server: ScratchPostgres,
    _dir: tempfile::TempDir,
}

impl Backends {
    /// Opens both (starting the scratch server).
    pub fn start() -> Backends {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let sqlite = SqliteStore::open(&dir.path().join("bench.db")).expect("sqlite");
        let server = ScratchPostgres::start_durable().expect("a scratch PostgreSQL");
        let pg = PgStore::open(&server.fresh_database().expect("a database")).expect("postgres");
        Backends {
            sqlite,
            pg,
            _server: server,
            _dir: dir,
        }
    }

    /// Each store with its name.
    pub fn both(&self) -> [(&'static str, &dyn Store); 2] {
        [("sqlite", &self.sqlite), ("postgres", &self.pg)]
    }
}

/// `count` accepted nodes and a running deployment on them; returns (node ids, deployment).
pub fn running(s: &dyn Store, count: u64) -> (Vec<u64>, u64) {
    let rel = s
        .create_release(
            &NewRelease {
                name: "r".into(),
                version: "1".into(),
                data: serde_json::json!({}),
            },
            &BTreeMap::new(),
        )
        .expect("release");
    let c = s
        .create_cluster(&NewCluster {
            name: "c".into(),
            release_id: rel.id,
            settings: serde_json::json!({}),
            generated: serde_json::Value::Null,
        })
        .expect("cluster");
    let nodes: Vec<u64> = (0..count)
        .map(|i| {
            s.register_node(
                &NodeRegistration {
                    node_key: format!("k{i}"),
                    public_key: format!("pk{i}"),
                    name: format!("n{i}"),
                    facts: serde_json::json!({}),
                    tags: vec![],
                    labels: BTreeMap::new(),
                    rack: None,
                    now_ms: 1,
                    max_discovered: count,
                    identity: Default::default(),
                },
                NodeAdmission::Accepted,
            )
            .expect("node")
            .id
        })
        .collect();
    let d = s
        .create_deployment(&NewDeployment {
            inputs: CompressedJson::encode(&serde_json::Value::Null).expect("null encodes"),
            cluster_id: c.id,
            graph_type: "default".into(),
            node_ids: nodes.clone(),
            options: serde_json::json!({}),
            state: CompressedJson::encode(&serde_json::json!({})).expect("a state encodes"),
            now_ms: 1,
            deploys: true,
            primaries: Vec::new(),
        })
        .expect("deployment");
    (nodes, d.id)
}
