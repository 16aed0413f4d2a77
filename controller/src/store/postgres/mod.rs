//! The PostgreSQL backend, for a database outside the controller (`database_url = "postgres://..."`),
//! shared by several controllers.
//!
//! Every operation is one transaction, as with SQLite. Writes run at `SERIALIZABLE`, reads at
//! `REPEATABLE READ, READ ONLY` (one snapshot): where SQLite relies on its single writer (the
//! revision counter, one running deployment per cluster, a result stored only while its deployment
//! runs, the bound on discovered nodes, unique node names), PostgreSQL's serializable isolation gives
//! the same outcome as some one-at-a-time order, and a transaction it refuses to serialize (or a
//! deadlock) is run again from the start, up to [`ATTEMPTS`] times. Writes that would conflict
//! whenever they overlap queue behind a session-level advisory lock first ([`Queue`]). The one
//! exception is the flush of agents' last-seen times ([`TxKind::Committed`]): a blind upsert into
//! `node_seen` at `READ COMMITTED`, a table no other write touches, so that liveness, written every few
//! seconds for thousands of nodes by every controller, never makes a deployment's step fail to
//! serialize.
//!
//! What this folder keeps is what PostgreSQL does its own way: the bridge from the synchronous store
//! to tokio-postgres and its pool ([`bridge`]), the URL and TLS ([`connect`]), notices between
//! controllers ([`listen`]), migrations ([`schema`]), isolation, retries and queues (here), lists as
//! arrays (`= ANY($1)`), and bulk writes as one `UNNEST` statement.

use crate::store::sql::access::{
    corrupt_column, Arg, Backend, Dialect, Queue, Row, Rows, Tx, TxKind,
};
use crate::store::sql::SqlStore;
use crate::store::{Notice, StoreError, StoreResult};
use bridge::{Lease, Pool};
use std::collections::HashMap;
use tokio_postgres::types::{IsNull, ToSql, Type};

mod bridge;
pub mod connect;
mod listen;
mod schema;
#[cfg(any(test, feature = "test-support"))]
pub mod scratch;
#[cfg(test)]
mod tests;

/// The store on a PostgreSQL database.
pub type PgStore = SqlStore<Postgres>;

/// The most times one transaction is tried (the first included) when PostgreSQL cannot serialize it
/// with others running at the same time.
pub const ATTEMPTS: u32 = 20;

/// The most connections one controller opens by default.
pub const DEFAULT_POOL_SIZE: usize = 16;

/// A PostgreSQL database: its pooled connections and the runtimes that drive them.
pub struct Postgres {
    pool: Pool,
    /// One connection of its own for the controller's heartbeat and the sequencing lease: a beat never
    /// waits for a connection behind bulk work (a large deployment's start, its results, its reads),
    /// which could otherwise hold every pooled one past the lease's expiry.
    beat: Pool,
    /// Where the listener connects; taken by the first [`Backend::listen`].
    listen_target: std::sync::Mutex<Option<connect::Target>>,
    /// Drives the connections' sockets; shut down without waiting when the store is dropped.
    runtime: Option<tokio::runtime::Runtime>,
    /// Drives the beat's connection alone, so that no bulk transfer on the others delays it.
    beat_runtime: Option<tokio::runtime::Runtime>,
}

impl Drop for Postgres {
    fn drop(&mut self) {
        for rt in [self.runtime.take(), self.beat_runtime.take()]
            .into_iter()
            .flatten()
        {
            rt.shutdown_background();
        }
    }
}

/// How a transaction begins.
#[derive(Clone, Copy)]
enum Mode {
    Read,
    Write,
    /// `READ COMMITTED`: only for writes that conflict with nothing (see the module's text).
    Committed,
}

impl SqlStore<Postgres> {
    /// Connects to the database at `url` (see [`connect`]) and runs pending migrations, with at most
    /// [`DEFAULT_POOL_SIZE`] connections.
    pub fn open(url: &str) -> StoreResult<Self> {
        Self::open_with(url, DEFAULT_POOL_SIZE)
    }

    /// As [`PgStore::open`], with at most `pool_size` connections.
    pub fn open_with(url: &str, pool_size: usize) -> StoreResult<Self> {
        Postgres::open(url, pool_size).map(SqlStore::new)
    }
}

