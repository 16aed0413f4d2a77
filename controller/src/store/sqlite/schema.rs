//! Schema migrations, applied in order at start. `PRAGMA user_version` records how many have run.
//! Append new migrations; never edit one that has shipped.

/// The migrations, oldest first.
pub const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE nodes (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    node_key        TEXT NOT NULL UNIQUE,
    public_key      TEXT NOT NULL,
    name            TEXT NOT NULL,
    admission       TEXT NOT NULL,
    status          TEXT NOT NULL DEFAULT 'discover',
    cluster_id      INTEGER REFERENCES clusters(id),
    pending_roles   TEXT NOT NULL DEFAULT '[]',
    roles           TEXT NOT NULL DEFAULT '[]',
    tags            TEXT NOT NULL DEFAULT '[]',
    labels          TEXT NOT NULL DEFAULT '{}',
    rack            TEXT,
    facts           TEXT NOT NULL DEFAULT '{}',
    registered_at   INTEGER NOT NULL,
    last_seen       INTEGER NOT NULL,
    revision        INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE releases (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    name    TEXT NOT NULL,
    version TEXT NOT NULL,
    data    TEXT NOT NULL,
    UNIQUE (name, version)
);
CREATE TABLE clusters (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    name       TEXT NOT NULL UNIQUE,
    release_id INTEGER NOT NULL REFERENCES releases(id),
    settings   TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE graphs (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    owner_kind  TEXT NOT NULL,
    owner_id    INTEGER NOT NULL,
    graph_type  TEXT NOT NULL,
    name        TEXT,
    tasks       TEXT NOT NULL,
    node_filter TEXT,
    UNIQUE (owner_kind, owner_id, graph_type)
);
CREATE TABLE deployments (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    cluster_id  INTEGER NOT NULL REFERENCES clusters(id),
    graph_type  TEXT NOT NULL,
    status      TEXT NOT NULL,
    node_ids    TEXT NOT NULL,
    options     TEXT NOT NULL,
    state       TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    finished_at INTEGER
);
CREATE INDEX deployments_running ON deployments (status) WHERE status = 'running';
CREATE TABLE task_lists (
    deployment_id INTEGER NOT NULL REFERENCES deployments(id),
    node_id       INTEGER NOT NULL,
    revision      INTEGER NOT NULL,
    list          TEXT NOT NULL,
    PRIMARY KEY (node_id, revision)
);
CREATE INDEX task_lists_deployment ON task_lists (deployment_id);
CREATE TABLE results (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    node_id       INTEGER NOT NULL,
    deployment_id INTEGER NOT NULL,
    revision      INTEGER NOT NULL,
    task_id       TEXT NOT NULL,
    attempt       INTEGER NOT NULL,
    status        TEXT NOT NULL,
    result        TEXT NOT NULL,
    UNIQUE (node_id, deployment_id, revision, task_id, attempt, status)
);
CREATE INDEX results_deployment ON results (deployment_id);
CREATE TABLE tokens (
    id    INTEGER PRIMARY KEY AUTOINCREMENT,
    name  TEXT NOT NULL,
    hash  TEXT NOT NULL UNIQUE,
    role  TEXT NOT NULL
);
"#,
    r#"
CREATE TABLE strategies (
    cluster_id INTEGER NOT NULL REFERENCES clusters(id),
    name       TEXT NOT NULL,
    document   TEXT NOT NULL,
    PRIMARY KEY (cluster_id, name)
);
CREATE TABLE events (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    deployment_id INTEGER NOT NULL REFERENCES deployments(id),
    event         TEXT NOT NULL
);
CREATE INDEX events_deployment ON events (deployment_id, seq);
"#,
    r#"
CREATE TABLE plugins (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    name    TEXT NOT NULL,
    version TEXT NOT NULL,
    data    TEXT NOT NULL,
    UNIQUE (name, version)
);
ALTER TABLE clusters ADD COLUMN data TEXT NOT NULL DEFAULT '{}';
ALTER TABLE nodes ADD COLUMN model TEXT NOT NULL DEFAULT '{}';
CREATE TABLE task_states (
    node_id INTEGER NOT NULL,
    task_id TEXT NOT NULL,
    state   TEXT NOT NULL,
    PRIMARY KEY (node_id, task_id)
);
CREATE TABLE state_blobs (
    hash TEXT PRIMARY KEY,
    body TEXT NOT NULL
);
ALTER TABLE deployments ADD COLUMN inputs TEXT NOT NULL DEFAULT '{}';
"#,
    r#"
CREATE TABLE refusals (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    node_id       INTEGER NOT NULL,
    at_ms         INTEGER NOT NULL,
    kind          TEXT NOT NULL,
    deployment_id INTEGER,
    reason        TEXT NOT NULL,
    detail        TEXT NOT NULL
);
CREATE INDEX refusals_node ON refusals (node_id, seq);
CREATE TABLE counters (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
INSERT INTO counters (name, value) SELECT 'revision', COALESCE(MAX(revision), 0) FROM nodes;
ALTER TABLE tokens ADD COLUMN revoked_at INTEGER;
"#,
    r#"
ALTER TABLE strategies ADD COLUMN source TEXT NOT NULL DEFAULT 'null';
CREATE TABLE deployment_configurations (
    cluster_id    INTEGER PRIMARY KEY REFERENCES clusters(id),
    name          TEXT NOT NULL,
    configuration TEXT NOT NULL,
    source        TEXT NOT NULL
);
"#,
    r#"
ALTER TABLE clusters ADD COLUMN generated TEXT NOT NULL DEFAULT 'null';
"#,
    // Registration looks nodes up by name and counts the discovered ones; a cluster's nodes are read by
    // cluster. Without these, each of those was a scan of every node, so registering n nodes took time
    // in n squared (a 100,000-node fleet registered at a sixth of its first rate by 50,000 nodes).
    r#"
CREATE INDEX nodes_name ON nodes (name);
CREATE INDEX nodes_discovered ON nodes (admission) WHERE admission = 'discovered';
CREATE INDEX nodes_cluster ON nodes (cluster_id);
"#,
    // Several controllers on one database: heartbeats, the sequencing lease (who holds it changes only
    // when it passes on, so steps checking it never conflict with its renewals), cancel requests taken
    // to the controller that sequences, and followers reading lists published after a revision.
    r#"
CREATE TABLE controllers (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    url        TEXT NOT NULL,
    started_ms INTEGER NOT NULL,
    seen_ms    INTEGER NOT NULL,
    agents     INTEGER NOT NULL
);
CREATE TABLE leases (
    name       TEXT PRIMARY KEY,
    holder     TEXT NOT NULL,
    token      INTEGER NOT NULL
);
CREATE TABLE lease_expiry (
    name       TEXT PRIMARY KEY,
    expires_ms INTEGER NOT NULL
);
ALTER TABLE deployments ADD COLUMN cancel_by TEXT;
CREATE INDEX task_lists_revision ON task_lists (revision);
"#,
    // Agents' last-seen times apart from the nodes' rows (with PostgreSQL, several controllers write
    // them every few seconds, and they would collide with a deployment's steps updating those rows).
    // A node's last-seen time is the later of `nodes.last_seen` (its registration) and this.
    r#"
CREATE TABLE node_seen (
    node_id   INTEGER PRIMARY KEY,
    last_seen INTEGER NOT NULL
);
"#,
    // Task lists' tasks stored apart, each distinct text once (see `store::bodies`): a list's row keeps
    // its header and the hash of its tasks; rows from before keep the whole list and no hash.
    r#"
CREATE TABLE task_bodies (
    hash  TEXT PRIMARY KEY,
    tasks TEXT NOT NULL
);
ALTER TABLE task_lists ADD COLUMN tasks_hash TEXT;
"#,
    // A node's revision is its latest list's, read from `task_lists` (the primary key's last entry for
    // the node): writing it into the node's row as well rewrote every node's whole row (facts, model)
    // for each list published, which was most of a large phase's hand-over.
    r#"
ALTER TABLE nodes DROP COLUMN revision;
"#,
    // A deployment's inputs and task state blobs compressed (see `store::compressed`); those
    // recorded before keep their text in `inputs` and `body`.
    r#"
ALTER TABLE deployments ADD COLUMN inputs_gz BLOB;
ALTER TABLE state_blobs ADD COLUMN body_gz BLOB;
"#,
    // A deployment's orchestration state compressed, written so at every step that moves a phase (at
    // 100,000 nodes its text is 7 to 10 MB, which the database compressed again itself on the
    // hand-over's path); deployments recorded before keep their text in `state`.
    r#"
ALTER TABLE deployments ADD COLUMN state_gz BLOB;
"#,
    // Servers known before they first boot (see `store::sql::enrollments`): their name, labels and
    // BMC, the MACs, serial or UUID an agent is matched by, and the node an agent became; their power
    // state as the power loop last read it. A BMC's password is sealed (see `enrollment::secrets`).
    r#"
CREATE TABLE enrollments (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    name          TEXT NOT NULL UNIQUE,
    serial        TEXT UNIQUE,
    uuid          TEXT UNIQUE,
    tags          TEXT NOT NULL DEFAULT '[]',
    labels        TEXT NOT NULL DEFAULT '{}',
    rack          TEXT,
    profile       TEXT NOT NULL DEFAULT '{}',
    bmc           TEXT,
    bmc_secret    TEXT,
    node_id       INTEGER UNIQUE REFERENCES nodes(id),
    rekey         INTEGER NOT NULL DEFAULT 0,
    boot          TEXT NOT NULL DEFAULT 'discovery',
    power         TEXT NOT NULL DEFAULT 'unknown',
    power_error   TEXT,
    power_checked INTEGER NOT NULL DEFAULT 0,
    enrolled_at   INTEGER NOT NULL
);
CREATE TABLE enrollment_macs (
    mac           TEXT PRIMARY KEY,
    enrollment_id INTEGER NOT NULL REFERENCES enrollments(id) ON DELETE CASCADE
);
CREATE INDEX enrollment_macs_by_enrollment ON enrollment_macs (enrollment_id);
"#,
];
