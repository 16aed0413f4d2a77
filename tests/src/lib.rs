//! The end-to-end harness: real `plinth-controller` and `plinth-agent` processes on loopback TLS, each in
//! its own temporary directory, and clients that speak to them as operators and agents do.
//!
//! Binaries come from the workspace's target directory (`cargo build --workspace --bins` first; the test
//! script does it).

pub mod attacker;
pub mod browser;
pub mod earlier;
pub mod images;
pub mod needs;
pub mod netns;
pub mod rogue;
pub mod vm;

use anyhow::{bail, Context, Result};
use plinth_common::signing;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The directory holding the workspace's built binaries.
pub fn bin_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("PLINTH_BIN_DIR") {
        return PathBuf::from(dir);
    }
    // The test executable lives in target/<profile>/deps.
    let exe = std::env::current_exe().expect("the test knows its own path");
    exe.parent()
        .and_then(Path::parent)
        .expect("test executables live in target/<profile>/deps")
        .to_path_buf()
}

/// A built binary.
pub fn bin(name: &str) -> PathBuf {
    let p = bin_dir().join(name);
    assert!(
        p.exists(),
        "{} is missing: run `cargo build --workspace --bins` first",
        p.display()
    );
    p
}

/// Waits until `f` returns true, or fails after `timeout` saying what it waited for.
pub fn wait_until(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while start.elapsed() < timeout {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("timed out after {timeout:?} waiting for {what}");
}

/// Polls `f` every half second until it holds or `timeout` passes; whether it held (for a test that
/// says more than [`wait_until`] when it does not).
pub fn wait_for(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < timeout {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    false
}

/// The last `lines` lines of `text` (a console log's end, for a failure's message).
pub fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Whether the process `pid` has ended: no such process, or a zombie (which runs nothing more).
pub fn process_ended(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command's closing parenthesis.
        Ok(stat) => stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next())
            .is_some_and(|state| state == "Z" || state == "X"),
        Err(_) => true,
    }
}

/// The process ids a file lists, one a line (missing file: none).
pub fn pids_in(path: &Path) -> Vec<i32> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Waits until every process `path` lists has ended (see [`process_ended`]).
pub fn wait_ended(what: &str, path: &Path, timeout: Duration) {
    let pids = pids_in(path);
    assert!(!pids.is_empty(), "{} lists no process", path.display());
    wait_until(what, timeout, || pids.iter().all(|p| process_ended(*p)));
}

/// A loopback port held for a server a test starts later (or never): bound but not listening, so a
/// connection to it is refused and no other bind can take it until the reservation is given up.
pub struct ReservedPort {
    socket: Option<std::os::fd::OwnedFd>,
    /// The port.
    pub port: u16,
}

impl ReservedPort {
    /// Gives the port up, for the server about to bind it.
    pub fn release(mut self) -> u16 {
        self.socket = None;
        self.port
    }
}

/// Reserves a loopback port (see [`ReservedPort`]).
pub fn reserve_port() -> ReservedPort {
    use nix::sys::socket::{
        bind, getsockname, socket, AddressFamily, SockFlag, SockType, SockaddrIn,
    };
    let socket = socket(
        AddressFamily::Inet,
        SockType::Stream,
        SockFlag::SOCK_CLOEXEC,
        None,
    )
    .expect("a socket");
    bind(
        std::os::fd::AsRawFd::as_raw_fd(&socket),
        &SockaddrIn::new(127, 0, 0, 1, 0),
    )
    .expect("a loopback port");
    let port = getsockname::<SockaddrIn>(std::os::fd::AsRawFd::as_raw_fd(&socket))
        .expect("the bound address")
        .port();
    ReservedPort {
        socket: Some(socket),
        port,
    }
}

