//! Backups of a controller's data directory, taken while it serves, and their restore into a new one.
//!
//! A backup is one file: a tar archive (gzip) of a manifest (`backup.json`), a consistent snapshot of
//! the SQLite database made with SQLite's online backup (the controller keeps serving; the snapshot is
//! the database at one commit), the files root (`files/`), the TLS certificate and, only when the
//! operator asks (`--with-secrets`), the signing key, the TLS key, the first admin token and the
//! operator tokens (without them the tokens table of the copy is emptied). With a passphrase the whole
//! archive is sealed ([`crypt`]). The `controller-id` is never in it: a restored controller is a
//! controller of its own. On PostgreSQL the database is not in the file: `pg_dump` takes it (see
//! docs/BACKUP.md) and the backup holds the rest of the data directory.

pub mod crypt;

use crate::datadir::DataDir;
use anyhow::{bail, Context, Result};
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use serde::{Deserialize, Serialize};
use std::fs;
use std::io::{BufReader, BufWriter, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The archive's manifest name.
const MANIFEST: &str = "backup.json";
/// The manifest's format.
const FORMAT: u32 = 1;

/// What a backup says of itself.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Manifest {
    /// The manifest's format.
    pub format: u32,
    /// The controller version that wrote it.
    pub version: String,
    /// When (ms since the epoch).
    pub created_at_ms: i64,
    /// Whether the SQLite database is in it (not on PostgreSQL).
    pub database: bool,
    /// Whether the signing key, TLS key and tokens are in it.
    pub secrets: bool,
    /// Whether it is sealed under a passphrase.
    pub encrypted: bool,
}

/// What to put in a backup.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The signing key, the TLS key, the admin token and the operator tokens.
    pub with_secrets: bool,
    /// Seal the backup under this passphrase.
    pub passphrase: Option<String>,
    /// Leave the database out (it lives in PostgreSQL: `pg_dump` takes it).
    pub without_database: bool,
}

/// The secret files of a data directory, relative to it.
const SECRET_FILES: [&str; 8] = [
    "signing.key",
    "tls/key.pem",
    "admin.token",
    // A key rotation under way, and the key the last switch retired (see `crate::keys::rotation`).
    "signing.next.key",
    "signing.retired.key",
    "key-rotation.json",
    "tls/next-key.pem",
    "tls/next-cert.pem",
];

/// Writes a backup of `data` to `to` (replaced whole only once complete, mode 0600).
pub fn backup(data: &DataDir, to: &Path, opts: &Options) -> Result<Manifest> {
    let dir = to.parent().filter(|p| !p.as_os_str().is_empty());
    let staging = tempfile::Builder::new()
        .prefix(".plinth-backup-")
        .tempdir_in(dir.unwrap_or(Path::new(".")))
        .with_context(|| format!("cannot stage the backup beside {}", to.display()))?;
    let manifest = Manifest {
        format: FORMAT,
        version: env!("CARGO_PKG_VERSION").to_string(),
        created_at_ms: crate::clock::now_ms(),
        database: !opts.without_database,
        secrets: opts.with_secrets,
        encrypted: opts.passphrase.is_some(),
    };
    let snapshot = staging.path().join("plinth.db");
    if manifest.database {
        snapshot_database(&data.database(), &snapshot, opts.with_secrets)?;
    }
    let part = staging.path().join("backup.part");
    let file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&part)
        .with_context(|| format!("cannot write {}", part.display()))?;
    fs::set_permissions(&part, fs::Permissions::from_mode(0o600))?;
    let out = BufWriter::new(file);
    let file = match &opts.passphrase {
        Some(passphrase) => {
            let mut salt = [0u8; 16];
            let mut nonce = [0u8; 19];
            let random = crate::datadir::random_bytes()?;
            salt.copy_from_slice(&random[..16]);
            nonce.copy_from_slice(&crate::datadir::random_bytes()?[..19]);
            let sealer = crypt::Sealer::new(out, passphrase, salt, nonce)?;
            let sealer = write_archive(sealer, data, &manifest, &snapshot)?;
            sealer.finish()?
        }
        None => write_archive(out, data, &manifest, &snapshot)?,
    };
    let file = file.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()?;
    fs::rename(&part, to).with_context(|| format!("cannot write {}", to.display()))?;
    Ok(manifest)
}