impl Postgres {
    fn open(url: &str, pool_size: usize) -> StoreResult<Self> {
        let target = connect::parse(url)?;
        let start = |name: &str| {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name(name)
                .enable_all()
                .build()
                .map_err(|e| {
                    StoreError::Database(format!("cannot start the database runtime: {e}"))
                })
        };
        let runtime = start("plinth-db")?;
        let beat_runtime = start("plinth-db-beat")?;
        let listen_target = std::sync::Mutex::new(Some(target.clone()));
        let beat = Pool::new(
            1,
            connect::connector(target.clone(), beat_runtime.handle().clone()),
        );
        let pool = Pool::new(
            pool_size,
            connect::connector(target, runtime.handle().clone()),
        );
        let db = Postgres {
            pool,
            beat,
            listen_target,
            runtime: Some(runtime),
            beat_runtime: Some(beat_runtime),
        };
        db.migrate()?;
        Ok(db)
    }

    /// Runs pending migrations in one transaction, under an advisory lock so that controllers
    /// starting at once migrate one after the other.
    fn migrate(&self) -> StoreResult<()> {
        let mut lease = self.pool.get()?;
        let t = bridge::Tx::new(&mut lease);
        let run = || -> StoreResult<()> {
            t.batch("BEGIN")?;
            t.exec(
                "SELECT pg_advisory_xact_lock($1)",
                &[&schema::MIGRATION_LOCK],
            )?;
            t.batch(schema::VERSION_TABLE)?;
            let applied: i32 = t
                .one("SELECT version FROM plinth_schema", &[])?
                .try_get(0)
                .map_err(|e| corrupt_column(0, e))?;
            let applied = usize::try_from(applied).unwrap_or(0);
            if applied > schema::MIGRATIONS.len() {
                return Err(StoreError::Database(format!(
                    "the database has schema version {applied}, newer than this controller's {}",
                    schema::MIGRATIONS.len()
                )));
            }
            for sql in schema::MIGRATIONS.iter().skip(applied) {
                t.batch(sql)?;
            }
            let version = i32::try_from(schema::MIGRATIONS.len()).unwrap_or(i32::MAX);
            t.exec("UPDATE plinth_schema SET version = $1", &[&version])?;
            t.batch("COMMIT")
        };
        let out = run();
        if out.is_err() {
            let _ = t.batch("ROLLBACK");
        }
        out
    }

    /// Runs `f` in one transaction on a connection of `pool`: committed if it returns `Ok`, rolled
    /// back otherwise; run again from the start when PostgreSQL could not serialize it.
    fn tx_on<T>(
        &self,
        pool: &Pool,
        mode: Mode,
        queue: Option<Queue>,
        f: &mut dyn FnMut(&dyn Tx) -> StoreResult<T>,
    ) -> StoreResult<T> {
        let begin = match mode {
            Mode::Read => "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY",
            Mode::Write => "BEGIN ISOLATION LEVEL SERIALIZABLE",
            Mode::Committed => "BEGIN ISOLATION LEVEL READ COMMITTED",
        };
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut lease = pool.get()?;
            let (out, retry, broken, large) = {
                let t = bridge::Tx::new(&mut lease);
                // Queued before the transaction begins, so that its snapshot is taken after the one
                // before it in the queue committed: the two never overlap, and never conflict.
                let queued = match queue {
                    Some(q) => t
                        .exec("SELECT pg_advisory_lock($1)", &[&(q as i64)])
                        .map(|_| ()),
                    None => Ok(()),
                };
                let mut committing = false;
                let out = queued
                    .and_then(|()| t.batch(begin))
                    .and_then(|()| f(&PgTx(&t)))
                    .and_then(|v| {
                        committing = true;
                        t.batch("COMMIT")?;
                        Ok(v)
                    });
                // A failed COMMIT has ended the transaction already.
                if out.is_err() && !committing && !t.broken.get() && t.batch("ROLLBACK").is_err() {
                    t.broken.set(true);
                }
                if let Some(q) = queue {
                    if !t.broken.get()
                        && t.exec("SELECT pg_advisory_unlock($1)", &[&(q as i64)])
                            .is_err()
                    {
                        // Closing the connection releases the lock.
                        t.broken.set(true);
                    }
                }
                (out, t.retry.get(), t.broken.get(), t.large())
            };
            // A connection that sent a large message keeps buffers that large: closed, not pooled.
            if broken || large {
                Lease::discard(lease);
            } else {
                drop(lease);
            }
            match out {
                // A pooled connection the server closed since (a restart) fails its first statement:
                // try once more on a new one.
                Err(_) if broken && attempt == 1 => {}
                Err(_) if retry && attempt < ATTEMPTS => {
                    // Back off a little, more each time, so that the same transactions do not collide again.
                    std::thread::sleep(std::time::Duration::from_millis(u64::from(attempt)));
                }
                out => return out,
            }
        }
    }
}

