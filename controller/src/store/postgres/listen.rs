//! Notices between controllers: one connection of its own `LISTEN`s on the channel, made again when
//! it breaks (a database restart), with [`Notice::Reconnected`] sent then so that the controller
//! catches up on what it may have missed.

use super::connect::Target;
use crate::store::Notice;
use futures_util::StreamExt;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc::UnboundedSender;
use tokio_postgres::tls::TlsStream;
use tokio_postgres::{AsyncMessage, Client, Connection};

/// The database channel the notices travel on.
pub const CHANNEL: &str = "plinth";

/// How long to wait before connecting again after the connection broke.
const RECONNECT_DELAY: Duration = Duration::from_millis(500);

/// Listens until the receiver is dropped (runs on the store's runtime).
pub(super) async fn listen(target: Target, out: UnboundedSender<Notice>) {
    let tls = target
        .tls
        .clone()
        .map(tokio_postgres_rustls::MakeRustlsConnect::new);
    let mut first = true;
    while !out.is_closed() {
        let ended = match &tls {
            Some(tls) => match target.config.connect(tls.clone()).await {
                Ok((client, connection)) => session(client, connection, &out, first).await,
                Err(e) => Err(e),
            },
            None => match target.config.connect(tokio_postgres::NoTls).await {
                Ok((client, connection)) => session(client, connection, &out, first).await,
                Err(e) => Err(e),
            },
        };
        match ended {
            Ok(()) => {}
            Err(e) => {
                tracing::warn!(error = %super::bridge::with_causes(&e), "the database connection for notices from other controllers broke; connecting again")
            }
        }
        first = false;
        tokio::time::sleep(RECONNECT_DELAY).await;
    }
}

/// One connection: `LISTEN`, then every notice forwarded until it closes.
async fn session<S, T>(
    client: Client,
    mut connection: Connection<S, T>,
    out: &UnboundedSender<Notice>,
    first: bool,
) -> Result<(), tokio_postgres::Error>
where
    S: AsyncRead + AsyncWrite + Unpin,
    T: AsyncRead + AsyncWrite + TlsStream + Unpin,
{
    let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
    let statement = format!("LISTEN {CHANNEL}");
    let listen = client.batch_execute(&statement);
    tokio::pin!(listen);
    // The connection is driven while LISTEN runs: its answer arrives through it.
    loop {
        tokio::select! {
            done = &mut listen => { done?; break; }
            message = messages.next() => match message {
                Some(Ok(m)) => forward(m, out),
                Some(Err(e)) => return Err(e),
                None => return Ok(()),
            },
        }
    }
    if !first {
        let _ = out.send(Notice::Reconnected);
    }
    while let Some(message) = messages.next().await {
        forward(message?, out);
        if out.is_closed() {
            break;
        }
    }
    Ok(())
}

fn forward(message: AsyncMessage, out: &UnboundedSender<Notice>) {
    if let AsyncMessage::Notification(n) = message {
        if let Some(notice) = Notice::parse(n.payload()) {
            let _ = out.send(notice);
        }
    }
}