/// The archive, gzip'd, into `out`; returns `out`.
fn write_archive<W: Write>(out: W, data: &DataDir, m: &Manifest, snapshot: &Path) -> Result<W> {
    let mut tar = tar::Builder::new(GzEncoder::new(out, flate2::Compression::default()));
    tar.follow_symlinks(true);
    let text = serde_json::to_vec_pretty(m)?;
    let mut header = tar::Header::new_gnu();
    header.set_size(text.len() as u64);
    header.set_mode(0o600);
    header.set_mtime(u64::try_from(m.created_at_ms / 1000).unwrap_or(0));
    header.set_cksum();
    tar.append_data(&mut header, MANIFEST, text.as_slice())?;
    if m.database {
        tar.append_path_with_name(snapshot, "plinth.db")?;
    }
    let mut files = vec!["tls/cert.pem"];
    if m.secrets {
        files.extend(SECRET_FILES);
    }
    for name in files {
        let path = data.root().join(name);
        if path.exists() {
            tar.append_path_with_name(&path, name)
                .with_context(|| format!("cannot read {}", path.display()))?;
        }
    }
    let root = data.root().join("files");
    if root.exists() {
        tar.append_dir_all("files", &root)
            .with_context(|| format!("cannot read {}", root.display()))?;
    }
    let gz = tar.into_inner()?;
    Ok(gz.finish()?)
}

/// A consistent copy of the live database at `from` (SQLite's online backup, while the controller
/// writes), without the operator tokens unless `with_secrets`.
fn snapshot_database(from: &Path, to: &Path, with_secrets: bool) -> Result<()> {
    use rusqlite::{Connection, OpenFlags};
    if !from.exists() {
        bail!(
            "no database at {}: is this a controller's data directory?",
            from.display()
        );
    }
    let source = Connection::open_with_flags(from, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .with_context(|| format!("cannot open {}", from.display()))?;
    source.busy_timeout(std::time::Duration::from_secs(30))?;
    source
        .backup(rusqlite::MAIN_DB, to, None)
        .with_context(|| format!("cannot copy {}", from.display()))?;
    let copy = Connection::open(to)?;
    // One file: the copy's journal is not kept in WAL beside it.
    copy.pragma_update(None, "journal_mode", "DELETE")?;
    if !with_secrets {
        copy.execute("DELETE FROM tokens", [])?;
    }
    Ok(())
}

/// Restores a backup into `data`, which must not exist or be empty; returns its manifest.
pub fn restore(from: &Path, data: &DataDir, passphrase: Option<&str>) -> Result<Manifest> {
    let root = data.root();
    if root.exists()
        && fs::read_dir(root)
            .with_context(|| format!("cannot read {}", root.display()))?
            .next()
            .is_some()
    {
        bail!(
            "{} is not empty: restore into a new data directory (a restore never mixes with what is there)",
            root.display()
        );
    }
    let mut input = BufReader::new(
        fs::File::open(from).with_context(|| format!("cannot open {}", from.display()))?,
    );
    let mut head = vec![0u8; crypt::MAGIC.len()];
    let got = read_fully(&mut input, &mut head)?;
    let encrypted = head[..got] == *crypt::MAGIC;
    let reader: Box<dyn Read> = if encrypted {
        let Some(passphrase) = passphrase else {
            bail!(
                "{} is encrypted: give its passphrase (--passphrase-file)",
                from.display()
            );
        };
        Box::new(crypt::Opener::new(input, passphrase)?)
    } else {
        Box::new(std::io::Cursor::new(head[..got].to_vec()).chain(input))
    };
    // Unpacked beside the target, then moved into place: a failed restore leaves nothing half-made.
    let parent = root.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(parent)?;
    let staging = tempfile::Builder::new()
        .prefix(".plinth-restore-")
        .tempdir_in(parent)?;
    let mut archive = tar::Archive::new(GzDecoder::new(reader));
    archive.set_preserve_permissions(true);
    archive
        .unpack(staging.path())
        .with_context(|| format!("{} cannot be read", from.display()))?;
    let manifest: Manifest =
        serde_json::from_slice(&fs::read(staging.path().join(MANIFEST)).with_context(|| {
            format!(
                "{} holds no {MANIFEST}: not a Plinth backup",
                from.display()
            )
        })?)
        .with_context(|| format!("{}: its {MANIFEST} cannot be read", from.display()))?;
    if manifest.format != FORMAT {
        bail!(
            "{} is a backup of format {} (this controller reads format {FORMAT})",
            from.display(),
            manifest.format
        );
    }
    fs::remove_file(staging.path().join(MANIFEST))?;
    for private in ["plinth.db"].iter().chain(SECRET_FILES.iter()) {
        let path = staging.path().join(private);
        if path.exists() {
            fs::set_permissions(&path, fs::Permissions::from_mode(0o600))?;
        }
    }
    fs::set_permissions(staging.path(), fs::Permissions::from_mode(0o700))?;
    if root.exists() {
        fs::remove_dir(root)?;
    }
    let staged: PathBuf = staging.keep();
    fs::rename(&staged, root).with_context(|| format!("cannot make {}", root.display()))?;
    Ok(manifest)
}

fn read_fully(input: &mut impl Read, buf: &mut [u8]) -> Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match input.read(&mut buf[got..])? {
            0 => break,
            n => got += n,
        }
    }
    Ok(got)
}

