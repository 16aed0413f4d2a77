//! A throwaway PostgreSQL server for tests and measurements: `initdb` in a fresh directory, started
//! with `pg_ctl` on a loopback port with TLS on (a self-signed certificate the URLs trust through
//! `sslrootcert`), stopped and deleted when dropped. Needs PostgreSQL's server programs (Debian's
//! `postgresql` package); runs them as the `postgres` user when started by root, since `initdb`
//! refuses root.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// Why a scratch server could not be had.
#[derive(Debug, thiserror::Error)]
#[error("scratch PostgreSQL: {0}")]
pub struct ScratchError(String);

fn fail(what: impl std::fmt::Display) -> ScratchError {
    ScratchError(what.to_string())
}

/// A running scratch server.
pub struct ScratchPostgres {
    dir: PathBuf,
    bin: PathBuf,
    port: u16,
    owner: Option<(u32, u32)>,
    databases: AtomicU32,
}

/// Where PostgreSQL's server programs are: `PLINTH_PG_BIN`, else Debian's newest
/// `/usr/lib/postgresql/<version>/bin`, else the directory of `initdb` on the `PATH`.
pub fn find_bin() -> Result<PathBuf, ScratchError> {
    if let Some(dir) = std::env::var_os("PLINTH_PG_BIN") {
        return Ok(PathBuf::from(dir));
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Ok(bin);
    }
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join("initdb"))
        .find(|p| p.exists())
        .and_then(|p| std::fs::canonicalize(p).ok())
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .ok_or_else(|| {
            fail(
                "no initdb found: install PostgreSQL's server (Debian: apt-get install postgresql)",
            )
        })
}

fn free_port() -> Result<u16, ScratchError> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(fail)?;
    Ok(l.local_addr().map_err(fail)?.port())
}

impl ScratchPostgres {
    /// Starts a server tuned for tests: `fsync` off (nothing here must survive a power loss; a commit
    /// still survives the server's crash, [`ScratchPostgres::kill`]).
    pub fn start() -> Result<ScratchPostgres, ScratchError> {
        Self::start_with(&["fsync = off", "full_page_writes = off"])
    }

    /// Starts a server that syncs every commit to disk, as a production one does (for measurements).
    pub fn start_durable() -> Result<ScratchPostgres, ScratchError> {
        Self::start_with(&[])
    }

