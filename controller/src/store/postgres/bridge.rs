//! The bridge from the synchronous [`crate::store::Store`] to tokio-postgres: a small runtime of the
//! store's own drives the connections' sockets, and a caller waits for its answers on its own thread
//! (parked, not inside any runtime), so the store works from any thread: tokio's blocking pool, a
//! runtime's worker (at start), or a plain thread.
//!
//! Connections are pooled: a caller takes an idle one, opens a new one while fewer than the most
//! are open, or waits for one to be handed back. A connection that broke is dropped, not reused, and
//! so is one whose transaction sent a large message: tokio-postgres keeps a connection's buffers at
//! the size of the largest message it ever sent (a deployment's start sends every node's inputs, a
//! phase's publication its state and lists), and a pool of such connections held about 490 MB after a
//! 100,000-node deployment.

use crate::store::{StoreError, StoreResult};
use std::collections::HashMap;
use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;
use std::time::Duration;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Row, Statement};

/// Wakes a parked thread.
struct ThreadWaker(Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Runs a future to completion on this thread, parking between polls. Futures given here only wait
/// on channels to tasks of the store's runtime (a client's requests, a spawned task's handle), so they
/// need no runtime of their own.
pub(super) fn wait<F: Future>(future: F) -> F::Output {
    let waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::park();
    }
}

/// What opens a new connection (on the store's runtime, its socket driven there).
pub(super) type Connector = Box<dyn Fn() -> StoreResult<Client> + Send + Sync>;

/// One pooled connection with its prepared statements.
pub(super) struct Conn {
    client: Client,
    statements: HashMap<String, Statement>,
}

struct Slots {
    idle: Vec<Conn>,
    open: usize,
}

/// A bounded pool of connections.
pub(super) struct Pool {
    slots: Mutex<Slots>,
    returned: Condvar,
    max: usize,
    connect: Connector,
}

/// How long a caller waits for a connection when all are in use.
const CHECKOUT_TIMEOUT: Duration = Duration::from_secs(30);

impl Pool {
    /// A pool opening at most `max` connections with `connect`.
    pub(super) fn new(max: usize, connect: Connector) -> Pool {
        Pool {
            slots: Mutex::new(Slots {
                idle: Vec::new(),
                open: 0,
            }),
            returned: Condvar::new(),
            max: max.max(1),
            connect,
        }
    }

    /// How many connections are open, idle, and the most.
    pub(super) fn usage(&self) -> crate::store::PoolUse {
        let slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        crate::store::PoolUse {
            open: slots.open,
            idle: slots.idle.len(),
            max: self.max,
        }
    }

    /// Takes a connection: an idle one, a new one, or the next one handed back.
    pub(super) fn get(&self) -> StoreResult<Lease<'_>> {
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        let deadline = std::time::Instant::now() + CHECKOUT_TIMEOUT;
        loop {
            while let Some(conn) = slots.idle.pop() {
                if !conn.client.is_closed() {
                    return Ok(Lease {
                        pool: self,
                        conn: Some(conn),
                    });
                }
                slots.open -= 1;
            }
            if slots.open < self.max {
                slots.open += 1;
                drop(slots);
                return match (self.connect)() {
                    Ok(client) => Ok(Lease {
                        pool: self,
                        conn: Some(Conn {
                            client,
                            statements: HashMap::new(),
                        }),
                    }),
                    Err(e) => {
                        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
                        slots.open -= 1;
                        self.returned.notify_one();
                        Err(e)
                    }
                };
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return Err(StoreError::Database(format!(
                    "all {} database connections stayed busy for {}s",
                    self.max,
                    CHECKOUT_TIMEOUT.as_secs()
                )));
            }
            slots = self
                .returned
                .wait_timeout(slots, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

/// A connection taken from the pool; handed back when dropped (or closed, when it broke).
pub(super) struct Lease<'p> {
    pool: &'p Pool,
    conn: Option<Conn>,
}

impl Lease<'_> {
    /// Drops the connection instead of handing it back (its session is in an unknown state).
    pub(super) fn discard(mut self) {
        self.conn = None;
    }

    fn conn(&mut self) -> &mut Conn {
        // Present from creation until `discard` or drop, which consume the lease.
        self.conn.as_mut().expect("a lease holds its connection")
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        let mut slots = self.pool.slots.lock().unwrap_or_else(|p| p.into_inner());
        match self.conn.take() {
            Some(conn) if !conn.client.is_closed() => slots.idle.push(conn),
            _ => slots.open -= 1,
        }
        self.pool.returned.notify_one();
    }
}

/// SQLSTATEs after which the whole transaction is tried again: a serialization failure and a deadlock.
fn retryable(e: &tokio_postgres::Error) -> bool {
    use tokio_postgres::error::SqlState;
    matches!(
        e.code(),
        Some(c) if *c == SqlState::T_R_SERIALIZATION_FAILURE || *c == SqlState::T_R_DEADLOCK_DETECTED
    )
}

/// Maps a database error: constraint violations (class 23) are conflicts, everything else a database
/// error with the server's message.
pub(super) fn store_error(e: tokio_postgres::Error) -> StoreError {
    if let Some(db) = e.as_db_error() {
        if db.code().code().starts_with("23") {
            return StoreError::Conflict(db.message().to_string());
        }
        return StoreError::Database(format!("{} ({})", db.message(), db.code().code()));
    }
    StoreError::Database(with_causes(&e))
}

/// An error's message followed by its causes' (tokio-postgres puts the detail in the causes: which
/// option is unknown, why a handshake failed).
pub(super) fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let more = c.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        cause = c.source();
    }
    text
}

