//! `plinth-agent`: the node agent's command line.
//!
//! Exit codes: 0 clean stop or success; 1 unexpected runtime failure (`root-device`: no disk fits); 2 bad
//! usage or configuration; 3 state directory problem (node key, revision, journal); 4 TLS setup problem
//! (certificates).

use clap::{Args, Parser, Subcommand, ValueEnum};
use plinth_agent::cmdline::DEFAULT_CMDLINE_PATH;
use plinth_agent::config::{
    FileConfig, Overrides, Settings, DEFAULT_CONFIG_PATH, DEFAULT_STATE_DIR,
};
use plinth_agent::facts;
use plinth_agent::identity::NodeIdentity;
use plinth_agent::service::reload::{read_cmdline, ReloadSource};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

/// Plinth's node agent: reports facts, pulls signed task lists, runs them, reports results.
#[derive(Debug, Parser)]
#[command(name = "plinth-agent", version, about)]
struct Cli {
    /// Log format on standard error.
    #[arg(long, value_enum, default_value_t = LogFormat::Human, global = true)]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum LogFormat {
    /// Human-readable lines.
    Human,
    /// One JSON object per line (for log collectors).
    Json,
    /// journald's native protocol: the message, its level as PRIORITY, and every field as a journal field
    /// of its own; JSON lines on standard error when the journal is not there.
    Journal,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the agent until SIGTERM or SIGINT.
    Run(RunArgs),
    /// Print this machine's facts as JSON.
    Facts(FactsArgs),
    /// Node key commands.
    Key {
        #[command(subcommand)]
        command: KeyCommand,
    },
    /// Print the disk an image would be written to (`/dev/NAME`), chosen by root device hints in
    /// Ironic's syntax, or by the default choice without hints. Exits 1 with the reason when no disk
    /// fits, 2 on bad hints or a bad facts file.
    RootDevice(RootDeviceArgs),
    /// Provisioning image commands.
    Image {
        #[command(subcommand)]
        command: ImageCommand,
    },
    /// Shell completions and the man page (the Debian package installs them).
    Generate {
        #[command(subcommand)]
        what: plinth_common::cli_docs::Generate,
    },
}

#[derive(Debug, Subcommand)]
enum ImageCommand {
    /// Put the agent, its enabled unit, its configuration and the controller's key and certificate into
    /// a root file system directory (`--root`) or a disk image's ext2/3/4 file system (`--disk`, raw or any
    /// format qemu-img reads; needs qemu-img and debugfs, no mounting). Nodes booted from it may add `plinth.controller=`, `plinth.key=`,
    /// `plinth.tls=`, `plinth.tags=`, `plinth.labels=`, `plinth.rack=`, `plinth.name=` and `plinth.token=` on the kernel command line.
    Inject(InjectArgs),
}