/// Reads a passphrase from a file (its first line; a file of secrets, not the command line, which
/// every user of the host sees).
pub fn read_passphrase(path: &Path) -> Result<String> {
    let text = fs::read_to_string(path)
        .with_context(|| format!("cannot read the passphrase file {}", path.display()))?;
    let line = text.lines().next().unwrap_or("").to_string();
    if line.is_empty() {
        bail!("the passphrase file {} is empty", path.display());
    }
    Ok(line)
}

/// Checks a database as a controller would start on it (after a restore, or `pg_restore` of a
/// `pg_dump`): its schema is this controller's, its records read, and every running deployment's state
/// and lists are there to take it on. Prints what it found; returns the problems, each in one line.
pub fn check(store: &dyn crate::store::Store) -> Result<Vec<String>> {
    let mut problems = Vec::new();
    let versions = store.schema_versions()?;
    println!(
        "schema: {} migrations applied, this controller knows {}",
        versions.database, versions.controller
    );
    if versions.database != versions.controller {
        problems.push(format!(
            "the database has {} migrations, this controller {}: use the controller of the backup's version",
            versions.database, versions.controller
        ));
    }
    let nodes = store.list_nodes()?;
    let deployments = store.list_deployments(None)?;
    let tokens = store.list_tokens()?;
    println!(
        "records: {} nodes, {} deployments, {} operator tokens ({} not revoked)",
        nodes.len(),
        deployments.len(),
        tokens.len(),
        tokens.iter().filter(|t| t.revoked_at_ms.is_none()).count()
    );
    if tokens.iter().all(|t| t.revoked_at_ms.is_some()) {
        println!("no operator token: make one with `plinth-controller token create --name NAME`");
    }
    for dep in store.running_deployments()? {
        let state: Result<crate::engine::EngineState, _> =
            serde_json::from_value(dep.state.clone());
        let lists = store.published_lists(dep.id)?;
        match state {
            Ok(_) => println!(
                "running deployment {}: its state reads, {} lists published",
                dep.id,
                lists.len()
            ),
            Err(e) => problems.push(format!(
                "running deployment {}: its state cannot be read ({e})",
                dep.id
            )),
        }
    }
    Ok(problems)
}
