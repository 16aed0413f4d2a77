//! The data directory: what the controller makes on first start and reads on every start.
//!
//! | file | what | mode |
//! |---|---|---|
//! | `plinth.db` | the SQLite database (WAL) | 0600 |
//! | `signing.key` | the ed25519 key that signs task lists (PKCS#8 PEM) | 0600 |
//! | `tls/cert.pem`, `tls/key.pem` | the self-signed TLS certificate, unless certificates are configured | 0644, 0600 |
//! | `admin.token` | the first operator token (admin) | 0600 |

use anyhow::{bail, Context, Result};
use ed25519_dalek::SigningKey;
use plinth_common::signing;
use std::fs;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Paths inside a data directory.
#[derive(Debug, Clone)]
pub struct DataDir {
    root: PathBuf,
}

impl DataDir {
    /// Names a data directory (nothing is touched).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        DataDir { root: root.into() }
    }
    /// The directory.
    pub fn root(&self) -> &Path {
        &self.root
    }
    /// The database file.
    pub fn database(&self) -> PathBuf {
        self.root.join("plinth.db")
    }
    /// The signing key.
    pub fn signing_key(&self) -> PathBuf {
        self.root.join("signing.key")
    }
    /// The self-signed certificate.
    pub fn tls_cert(&self) -> PathBuf {
        self.root.join("tls").join("cert.pem")
    }
    /// The self-signed certificate's key.
    pub fn tls_key(&self) -> PathBuf {
        self.root.join("tls").join("key.pem")
    }
    /// The first admin token.
    pub fn admin_token(&self) -> PathBuf {
        self.root.join("admin.token")
    }
    /// Where the running controller listens (see [`DataDir::record_listening`]).
    pub fn listening(&self) -> PathBuf {
        self.root.join("listening.json")
    }

    /// Records the addresses the controller listens on once it does (`{"listen": ADDR,
    /// "nailgun_listen": ADDR or null, "netboot_listen": ADDR or null}`), replacing the file whole, so that a controller started on port
    /// 0 can be found (tests, scripts); removed by [`DataDir::forget_listening`] at a clean stop.
    pub fn record_listening(
        &self,
        listen: std::net::SocketAddr,
        nailgun: Option<std::net::SocketAddr>,
        netboot: Option<std::net::SocketAddr>,
    ) -> Result<()> {
        let text = serde_json::json!({
            "listen": listen.to_string(),
            "nailgun_listen": nailgun.map(|a| a.to_string()),
            "netboot_listen": netboot.map(|a| a.to_string()),
        })
        .to_string();
        let path = self.listening();
        let part = self.root.join("listening.json.part");
        let _ = fs::remove_file(&part);
        write_new_file(&part, text.as_bytes(), 0o644)?;
        fs::rename(&part, &path).with_context(|| format!("cannot write {}", path.display()))
    }

    /// Removes the record of where the controller listens.
    pub fn forget_listening(&self) {
        let _ = fs::remove_file(self.listening());
    }

    /// Creates the directory (0700) if needed.
    pub fn ensure(&self) -> Result<()> {
        fs::create_dir_all(self.root.join("tls"))
            .with_context(|| format!("cannot create data directory {}", self.root.display()))?;
        fs::set_permissions(&self.root, fs::Permissions::from_mode(0o700))
            .with_context(|| format!("cannot set the mode of {}", self.root.display()))?;
        Ok(())
    }

    /// Loads the signing key, making it on first start.
    pub fn load_or_create_signing_key(&self) -> Result<SigningKey> {
        let path = self.signing_key();
        if path.exists() {
            check_private(&path)?;
            let pem = fs::read_to_string(&path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            return signing::signing_key_from_pem(&pem)
                .with_context(|| format!("{} is not a signing key", path.display()));
        }
        let key = signing::signing_key_from_seed(random_bytes()?);
        let pem = signing::signing_key_to_pem(&key)?;
        write_new_file(&path, pem.as_bytes(), 0o600)?;
        tracing::info!(path = %path.display(), "made the task list signing key");
        Ok(key)
    }

    /// This controller's id among several sharing a database, made on first start and kept (a restart
    /// keeps it, so the restarted controller takes its own sequencing lease back at once).
    pub fn load_or_create_controller_id(&self) -> Result<String> {
        let path = self.root.join("controller-id");
        if path.exists() {
            let id = fs::read_to_string(&path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            let id = id.trim();
            if id.is_empty()
                || id.len() > 64
                || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            {
                anyhow::bail!(
                    "{} does not hold a controller id (letters, digits and '-', at most 64)",
                    path.display()
                );
            }
            return Ok(id.to_string());
        }
        let id = hex::encode(&random_bytes()?[..6]);
        write_new_file(&path, format!("{id}\n").as_bytes(), 0o644)?;
        Ok(id)
    }

    /// Loads the signing key without making one.
    pub fn load_signing_key(&self) -> Result<SigningKey> {
        let path = self.signing_key();
        let pem = fs::read_to_string(&path).with_context(|| {
            format!(
                "cannot read {} (has the controller been started once?)",
                path.display()
            )
        })?;
        signing::signing_key_from_pem(&pem)
            .with_context(|| format!("{} is not a signing key", path.display()))
    }
}

/// Refuses a private file that others can read.
fn check_private(path: &Path) -> Result<()> {
    let mode = fs::metadata(path)
        .with_context(|| format!("cannot stat {}", path.display()))?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        bail!(
            "{} has mode {:o}; it must be readable by its owner only (chmod 600)",
            path.display(),
            mode & 0o777
        );
    }
    Ok(())
}

/// 32 bytes from the operating system's random source.
pub fn random_bytes() -> Result<[u8; 32]> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed)
        .map_err(|e| anyhow::anyhow!("no randomness from the operating system: {e}"))?;
    Ok(seed)
}

/// Writes a file that must not exist yet, with a mode, synced to disk.
pub fn write_new_file(path: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    f.write_all(bytes)
        .and_then(|_| f.sync_all())
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}