#[derive(Debug, Args)]
struct InjectArgs {
    /// The image's root file system directory.
    #[arg(long, required_unless_present = "disk", conflicts_with = "disk")]
    root: Option<PathBuf>,
    /// A disk image holding the root file system (ext2/3/4), changed in place only when everything is written.
    #[arg(long)]
    disk: Option<PathBuf>,
    /// The file system's byte offset in the disk image (a partition's start sector × sector size).
    #[arg(long, default_value_t = 0, requires = "disk")]
    offset: u64,
    /// The controller's URL, `https://host:port`, or several comma-separated in order of preference
    /// (else nodes need `plinth.controller=`).
    #[arg(long, value_delimiter = ',')]
    controller: Vec<String>,
    /// The controller's task list signing key, as `plinth-controller key show` prints it (else nodes
    /// need `plinth.key=`).
    #[arg(long)]
    controller_public_key: Option<String>,
    /// PEM file with the controller's TLS certificate, which the agents pin (else nodes need
    /// `plinth.tls=`).
    #[arg(long)]
    controller_cert: Option<PathBuf>,
    /// Tags of every node booted from the image (comma-separated).
    #[arg(long, value_delimiter = ',')]
    tags: Vec<String>,
    /// An enrollment token that admits the nodes.
    #[arg(long)]
    enrollment_token: Option<String>,
    /// The agent binary to put in (default: this one).
    #[arg(long)]
    binary: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct RunArgs {
    /// Configuration file.
    #[arg(long, default_value = DEFAULT_CONFIG_PATH)]
    config: PathBuf,
    /// Kernel command line file to read `plinth.*` keys from.
    #[arg(long, default_value = DEFAULT_CMDLINE_PATH)]
    cmdline: PathBuf,
    /// State directory (overrides the configuration's `state_dir`).
    #[arg(long)]
    state_dir: Option<PathBuf>,
    /// Write the agent's metrics to this file for node_exporter's textfile collector, for example
    /// /var/lib/prometheus/node-exporter/plinth_agent.prom (overrides the configuration's
    /// `metrics_textfile`).
    #[arg(long, value_name = "PATH")]
    metrics_textfile: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct FactsArgs {
    /// Kernel command line file (for PXE interface detection).
    #[arg(long, default_value = DEFAULT_CMDLINE_PATH)]
    cmdline: PathBuf,
    /// Read facts from this root instead of `/` (a copy of /sys, /proc, /etc, /dev).
    #[arg(long, hide = true)]
    root: Option<PathBuf>,
    /// Print on one line.
    #[arg(long)]
    compact: bool,
}

#[derive(Debug, Args)]
struct RootDeviceArgs {
    /// The hints as a JSON object, for example '{"size": ">= 100", "rotational": false}'.
    #[arg(long)]
    hints: Option<String>,
    /// Facts as `plinth-agent facts` prints them (default: this machine's).
    #[arg(long)]
    facts: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
enum KeyCommand {
    /// Print the node key's fingerprint (the node's identity) and public key; makes the key on first use.
    Show {
        /// Configuration file (for `state_dir`); ignored when missing.
        #[arg(long, default_value = DEFAULT_CONFIG_PATH)]
        config: PathBuf,
        /// State directory (overrides the configuration).
        #[arg(long)]
        state_dir: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.log_format);
    let code = match cli.command {
        Command::Run(args) => run(args),
        Command::Facts(args) => print_facts(args),
        Command::RootDevice(args) => root_device(args),
        Command::Key {
            command: KeyCommand::Show { config, state_dir },
        } => key_show(&config, state_dir),
        Command::Image {
            command: ImageCommand::Inject(args),
        } => image_inject(args),
        Command::Generate { what } => {
            use clap::CommandFactory as _;
            match plinth_common::cli_docs::generate(what, Cli::command(), &mut std::io::stdout()) {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("plinth-agent: cannot write: {e}");
                    1
                }
            }
        }
    };
    ExitCode::from(code)
}

fn init_logging(format: LogFormat) {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    // PLINTH_LOG (or RUST_LOG) holds a filter such as `info,plinth_agent=debug`.
    let filter = || {
        std::env::var("PLINTH_LOG")
            .ok()
            .and_then(|f| tracing_subscriber::EnvFilter::try_new(f).ok())
            .or_else(|| tracing_subscriber::EnvFilter::try_from_default_env().ok())
            .unwrap_or_else(|| tracing_subscriber::EnvFilter::new("info"))
    };
    if format == LogFormat::Journal {
        if let Ok(journal) = tracing_journald::layer() {
            tracing_subscriber::registry()
                .with(filter())
                .with(journal.with_syslog_identifier("plinth-agent".into()))
                .init();
            return;
        }
    }
    // Colours only on a terminal: journald and log files get plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter())
        .with_ansi(ansi)
        // Whatever a line carries (a node's path, task id or name) cannot end it or forge another.
        .with_writer(move || plinth_common::log_text::EscapeControls::new(std::io::stderr(), ansi));
    match format {
        LogFormat::Human => builder.init(),
        LogFormat::Json | LogFormat::Journal => builder.json().flatten_event(true).init(),
    }
}

fn run(args: RunArgs) -> u8 {
    let cmdline = match read_cmdline(&args.cmdline) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("plinth-agent: {e}");
            return 2;
        }
    };
    let overrides = Overrides {
        state_dir: args.state_dir,
        metrics_textfile: args.metrics_textfile,
    };
    let source = ReloadSource {
        config: args.config.clone(),
        cmdline: args.cmdline.clone(),
        overrides: overrides.clone(),
    };
    let settings = match Settings::load(&args.config, &cmdline, &overrides) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("plinth-agent: {e}");
            return 2;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(4)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("plinth-agent: cannot start the async runtime: {e}");
            return 1;
        }
    };
    match runtime.block_on(plinth_agent::service::run(settings, cmdline, source)) {
        Ok(()) => 0,
        Err(e) => {
            tracing::error!(error = %e, "plinth-agent failed");
            eprintln!("plinth-agent: {e}");
            u8::try_from(e.exit_code()).unwrap_or(1)
        }
    }
}

