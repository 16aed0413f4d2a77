//! The embedded backend: one SQLite file in WAL mode, migrated at open. One connection behind a
//! mutex: SQLite serialises writers anyway, and every operation is a short transaction. Of the kinds
//! of transaction ([`TxKind`]) only reads and writes differ here: a write takes the write lock as it
//! begins.
//!
//! What this file keeps is what SQLite does its own way: its connection and pragmas, its `?N`
//! placeholders, lists bound as JSON arrays (read with `json_each`), and bulk writes as one prepared
//! statement run once per row (in process, a statement costs no round trip).

use crate::store::sql::access::{corrupt_column, Arg, Backend, Dialect, Row, Rows, Tx, TxKind};
use crate::store::sql::SqlStore;
use crate::store::{StoreError, StoreResult};
use rusqlite::types::{ToSqlOutput, Value, ValueRef};
use rusqlite::Connection;
use std::borrow::Cow;
use std::path::Path;
use std::sync::Mutex;

mod schema;
pub use schema::MIGRATIONS;

#[cfg(test)]
mod query_plans;
#[cfg(test)]
mod tests;

/// The store on an SQLite database.
pub type SqliteStore = SqlStore<Sqlite>;

/// An SQLite database, its one connection.
pub struct Sqlite {
    pub(crate) conn: Mutex<Connection>,
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        match e {
            rusqlite::Error::SqliteFailure(f, ref msg)
                if f.code == rusqlite::ErrorCode::ConstraintViolation =>
            {
                StoreError::Conflict(msg.clone().unwrap_or_else(|| "constraint violated".into()))
            }
            other => StoreError::Database(other.to_string()),
        }
    }
}

impl SqlStore<Sqlite> {
    /// Opens (creating if needed) the database file and runs pending migrations.
    pub fn open(path: &Path) -> StoreResult<Self> {
        Sqlite::setup(Connection::open(path)?).map(SqlStore::new)
    }

    /// An in-memory database, for tests and dry runs.
    pub fn in_memory() -> StoreResult<Self> {
        Sqlite::setup(Connection::open_in_memory()?).map(SqlStore::new)
    }
}

impl Sqlite {
    fn setup(mut conn: Connection) -> StoreResult<Self> {
        conn.pragma_update(None, "journal_mode", "WAL")?;
        // FULL: a commit is on disk (the WAL fsynced) before it returns, so nothing acknowledged to an
        // agent or an operator is lost at power loss.
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        let applied: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        let applied = usize::try_from(applied).unwrap_or(0);
        if applied > MIGRATIONS.len() {
            return Err(StoreError::Database(format!(
                "the database has schema version {applied}, newer than this controller's {}",
                MIGRATIONS.len()
            )));
        }
        for (n, sql) in MIGRATIONS.iter().enumerate().skip(applied) {
            let tx = conn.transaction()?;
            tx.execute_batch(sql)?;
            tx.pragma_update(None, "user_version", (n + 1) as i64)?;
            tx.commit()?;
        }
        Ok(Sqlite {
            conn: Mutex::new(conn),
        })
    }
}

impl Backend for Sqlite {
    const SHARED: bool = false;
    const MIGRATIONS: usize = MIGRATIONS.len();
    const SCHEMA_VERSION: &'static str = "SELECT user_version FROM pragma_user_version";

    fn run<T>(&self, kind: TxKind, f: &mut dyn FnMut(&dyn Tx) -> StoreResult<T>) -> StoreResult<T> {
        // A write takes the database's write lock as it begins (waiting for it up to the busy
        // timeout): begun as a read, a transaction that reads and then writes would fail at once if
        // another process (`plinth-controller token create` beside a running controller) wrote in
        // between, instead of waiting its turn.
        let behavior = match kind {
            TxKind::Read => rusqlite::TransactionBehavior::Deferred,
            _ => rusqlite::TransactionBehavior::Immediate,
        };
        let mut conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let tx = conn.transaction_with_behavior(behavior)?;
        let out = f(&SqliteTx(&tx))?;
        tx.commit()?;
        Ok(out)
    }
}

