//! Starting the controller: the data directory, the database, the TLS listener, background work, and a
//! clean stop on SIGTERM.

use crate::api::auth::token_hash;
use crate::config::{Config, LiveConfig};
use crate::datadir::{random_bytes, write_new_file, DataDir};
use crate::engine::Engine;
use crate::intake::board::Board;
use crate::intake::registry::NodeRegistry;
use crate::state::AppState;
use crate::store::{Store, TokenRole};
use crate::tls;
use anyhow::{Context, Result};
use base64::Engine as _;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

/// Opens everything the controller needs and returns its state (no network yet).
pub fn open_state(config: Config) -> Result<Arc<AppState>> {
    let data = DataDir::new(&config.data_dir);
    data.ensure()?;
    let keys = Arc::new(crate::keys::KeyRing::new(crate::keys::rotation::load(
        &data,
    )?));
    let store: Arc<dyn Store> = match &config.database_url {
        Some(url) => crate::store::open(Some(url), &data.database())
            .context("cannot open the PostgreSQL database (database_url)")?,
        None => crate::store::open(None, &data.database())
            .with_context(|| format!("cannot open {}", data.database().display()))?,
    };
    let stored = store.list_tokens()?;
    if stored.is_empty() {
        let token = format!(
            "plt_{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(random_bytes()?)
        );
        write_new_file(&data.admin_token(), format!("{token}\n").as_bytes(), 0o600)
            .context("cannot write the admin token (delete the database too to start afresh)")?;
        store.create_token("admin", &hex::encode(token_hash(&token)), TokenRole::Admin)?;
        tracing::info!(path = %data.admin_token().display(), "made the admin token");
    }
    let nodes = Arc::new(NodeRegistry::load(&store.list_nodes()?));
    let board = Arc::new(Board::default());
    let exprs = plinth_common::snapshot::Expressions::standard();
    let engine = Arc::new(Engine::new(
        exprs.clone(),
        store.clone(),
        board.clone(),
        config.list_ttl,
        config.phase_timeout,
        Arc::new(crate::file_catalog::FileCatalog::new(
            config.data_dir.join(crate::api::files::FILES_DIR),
        )),
    ));
    engine.set_lists_per_write(config.lists_per_write);
    engine.set_master_node(config.master_node.clone());
    let shared = config.database_url.is_some();
    let id = data.load_or_create_controller_id()?;
    if shared {
        crate::ha::identity::check_unique(store.as_ref(), &id, std::thread::sleep)?;
    }
    let ha = crate::ha::Membership::new(
        id,
        crate::ha::host_name().unwrap_or_else(|| "controller".into()),
        crate::ha::advertised_url(config.advertise_url.as_deref(), config.listen),
        shared,
        crate::ha::peer::Peers::new()
            .map_err(|e| anyhow::anyhow!("cannot make the client for other controllers: {e}"))?,
    );
    if shared {
        // It sequences only once it holds the lease (the first beat, below, takes it when free).
        engine.step_down();
    } else {
        let resumed = engine.resume()?;
        if resumed > 0 {
            tracing::info!(deployments = resumed, "resumed running deployments");
        }
    }
    let workers = crate::workers::Workers::default();
    let agents =
        crate::intake::AgentSide::new(store.clone(), engine.clone(), nodes, board, workers.clone());
    let state = Arc::new(AppState {
        config: Arc::new(LiveConfig::new(config)),
        store,
        keys,
        agents,
        engine,
        exprs,
        workers,
        ha: Arc::new(ha),
    });
    let (ha, store, engine) = (&state.ha, state.store.as_ref(), &state.engine);
    crate::ha::lease::step(ha, store, engine, &state.agents.connections);
    crate::ha::lease::keep_up(ha, store, engine, &state.agents.board);
    Ok(state)
}

