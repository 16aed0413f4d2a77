//! What the store's operations ask of a database, and all they ask: a transaction that runs
//! statements with parameters ([`Tx`]), the rows it reads ([`Row`]), the few pieces of SQL in which
//! SQLite and PostgreSQL differ and their bulk writes ([`Dialect`]), and a way to run a transaction
//! of a kind ([`Backend`]). Each backend implements these once; every operation is written once, in
//! the sibling modules, against them.
//!
//! Statements are written with PostgreSQL's numbered placeholders (`$1`, `$2`, ...); the SQLite
//! backend rewrites them to its own (`?1`, ...).

use crate::store::{Notice, StoreError, StoreResult};

/// One statement parameter. Lists (`Ints`, `Texts`, `Strings`, `BytesList`) stand for a whole
/// column in bulk writes, and for the list a [`Dialect::in_list`] test reads.
#[derive(Debug, Clone, Copy)]
pub enum Arg<'a> {
    /// An integer.
    Int(i64),
    /// An integer or `NULL`.
    OptInt(Option<i64>),
    /// A text.
    Text(&'a str),
    /// A text or `NULL`.
    OptText(Option<&'a str>),
    /// Bytes or `NULL`.
    Bytes(Option<&'a [u8]>),
    /// A list of integers.
    Ints(&'a [i64]),
    /// A list of texts.
    Texts(&'a [&'a str]),
    /// A list of texts, owned by the caller.
    Strings(&'a [String]),
    /// A list of bytes or `NULL`s.
    BytesList(&'a [Option<&'a [u8]>]),
}

impl<'a> Arg<'a> {
    /// How many values a list holds (one for a single value).
    pub(crate) fn len(&self) -> usize {
        match self {
            Arg::Ints(v) => v.len(),
            Arg::Texts(v) => v.len(),
            Arg::Strings(v) => v.len(),
            Arg::BytesList(v) => v.len(),
            _ => 1,
        }
    }

    /// The `i`th value of a list (a single value is its own every value).
    pub(crate) fn at(&self, i: usize) -> Arg<'a> {
        match *self {
            Arg::Ints(v) => v.get(i).map_or(Arg::OptInt(None), |x| Arg::Int(*x)),
            Arg::Texts(v) => Arg::OptText(v.get(i).copied()),
            Arg::Strings(v) => Arg::OptText(v.get(i).map(String::as_str)),
            Arg::BytesList(v) => Arg::Bytes(v.get(i).copied().flatten()),
            single => single,
        }
    }
}

impl From<i64> for Arg<'_> {
    fn from(v: i64) -> Self {
        Arg::Int(v)
    }
}
impl From<Option<i64>> for Arg<'_> {
    fn from(v: Option<i64>) -> Self {
        Arg::OptInt(v)
    }
}
impl<'a> From<&'a str> for Arg<'a> {
    fn from(v: &'a str) -> Self {
        Arg::Text(v)
    }
}
impl<'a> From<&'a String> for Arg<'a> {
    fn from(v: &'a String) -> Self {
        Arg::Text(v)
    }
}
impl<'a> From<Option<&'a str>> for Arg<'a> {
    fn from(v: Option<&'a str>) -> Self {
        Arg::OptText(v)
    }
}
impl<'a> From<&'a Option<String>> for Arg<'a> {
    fn from(v: &'a Option<String>) -> Self {
        Arg::OptText(v.as_deref())
    }
}
impl<'a> From<Option<&'a [u8]>> for Arg<'a> {
    fn from(v: Option<&'a [u8]>) -> Self {
        Arg::Bytes(v)
    }
}
impl<'a> From<&'a [u8]> for Arg<'a> {
    fn from(v: &'a [u8]) -> Self {
        Arg::Bytes(Some(v))
    }
}
impl<'a> From<&'a [i64]> for Arg<'a> {
    fn from(v: &'a [i64]) -> Self {
        Arg::Ints(v)
    }
}
impl<'a> From<&'a Vec<i64>> for Arg<'a> {
    fn from(v: &'a Vec<i64>) -> Self {
        Arg::Ints(v)
    }
}
impl<'a> From<&'a [&'a str]> for Arg<'a> {
    fn from(v: &'a [&'a str]) -> Self {
        Arg::Texts(v)
    }
}
impl<'a> From<&'a Vec<&'a str>> for Arg<'a> {
    fn from(v: &'a Vec<&'a str>) -> Self {
        Arg::Texts(v)
    }
}
impl<'a> From<&'a [String]> for Arg<'a> {
    fn from(v: &'a [String]) -> Self {
        Arg::Strings(v)
    }
}
impl<'a> From<&'a Vec<String>> for Arg<'a> {
    fn from(v: &'a Vec<String>) -> Self {
        Arg::Strings(v)
    }
}
impl<'a> From<&'a Vec<Option<&'a [u8]>>> for Arg<'a> {
    fn from(v: &'a Vec<Option<&'a [u8]>>) -> Self {
        Arg::BytesList(v)
    }
}