/// `sql` with PostgreSQL's placeholders (`$1`) written as SQLite's (`?1`); text in quotes is left as
/// it is.
pub(crate) fn positional(sql: &str) -> Cow<'_, str> {
    if !sql.contains('$') {
        return Cow::Borrowed(sql);
    }
    let mut out = String::with_capacity(sql.len());
    let mut quoted = false;
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => quoted = !quoted,
            '$' if !quoted && chars.peek().is_some_and(char::is_ascii_digit) => {
                out.push('?');
                continue;
            }
            _ => {}
        }
        out.push(c);
    }
    Cow::Owned(out)
}

/// A list as the JSON array SQLite binds it as.
fn json_list<T: serde::Serialize + ?Sized>(list: &T) -> ToSqlOutput<'static> {
    ToSqlOutput::Owned(Value::Text(
        serde_json::to_string(list).unwrap_or_else(|_| "[]".into()),
    ))
}

impl rusqlite::ToSql for Arg<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match *self {
            Arg::Int(v) => ToSqlOutput::Owned(Value::Integer(v)),
            Arg::OptInt(v) => v.map_or(ToSqlOutput::Owned(Value::Null), |v| {
                ToSqlOutput::Owned(Value::Integer(v))
            }),
            Arg::Text(v) => ToSqlOutput::Borrowed(ValueRef::Text(v.as_bytes())),
            Arg::OptText(v) => v.map_or(ToSqlOutput::Owned(Value::Null), |v| {
                ToSqlOutput::Borrowed(ValueRef::Text(v.as_bytes()))
            }),
            Arg::Bytes(v) => v.map_or(ToSqlOutput::Owned(Value::Null), |v| {
                ToSqlOutput::Borrowed(ValueRef::Blob(v))
            }),
            Arg::Ints(v) => json_list(v),
            Arg::Texts(v) => json_list(v),
            Arg::Strings(v) => json_list(v),
            // Bytes in a list are written row by row, never bound whole.
            Arg::BytesList(_) => ToSqlOutput::Owned(Value::Null),
        })
    }
}

/// A transaction on the one connection.
struct SqliteTx<'c>(&'c Connection);

impl Tx for SqliteTx<'_> {
    fn dialect(&self) -> &'static dyn Dialect {
        &SqliteDialect
    }

    fn exec(&self, sql: &str, args: &[Arg<'_>]) -> StoreResult<u64> {
        let mut stmt = self.0.prepare_cached(&positional(sql))?;
        let changed = stmt.execute(rusqlite::params_from_iter(args.iter()))?;
        Ok(u64::try_from(changed).unwrap_or(u64::MAX))
    }

    fn exec_rows<'a>(
        &self,
        sql: &str,
        rows: usize,
        row: &mut dyn FnMut(usize, &mut Vec<Arg<'a>>),
    ) -> StoreResult<Vec<u64>> {
        let mut stmt = self.0.prepare_cached(&positional(sql))?;
        let mut args = Vec::new();
        (0..rows)
            .map(|i| {
                args.clear();
                row(i, &mut args);
                let changed = stmt.execute(rusqlite::params_from_iter(args.iter()))?;
                Ok(u64::try_from(changed).unwrap_or(u64::MAX))
            })
            .collect()
    }

    fn each(
        &self,
        sql: &str,
        args: &[Arg<'_>],
        each: &mut dyn FnMut(&dyn Row) -> StoreResult<()>,
    ) -> StoreResult<()> {
        let mut stmt = self.0.prepare_cached(&positional(sql))?;
        let mut rows = stmt.query(rusqlite::params_from_iter(args.iter()))?;
        while let Some(row) = rows.next()? {
            each(&SqliteRow(row))?;
        }
        Ok(())
    }
}

/// A row SQLite read.
struct SqliteRow<'r, 's>(&'r rusqlite::Row<'s>);

impl SqliteRow<'_, '_> {
    fn value(&self, i: usize) -> StoreResult<ValueRef<'_>> {
        self.0.get_ref(i).map_err(|e| corrupt_column(i, e))
    }
}

impl Row for SqliteRow<'_, '_> {
    fn int(&self, i: usize) -> StoreResult<i64> {
        self.value(i)?.as_i64().map_err(|e| corrupt_column(i, e))
    }

    fn opt_int(&self, i: usize) -> StoreResult<Option<i64>> {
        self.value(i)?
            .as_i64_or_null()
            .map_err(|e| corrupt_column(i, e))
    }

    fn text(&self, i: usize) -> StoreResult<&str> {
        self.value(i)?.as_str().map_err(|e| corrupt_column(i, e))
    }

