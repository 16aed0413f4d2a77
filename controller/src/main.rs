//! `plinth-controller`: serve, and manage keys and tokens.

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use plinth_controller::api::auth::token_hash;
use plinth_controller::config::{self, Config, Overrides};
use plinth_controller::datadir::{random_bytes, DataDir};
use plinth_controller::store::{Store, TokenRole};
use std::net::SocketAddr;
use std::path::PathBuf;

/// The controller's allocator. A large deployment's start and end are short peaks of hundreds of MiB of
/// small blocks: glibc's malloc kept most of those pages resident once they were freed (a controller
/// that had run a 100,000-node deployment stayed at 2.3 GiB, against 0.5 GiB before it), while
/// jemalloc's background threads give them back to the system within seconds, and it spends less CPU
/// per block (docs/DECISIONS.md, "jemalloc for the controller"). Built without the `jemalloc` feature,
/// the controller uses the system's malloc, so that a heap profiler (heaptrack) can follow it.
#[cfg(all(feature = "jemalloc", not(target_env = "msvc")))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's settings, read when it starts (`_RJEM_MALLOC_CONF` in the environment still overrides
/// them): freed pages go back to the system after about a second, not jemalloc's ten. A deployment's
/// start, a phase's hand-over and its end each free hundreds of MiB in bursts; held ten seconds, those
/// bursts stacked on each other (at 18,000 agents, one second took 7 % off the sequencing controller's
/// peak and 14 % off its median through the phases, docs/BENCHMARKS.md).
#[cfg(all(feature = "jemalloc", not(target_env = "msvc")))]
#[allow(non_upper_case_globals)]
#[export_name = "_rjem_malloc_conf"]
pub static malloc_conf: &[u8; 20] = b"dirty_decay_ms:1000\0";

/// Gives every arena's freed pages back to the system now (`arena.<MALLCTL_ARENAS_ALL>.purge`), for
/// the engine to call after a large drop (`plinth_controller::memory`).
#[cfg(all(feature = "jemalloc", not(target_env = "msvc")))]
fn purge_freed_pages() {
    let rc = purge();
    if rc != 0 {
        tracing::debug!(rc, "jemalloc did not purge");
    }
}

/// jemalloc's purge of every arena; its answer (0 when done).
#[cfg(all(feature = "jemalloc", not(target_env = "msvc")))]
fn purge() -> std::ffi::c_int {
    // 4096 is jemalloc's name for every arena in its control namespace (MALLCTL_ARENAS_ALL).
    const ALL_ARENAS_PURGE: &std::ffi::CStr = c"arena.4096.purge";
    // SAFETY: a purge takes no value and answers none; every pointer passed is null or the name,
    // a valid C string.
    unsafe {
        tikv_jemalloc_sys::mallctl(
            ALL_ARENAS_PURGE.as_ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            0,
        )
    }
}

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
    /// The database: a PostgreSQL URL (`postgres://user:password@host/dbname?sslmode=verify-full`);
    /// the embedded SQLite file in the data directory when absent.
    #[arg(
        long,
        env = "PLINTH_DATABASE_URL",
        global = true,
        hide_env_values = true
    )]
    database_url: Option<String>,
    /// Log format: text, json, or journal (journald's native protocol).
    #[arg(long, env = "PLINTH_LOG_FORMAT", global = true, default_value = "text")]
    log_format: String,
    #[command(subcommand)]
    command: Command,
}

