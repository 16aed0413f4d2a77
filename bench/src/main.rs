//! `plinth-loadgen`: simulated agents, each with its own node key and TLS connection, driving a
//! controller. Three modes:
//!
//! - `poll`: register many nodes, then poll as fast as possible; prints throughput and latency.
//! - `phases`: register nodes into the seed's five groups (scaled up), deploy with that strategy, answer
//!   every task list at once, and measure each phase-to-phase hand-over.
//! - `fleet`: agents as real agents behave (each its own connection, long polls, heartbeats, results),
//!   spread over several source addresses; memory, CPU and latency while they hold polls; `--deploy`.
//! - `bootstorm`: iPXE clients fetching scripts and boot files from the boot listener all at once,
//!   while agents poll.
//! - `imaging`: the agent's image writer against `qemu-img convert` on a loop device, and its peak
//!   memory streaming a larger image (as root).
//! - `metrics-cost`: the `poll` load against controllers it starts itself, without and with
//!   `--metrics-listen` (scraped every second) in turn; polls per second of each and their ratio.
//! - `chaos`: a fault-injection soak against a controller it starts itself: agent and controller kills,
//!   dropped and duplicated results, slow links; checks that nothing is lost.
//!
//! ```text
//! plinth-loadgen poll --controller https://127.0.0.1:7443 --cert data/tls/cert.pem --nodes 10000
//! plinth-loadgen phases --controller https://127.0.0.1:7443 --cert data/tls/cert.pem \
//!     --token-file data/admin.token --nodes 1000
//! plinth-loadgen chaos --nodes 30 --seconds 60
//! ```
//! The controller must admit the simulated nodes (`--auto-accept`); `chaos` starts its own.

mod bootstorm;
mod chaos;
mod facts;
mod fleet;
mod gate;
mod imaging;
mod metrics_cost;
mod phases;
mod poll;
mod sim;

use anyhow::Result;
use clap::Parser;

#[derive(Parser)]
#[command(
    name = "plinth-loadgen",
    about = "Simulated agents driving a Plinth controller"
)]
struct Cli {
    #[command(subcommand)]
    mode: Mode,
}

#[derive(clap::Subcommand)]
enum Mode {
    /// Register simulated nodes, then poll as fast as possible: throughput and latency.
    Poll(poll::PollArgs),
    /// Polls per second against controllers it starts, without and with their metrics listener
    /// (scraped), in turn: what exporting metrics costs.
    MetricsCost(metrics_cost::MetricsCostArgs),
    /// Deploy the seed's five groups scaled up and measure the phase-to-phase hand-overs.
    Phases(phases::PhaseArgs),
    /// A fault-injection soak: kills, drops, duplicates and slow links; checks nothing is lost.
    Chaos(chaos::ChaosArgs),
    /// Many agents waiting at the gate for one task on another node: the controller's cost while they
    /// wait, and how fast they are told to go.
    Gate(gate::GateArgs),
    /// Many agents as real agents behave: each its own TLS connection holding a long poll, with
    /// heartbeats and results; optionally a deployment across them.
    Fleet(fleet::FleetArgs),
    /// A rack booting at once: iPXE clients fetching their script, kernel and initramfs from the boot
    /// listener while agents poll; files and bytes per second against the loopback, memory, latency.
    Bootstorm(bootstorm::BootstormArgs),
    /// The agent's image writer against `qemu-img convert` writing the same images to the same loop
    /// device, and its peak memory streaming a larger image (as root).
    Imaging(imaging::ImagingArgs),
    /// Streams one image and prints the process's peak memory (what `imaging` runs as its child).
    #[command(hide = true)]
    ImagingChild(imaging::ChildArgs),
}

fn main() -> Result<()> {
    let mode = Cli::parse().mode;
    // The image writer's modes are blocking, and the child measures its own memory: no runtime.
    let mode = match mode {
        Mode::Imaging(args) => return imaging::run(args),
        Mode::ImagingChild(args) => return imaging::child(args),
        other => other,
    };
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(run(mode))
}

async fn run(mode: Mode) -> Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    match mode {
        Mode::Poll(args) => poll::run(args).await,
        Mode::MetricsCost(args) => metrics_cost::run(args).await,
        Mode::Phases(args) => phases::run(args).await,
        Mode::Chaos(args) => chaos::run(args).await,
        Mode::Gate(args) => gate::run(args).await,
        Mode::Fleet(args) => fleet::run(args).await,
        Mode::Bootstorm(args) => bootstorm::run(args).await,
        Mode::Imaging(_) | Mode::ImagingChild(_) => Ok(()),
    }
}