impl Backend for Postgres {
    const SHARED: bool = true;
    const MIGRATIONS: usize = schema::MIGRATIONS.len();
    const SCHEMA_VERSION: &'static str = "SELECT version FROM plinth_schema";

    fn run<T>(&self, kind: TxKind, f: &mut dyn FnMut(&dyn Tx) -> StoreResult<T>) -> StoreResult<T> {
        match kind {
            TxKind::Read => self.tx_on(&self.pool, Mode::Read, None, f),
            TxKind::Write => self.tx_on(&self.pool, Mode::Write, None, f),
            TxKind::Queued(q) => self.tx_on(&self.pool, Mode::Write, Some(q), f),
            TxKind::Committed => self.tx_on(&self.pool, Mode::Committed, None, f),
            TxKind::Beat => self.tx_on(&self.beat, Mode::Write, None, f),
        }
    }

    fn notify(&self, notices: &[Notice]) {
        let payloads: Vec<String> = notices.iter().map(Notice::payload).collect();
        let sent = self.tx_on(&self.pool, Mode::Write, None, &mut |t| {
            t.exec(
                "SELECT pg_notify($1, p) FROM UNNEST($2::TEXT[]) AS p",
                &[Arg::Text(listen::CHANNEL), Arg::Strings(&payloads)],
            )
            .map(|_| ())
        });
        if let Err(e) = sent {
            tracing::warn!(error = %e, notices = payloads.len(), "cannot notify the other controllers");
        }
    }

    fn pool_use(&self) -> Option<crate::store::PoolUse> {
        Some(self.pool.usage())
    }

    fn listen(&self) -> Option<tokio::sync::mpsc::UnboundedReceiver<Notice>> {
        let target = self
            .listen_target
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()?;
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        self.runtime.as_ref()?.spawn(listen::listen(target, tx));
        Some(rx)
    }
}

impl ToSql for Arg<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut bytes::BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Arg::Int(v) => v.to_sql(ty, out),
            Arg::OptInt(v) => v.to_sql(ty, out),
            Arg::Text(v) => v.to_sql(ty, out),
            Arg::OptText(v) => v.to_sql(ty, out),
            Arg::Bytes(v) => v.to_sql(ty, out),
            Arg::Ints(v) => v.to_sql(ty, out),
            Arg::Texts(v) => v.to_sql(ty, out),
            Arg::Strings(v) => v.to_sql(ty, out),
            Arg::BytesList(v) => v.to_sql(ty, out),
        }
    }

    fn accepts(_ty: &Type) -> bool {
        // Each value checks its own type in `to_sql_checked`.
        true
    }

    fn to_sql_checked(
        &self,
        ty: &Type,
        out: &mut bytes::BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Arg::Int(v) => v.to_sql_checked(ty, out),
            Arg::OptInt(v) => v.to_sql_checked(ty, out),
            Arg::Text(v) => v.to_sql_checked(ty, out),
            Arg::OptText(v) => v.to_sql_checked(ty, out),
            Arg::Bytes(v) => v.to_sql_checked(ty, out),
            Arg::Ints(v) => v.to_sql_checked(ty, out),
            Arg::Texts(v) => v.to_sql_checked(ty, out),
            Arg::Strings(v) => v.to_sql_checked(ty, out),
            Arg::BytesList(v) => v.to_sql_checked(ty, out),
        }
    }
}

/// A transaction on a pooled connection.
struct PgTx<'a, 'l, 'p>(&'a bridge::Tx<'l, 'p>);

