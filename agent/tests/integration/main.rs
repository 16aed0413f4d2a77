//! The agent's process tests, one module a subject, in one test binary: the real `plinth-agent`
//! against a scripted controller (pull loop, fail-over, reload), image injection, and a measurement run on
//! demand (`puppet_overhead`), the root device choice as a command and against Ironic's own matcher
//! (`root_device`, `root_device_vs_ironic`). The idle footprint is a benchmark (`benches/idle_footprint.rs`).
//!
//! One subject: `cargo test -p plinth-agent --test integration MODULE::`.

mod support;

mod failover;
mod image_inject;
mod key_pin;
mod pull_loop;
mod puppet_overhead;
mod reload;
mod root_device;
mod root_device_vs_ironic;