/// Statement parameters: `args![a, b]` is `&[Arg::from(a), Arg::from(b)]`.
macro_rules! args {
    ($($a:expr),* $(,)?) => {
        &[$($crate::store::sql::Arg::from($a)),*]
    };
}
pub(crate) use args;

/// A row a statement read. Columns are numbered from 0; a column of another type than asked is
/// [`StoreError::Corrupt`].
pub trait Row {
    /// An integer column.
    fn int(&self, i: usize) -> StoreResult<i64>;
    /// An integer column that may be `NULL`.
    fn opt_int(&self, i: usize) -> StoreResult<Option<i64>>;
    /// A text column.
    fn text(&self, i: usize) -> StoreResult<&str>;
    /// A text column that may be `NULL`.
    fn opt_text(&self, i: usize) -> StoreResult<Option<&str>>;
    /// A bytes column that may be `NULL`.
    fn opt_bytes(&self, i: usize) -> StoreResult<Option<&[u8]>>;
}

impl dyn Row + '_ {
    /// An id column.
    pub(crate) fn id(&self, i: usize) -> StoreResult<u64> {
        self.int(i).map(id)
    }
    /// An id column that may be `NULL`.
    pub(crate) fn opt_id(&self, i: usize) -> StoreResult<Option<u64>> {
        Ok(self.opt_int(i)?.map(id))
    }
    /// A text column, owned.
    pub(crate) fn string(&self, i: usize) -> StoreResult<String> {
        self.text(i).map(str::to_string)
    }
    /// A text column that may be `NULL`, owned.
    pub(crate) fn opt_string(&self, i: usize) -> StoreResult<Option<String>> {
        Ok(self.opt_text(i)?.map(str::to_string))
    }
    /// A JSON text column read as `T` (`what` names it in an error).
    pub(crate) fn json<T: serde::de::DeserializeOwned>(
        &self,
        i: usize,
        what: &str,
    ) -> StoreResult<T> {
        from_json(self.text(i)?, what)
    }
}

/// A column of another type than asked, or unreadable.
pub(crate) fn corrupt_column(i: usize, e: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("column {i}: {e}"))
}