impl PgTx<'_, '_, '_> {
    fn params<'a>(args: &'a [Arg<'_>]) -> Vec<&'a (dyn ToSql + Sync)> {
        args.iter().map(|a| a as &(dyn ToSql + Sync)).collect()
    }
}

impl Tx for PgTx<'_, '_, '_> {
    fn dialect(&self) -> &'static dyn Dialect {
        &PgDialect
    }

    fn exec(&self, sql: &str, args: &[Arg<'_>]) -> StoreResult<u64> {
        self.0.exec(sql, &Self::params(args))
    }

    fn each(
        &self,
        sql: &str,
        args: &[Arg<'_>],
        each: &mut dyn FnMut(&dyn Row) -> StoreResult<()>,
    ) -> StoreResult<()> {
        for row in self.0.query(sql, &Self::params(args))? {
            each(&PgRow(&row))?;
        }
        Ok(())
    }

    fn carrying(&self, bytes: usize) {
        self.0.carrying(bytes);
    }
}

/// A row PostgreSQL returned.
struct PgRow<'r>(&'r tokio_postgres::Row);

impl Row for PgRow<'_> {
    fn int(&self, i: usize) -> StoreResult<i64> {
        self.opt_int(i)?
            .ok_or_else(|| corrupt_column(i, "NULL where a number was expected"))
    }

    fn opt_int(&self, i: usize) -> StoreResult<Option<i64>> {
        // Columns are BIGINT; a literal (`SELECT 1`) is an INT.
        match self.0.try_get::<_, Option<i64>>(i) {
            Ok(v) => Ok(v),
            Err(e) => match self.0.try_get::<_, Option<i32>>(i) {
                Ok(v) => Ok(v.map(i64::from)),
                Err(_) => Err(corrupt_column(i, e)),
            },
        }
    }

    fn text(&self, i: usize) -> StoreResult<&str> {
        self.0.try_get(i).map_err(|e| corrupt_column(i, e))
    }

    fn opt_text(&self, i: usize) -> StoreResult<Option<&str>> {
        self.0.try_get(i).map_err(|e| corrupt_column(i, e))
    }

    fn opt_bytes(&self, i: usize) -> StoreResult<Option<&[u8]>> {
        self.0.try_get(i).map_err(|e| corrupt_column(i, e))
    }
}

/// PostgreSQL's SQL, where it differs.
struct PgDialect;

impl PgDialect {
    /// `UNNEST` of every column of `rows`, each as an array of its type, named `v(columns...)`, with
    /// the rows' order as `v.n`.
    fn unnest(rows: &Rows<'_>) -> String {
        let arrays = rows
            .columns
            .iter()
            .enumerate()
            .map(|(i, (_, arg))| {
                let ty = match arg {
                    Arg::Ints(_) | Arg::Int(_) | Arg::OptInt(_) => "BIGINT[]",
                    Arg::BytesList(_) | Arg::Bytes(_) => "BYTEA[]",
                    _ => "TEXT[]",
                };
                format!("${}::{ty}", i + 1)
            })
            .collect::<Vec<_>>()
            .join(", ");
        format!(
            "UNNEST({arrays}) WITH ORDINALITY AS v({}, n)",
            rows.names("")
        )
    }

    fn insert(rows: &Rows<'_>, returning: &str) -> String {
        format!(
            "INSERT INTO {} ({}) SELECT {} FROM {} WHERE {} ORDER BY v.n {} {returning}",
            rows.table,
            rows.names(""),
            rows.names("v."),
            Self::unnest(rows),
            if rows.filter.is_empty() {
                "true"
            } else {
                rows.filter
            },
            rows.tail
        )
    }

    fn values<'a>(rows: &Rows<'a>) -> Vec<Arg<'a>> {
        rows.columns.iter().map(|(_, a)| *a).collect()
    }
}

/// A value of a row's key, as compared after `RETURNING`.
#[derive(PartialEq, Eq, Hash)]
enum KeyPart {
    Int(Option<i64>),
    Text(Option<String>),
}

impl KeyPart {
    fn of(arg: Arg<'_>) -> KeyPart {
        match arg {
            Arg::Int(v) => KeyPart::Int(Some(v)),
            Arg::OptInt(v) => KeyPart::Int(v),
            Arg::Text(v) => KeyPart::Text(Some(v.to_string())),
            Arg::OptText(v) => KeyPart::Text(v.map(str::to_string)),
            _ => KeyPart::Text(None),
        }
    }
}

