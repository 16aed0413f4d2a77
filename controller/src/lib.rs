//! Plinth's controller: the server agents pull from and operators drive.
//!
//! | module | owns |
//! |---|---|
//! | [`config`] | flags, environment, config file, defaults |
//! | [`datadir`] | what lives in the data directory and its modes |
//! | [`tls`] | the server certificate and the agent client-certificate check |
//! | [`keys`] | the signing keys in force and their rotation: announced to agents, switched, the old key retired |
//! | [`server`] | start-up, the TLS accept loop, background work, clean stop |
//! | [`state`] | what the HTTP handlers share; only [`api`] and [`server`] hold it whole, the other modules are given the parts they use |
//! | [`limits`] | bounds on untrusted peers: the connection pool, per-key connections, registrations per address |
//! | [`api`] | HTTP handlers (operators and agents), auth, errors, OpenAPI |
//! | [`store`] | the storage interface and its two backends, SQLite and PostgreSQL |
//! | [`ha`] | several controllers on one database: heartbeats, the sequencing lease, notices, following, forwarding |
//! | [`intake`] | what agents send, from connection to store: connections and peer keys, registrations in groups, the registry of node keys, the board of published lists, results judged and stored in groups |
//! | [`file_catalog`] | the files root: manifests, the hash cache, sealing file tasks' sources into their lists |
//! | [`engine`] | deployments: publish, fold results, timeouts, resume, report |
//! | [`enrollment`] | servers known before they boot: enrollment files, BMC passwords sealed |
//! | [`netboot`] | network boot: the plain-HTTP boot listener (iPXE scripts, the discovery image), dnsmasq's configuration |
//! | [`ui`] | the web console's embedded files at `/ui/` and their security headers |
//! | [`workers`] | a bound on blocking work (database, orchestration) running at once |
//! | [`cluster_model`] | stored records as `plinth_common::model` values (release, plugins, cluster, nodes, graphs) |

pub mod api;
pub mod backup;
pub mod clock;
pub mod cluster_model;
pub mod config;
pub mod datadir;
pub mod engine;
pub mod enrollment;
pub mod file_catalog;
pub mod ha;
pub mod intake;
pub mod keys;
pub mod limits;
pub mod memory;
pub mod metrics;
pub mod netboot;
pub mod power;
pub mod server;
pub mod state;
pub mod store;
pub mod tls;
pub mod ui;
pub mod workers;