fn print_facts(args: FactsArgs) -> u8 {
    let cmdline = match read_cmdline(&args.cmdline) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("plinth-agent: {e}");
            return 2;
        }
    };
    let mut sources = facts::Sources::live(cmdline);
    if let Some(root) = args.root {
        sources.root = root;
        sources.live = false;
    }
    let started = Instant::now();
    let facts = facts::collect(&sources);
    let elapsed = started.elapsed();
    let json = if args.compact {
        serde_json::to_string(&facts)
    } else {
        serde_json::to_string_pretty(&facts)
    };
    match json {
        Ok(text) => {
            println!("{text}");
            eprintln!(
                "facts collected in {:.2} ms",
                elapsed.as_secs_f64() * 1000.0
            );
            0
        }
        Err(e) => {
            eprintln!("plinth-agent: cannot print facts: {e}");
            1
        }
    }
}

fn root_device(args: RootDeviceArgs) -> u8 {
    use plinth_agent::root_device::{choose, device_path, Hints};
    let hints = match args
        .hints
        .as_deref()
        .map(serde_json::from_str::<serde_json::Value>)
    {
        None => None,
        Some(Ok(value)) => match Hints::parse(&value) {
            Ok(hints) => Some(hints),
            Err(e) => {
                eprintln!("plinth-agent: {e}");
                return 2;
            }
        },
        Some(Err(e)) => {
            eprintln!("plinth-agent: the root device hints are not JSON: {e}");
            return 2;
        }
    };
    let facts = match &args.facts {
        Some(path) => match facts::read_file(path) {
            Ok(f) => f,
            Err(e) => {
                eprintln!("plinth-agent: {e}");
                return 2;
            }
        },
        None => facts::collect(&facts::Sources::live(Default::default())),
    };
    match choose(&facts.disks, hints.as_ref()) {
        Ok(disk) => {
            println!("{}", device_path(disk));
            0
        }
        Err(no_disk) => {
            eprintln!("{no_disk}");
            1
        }
    }
}

fn key_show(config: &Path, state_dir: Option<PathBuf>) -> u8 {
    let state_dir = match state_dir {
        Some(d) => d,
        None => match FileConfig::load(config) {
            Ok(file) => file
                .state_dir
                .unwrap_or_else(|| PathBuf::from(DEFAULT_STATE_DIR)),
            Err(plinth_agent::config::ConfigError::Read { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                PathBuf::from(DEFAULT_STATE_DIR)
            }
            Err(e) => {
                eprintln!("plinth-agent: {e}");
                return 2;
            }
        },
    };
    match NodeIdentity::load_or_create(&state_dir) {
        Ok(id) => {
            println!("fingerprint: {}", id.fingerprint());
            println!("public_key: {}", id.public_key_text());
            0
        }
        Err(e) => {
            eprintln!("plinth-agent: {e}");
            3
        }
    }
}

fn image_inject(args: InjectArgs) -> u8 {
    let binary = match args.binary.map(Ok).unwrap_or_else(std::env::current_exe) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("plinth-agent: cannot find this binary: {e}");
            return 1;
        }
    };
    let opts = plinth_agent::image::InjectOptions {
        root: args.root.unwrap_or_default(),
        binary,
        controllers: args.controller,
        public_key: args.controller_public_key,
        cert: args.controller_cert,
        tags: args.tags,
        enrollment_token: args.enrollment_token,
        tls_key: None,
    };
    let done = match &args.disk {
        Some(image) => plinth_agent::image::inject_disk(
            &opts,
            &plinth_agent::image::DiskOptions {
                image: image.clone(),
                offset: args.offset,
            },
        ),
        None => plinth_agent::image::inject(&opts),
    };
    match done {
        Ok(done) => {
            for path in done.written {
                println!("{path}");
            }
            for path in done.cleared {
                println!("{path} (cleared: systemd makes it at first boot)");
            }
            for warning in done.warnings {
                eprintln!("plinth-agent: warning: node-specific file in the image: {warning}");
            }
            0
        }
        Err(
            e @ (plinth_agent::image::ImageError::Write { .. }
            | plinth_agent::image::ImageError::Disk { .. }),
        ) => {
            eprintln!("plinth-agent: {e}");
            1
        }
        Err(e) => {
            eprintln!("plinth-agent: {e}");
            2
        }
    }
}