// Parsed once at start and matched at once: the size of its largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Serve the operator and agent APIs.
    Serve {
        /// Listen address.
        #[arg(long, env = "PLINTH_LISTEN")]
        listen: Option<SocketAddr>,
        /// Also serve Nailgun's operator API (for Fuel's `fuel2`) over plain HTTP on this address; off
        /// by default. Keep it on loopback, behind a local proxy, as Fuel kept Nailgun.
        #[arg(long, env = "PLINTH_NAILGUN_LISTEN")]
        nailgun_listen: Option<SocketAddr>,
        /// Serve Prometheus metrics (`/metrics`) over plain HTTP, without a token, on this address;
        /// off by default. Bind it to loopback or a private network.
        #[arg(long, env = "PLINTH_METRICS_LISTEN")]
        metrics_listen: Option<SocketAddr>,
        /// With several controllers on one database: the URL the others reach this one at
        /// (`https://host:port`); from --listen when absent.
        #[arg(long, env = "PLINTH_ADVERTISE_URL")]
        advertise_url: Option<String>,
        /// Admit every new node without an operator.
        #[arg(long, env = "PLINTH_AUTO_ACCEPT")]
        auto_accept: bool,
        /// A secret that admits nodes presenting it.
        #[arg(long, env = "PLINTH_ENROLLMENT_TOKEN", hide_env_values = true)]
        enrollment_token: Option<String>,
        /// The node (by name) whose agent runs on this host and takes the tasks graphs place on
        /// `master`, such as Fuel's `master_shell` commands.
        #[arg(long, env = "PLINTH_MASTER_NODE")]
        master_node: Option<String>,
        /// Phase timeout in seconds.
        #[arg(long, env = "PLINTH_PHASE_TIMEOUT")]
        phase_timeout: Option<u64>,
        /// Seconds without a poll or heartbeat after which a node is offline.
        #[arg(long, env = "PLINTH_OFFLINE_AFTER")]
        offline_after: Option<u64>,
        /// How many of a phase's task lists are stored, then handed out, at a time.
        #[arg(long, env = "PLINTH_LISTS_PER_WRITE")]
        lists_per_write: Option<usize>,
        /// A name or address agents and operators use to reach the controller, for the self-signed
        /// certificate made on first start (repeatable or comma-separated; added to `tls_names`).
        #[arg(long = "tls-name", env = "PLINTH_TLS_NAMES", value_delimiter = ',')]
        tls_names: Vec<String>,
        /// The most nodes waiting as discovered.
        #[arg(long, env = "PLINTH_MAX_DISCOVERED_NODES")]
        max_discovered_nodes: Option<u64>,
        /// New registrations allowed per source address per minute.
        #[arg(long, env = "PLINTH_REGISTRATIONS_PER_MINUTE")]
        registrations_per_minute: Option<u32>,
        /// The most connections at once from peers not yet authenticated.
        #[arg(long, env = "PLINTH_MAX_UNTRUSTED_CONNECTIONS")]
        max_untrusted_connections: Option<usize>,
        /// The most such connections from one address.
        #[arg(long, env = "PLINTH_MAX_CONNECTIONS_PER_ADDRESS")]
        max_connections_per_address: Option<usize>,
        /// Serve network boot (iPXE scripts, the discovery image) over plain HTTP on this address; off
        /// by default (see `[netboot]` in the config file).
        #[arg(long, env = "PLINTH_NETBOOT_LISTEN")]
        netboot_listen: Option<SocketAddr>,
        /// The directory with the discovery image's `vmlinuz` and `initrd.img`.
        #[arg(long, env = "PLINTH_NETBOOT_IMAGES")]
        netboot_images: Option<PathBuf>,
    },
    /// Back up the data directory while the controller serves: a consistent snapshot of the SQLite
    /// database (on PostgreSQL, take the database with pg_dump), the files root and the certificate;
    /// the keys and tokens only with --with-secrets; sealed under a passphrase with --passphrase-file.
    Backup {
        /// The backup file to write (replaced only once complete).
        #[arg(long, value_name = "FILE")]
        to: PathBuf,
        /// Include the signing key, the TLS key, the admin token and the operator tokens: a controller
        /// restored without them makes a new signing key, which agents refuse.
        #[arg(long)]
        with_secrets: bool,
        /// Seal the backup under the passphrase in this file (its first line).
        #[arg(long, value_name = "FILE")]
        passphrase_file: Option<PathBuf>,
    },
    /// Restore a backup into a new (absent or empty) data directory (--data-dir); start the
    /// controller on it afterwards.
    Restore {
        /// The backup file.
        #[arg(long, value_name = "FILE")]
        from: PathBuf,
        /// The passphrase file of an encrypted backup.
        #[arg(long, value_name = "FILE")]
        passphrase_file: Option<PathBuf>,
    },
    /// Check the database (SQLite or PostgreSQL, after a restore or pg_restore): its schema, its
    /// records and every running deployment's state; exits 1 naming what is wrong.
    Check,
    /// Shell completions and the man page (the Debian package installs them).
    Generate {
        #[command(subcommand)]
        what: plinth_common::cli_docs::Generate,
    },
    /// Network boot's helpers.
    Netboot {
        #[command(subcommand)]
        command: NetbootCommand,
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
enum NetbootCommand {
    /// Write dnsmasq's configuration (to standard output) for DHCP and TFTP on the boot network, and
    /// fill its TFTP root with iPXE and the script that chains it to the boot listener.
    DnsmasqConfig {
        /// The interface on the boot network.
        #[arg(long)]
        interface: String,
        /// dnsmasq hands out addresses: `START,END[,NETMASK][,LEASE]`.
        #[arg(long, conflicts_with = "proxy", required_unless_present = "proxy")]
        dhcp_range: Option<String>,
        /// With --dhcp-range: the default gateway to hand out.
        #[arg(long, requires = "dhcp_range")]
        router: Option<String>,
        /// Another DHCP server hands out addresses on this subnet (`10.20.0.0`): answer PXE only.
        #[arg(long)]
        proxy: Option<String>,
        /// The boot listener's URL as servers reach it (`http://10.20.0.2:8080`).
        #[arg(long)]
        boot_url: String,
        /// The TFTP root to fill (a directory of its own).
        #[arg(long)]
        tftp_root: PathBuf,
        /// Where the iPXE binaries are (Debian's `ipxe` package).
        #[arg(long, default_value = "/usr/lib/ipxe")]
        ipxe_dir: PathBuf,
    },
}

#[derive(Subcommand)]
enum KeyCommand {
    /// Print the public key that agents pin (base64), made on first start.
    Show,
    /// Start rotating the signing key: make the next key, which the controller announces to every
    /// agent (signed by the current key) until the switch, then signs with; the old key is retired.
    /// Reload the controller afterwards (SIGHUP) to start announcing.
    Rotate {
        /// How long agents are told about the next key before the switch: `90s`, `30m`, `12h`,
        /// `7d`. Agents off for all of it must be pinned again by hand (docs/SECURITY.md).
        #[arg(long, default_value = "7d", value_parser = parse_overlap)]
        overlap: i64,
        /// Also renew the controller's own self-signed TLS certificate with a new key: agents learn
        /// its pin now, and it is served from the switch on.
        #[arg(long, conflicts_with = "announce_tls_cert")]
        renew_tls: bool,
        /// Announce the key of this certificate (PEM), which you will install as tls_cert (with its
        /// tls_key) after the switch: agents learn its pin now.
        #[arg(long, value_name = "CERT")]
        announce_tls_cert: Option<PathBuf>,
    },
    /// Show the signing key, the rotation under way and the retired key.
    Status,
}

/// An overlap: a number of seconds, or a number followed by `s`, `m`, `h` or `d`.
fn parse_overlap(text: &str) -> Result<i64, String> {
    let text = text.trim();
    let (number, unit) = match text.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&text[..i], c),
        _ => (text, 's'),
    };
    let unit = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        other => return Err(format!("unknown unit {other:?}: use s, m, h or d")),
    };
    number
        .parse::<i64>()
        .ok()
        .filter(|n| *n >= 0)
        .and_then(|n| n.checked_mul(unit))
        .ok_or_else(|| format!("{text:?} is not a duration such as 90s, 30m, 12h or 7d"))
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
    /// List tokens: name, role, and when each was revoked (never the tokens themselves).
    List,
    /// Revoke the token with this name: it stops working at once, in every running controller.
    Revoke {
        /// The token's name.
        name: String,
    },
}