    fn opt_text(&self, i: usize) -> StoreResult<Option<&str>> {
        self.value(i)?
            .as_str_or_null()
            .map_err(|e| corrupt_column(i, e))
    }

    fn opt_bytes(&self, i: usize) -> StoreResult<Option<&[u8]>> {
        self.value(i)?
            .as_blob_or_null()
            .map_err(|e| corrupt_column(i, e))
    }
}

/// SQLite's SQL, where it differs.
struct SqliteDialect;

impl SqliteDialect {
    /// The insert of one row of `rows`, its values `$1`, `$2`, ... in the columns' order.
    fn insert_one(rows: &Rows<'_>) -> String {
        if rows.filter.is_empty() {
            let values = (1..=rows.columns.len())
                .map(|n| format!("${n}"))
                .collect::<Vec<_>>()
                .join(", ");
            return format!(
                "INSERT INTO {} ({}) VALUES ({values}) {}",
                rows.table,
                rows.names(""),
                rows.tail
            );
        }
        let values = (1..=rows.columns.len())
            .map(|n| format!("${n} AS {}", rows.columns[n - 1].0))
            .collect::<Vec<_>>()
            .join(", ");
        // The select's `WHERE` is what tells SQLite's parser that an `ON CONFLICT` follows the insert.
        format!(
            "INSERT INTO {} ({}) SELECT {} FROM (SELECT {values}) AS v WHERE {} {}",
            rows.table,
            rows.names(""),
            rows.names("v."),
            if rows.filter.is_empty() {
                "1"
            } else {
                rows.filter
            },
            rows.tail
        )
    }

    /// Runs `sql` once per row of `rows`, each row's values in the columns' order.
    fn each_row(t: &dyn Tx, sql: &str, rows: &Rows<'_>) -> StoreResult<Vec<u64>> {
        t.exec_rows(sql, rows.len(), &mut |i, args| {
            args.extend(rows.columns.iter().map(|(_, a)| a.at(i)));
        })
    }
}

impl Dialect for SqliteDialect {
    fn greatest(&self) -> &'static str {
        "MAX"
    }

    fn in_list(&self, n: usize) -> String {
        format!("IN (SELECT value FROM json_each(${n}))")
    }

    fn binary_order(&self) -> &'static str {
        ""
    }

    fn null_bytes(&self) -> &'static str {
        "NULL"
    }

    fn for_update(&self) -> &'static str {
        ""
    }

    fn for_share(&self) -> &'static str {
        ""
    }

    fn set_cluster_status(&self) -> &'static str {
        "UPDATE clusters SET data = json_set(data, '$.status', $2) WHERE id = $1"
    }

    fn array_holds(&self, column: &str, field: Option<&str>, n: usize) -> String {
        let source = match field {
            Some(field) => format!("json_each({column}, '$.{field}')"),
            None => format!("json_each({column})"),
        };
        format!("EXISTS (SELECT 1 FROM {source} WHERE value = ${n})")
    }

    fn contains(&self, haystack: &str, n: usize) -> String {
        format!("instr({haystack}, ${n}) > 0")
    }

    fn insert_rows(&self, t: &dyn Tx, rows: &Rows<'_>) -> StoreResult<()> {
        Self::each_row(t, &Self::insert_one(rows), rows).map(|_| ())
    }

    fn insert_rows_reporting(
        &self,
        t: &dyn Tx,
        rows: &Rows<'_>,
        _key: usize,
    ) -> StoreResult<Vec<bool>> {
        Ok(Self::each_row(t, &Self::insert_one(rows), rows)?
            .into_iter()
            .map(|changed| changed > 0)
            .collect())
    }

    fn update_rows(&self, t: &dyn Tx, rows: &Rows<'_>) -> StoreResult<()> {
        let Some(((key, _), columns)) = rows.columns.split_first() else {
            return Ok(());
        };
        let mut assignments: Vec<String> = columns
            .iter()
            .enumerate()
            .map(|(i, (name, _))| format!("{name} = ${}", i + 2))
            .collect();
        if !rows.set.is_empty() {
            assignments.push(rows.set.to_string());
        }
        let sql = format!(
            "UPDATE {} SET {} WHERE {key} = $1",
            rows.table,
            assignments.join(", ")
        );
        Self::each_row(t, &sql, rows).map(|_| ())
    }
}