    fn start_with(settings: &[&str]) -> Result<ScratchPostgres, ScratchError> {
        static STARTED: AtomicU32 = AtomicU32::new(0);
        let bin = find_bin()?;
        let dir = std::env::temp_dir().join(format!(
            "plinth-pg-{}-{}",
            std::process::id(),
            STARTED.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| fail(format!("{}: {e}", dir.display())))?;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).map_err(fail)?;
        let owner = if nix::unistd::geteuid().is_root() {
            let user = nix::unistd::User::from_name("postgres")
                .map_err(fail)?
                .ok_or_else(|| {
                    fail("running as root and there is no user postgres to run initdb as")
                })?;
            Some((user.uid.as_raw(), user.gid.as_raw()))
        } else {
            None
        };
        let mut server = ScratchPostgres {
            dir,
            bin,
            port: 0,
            owner,
            databases: AtomicU32::new(0),
        };
        server.give(&server.dir.clone())?;
        let made = rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()])
            .map_err(fail)?;
        server.write(
            "server.key",
            made.signing_key.serialize_pem().as_bytes(),
            0o600,
        )?;
        server.write("server.crt", made.cert.pem().as_bytes(), 0o644)?;
        let data = server.data();
        server.run(
            "initdb",
            &[
                "-D",
                path_str(&data)?,
                "-U",
                "plinth",
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ],
        )?;
        let conf_path = data.join("postgresql.conf");
        let initial = std::fs::read_to_string(&conf_path).map_err(fail)?;
        // A port found free may be taken by another process before the server binds it: try another.
        let mut attempt = 0;
        loop {
            attempt += 1;
            server.port = free_port()?;
            let mut conf = format!(
                "{initial}\nlisten_addresses = '127.0.0.1'\nport = {}\nunix_socket_directories = '{}'\n\
                 ssl = on\nssl_cert_file = '{}'\nssl_key_file = '{}'\nmax_connections = 200\n",
                server.port,
                server.dir.display(),
                server.dir.join("server.crt").display(),
                server.dir.join("server.key").display(),
            );
            for s in settings {
                conf.push_str(s);
                conf.push('\n');
            }
            std::fs::write(&conf_path, conf).map_err(fail)?;
            match server.start_server() {
                Ok(()) => break,
                Err(e) if attempt >= 3 => {
                    server.port = 0;
                    return Err(e);
                }
                Err(_) => {}
            }
        }
        Ok(server)
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// Hands a path to the user the server runs as.
    fn give(&self, path: &Path) -> Result<(), ScratchError> {
        if let Some((uid, gid)) = self.owner {
            nix::unistd::chown(
                path,
                Some(nix::unistd::Uid::from_raw(uid)),
                Some(nix::unistd::Gid::from_raw(gid)),
            )
            .map_err(|e| fail(format!("chown {}: {e}", path.display())))?;
        }
        Ok(())
    }

    fn write(&self, name: &str, body: &[u8], mode: u32) -> Result<(), ScratchError> {
        let path = self.dir.join(name);
        std::fs::write(&path, body).map_err(fail)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).map_err(fail)?;
        self.give(&path)
    }

    /// Runs one of PostgreSQL's programs as the server's user; an error carries its output.
    fn run(&self, program: &str, args: &[&str]) -> Result<(), ScratchError> {
        let mut cmd = Command::new(self.bin.join(program));
        cmd.args(args).current_dir(&self.dir).env("LC_ALL", "C");
        if let Some((uid, gid)) = self.owner {
            cmd.uid(uid).gid(gid);
        }
        let out = cmd
            .output()
            .map_err(|e| fail(format!("cannot run {program}: {e}")))?;
        if !out.status.success() {
            return Err(fail(format!(
                "{program} failed ({}): {}{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )));
        }
        Ok(())
    }

    /// The port it listens on (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The certificate the server presents (PEM); URLs trust it through `sslrootcert`.
    pub fn certificate(&self) -> PathBuf {
        self.dir.join("server.crt")
    }

    /// A URL of database `name` over TLS, the server's certificate verified.
    pub fn url(&self, name: &str) -> String {
        format!(
            "postgres://plinth@127.0.0.1:{}/{name}?sslmode=verify-full&sslrootcert={}",
            self.port,
            self.certificate().display()
        )
    }

    /// Creates a new, empty database and returns its URL (over TLS).
    pub fn fresh_database(&self) -> Result<String, ScratchError> {
        let name = format!("plinth{}", self.databases.fetch_add(1, Ordering::SeqCst));
        let port = self.port.to_string();
        self.run(
            "createdb",
            &["-h", "127.0.0.1", "-p", &port, "-U", "plinth", &name],
        )?;
        Ok(self.url(&name))
    }

    /// Stops the server at once (as a crash would), keeping its files.
    pub fn kill(&self) -> Result<(), ScratchError> {
        let data = self.data();
        self.run(
            "pg_ctl",
            &["-D", path_str(&data)?, "-m", "immediate", "-w", "stop"],
        )
    }

    /// Starts it again after [`ScratchPostgres::kill`].
    pub fn restart(&self) -> Result<(), ScratchError> {
        self.start_server()
    }

    fn start_server(&self) -> Result<(), ScratchError> {
        let data = self.data();
        let log = self.dir.join("server.log");
        self.run(
            "pg_ctl",
            &[
                "-D",
                path_str(&data)?,
                "-l",
                path_str(&log)?,
                "-w",
                "-t",
                "60",
                "start",
            ],
        )
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }
}

fn path_str(p: &Path) -> Result<&str, ScratchError> {
    p.to_str()
        .ok_or_else(|| fail(format!("path {} is not UTF-8", p.display())))
}

impl Drop for ScratchPostgres {
    fn drop(&mut self) {
        if self.port != 0 {
            let _ = self.kill();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