fn load_config(cli: &Cli, over: Overrides) -> Result<Config> {
    load_config_from(
        cli.config.as_deref(),
        cli.data_dir.clone(),
        Overrides {
            database_url: cli.database_url.clone(),
            ..over
        },
    )
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
    // Colours only on a terminal: journald and log files get plain text, where an escape sequence can
    // only have come from somewhere it should not.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter())
        .with_ansi(ansi)
        // Whatever a line carries (a node's path, task id or name) cannot end it or forge another.
        .with_writer(move || plinth_common::log_text::EscapeControls::new(std::io::stderr(), ansi));
    if format == "json" || format == "journal" {
        builder.json().init();
    } else {
        builder.init();
    }
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    init_logging(&cli.log_format);
    #[cfg(all(feature = "jemalloc", not(target_env = "msvc")))]
    plinth_controller::memory::on_give_back(purge_freed_pages);
    match &cli.command {
        Command::Generate { what } => {
            use clap::CommandFactory as _;
            plinth_common::cli_docs::generate(*what, Cli::command(), &mut std::io::stdout())
                .context("cannot write")
        }
        Command::Serve {
            listen,
            nailgun_listen,
            metrics_listen,
            advertise_url,
            auto_accept,
            enrollment_token,
            master_node,
            phase_timeout,
            offline_after,
            lists_per_write,
            tls_names,
            max_discovered_nodes,
            registrations_per_minute,
            max_untrusted_connections,
            max_connections_per_address,
            netboot_listen,
            netboot_images,
        } => {
            let over = Overrides {
                listen: *listen,
                nailgun_listen: *nailgun_listen,
                metrics_listen: *metrics_listen,
                advertise_url: advertise_url.clone(),
                auto_accept: auto_accept.then_some(true),
                enrollment_token: enrollment_token.clone(),
                master_node: master_node.clone(),
                phase_timeout_secs: *phase_timeout,
                offline_after_secs: *offline_after,
                lists_per_write: *lists_per_write,
                tls_names: tls_names.clone(),
                max_discovered_nodes: *max_discovered_nodes,
                registrations_per_minute: *registrations_per_minute,
                max_untrusted_connections: *max_untrusted_connections,
                max_connections_per_address: *max_connections_per_address,
                netboot_listen: *netboot_listen,
                netboot_images: netboot_images.clone(),
                database_url: cli.database_url.clone(),
                ..Default::default()
            };
            let config = load_config(&cli, over.clone())?;
            let (config_path, data_dir) = (cli.config.clone(), cli.data_dir.clone());
            let loader: plinth_controller::server::ConfigLoader = Box::new(move || {
                load_config_from(config_path.as_deref(), data_dir.clone(), over.clone())
            });
            // One file descriptor per agent connection: the soft limit (often 1024) would refuse the
            // fleet long before memory or CPU run short.
            match plinth_controller::limits::files::raise_open_files() {
                Ok(f) => tracing::info!(
                    before = f.before,
                    now = f.after,
                    hard = f.hard,
                    "open-file limit"
                ),
                Err(e) => tracing::warn!(error = %e, "cannot raise the open-file limit"),
            }
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("cannot start the runtime")?;
            runtime.block_on(plinth_controller::server::serve(config, loader))
        }
        Command::Netboot {
            command:
                NetbootCommand::DnsmasqConfig {
                    interface,
                    dhcp_range,
                    router,
                    proxy,
                    boot_url,
                    tftp_root,
                    ipxe_dir,
                },
        } => {
            use plinth_controller::netboot::dnsmasq::{self, Addressing, Layout};
            let addressing = match (dhcp_range, proxy) {
                (Some(range), _) => Addressing::Server {
                    range: range.clone(),
                    router: router.clone(),
                },
                (None, Some(subnet)) => Addressing::Proxy {
                    subnet: subnet.clone(),
                },
                // clap requires one of the two.
                (None, None) => anyhow::bail!("give --dhcp-range or --proxy"),
            };
            let layout = Layout {
                interface: interface.clone(),
                addressing,
                boot_url: boot_url.trim_end_matches('/').to_string(),
                tftp_root: tftp_root.clone(),
            };
            let text = dnsmasq::config(&layout)?;
            dnsmasq::fill_tftp_root(&layout, ipxe_dir)?;
            print!("{text}");
            Ok(())
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
        Command::Key {
            command:
                KeyCommand::Rotate {
                    overlap,
                    renew_tls,
                    announce_tls_cert,
                },
        } => {
            let config = load_config(&cli, Overrides::default())?;
            let data = DataDir::new(&config.data_dir);
            let tls = match (announce_tls_cert, *renew_tls) {
                (Some(cert), _) => {
                    plinth_controller::keys::rotation::TlsChange::Announce(cert.clone())
                }
                (None, true) => {
                    if config.tls_files.is_some() {
                        anyhow::bail!(
                            "--renew-tls renews the controller's own certificate, but tls_cert is configured: give the next certificate with --announce-tls-cert"
                        );
                    }
                    plinth_controller::keys::rotation::TlsChange::Renew {
                        names: config.certificate_names(),
                    }
                }
                (None, false) => plinth_controller::keys::rotation::TlsChange::Keep,
            };
            let now = plinth_controller::clock::now_ms() / 1000;
            let started = plinth_controller::keys::rotation::start(&data, *overlap, &tls, now)?;
            println!(
                "next signing key {} announced; the controller switches from {} at {} (in {} s)",
                started.next, started.current, started.plan.switch_at, overlap
            );
            for pin in &started.plan.tls_pins {
                println!("next TLS key announced: {pin}");
            }
            println!(
                "reload the controller now (systemctl reload plinth-controller) to start announcing; with several controllers, copy signing.next.key and key-rotation.json{} into each one's data directory first, then reload each",
                if *renew_tls { ", tls/next-cert.pem and tls/next-key.pem" } else { "" }
            );
            Ok(())
        }
        Command::Key {
            command: KeyCommand::Status,
        } => {
            let config = load_config(&cli, Overrides::default())?;
            let status =
                plinth_controller::keys::rotation::status(&DataDir::new(&config.data_dir))?;
            println!(
                "signing key   {} ({})",
                status.signing_key, status.public_key
            );
            match (&status.rotation, &status.next_key) {
                (Some(plan), Some(next)) => println!(
                    "rotation      to {next}, switching at {}{}",
                    plan.switch_at,
                    if plan.tls_pins.is_empty() {
                        String::new()
                    } else {
                        format!(", next TLS key {}", plan.tls_pins.join(", "))
                    }
                ),
                _ => println!("rotation      none"),
            }
            println!(
                "retired key   {}",
                status.retired_key.as_deref().unwrap_or("none")
            );
            let cert = match &config.tls_files {
                Some((cert, _)) => cert.clone(),
                None => DataDir::new(&config.data_dir).tls_cert(),
            };
            if cert.exists() {
                println!("TLS key pin   {}", plinth_controller::tls::key_pin(&cert)?);
            }
            Ok(())
        }
        Command::Backup {
            to,
            with_secrets,
            passphrase_file,
        } => {
            let config = load_config(&cli, Overrides::default())?;
            let data = DataDir::new(&config.data_dir);
            let opts = plinth_controller::backup::Options {
                with_secrets: *with_secrets,
                passphrase: passphrase_file
                    .as_deref()
                    .map(plinth_controller::backup::read_passphrase)
                    .transpose()?,
                without_database: config.database_url.is_some(),
            };
            let m = plinth_controller::backup::backup(&data, to, &opts)?;
            println!(
                "backed up {} to {}: database {}, secrets {}, {}",
                data.root().display(),
                to.display(),
                if m.database {
                    "included"
                } else {
                    "left to pg_dump"
                },
                if m.secrets { "included" } else { "left out" },
                if m.encrypted {
                    "encrypted"
                } else {
                    "not encrypted"
                },
            );
            Ok(())
        }
        Command::Restore {
            from,
            passphrase_file,
        } => {
            let config = load_config(&cli, Overrides::default())?;
            let data = DataDir::new(&config.data_dir);
            let passphrase = passphrase_file
                .as_deref()
                .map(plinth_controller::backup::read_passphrase)
                .transpose()?;
            let m = plinth_controller::backup::restore(from, &data, passphrase.as_deref())?;
            println!(
                "restored {} into {}{}{}",
                from.display(),
                data.root().display(),
                if m.database {
                    ""
                } else {
                    "; restore the database with pg_restore"
                },
                if m.secrets {
                    ""
                } else {
                    "; it holds no secrets: a new signing key and admin token are made at start"
                },
            );
            Ok(())
        }
        Command::Check => {
            let config = load_config(&cli, Overrides::default())?;
            let data = DataDir::new(&config.data_dir);
            let store =
                plinth_controller::store::open(config.database_url.as_deref(), &data.database())
                    .context("cannot open the database")?;
            let problems = plinth_controller::backup::check(store.as_ref())?;
            if problems.is_empty() {
                Ok(())
            } else {
                for p in &problems {
                    eprintln!("plinth-controller: {p}");
                }
                std::process::exit(1)
            }
        }
        Command::Token { command } => {
            let config = load_config(&cli, Overrides::default())?;
            let data = DataDir::new(&config.data_dir);
            let store =
                plinth_controller::store::open(config.database_url.as_deref(), &data.database())
                    .context("cannot open the database")?;
            token_command(store.as_ref(), command)
        }
    }
}

/// `plinth-controller token create|list|revoke`, on the database directly.
fn token_command(store: &dyn Store, command: &TokenCommand) -> Result<()> {
    match command {
        TokenCommand::Create { name, read_only } => {
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
            tracing::info!(target: "audit", token = %name, role = ?role, "token created");
            eprintln!("token {name:?} created ({role:?})");
        }
        TokenCommand::List => {
            println!("{:<24} {:<10} REVOKED", "NAME", "ROLE");
            for t in store.list_tokens()? {
                let role = match t.role {
                    TokenRole::Admin => "admin",
                    TokenRole::ReadOnly => "read_only",
                };
                let revoked = t
                    .revoked_at_ms
                    .map(|ms| format!("{} ms after the epoch", ms))
                    .unwrap_or_else(|| "-".into());
                println!("{:<24} {:<10} {revoked}", t.name, role);
            }
        }
        TokenCommand::Revoke { name } => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
                .unwrap_or(0);
            let n = store
                .revoke_token(name, now)
                .with_context(|| format!("cannot revoke token {name:?}"))?;
            tracing::info!(target: "audit", token = %name, revoked = n, "token revoked");
            eprintln!("token {name:?} revoked: it no longer authenticates anything");
        }
    }
    Ok(())
}