impl Dialect for PgDialect {
    fn greatest(&self) -> &'static str {
        "GREATEST"
    }

    fn in_list(&self, n: usize) -> String {
        format!("= ANY(${n})")
    }

    fn binary_order(&self) -> &'static str {
        "COLLATE \"C\""
    }

    fn null_bytes(&self) -> &'static str {
        "NULL::BYTEA"
    }

    fn for_update(&self) -> &'static str {
        " FOR UPDATE"
    }

    fn for_share(&self) -> &'static str {
        " FOR SHARE"
    }

    fn set_cluster_status(&self) -> &'static str {
        "UPDATE clusters SET data = jsonb_set(data::jsonb, '{status}', to_jsonb($2::text))::text \
         WHERE id = $1"
    }

    fn array_holds(&self, column: &str, field: Option<&str>, n: usize) -> String {
        let array = match field {
            Some(field) => format!("({column}::jsonb -> '{field}')"),
            None => format!("{column}::jsonb"),
        };
        format!(
            "EXISTS (SELECT 1 FROM jsonb_array_elements_text(CASE WHEN jsonb_typeof({array}) = 'array' \
             THEN {array} ELSE '[]'::jsonb END) AS e(value) WHERE e.value = ${n})"
        )
    }

    fn contains(&self, haystack: &str, n: usize) -> String {
        format!("strpos({haystack}, ${n}) > 0")
    }

    fn insert_rows(&self, t: &dyn Tx, rows: &Rows<'_>) -> StoreResult<()> {
        if rows.len() == 0 {
            return Ok(());
        }
        t.exec(&Self::insert(rows, ""), &Self::values(rows))?;
        Ok(())
    }

    fn insert_rows_reporting(
        &self,
        t: &dyn Tx,
        rows: &Rows<'_>,
        key: usize,
    ) -> StoreResult<Vec<bool>> {
        if rows.len() == 0 {
            return Ok(Vec::new());
        }
        let key_columns = &rows.columns[..key.min(rows.columns.len())];
        let returning = format!(
            "RETURNING {}",
            key_columns
                .iter()
                .map(|(name, _)| *name)
                .collect::<Vec<_>>()
                .join(", ")
        );
        let mut inserted: HashMap<Vec<KeyPart>, usize> = HashMap::new();
        t.each(
            &Self::insert(rows, &returning),
            &Self::values(rows),
            &mut |r| {
                let parts = key_columns
                    .iter()
                    .enumerate()
                    .map(|(i, (_, arg))| match arg {
                        Arg::Ints(_) => Ok(KeyPart::Int(r.opt_int(i)?)),
                        _ => Ok(KeyPart::Text(r.opt_text(i)?.map(str::to_string))),
                    })
                    .collect::<StoreResult<Vec<_>>>()?;
                *inserted.entry(parts).or_default() += 1;
                Ok(())
            },
        )?;
        // A key inserted now is in once: a second copy of it in the same rows is not.
        Ok((0..rows.len())
            .map(|i| {
                let parts: Vec<KeyPart> = key_columns
                    .iter()
                    .map(|(_, arg)| KeyPart::of(arg.at(i)))
                    .collect();
                match inserted.get_mut(&parts) {
                    Some(n) if *n > 0 => {
                        *n -= 1;
                        true
                    }
                    _ => false,
                }
            })
            .collect())
    }

    fn update_rows(&self, t: &dyn Tx, rows: &Rows<'_>) -> StoreResult<()> {
        if rows.len() == 0 {
            return Ok(());
        }
        let Some(((key, _), columns)) = rows.columns.split_first() else {
            return Ok(());
        };
        let mut assignments: Vec<String> = columns
            .iter()
            .map(|(name, _)| format!("{name} = v.{name}"))
            .collect();
        if !rows.set.is_empty() {
            assignments.push(rows.set.to_string());
        }
        let sql = format!(
            "UPDATE {table} SET {} FROM (SELECT * FROM {}) AS v WHERE {table}.{key} = v.{key}",
            assignments.join(", "),
            Self::unnest(rows),
            table = rows.table,
        );
        t.exec(&sql, &Self::values(rows))?;
        Ok(())
    }
}
