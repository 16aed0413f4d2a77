//! `plinth-controller`: serve, and manage keys and tokens.

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use plinth_controller::api::auth::token_hash;
use plinth_controller::config::{self, Config, Overrides};
use plinth_controller::datadir::{random_bytes, DataDir};
use plinth_controller::store::sqlite::SqliteStore;
use plinth_controller::store::{Store, TokenRole};
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "plinth-controller",
    version,
    about = "Plinth's controller: agents pull signed task lists from it"
)]
struct Cli {
    /// Config file (TOML).
    #[arg(long, env = "PLINTH_CONFIG", global = true)]
    config: Option<PathBuf>,
    /// Data directory (database, keys, certificate, admin token).
    #[arg(long, env = "PLINTH_DATA_DIR", global = true)]
    data_dir: Option<PathBuf>,
    /// Log format: text, json, or journal (journald's native protocol).
    #[arg(long, env = "PLINTH_LOG_FORMAT", global = true, default_value = "text")]
    log_format: String,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the operator and agent APIs.
    Serve {
        /// Listen address.
        #[arg(long, env = "PLINTH_LISTEN")]
        listen: Option<SocketAddr>,
        /// Admit every new node without an operator.
        #[arg(long, env = "PLINTH_AUTO_ACCEPT")]
        auto_accept: bool,
        /// A secret that admits nodes presenting it.
        #[arg(long, env = "PLINTH_ENROLLMENT_TOKEN", hide_env_values = true)]
        enrollment_token: Option<String>,
        /// Phase timeout in seconds.
        #[arg(long, env = "PLINTH_PHASE_TIMEOUT")]
        phase_timeout: Option<u64>,
        /// Seconds without a poll or heartbeat after which a node is offline.
        #[arg(long, env = "PLINTH_OFFLINE_AFTER")]
        offline_after: Option<u64>,
        /// A name or address agents and operators use to reach the controller, for the self-signed
        /// certificate made on first start (repeatable or comma-separated; added to `tls_names`).
        #[arg(long = "tls-name", env = "PLINTH_TLS_NAMES", value_delimiter = ',')]
        tls_names: Vec<String>,
    },
    /// The task list signing key.
    Key {
        #[command(subcommand)]
        command: KeyCommand,
    },
    /// Operator tokens.
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
}

#[derive(Subcommand)]
enum KeyCommand {
    /// Print the public key that agents pin (base64), made on first start.
    Show,
}

#[derive(Subcommand)]
enum TokenCommand {
    /// Make a new operator token and print it (it is stored only as a hash).
    Create {
        /// A name for people.
        #[arg(long)]
        name: String,
        /// The token may only read.
        #[arg(long)]
        read_only: bool,
    },
}

fn load_config(cli: &Cli, over: Overrides) -> Result<Config> {
    load_config_from(cli.config.as_deref(), cli.data_dir.clone(), over)
}

/// The configuration from flags and environment (`over`), then the file, then defaults.
fn load_config_from(
    config: Option<&std::path::Path>,
    data_dir: Option<PathBuf>,
    over: Overrides,
) -> Result<Config> {
    let (path, explicit) = match config {
        Some(p) => (p.to_path_buf(), true),
        None => (PathBuf::from(config::DEFAULT_CONFIG_FILE), false),
    };
    let file = config::read_file(&path, explicit)?;
    Ok(Config::merge(Overrides { data_dir, ..over }, file)?)
}

/// Logging on standard error (`text`, `json`), or to the journal's native protocol (`journal`: every field
/// a journal field of its own, falling back to JSON lines when the journal is not there).
fn init_logging(format: &str) {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let filter = || {
        tracing_subscriber::EnvFilter::try_from_env("PLINTH_LOG").unwrap_or_else(|_| "info".into())
    };
    if format == "journal" {
        if let Ok(journal) = tracing_journald::layer() {
            tracing_subscriber::registry()
                .with(filter())
                .with(journal.with_syslog_identifier("plinth-controller".into()))
                .init();
            return;
        }
    }
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter())
        .with_writer(std::io::stderr);
    if format == "json" || format == "journal" {
        builder.json().init();
    } else {
        builder.init();
    }
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    init_logging(&cli.log_format);
    match &cli.command {
        Command::Serve {
            listen,
            auto_accept,
            enrollment_token,
            phase_timeout,
            offline_after,
            tls_names,
        } => {
            let over = Overrides {
                listen: *listen,
                auto_accept: auto_accept.then_some(true),
                enrollment_token: enrollment_token.clone(),
                phase_timeout_secs: *phase_timeout,
                offline_after_secs: *offline_after,
                tls_names: tls_names.clone(),
                data_dir: None,
            };
            let config = load_config(&cli, over.clone())?;
            let (config_path, data_dir) = (cli.config.clone(), cli.data_dir.clone());
            let loader: plinth_controller::server::ConfigLoader = Box::new(move || {
                load_config_from(config_path.as_deref(), data_dir.clone(), over.clone())
            });
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("cannot start the runtime")?;
            runtime.block_on(plinth_controller::server::serve(config, loader))
        }
        Command::Key {
            command: KeyCommand::Show,
        } => {
            let config = load_config(&cli, Overrides::default())?;
            let key = DataDir::new(&config.data_dir).load_signing_key()?;
            println!(
                "{}",
                plinth_common::signing::public_key_to_text(&key.verifying_key())
            );
            Ok(())
        }
        Command::Token {
            command: TokenCommand::Create { name, read_only },
        } => {
            let config = load_config(&cli, Overrides::default())?;
            let data = DataDir::new(&config.data_dir);
            let store = SqliteStore::open(&data.database()).context("cannot open the database")?;
            use base64::Engine as _;
            let token = format!(
                "plt_{}",
                base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(random_bytes()?)
            );
            let role = if *read_only {
                TokenRole::ReadOnly
            } else {
                TokenRole::Admin
            };
            store.create_token(name, &hex::encode(token_hash(&token)), role)?;
            println!("{token}");
            eprintln!("token {name:?} created ({role:?})");
            Ok(())
        }
    }
}