/// Above this many bytes of parameters, a transaction's connection is closed once it ends instead of
/// being pooled (see the module's documentation). A statement of that size costs far more than
/// opening a connection again.
pub(super) const LARGE_TRANSACTION: usize = 4 << 20;

/// One transaction on one connection. Its queries wait on the calling thread.
pub(super) struct Tx<'l, 'p> {
    lease: std::cell::RefCell<&'l mut Lease<'p>>,
    /// Set when a statement failed in a way that makes trying the transaction again worthwhile.
    pub(super) retry: std::cell::Cell<bool>,
    /// Set when the connection itself failed.
    pub(super) broken: std::cell::Cell<bool>,
    /// About how many bytes of parameters the transaction sent ([`Tx::carrying`]).
    sent: std::cell::Cell<usize>,
}

/// Query parameters.
pub(super) type Params<'a> = &'a [&'a (dyn ToSql + Sync)];

impl<'l, 'p> Tx<'l, 'p> {
    pub(super) fn new(lease: &'l mut Lease<'p>) -> Self {
        Tx {
            lease: std::cell::RefCell::new(lease),
            retry: std::cell::Cell::new(false),
            broken: std::cell::Cell::new(false),
            sent: std::cell::Cell::new(0),
        }
    }

    /// Notes that the transaction sends about `bytes` of parameters (its texts, mostly): a large one
    /// leaves its connection's buffers large.
    pub(super) fn carrying(&self, bytes: usize) {
        self.sent.set(self.sent.get().saturating_add(bytes));
    }

    /// Whether the transaction sent more than [`LARGE_TRANSACTION`]: its connection is closed after it.
    pub(super) fn large(&self) -> bool {
        self.sent.get() > LARGE_TRANSACTION
    }

    fn note(&self, e: tokio_postgres::Error) -> StoreError {
        if retryable(&e) {
            self.retry.set(true);
        }
        if e.is_closed() || e.as_db_error().is_none() {
            self.broken.set(true);
        }
        store_error(e)
    }

    /// Runs statements without parameters (BEGIN, COMMIT, migrations).
    pub(super) fn batch(&self, sql: &str) -> StoreResult<()> {
        let mut lease = self.lease.borrow_mut();
        wait(lease.conn().client.batch_execute(sql)).map_err(|e| self.note(e))
    }

    /// The statement prepared for `sql` on this connection (prepared once per connection).
    fn prepared(&self, conn: &mut Conn, sql: &str) -> StoreResult<Statement> {
        if let Some(s) = conn.statements.get(sql) {
            return Ok(s.clone());
        }
        let s = wait(conn.client.prepare(sql)).map_err(|e| self.note(e))?;
        conn.statements.insert(sql.to_string(), s.clone());
        Ok(s)
    }

    /// Every row a query returns.
    pub(super) fn query(&self, sql: &str, params: Params<'_>) -> StoreResult<Vec<Row>> {
        let mut lease = self.lease.borrow_mut();
        let conn = lease.conn();
        let s = self.prepared(conn, sql)?;
        wait(conn.client.query(&s, params)).map_err(|e| self.note(e))
    }

    /// The one row a query returns.
    pub(super) fn one(&self, sql: &str, params: Params<'_>) -> StoreResult<Row> {
        let mut lease = self.lease.borrow_mut();
        let conn = lease.conn();
        let s = self.prepared(conn, sql)?;
        wait(conn.client.query_one(&s, params)).map_err(|e| self.note(e))
    }

    /// Runs a statement; returns how many rows it changed.
    pub(super) fn exec(&self, sql: &str, params: Params<'_>) -> StoreResult<u64> {
        let mut lease = self.lease.borrow_mut();
        let conn = lease.conn();
        let s = self.prepared(conn, sql)?;
        wait(conn.client.execute(&s, params)).map_err(|e| self.note(e))
    }
}