fn terminate(child: &mut Child) {
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// A running controller process.
pub struct Controller {
    /// Its temporary home (data dir and logs).
    pub dir: tempfile::TempDir,
    /// `https://127.0.0.1:PORT`.
    pub url: String,
    host: String,
    port: u16,
    extra: Vec<String>,
    /// The binary it runs (this workspace's, or an earlier release's in upgrade tests).
    program: PathBuf,
    child: Option<Child>,
    /// The operator client (admin token).
    pub api: Api,
}

impl Controller {
    /// Starts a controller that admits nodes automatically.
    pub fn start() -> Controller {
        Self::start_with(&["--auto-accept"])
    }

    /// Starts a controller with extra `serve` flags.
    pub fn start_with(extra: &[&str]) -> Controller {
        Self::start_listening("127.0.0.1", extra)
    }

    /// Starts a controller listening on `host` (an address of this machine, e.g. a test bridge's), with
    /// extra `serve` flags.
    pub fn start_listening(host: &str, extra: &[&str]) -> Controller {
        let mut c = Self::prepared(host, extra);
        c.spawn();
        c
    }

    /// Starts a controller running `program` (an earlier release's binary), with extra `serve` flags.
    pub fn start_program(program: &Path, extra: &[&str]) -> Controller {
        let mut c = Self::prepared("127.0.0.1", extra);
        c.program = program.to_path_buf();
        c.spawn();
        c
    }

    /// Stops it as systemd does (SIGTERM, a clean stop) and starts `program` on the same port and
    /// data: the controller upgraded in place.
    pub fn upgrade_to(&mut self, program: &Path) {
        if let Some(mut c) = self.child.take() {
            terminate(&mut c);
        }
        self.program = program.to_path_buf();
        self.spawn();
    }

    /// Starts another controller on the same database as `other` (its `--database-url` given in
    /// `extra`), with `other`'s signing key, TLS certificate and admin token copied into its data
    /// directory, as an operator sets up a second controller: agents pin one key and one certificate.
    pub fn start_sharing(other: &Controller, extra: &[&str]) -> Controller {
        Self::start_sharing_program(other, &bin("plinth-controller"), extra)
    }

    /// Starts another controller as [`Controller::start_sharing`] does, running `program`.
    pub fn start_sharing_program(other: &Controller, program: &Path, extra: &[&str]) -> Controller {
        let mut c = Self::prepared("127.0.0.1", extra);
        c.program = program.to_path_buf();
        let (from, to) = (other.data_dir(), c.data_dir());
        std::fs::create_dir_all(to.join("tls")).expect("the data directory");
        for file in ["signing.key", "admin.token", "tls/cert.pem", "tls/key.pem"] {
            std::fs::copy(from.join(file), to.join(file)).expect("a shared file copies");
        }
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o700)).expect("mode");
        c.spawn();
        c
    }

    fn prepared(host: &str, extra: &[&str]) -> Controller {
        let dir = tempfile::tempdir().expect("a temporary directory");
        // Port 0: the controller binds a free port itself and records it (`listening.json`).
        let port = 0;
        let url = String::new();
        let c = Controller {
            dir,
            url: url.clone(),
            host: host.to_string(),
            port,
            extra: extra.iter().map(|s| s.to_string()).collect(),
            program: bin("plinth-controller"),
            child: None,
            api: Api {
                url,
                token: String::new(),
                cert: PathBuf::new(),
            },
        };
        c
    }

    /// The port it listens on (the one it bound, once started).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The data directory.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The self-signed certificate agents pin.
    pub fn cert_path(&self) -> PathBuf {
        self.data_dir().join("tls").join("cert.pem")
    }

    /// The signing public key, as `key show` prints it.
    pub fn public_key(&self) -> String {
        let out = Command::new(bin("plinth-controller"))
            .arg("--data-dir")
            .arg(self.data_dir())
            .args(["key", "show"])
            .output()
            .expect("key show runs");
        assert!(
            out.status.success(),
            "key show failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// The signing key itself (tests that play an attacker holding a stolen or old key use it).
    pub fn signing_key(&self) -> ed25519_dalek::SigningKey {
        let pem =
            std::fs::read_to_string(self.data_dir().join("signing.key")).expect("signing key");
        signing::signing_key_from_pem(&pem).expect("a valid key")
    }

    fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("controller.log"))
            .expect("log file");
        let child = Command::new(&self.program)
            .arg("--data-dir")
            .arg(self.data_dir())
            .args(["serve", "--listen", &format!("{}:{}", self.host, self.port)])
            .args(&self.extra)
            .env("PLINTH_LOG", "info,plinth_controller=debug")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("the controller starts");
        self.child = Some(child);
        if self.port == 0 {
            let listening = self.listening("listen");
            self.port = listening
                .rsplit(':')
                .next()
                .and_then(|p| p.parse().ok())
                .unwrap_or_else(|| panic!("no port in {listening:?}"));
            self.url = format!("https://{}:{}", self.host, self.port);
        }
        let token_path = self.data_dir().join("admin.token");
        let cert_path = self.cert_path();
        // The token is written before the certificate is made: wait for both.
        wait_until(
            "the controller's admin token and certificate",
            Duration::from_secs(30),
            || token_path.exists() && cert_path.exists(),
        );
        self.api = Api {
            url: self.url.clone(),
            token: std::fs::read_to_string(&token_path)
                .expect("token")
                .trim()
                .to_string(),
            cert: self.cert_path(),
        };
        let api = self.api.clone();
        // The token is written before the certificate: wait for both before the first request.
        wait_until("the controller's API", Duration::from_secs(30), || {
            api.cert.exists() && api.get("/nodes").is_ok()
        });
    }

    /// An address the running controller records that it listens on (`listen`, `nailgun_listen`), once it
    /// does.
    fn listening(&self, which: &str) -> String {
        let path = self.data_dir().join("listening.json");
        let mut found = None;
        wait_until(
            &format!("the controller to record its {which} address"),
            Duration::from_secs(30),
            || {
                found = std::fs::read(&path)
                    .ok()
                    .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                    .and_then(|v| v[which].as_str().map(str::to_string));
                found.is_some()
            },
        );
        found.unwrap_or_default()
    }

    /// The boot listener's address (`--netboot-listen ADDR:0` binds any free port).
    pub fn netboot_addr(&self) -> String {
        self.listening("netboot_listen")
    }

    /// The port of the Nailgun listener (`--nailgun-listen ADDR:0` binds any free one).
    pub fn nailgun_port(&self) -> u16 {
        let addr = self.listening("nailgun_listen");
        addr.rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {addr:?}"))
    }

    /// The process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The resident memory of the process, in KiB (from `/proc`).
    pub fn rss_kib(&self) -> u64 {
        let Some(pid) = self.pid() else { return 0 };
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmRSS:"))
                    .and_then(|l| l.split_whitespace().nth(1))
                    .and_then(|n| n.parse().ok())
            })
            .unwrap_or(0)
    }

    /// Runs `plinth-controller ARGS` on this controller's data directory; returns (success, stdout,
    /// stderr).
    pub fn command(&self, args: &[&str]) -> (bool, String, String) {
        let out = Command::new(bin("plinth-controller"))
            .arg("--data-dir")
            .arg(self.data_dir())
            .args(args)
            .output()
            .expect("plinth-controller runs");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Kills the process at once (SIGKILL), as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Runs `plinthctl ARGS` against this controller (its URL, admin token and certificate); returns
    /// (success, stdout, stderr).
    pub fn plinthctl(&self, args: &[&str]) -> (bool, String, String) {
        let out = Command::new(bin("plinthctl"))
            .args([
                "--controller",
                &self.url,
                "--token",
                &self.api.token,
                "--ca-cert",
            ])
            .arg(self.cert_path())
            .args(args)
            .output()
            .expect("plinthctl runs");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Sends SIGHUP: the controller reloads its configuration.
    pub fn hangup(&self) {
        if let Some(c) = &self.child {
            let pid = nix::unistd::Pid::from_raw(i32::try_from(c.id()).expect("a pid fits i32"));
            nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGHUP).expect("SIGHUP is sent");
        }
    }

    /// Starts it again on the same port and data.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// Starts it again on the same data (database, signing key, certificate) but on the reserved port:
    /// another controller of the same site, as agents see it.
    pub fn restart_on(&mut self, reserved: ReservedPort) {
        self.kill();
        let port = reserved.release();
        self.port = port;
        self.url = format!("https://{}:{port}", self.host);
        self.api.url = self.url.clone();
        self.spawn();
    }

    /// The log so far (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("controller.log")).unwrap_or_default()
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            terminate(&mut c);
        }
    }
}

