//! Every end-to-end test of the workspace, one module a subject, in one test binary (one link of the
//! whole controller instead of one per file). Real `plinth-controller` and `plinth-agent` processes over
//! loopback TLS, real clients (`plinthctl`, `fuel2`, a browser), and what a test needs beyond Rust
//! (PostgreSQL, Chromium, qemu, Python) is checked in one place: `plinth_e2e::needs`.
//!
//! One subject: `cargo test -p plinth-e2e --test e2e MODULE::`.

mod agent_task_types;
mod airship;
mod api_auth_and_input;
mod backup;
mod boot_listener;
mod cancel;
mod chaos;
mod computed_fields;
mod console;
mod console_api;
mod custom_graphs;
mod disk_image;
mod enrollment;
mod failover;
mod fault_tolerance;
mod fleet;
mod fuel2;
mod fuel_seeds;
mod ha;
mod hardware_profile;
mod hostile;
mod hostile_agent;
mod hostile_files;
mod images;
mod key_rotation;
mod master;
mod metrics;
mod netboot;
mod one_truth;
mod packages;
mod plinthctl;
mod plinthctl_expr;
mod plinthctl_graph;
mod postgres;
mod power;
mod provision;
mod pull_loop;
mod rack;
mod refusals;
mod roles_tags_plugins;
mod site;
mod strategies;
mod systemd_units;
mod tls_names;
mod upgrade;
