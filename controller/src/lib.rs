//! Plinth's controller: the server agents pull from and operators drive.
//!
//! | module | owns |
//! |---|---|
//! | [`config`] | flags, environment, config file, defaults |
//! | [`datadir`] | what lives in the data directory and its modes |
//! | [`tls`] | the server certificate and the agent client-certificate check |
//! | [`server`] | start-up, the TLS accept loop, background work, clean stop |
//! | [`limits`] | bounds on untrusted peers: the connection pool, per-key connections, registrations per address |
//! | [`api`] | HTTP handlers (operators and agents), auth, errors, OpenAPI |
//! | [`store`] | the storage interface and its two backends, SQLite and PostgreSQL |
//! | [`cluster`] | several controllers on one database: heartbeats, the sequencing lease, notices, following, forwarding |
//! | [`registry`] | the in-memory index of node keys |
//! | [`board`] | published task lists and long-poll wake-ups |
//! | [`catalog`] | the files root: manifests, the hash cache, sealing file tasks' sources into their lists |
//! | [`groups`] | group commit: one committer per kind of write many agents send at once |
//! | [`intake`] | agents' results judged, stored in one transaction per group of reports, folded in |
//! | [`enrol`] | agents' registrations written in one transaction per group |
//! | [`engine`] | deployments: publish, fold results, timeouts, resume, report |
//! | [`ui`] | the web console's embedded files at `/ui/` and their security headers |
//! | [`workers`] | a bound on blocking work (database, orchestration) running at once |
//! | [`cluster_model`] | stored records as `plinth_common::model` values (release, plugins, cluster, nodes, graphs) |

pub mod api;
pub mod board;
pub mod catalog;
pub mod clock;
pub mod cluster;
pub mod cluster_model;
pub mod config;
pub mod connection;
pub mod datadir;
pub mod engine;
pub mod enrol;
pub mod groups;
pub mod intake;
pub mod limits;
pub mod memory;
pub mod registry;
pub mod server;
pub mod state;
pub mod store;
pub mod tls;
pub mod ui;
pub mod workers;