/// An operator client.
#[derive(Clone)]
pub struct Api {
    /// Base URL.
    pub url: String,
    /// Bearer token.
    pub token: String,
    /// Pinned certificate.
    pub cert: PathBuf,
}

/// An HTTP answer: status and JSON body (Null when empty).
#[derive(Debug)]
pub struct Answer {
    /// HTTP status.
    pub status: u16,
    /// Body.
    pub body: Value,
}

impl Api {
    /// A blocking client trusting the controller's certificate.
    pub fn http(&self) -> reqwest::blocking::Client {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let pem = std::fs::read(&self.cert).expect("controller certificate");
        reqwest::blocking::Client::builder()
            .tls_certs_only([reqwest::Certificate::from_pem(&pem).expect("PEM")])
            .timeout(Duration::from_secs(30))
            .build()
            .expect("client")
    }

    /// Sends a request with a raw body and a token (or none); returns status and body.
    pub fn raw(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<(&str, Vec<u8>)>,
    ) -> Answer {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut req = self
            .http()
            .request(method, format!("{}/api/v1{}", self.url, path));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if let Some((ctype, bytes)) = body {
            req = req.header("content-type", ctype).body(bytes);
        }
        let resp = match req.send() {
            Ok(resp) => resp,
            // Not listening (yet, or any more): callers that wait treat it like any failed answer.
            Err(e) => {
                return Answer {
                    status: 0,
                    body: json!({"error": {"message": e.to_string()}}),
                }
            }
        };
        let status = resp.status().as_u16();
        let text = resp.text().unwrap_or_default();
        Answer {
            status,
            body: serde_json::from_str(&text).unwrap_or(Value::Null),
        }
    }