/// What keeping in step with the other controllers touches, for the beat's thread and the notices'
/// task.
fn ha_parts(state: &AppState) -> crate::ha::Parts {
    crate::ha::Parts {
        membership: state.ha.clone(),
        store: state.store.clone(),
        engine: state.engine.clone(),
        board: state.agents.board.clone(),
        registry: state.agents.registry.clone(),
        connections: state.agents.connections.clone(),
    }
}

/// Reads the configuration again (for SIGHUP); the same sources, in the same order, as at start.
pub type ConfigLoader = Box<dyn Fn() -> Result<Config> + Send + Sync>;

fn tls_acceptor(config: &Config) -> Result<tokio_rustls::TlsAcceptor> {
    let data = DataDir::new(&config.data_dir);
    let names = config.certificate_names();
    let (cert, key) = tls::certificate_files(&data, config.tls_files.as_ref(), &names)?;
    let missing = tls::names_not_covered(&cert, &names);
    if !missing.is_empty() {
        tracing::warn!(
            cert = %cert.display(),
            missing = %missing.join(", "),
            "the TLS certificate does not name every address in tls_names or --listen: clients that \
             check names (plinthctl, agents with ca_cert) refuse those; the self-signed certificate is \
             made only on first start, so give those names before it, or configure tls_cert"
        );
    }
    Ok(tokio_rustls::TlsAcceptor::from(tls::server_config(
        &cert, &key,
    )?))
}

/// Applies a reloaded configuration: admission, thresholds, timings and the TLS certificate change at once;
/// the listen address and the data directory need a restart (a change to them is logged and ignored).
fn reload(
    state: &AppState,
    loader: &ConfigLoader,
    acceptor: &mut tokio_rustls::TlsAcceptor,
) -> Result<()> {
    let mut fresh = loader()?;
    let current = state.config();
    // Port 0 in the configuration is the port bound at start.
    let same_listen = fresh.listen == current.listen
        || (fresh.listen.port() == 0 && fresh.listen.ip() == current.listen.ip());
    if !same_listen
        || fresh.nailgun_listen != current.nailgun_listen
        || fresh.metrics_listen != current.metrics_listen
        || fresh.netboot != current.netboot
        || fresh.data_dir != current.data_dir
    {
        tracing::warn!(
            "the listen addresses, network boot's settings and the data directory change only on restart; kept as they were"
        );
        fresh.listen = current.listen;
        fresh.nailgun_listen = current.nailgun_listen;
        fresh.metrics_listen = current.metrics_listen;
        fresh.netboot = current.netboot.clone();
        fresh.data_dir = current.data_dir.clone();
    }
    let keys = crate::keys::rotation::load(&DataDir::new(&fresh.data_dir))?;
    *acceptor = tls_acceptor(&fresh)?;
    state.keys.replace(keys);
    state.set_config(fresh);
    Ok(())
}

/// Switches to the next signing key when an announced rotation's time has come; a renewed
/// certificate of the controller's own is served from then on.
fn switch_keys_if_due(state: &AppState, acceptor: &mut tokio_rustls::TlsAcceptor) {
    let config = state.config();
    let data = DataDir::new(&config.data_dir);
    let now = crate::clock::now_ms() / 1000;
    match crate::keys::rotation::switch_if_due(&data, &state.keys, state.store.as_ref(), now) {
        Ok(Some(switched)) if switched.tls_renewed => match tls_acceptor(&config) {
            Ok(renewed) => {
                *acceptor = renewed;
                tracing::info!("serving the renewed TLS certificate");
            }
            Err(e) => tracing::error!(
                error = format!("{e:#}"),
                "cannot serve the renewed TLS certificate"
            ),
        },
        Ok(_) => {}
        Err(e) => tracing::error!(
            error = format!("{e:#}"),
            "the signing key switch failed; it is tried again"
        ),
    }
}