#[cfg(all(test, feature = "jemalloc", not(target_env = "msvc")))]
mod tests {
    use std::ffi::CStr;

    /// jemalloc's setting `name`, read through `mallctl`.
    ///
    /// # Safety
    /// `name` must be a setting of jemalloc's control namespace whose C type has `T`'s size and
    /// representation (a `bool` for a bool, an `isize` for an ssize_t).
    unsafe fn setting<T: Default>(name: &CStr) -> T {
        let mut value = T::default();
        let mut len = std::mem::size_of::<T>();
        // SAFETY: `value` and `len` are valid for `T`'s size, which the caller vouches is the
        // setting's; no new value is passed.
        let rc = unsafe {
            tikv_jemalloc_sys::mallctl(
                name.as_ptr(),
                (&mut value as *mut T).cast(),
                &mut len,
                std::ptr::null_mut(),
                0,
            )
        };
        assert_eq!(rc, 0, "jemalloc answers mallctl for {name:?}");
        value
    }

    /// jemalloc's background threads are on: freed memory goes back to the system without a call
    /// from the controller (it calls one only after a deployment's start drops a great deal).
    #[test]
    fn the_allocator_gives_memory_back_by_itself() {
        // SAFETY: `background_thread` is a bool.
        let on: bool = unsafe { setting(c"background_thread") };
        assert!(on, "background threads purge freed pages");
    }

    /// Freed pages go back after about a second: the setting compiled in reached jemalloc.
    #[test]
    fn freed_pages_go_back_within_a_second() {
        if std::env::var_os("_RJEM_MALLOC_CONF").is_some() {
            return; // the environment overrides the compiled-in settings
        }
        // SAFETY: `opt.dirty_decay_ms` is an ssize_t.
        let ms: isize = unsafe { setting(c"opt.dirty_decay_ms") };
        assert_eq!(ms, 1000);
    }

    /// The purge the engine calls after a large drop is one jemalloc knows, and it answers it.
    #[test]
    fn a_purge_of_every_arena_is_answered() {
        let freed = vec![1u8; 64 << 20];
        drop(freed);
        assert_eq!(super::purge(), 0, "jemalloc purges every arena");
    }
}