    /// Sends JSON with the admin token.
    pub fn send(&self, method: &str, path: &str, body: Option<&Value>) -> Answer {
        self.raw(
            method,
            path,
            Some(&self.token),
            body.map(|b| ("application/json", serde_json::to_vec(b).expect("json"))),
        )
    }

    /// GET that must succeed.
    pub fn get(&self, path: &str) -> Result<Value> {
        let a = self.send("GET", path, None);
        if a.status != 200 {
            bail!("GET {path}: {} {}", a.status, a.body);
        }
        Ok(a.body)
    }

    /// Follows a deployment's event stream (`GET /deployments/{id}/events`) on a thread of its own
    /// until the deployment finishes; the thread returns every event (live ones, such as `task_result`,
    /// are only seen by a follower that was there).
    pub fn follow_events(&self, id: u64) -> std::thread::JoinHandle<Vec<Value>> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let pem = std::fs::read(&self.cert).expect("controller certificate");
        let client = reqwest::blocking::Client::builder()
            .tls_certs_only([reqwest::Certificate::from_pem(&pem).expect("PEM")])
            .timeout(None::<Duration>)
            .build()
            .expect("client");
        let request = client
            .get(format!("{}/api/v1/deployments/{id}/events", self.url))
            .bearer_auth(&self.token);
        std::thread::spawn(move || {
            use std::io::BufRead;
            let response = request.send().expect("the event stream opens");
            assert!(
                response.status().is_success(),
                "the event stream is refused: {}",
                response.status()
            );
            std::io::BufReader::new(response)
                .lines()
                .map_while(|l| l.ok())
                .filter_map(|l| {
                    l.strip_prefix("data:")
                        .and_then(|d| serde_json::from_str(d.trim()).ok())
                })
                .collect()
        })
    }

    /// A request that must succeed (2xx).
    pub fn ok(&self, method: &str, path: &str, body: Option<&Value>) -> Value {
        let a = self.send(method, path, body);
        assert!(
            (200..300).contains(&a.status),
            "{method} {path}: {} {}",
            a.status,
            a.body
        );
        a.body
    }

    /// Creates a release with a default graph of `tasks`, a cluster, assigns `nodes`; returns the cluster id.
    pub fn cluster_with_graph(&self, name: &str, graphs: Value, nodes: &[u64]) -> u64 {
        let release = self.ok(
            "POST",
            "/releases",
            Some(&json!({"name": name, "version": "1", "graphs": graphs})),
        );
        let cluster = self.ok(
            "POST",
            "/clusters",
            Some(&json!({"name": name, "release_id": release["id"]})),
        );
        let cid = cluster["id"].as_u64().expect("cluster id");
        let assign: Vec<Value> = nodes.iter().map(|n| json!({"id": n})).collect();
        self.ok(
            "PUT",
            &format!("/clusters/{cid}/nodes"),
            Some(&json!({"nodes": assign})),
        );
        cid
    }

    /// Starts a deployment; returns its id.
    pub fn deploy(&self, cluster: u64, query: &str) -> u64 {
        let d = self.ok("PUT", &format!("/clusters/{cluster}/deploy/?{query}"), None);
        d["id"].as_u64().expect("deployment id")
    }

    /// Waits for a deployment to end and returns its report.
    pub fn wait_deployment(&self, id: u64, timeout: Duration) -> Value {
        let mut last = Value::Null;
        let start = Instant::now();
        while start.elapsed() < timeout {
            if let Ok(r) = self.get(&format!("/deployments/{id}")) {
                if r["status"] != "running" {
                    return r;
                }
                last = r;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("deployment {id} still running after {timeout:?}: {last:#}");
    }

    /// The ids of registered nodes, by name.
    pub fn node_ids(&self) -> Vec<(String, u64)> {
        let nodes = self.get("/nodes").expect("nodes");
        nodes
            .as_array()
            .into_iter()
            .flatten()
            .map(|n| {
                (
                    n["name"].as_str().unwrap_or("").to_string(),
                    n["id"].as_u64().unwrap_or(0),
                )
            })
            .collect()
    }

    /// Waits until `count` nodes are registered; returns their ids by name.
    pub fn wait_nodes(&self, count: usize) -> Vec<(String, u64)> {
        wait_until(
            &format!("{count} registered nodes"),
            Duration::from_secs(60),
            || self.node_ids().len() >= count,
        );
        self.node_ids()
    }
}

/// A running agent process.
pub struct Agent {
    /// Its temporary home: config, state, work directory, log.
    pub dir: tempfile::TempDir,
    /// Its name.
    pub name: String,
    config: PathBuf,
    /// The binary it runs (this workspace's, or one a test installs, e.g. an earlier release's).
    program: PathBuf,
    child: Option<Child>,
}

impl Agent {
    /// Starts an agent for a controller, with tags.
    pub fn start(c: &Controller, name: &str, tags: &[&str]) -> Agent {
        Self::start_with(c, name, tags, &c.public_key(), "")
    }

    /// Starts an agent with a chosen pinned key and extra config lines.
    pub fn start_with(
        c: &Controller,
        name: &str,
        tags: &[&str],
        public_key: &str,
        extra: &str,
    ) -> Agent {
        Self::start_at(&c.url, &c.cert_path(), name, tags, public_key, extra)
    }

    /// Starts an agent for any controller-like server.
    pub fn start_at(
        url: &str,
        cert: &Path,
        name: &str,
        tags: &[&str],
        public_key: &str,
        extra: &str,
    ) -> Agent {
        Self::start_configured(
            &format!("controller = \"{url}\""),
            cert,
            name,
            tags,
            public_key,
            extra,
        )
    }

    /// Starts an agent given several controllers (`controllers = [...]`, in this order) that share
    /// `c`'s signing key and certificate.
    pub fn start_for_controllers(
        c: &Controller,
        urls: &[&str],
        name: &str,
        tags: &[&str],
    ) -> Agent {
        Self::start_for_controllers_program(c, urls, name, tags, &bin("plinth-agent"))
    }

    /// Starts an agent as [`Agent::start_for_controllers`] does, running `program`.
    pub fn start_for_controllers_program(
        c: &Controller,
        urls: &[&str],
        name: &str,
        tags: &[&str],
        program: &Path,
    ) -> Agent {
        Self::start_configured_program(
            &format!("controllers = {urls:?}"),
            &c.cert_path(),
            name,
            tags,
            &c.public_key(),
            "",
            program,
        )
    }

    fn start_configured(
        controllers: &str,
        cert: &Path,
        name: &str,
        tags: &[&str],
        public_key: &str,
        extra: &str,
    ) -> Agent {
        Self::start_configured_program(
            controllers,
            cert,
            name,
            tags,
            public_key,
            extra,
            &bin("plinth-agent"),
        )
    }

    fn start_configured_program(
        controllers: &str,
        cert: &Path,
        name: &str,
        tags: &[&str],
        public_key: &str,
        extra: &str,
        program: &Path,
    ) -> Agent {
        let dir = tempfile::tempdir().expect("a temporary directory");
        std::fs::create_dir_all(dir.path().join("work")).expect("work dir");
        std::fs::write(dir.path().join("cmdline"), "").expect("cmdline");
        let config = dir.path().join("agent.toml");
        let text = format!(
            "{controllers}\ncontroller_public_key = \"{public_key}\"\ncontroller_cert = \"{cert}\"\n\
             state_dir = \"{state}\"\nwork_dir = \"{work}\"\nname = \"{name}\"\ntags = {tags:?}\n\
             poll_wait_secs = 5\nheartbeat_secs = 2\nbackoff_min_ms = 100\nbackoff_max_ms = 1000\n{extra}\n",
            cert = cert.display(),
            state = dir.path().join("state").display(),
            work = dir.path().join("work").display(),
        );
        std::fs::write(&config, text).expect("agent config");
        let mut a = Agent {
            dir,
            name: name.to_string(),
            config,
            program: program.to_path_buf(),
            child: None,
        };
        a.spawn();
        a
    }

    /// Starts an agent for `c` running `program` (a binary a test installed: an earlier release's,
    /// which a deployment may replace).
    pub fn start_program(c: &Controller, name: &str, tags: &[&str], program: &Path) -> Agent {
        Self::start_configured_program(
            &format!("controller = \"{}\"", c.url),
            &c.cert_path(),
            name,
            tags,
            &c.public_key(),
            "",
            program,
        )
    }

    /// Stops it as systemd does (SIGTERM, a clean stop) and starts its program again: after a
    /// package replaced the binary, the new one.
    pub fn restart_service(&mut self) {
        if let Some(mut c) = self.child.take() {
            terminate(&mut c);
        }
        self.spawn();
    }

    fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("agent.log"))
            .expect("log file");
        let child = Command::new(&self.program)
            .args(["run", "--config"])
            .arg(&self.config)
            .arg("--cmdline")
            .arg(self.dir.path().join("cmdline"))
            .env("PLINTH_LOG", "info,plinth_agent=debug")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("the agent starts");
        self.child = Some(child);
    }

    /// The work directory tasks run in.
    pub fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    /// Kills the agent at once (SIGKILL).
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts it again with the same state.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// The log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("agent.log")).unwrap_or_default()
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            terminate(&mut c);
        }
    }
}