/// One transaction on one connection. Every operation of the store runs its statements through one.
pub trait Tx {
    /// How this database says what SQL does not say alike.
    fn dialect(&self) -> &'static dyn Dialect;
    /// Runs a statement; returns how many rows it changed.
    fn exec(&self, sql: &str, args: &[Arg<'_>]) -> StoreResult<u64>;
    /// Runs a query and gives `each` every row it returns, in order.
    fn each(
        &self,
        sql: &str,
        args: &[Arg<'_>],
        each: &mut dyn FnMut(&dyn Row) -> StoreResult<()>,
    ) -> StoreResult<()>;
    /// Runs one statement once per row, `row(i, args)` giving row `i`'s parameters; returns how many
    /// rows each run changed. The statement is prepared once.
    fn exec_rows<'a>(
        &self,
        sql: &str,
        rows: usize,
        row: &mut dyn FnMut(usize, &mut Vec<Arg<'a>>),
    ) -> StoreResult<Vec<u64>> {
        let mut args = Vec::new();
        (0..rows)
            .map(|i| {
                args.clear();
                row(i, &mut args);
                self.exec(sql, &args)
            })
            .collect()
    }
    /// Notes that the transaction sends about `bytes` of parameters (see the PostgreSQL backend: a
    /// connection that sent a large message is closed, not pooled). Nothing by default.
    fn carrying(&self, _bytes: usize) {}
}

impl dyn Tx + '_ {
    /// Every row a query returns, each made into a `T` by `f`.
    pub(crate) fn rows<T>(
        &self,
        sql: &str,
        args: &[Arg<'_>],
        mut f: impl FnMut(&dyn Row) -> StoreResult<T>,
    ) -> StoreResult<Vec<T>> {
        let mut out = Vec::new();
        self.each(sql, args, &mut |row| {
            out.push(f(row)?);
            Ok(())
        })?;
        Ok(out)
    }

    /// The first row a query returns, if any, made into a `T` by `f`.
    pub(crate) fn opt<T>(
        &self,
        sql: &str,
        args: &[Arg<'_>],
        mut f: impl FnMut(&dyn Row) -> StoreResult<T>,
    ) -> StoreResult<Option<T>> {
        let mut out = None;
        self.each(sql, args, &mut |row| {
            if out.is_none() {
                out = Some(f(row)?);
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// The row a query must return, made into a `T` by `f`.
    pub(crate) fn one<T>(
        &self,
        sql: &str,
        args: &[Arg<'_>],
        f: impl FnMut(&dyn Row) -> StoreResult<T>,
    ) -> StoreResult<T> {
        self.opt(sql, args, f)?.ok_or_else(|| {
            StoreError::Database(format!("a query that returns one row returned none: {sql}"))
        })
    }

    /// Whether a query returns a row.
    pub(crate) fn exists(&self, sql: &str, args: &[Arg<'_>]) -> StoreResult<bool> {
        Ok(self.opt(sql, args, |_| Ok(()))?.is_some())
    }

    /// The integer in the first column of the row a query must return (a count, an id).
    pub(crate) fn int(&self, sql: &str, args: &[Arg<'_>]) -> StoreResult<i64> {
        self.one(sql, args, |r| r.int(0))
    }
}

/// Rows written by one bulk statement (or, where the database runs statements in process, by one
/// prepared statement each): columns of equal length, each a list [`Arg`].
pub struct Rows<'a> {
    /// The table written.
    pub table: &'a str,
    /// The columns, by name, with their values. For [`Dialect::update_rows`] the first names the rows
    /// changed (its value is each row's key).
    pub columns: &'a [(&'static str, Arg<'a>)],
    /// For inserts, a condition on the row `v` (its columns by name) that each row must meet to be
    /// written; empty for none.
    pub filter: &'a str,
    /// For inserts, what follows the rows: `ON CONFLICT ...`; empty for nothing.
    pub tail: &'a str,
    /// For updates, assignments every row takes besides its columns (`status = 'ready'`); empty for
    /// none.
    pub set: &'a str,
}

impl Rows<'_> {
    /// How many rows.
    pub(crate) fn len(&self) -> usize {
        self.columns.first().map_or(0, |(_, a)| a.len())
    }

    /// The column names, joined by commas, each prefixed with `prefix`.
    pub(crate) fn names(&self, prefix: &str) -> String {
        self.columns
            .iter()
            .map(|(name, _)| format!("{prefix}{name}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// What SQLite and PostgreSQL say differently, and how each writes many rows at once. Fragments
/// are SQL text; `n` is a placeholder's number.
pub trait Dialect: Sync {
    /// The larger of two values: `MAX` or `GREATEST`.
    fn greatest(&self) -> &'static str;
    /// The test that a value is in the list parameter `$n` (an `Ints` or `Texts` argument):
    /// `= ANY($n)`, or a membership in the JSON array SQLite binds the list as.
    fn in_list(&self, n: usize) -> String;
    /// What follows `ORDER BY column` to order texts by their bytes, whatever the database's locale.
    fn binary_order(&self) -> &'static str;
    /// A `NULL` of the bytes type, as a column of a select list.
    fn null_bytes(&self) -> &'static str;
    /// What follows a `SELECT` to lock its rows until the transaction ends (nothing where the
    /// database has one writer at a time).
    fn for_update(&self) -> &'static str;
    /// What follows a `SELECT` to keep its rows from changing until the transaction ends.
    fn for_share(&self) -> &'static str;
    /// The statement that sets `status` in cluster `$1`'s data (a JSON text) to the text `$2`.
    fn set_cluster_status(&self) -> &'static str;
    /// The test that the JSON array in the JSON text column `column` (at its field `field`, when
    /// given) holds the text `$n`.
    fn array_holds(&self, column: &str, field: Option<&str>, n: usize) -> String;
    /// The test that the text `haystack` contains the text `$n`.
    fn contains(&self, haystack: &str, n: usize) -> String;
    /// Inserts rows.
    fn insert_rows(&self, t: &dyn Tx, rows: &Rows<'_>) -> StoreResult<()>;
    /// Inserts rows and says, for each in order, whether it went in (a row its filter or a conflict
    /// kept out did not). Rows are told apart by their first `key` columns; of rows with equal keys,
    /// the first counts as in when one of them went in.
    fn insert_rows_reporting(
        &self,
        t: &dyn Tx,
        rows: &Rows<'_>,
        key: usize,
    ) -> StoreResult<Vec<bool>>;
    /// Updates rows by their key (the first column); each key at most once (one statement cannot
    /// change a row twice).
    fn update_rows(&self, t: &dyn Tx, rows: &Rows<'_>) -> StoreResult<()>;
}

/// Queues for writes that would conflict whenever they overlap, so that they take turns (see the
/// PostgreSQL backend; SQLite has one writer at a time anyway).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Queue {
    /// Registrations (each counts the discovered nodes and looks for its name).
    Registration = 0x706c_0001,
    /// Publications of lists (each takes the next revision from the one counter).
    Revision = 0x706c_0002,
}

/// The kind of a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxKind {
    /// Reads only, from one snapshot.
    Read,
    /// Reads and writes, as if alone.
    Write,
    /// A write that waits its turn in a queue first.
    Queued(Queue),
    /// A write that conflicts with nothing (a blind upsert into a table only it writes): the
    /// weakest isolation the database has.
    Committed,
    /// A write of the controller's heartbeat or lease, on a connection bulk work never holds.
    Beat,
}

/// A database the store runs on: how it runs a transaction, and what it has beyond statements.
pub trait Backend: Send + Sync + 'static {
    /// Whether several controllers may share this database, so that a recorded step must check the
    /// sequencing lease's fence (see [`crate::store::Store::set_fence`]).
    const SHARED: bool;
    /// The migrations this controller knows (its schema version).
    const MIGRATIONS: usize;
    /// The query answering the schema version the database has (how many migrations were applied).
    const SCHEMA_VERSION: &'static str;
    /// Runs `f` in one transaction of `kind`: committed when it returns `Ok`, rolled back otherwise
    /// (and, where the database may refuse to serialize it, run again from the start).
    fn run<T>(&self, kind: TxKind, f: &mut dyn FnMut(&dyn Tx) -> StoreResult<T>) -> StoreResult<T>;
    /// Sends notices to every controller listening on this database (best effort).
    fn notify(&self, _notices: &[Notice]) {}
    /// Notices other controllers send, for the first caller; `None` where there are none.
    fn listen(&self) -> Option<tokio::sync::mpsc::UnboundedReceiver<Notice>> {
        None
    }
    /// The connection pool's use now; `None` where there is none.
    fn pool_use(&self) -> Option<crate::store::PoolUse> {
        None
    }
}

/// An id as stored.
pub(crate) fn sql_id(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// Ids as stored.
pub(crate) fn sql_ids(ids: &[u64]) -> Vec<i64> {
    ids.iter().map(|n| sql_id(*n)).collect()
}

/// An id as read.
pub(crate) fn id(v: i64) -> u64 {
    u64::try_from(v).unwrap_or_default()
}

/// A value as the JSON text a column holds.
pub(crate) fn to_json<T: serde::Serialize + ?Sized>(v: &T) -> String {
    // The controller's own types always serialise.
    serde_json::to_string(v).unwrap_or_else(|_| "null".into())
}

/// A column's JSON text read as `T` (`what` names it in an error).
pub(crate) fn from_json<T: serde::de::DeserializeOwned>(text: &str, what: &str) -> StoreResult<T> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt(format!("{what}: {e}")))
}