/// Serves until SIGTERM or SIGINT; SIGHUP reloads the configuration through `loader`.
pub async fn serve(config: Config, loader: ConfigLoader) -> Result<()> {
    let data = DataDir::new(&config.data_dir);
    let listener = TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("cannot listen on {}", config.listen))?;
    // Bound first: with port 0, the port the system chose is the one other controllers are told.
    let mut config = config;
    config.listen = listener.local_addr()?;
    let state = tokio::task::block_in_place(|| open_state(config.clone()))?;
    let mut acceptor = tls_acceptor(&config)?;
    tokio::task::block_in_place(|| {
        switch_keys_if_due(&state, &mut acceptor);
        match crate::keys::rotation::reseal_leftovers(&state.keys, state.store.as_ref()) {
            Ok(0) => {}
            Ok(n) => tracing::info!(
                bmc_passwords = n,
                "sealed BMC passwords again under the signing key"
            ),
            Err(e) => tracing::warn!(
                error = format!("{e:#}"),
                "cannot seal BMC passwords again under the signing key"
            ),
        }
    });
    let mut hangup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
        .context("cannot listen for SIGHUP")?;
    let nailgun = match config.nailgun_listen {
        Some(addr) => Some(crate::api::nailgun::listener::bind(addr).await?),
        None => None,
    };
    let metrics = match config.metrics_listen {
        Some(addr) => Some(crate::api::metrics::bind(addr).await?),
        None => None,
    };
    let router = crate::api::router(state.clone());
    let (close_tx, close_rx) = tokio::sync::watch::channel(false);
    let nailgun_addr = match &nailgun {
        Some(n) => Some(n.local_addr()?),
        None => None,
    };
    let netboot_addr = match config.netboot.clone() {
        Some(settings) => Some(crate::netboot::start(
            state.config.clone(),
            state.store.clone(),
            state.keys.clone(),
            settings,
        )?),
        None => None,
    };
    data.record_listening(listener.local_addr()?, nailgun_addr, netboot_addr)?;
    if let Some(nailgun) = nailgun {
        tracing::info!(nailgun_listen = %nailgun.local_addr()?, "serving Nailgun's operator API over plain HTTP");
        tokio::spawn(crate::api::nailgun::listener::serve(
            state.clone(),
            nailgun,
            close_rx.clone(),
        ));
    }
    if let Some(metrics) = metrics {
        tracing::info!(metrics_listen = %metrics.local_addr()?, "serving Prometheus metrics over plain HTTP");
        tokio::spawn(crate::api::metrics::serve(
            state.clone(),
            metrics,
            close_rx.clone(),
        ));
    }
    tracing::info!(listen = %listener.local_addr()?, data_dir = %data.root().display(), "controller ready");
    // READY=1 says the process serves; whether it can serve now is `/readyz`'s to say (a database
    // that blinks must not make systemd restart the controller). It was migrated above, so only a
    // database gone since makes this check fail.
    let ready = crate::api::probes::readiness(state.store.as_ref(), state.engine.is_sequencing());
    if !ready.ready {
        tracing::warn!(
            database = ready.database,
            migrations = ready.migrations,
            "not ready yet: /readyz answers 503 until the database answers"
        );
    }
    let _ = sd_notify::notify(false, &[sd_notify::NotifyState::Ready]);
    spawn_background(
        state.config.clone(),
        state.engine.clone(),
        state.agents.registry.clone(),
        state.store.clone(),
    );
    crate::power::poller::spawn(
        state.config.clone(),
        state.store.clone(),
        state.engine.clone(),
        state.keys.clone(),
    );
    crate::ha::lease::spawn(ha_parts(&state))?;
    if let Some(notices) = state.store.listen() {
        tokio::spawn(crate::ha::notices::run(ha_parts(&state), notices));
    }

    let shutdown = shutdown_signal();
    tokio::pin!(shutdown);
    let mut key_check = tokio::time::interval(Duration::from_secs(1));
    key_check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            _ = key_check.tick() => {
                if state.keys.now().next.is_some() {
                    tokio::task::block_in_place(|| switch_keys_if_due(&state, &mut acceptor));
                }
            }
            _ = hangup.recv() => {
                let _ = sd_notify::notify(false, &[sd_notify::NotifyState::Reloading]);
                match reload(&state, &loader, &mut acceptor) {
                    Ok(()) => tracing::info!("configuration reloaded"),
                    Err(e) => tracing::error!(error = format!("{e:#}"), "configuration not reloaded; the old one stays in force"),
                }
                let _ = sd_notify::notify(false, &[sd_notify::NotifyState::Ready]);
            }
            accepted = listener.accept() => {
                let (tcp, peer) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let _ = tcp.set_nodelay(true);
                // Every connection starts untrusted; the oldest untrusted one makes room when the pool is full.
                let Some(ticket) = state.admit_connection(peer.ip()) else {
                    continue;
                };
                let listening = crate::intake::connections::Listener {
                    acceptor: acceptor.clone(),
                    router: router.clone(),
                    registry: state.agents.registry.clone(),
                    closing: close_rx.clone(),
                };
                tokio::spawn(crate::intake::connections::serve(listening, tcp, peer, ticket));
            }
        }
    }
    tracing::info!("stopping");
    let _ = sd_notify::notify(false, &[sd_notify::NotifyState::Stopping]);
    data.forget_listening();
    let _ = close_tx.send(true);
    flush_last_seen(
        &state.config,
        &state.agents.registry,
        &state.store,
        Flush::Everything,
    )
    .await;
    let s = state.clone();
    let _ = tokio::task::spawn_blocking(move || {
        crate::ha::lease::release(&s.ha, s.store.as_ref(), &s.engine)
    })
    .await;
    Ok(())
}