/// A shell task in graph form.
pub fn shell(id: &str, tags: &[&str], cmd: &str) -> Value {
    json!({"id": id, "type": "shell", "tags": tags, "parameters": {"cmd": cmd, "timeout": 60, "retries": 0}})
}

/// The report's task line for a node and task.
pub fn task_line<'a>(report: &'a Value, node: &str, task: &str) -> Option<&'a Value> {
    report["nodes"]
        .as_array()?
        .iter()
        .find(|n| n["name"] == node)?["tasks"]
        .as_array()?
        .iter()
        .find(|t| t["id"] == task)
}

/// A strategy report's group line (panics naming the group when it has none).
pub fn group<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["groups"]
        .as_array()
        .and_then(|groups| groups.iter().find(|g| g["name"] == name))
        .unwrap_or_else(|| panic!("no group {name} in the report: {report:#}"))
}

/// The report's node line.
pub fn node_line<'a>(report: &'a Value, node: &str) -> Option<&'a Value> {
    report["nodes"]
        .as_array()?
        .iter()
        .find(|n| n["name"] == node)
}

/// Reads a file, with context.
pub fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
}

/// Reads a deployment's report, its summary and `GET /nodes` until one reading where the report did
/// not move while the others were read, then checks that they tell one story: each node's status in the
/// report is the summary's, the summary's counts are the report's, each group's lists cover its nodes
/// by their statuses, and a node's record is in `error` exactly when the report says it failed (once
/// its outcome is final) with the report's reason. `Err` names the disagreement.
pub fn views_agree(api: &Api, dep: u64, timeout: Duration) -> std::result::Result<(), String> {
    let started = Instant::now();
    let mut last = String::from("never read");
    while started.elapsed() < timeout {
        match one_reading(api, dep) {
            Ok(()) => return Ok(()),
            Err(e) => last = e,
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Err(last)
}

fn one_reading(api: &Api, dep: u64) -> std::result::Result<(), String> {
    let get = |path: &str| api.get(path).map_err(|e| e.to_string());
    let report = get(&format!("/deployments/{dep}"))?;
    let summary = get(&format!("/deployments/{dep}/summary"))?;
    let nodes = get("/nodes")?;
    let again = get(&format!("/deployments/{dep}"))?;
    let statuses = |r: &Value| -> Vec<(Value, Value)> {
        r["nodes"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|n| (n["name"].clone(), n["status"].clone()))
            .collect()
    };
    if statuses(&report) != statuses(&again) || report["status"] != again["status"] {
        return Err("the run moved while it was read".into());
    }
    if statuses(&report) != statuses(&summary) || report["status"] != summary["status"] {
        return Err(format!(
            "report {:?} / summary {:?}",
            statuses(&report),
            statuses(&summary)
        ));
    }
    let mut counts: std::collections::BTreeMap<String, u64> = Default::default();
    for (_, s) in statuses(&report) {
        *counts
            .entry(s.as_str().unwrap_or("").to_string())
            .or_default() += 1;
    }
    let said: std::collections::BTreeMap<String, u64> = summary["counts"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.as_u64().unwrap_or(0)))
        .collect();
    if said != counts {
        return Err(format!("summary counts {said:?}, report {counts:?}"));
    }
    let status_of = |name: &Value| {
        report["nodes"]
            .as_array()
            .and_then(|ns| ns.iter().find(|n| n["name"] == *name))
            .map(|n| n["status"].clone())
    };
    for g in report["groups"].as_array().into_iter().flatten() {
        let mut covered = 0;
        for (key, status) in [
            ("running", "running"),
            ("succeeded", "success"),
            ("prepared", "prepared"),
            ("failed", "failure"),
            ("cancelled", "cancelled"),
            ("not_started", "not_started"),
        ] {
            for m in g[key].as_array().into_iter().flatten() {
                covered += 1;
                if status_of(m) != Some(json!(status)) {
                    return Err(format!(
                        "group {} lists {m} as {key}: {:?}",
                        g["name"],
                        status_of(m)
                    ));
                }
            }
        }
        if covered != g["nodes"].as_array().map_or(0, Vec::len) {
            return Err(format!(
                "group {}'s lists do not cover its nodes",
                g["name"]
            ));
        }
    }
    for n in report["nodes"].as_array().into_iter().flatten() {
        let Some(record) = nodes
            .as_array()
            .and_then(|ns| ns.iter().find(|r| r["id"] == n["id"]))
        else {
            return Err(format!("{} is not in the nodes list", n["name"]));
        };
        let failed = n["status"] == "failure";
        if (record["status"] == "error") != failed && n["status"] != "not_started" {
            return Err(format!(
                "{}: the report says {}, its record {}",
                n["name"], n["status"], record["status"]
            ));
        }
        if failed && record["error_msg"] != n["reason"] {
            return Err(format!(
                "{}: the record says {}, the report {}",
                n["name"], record["error_msg"], n["reason"]
            ));
        }
    }
    Ok(())
}