/// Which last-seen times a flush writes.
#[derive(Clone, Copy)]
enum Flush {
    /// Those that moved a quarter of `offline_after` since written: the stored time, which other
    /// controllers read, then lags at most that plus the flush period (20 s at the default 60 s), so
    /// an agent polling at its default 25 s never shows offline there, and an idle fleet's polls cost
    /// the database a write per node every 15 s, not one per poll.
    Periodic,
    /// Every time that moved (at shutdown).
    Everything,
}

/// Writes the last-seen times `registry` holds to `store` (how far they must have moved is from
/// `offline_after` in the configuration in force).
async fn flush_last_seen(
    config: &LiveConfig,
    registry: &Arc<NodeRegistry>,
    store: &Arc<dyn Store>,
    which: Flush,
) {
    let step_ms = match which {
        Flush::Periodic => {
            i64::try_from(config.get().offline_after.as_millis() / 4).unwrap_or(i64::MAX)
        }
        Flush::Everything => 0,
    };
    let (registry, store) = (registry.clone(), store.clone());
    let _ = tokio::task::spawn_blocking(move || {
        let seen = registry.take_unflushed(step_ms);
        if !seen.is_empty() {
            if let Err(e) = store.touch_nodes(&seen) {
                tracing::warn!(error = %e, "cannot record when nodes were last seen");
            }
        }
    })
    .await;
}

/// Phase timeouts every second (`engine`), last-seen times every five (from `registry` to `store`), the
/// systemd watchdog.
fn spawn_background(
    config: Arc<LiveConfig>,
    engine: Arc<Engine>,
    registry: Arc<NodeRegistry>,
    store: Arc<dyn Store>,
) {
    let mut usec = 0u64;
    let watchdog =
        sd_notify::watchdog_enabled(false, &mut usec).then(|| Duration::from_micros(usec / 2));
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        let mut n: u64 = 0;
        loop {
            tick.tick().await;
            n += 1;
            let e = engine.clone();
            let _ = tokio::task::spawn_blocking(move || e.tick()).await;
            if n % 5 == 0 {
                flush_last_seen(&config, &registry, &store, Flush::Periodic).await;
            }
            if let Some(period) = watchdog {
                if n % period.as_secs().max(1) == 0 {
                    let _ = sd_notify::notify(false, &[sd_notify::NotifyState::Watchdog]);
                }
            }
        }
    });
}

async fn shutdown_signal() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}
