//! Network namespaces, a bridge and veth pairs for tests that boot nodes (containers, virtual machines)
//! on a network of their own: traffic goes only between the namespaces a test makes and the bridge, and
//! everything is removed when its guard is dropped, also when the test fails. Needs root.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs `ip` with arguments; panics with its error output when it fails.
pub fn ip(args: &[&str]) {
    let out = run("ip", args);
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr).trim()
    );
}

fn run(program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"))
}

/// Fails the test with a clear message unless it runs as root.
pub fn require_root(what: &str) {
    assert!(
        nix::unistd::geteuid().is_root(),
        "{what} needs root (network namespaces, mounts): run scripts/test.sh as root"
    );
}

/// A short tag unique to this test process and counter, for interface and namespace names (an
/// interface name has at most 15 characters).
pub fn unique(n: u32) -> String {
    format!("{:x}{n}", std::process::id() % 0xfffff)
}

/// The third octet of a subnet `10.213.X.0/24` for this test process's bridge number `index` (0 to 5):
/// `X` comes from the process id, so two test binaries running at once, and the tests of one binary, do
/// not share one.
pub fn subnet_octet(index: u8) -> u8 {
    u8::try_from(std::process::id() % 36 * 6 + 20 + u32::from(index % 6)).unwrap_or(20)
}

/// A network namespace, deleted on drop.
pub struct Netns {
    /// Its name (`ip netns` lists it).
    pub name: String,
}

impl Netns {
    /// Makes a namespace with its loopback up.
    pub fn new(name: &str) -> Netns {
        let _ = run("ip", &["netns", "delete", name]);
        ip(&["netns", "add", name]);
        let ns = Netns {
            name: name.to_string(),
        };
        ip(&["-n", name, "link", "set", "lo", "up"]);
        ns
    }

    /// Its path, for `systemd-nspawn --network-namespace-path=`.
    pub fn path(&self) -> PathBuf {
        PathBuf::from("/run/netns").join(&self.name)
    }

    /// A command that runs `program` inside the namespace.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name]).arg(program);
        c
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = run("ip", &["netns", "delete", &self.name]);
    }
}

/// A bridge in the test's own (root) namespace with an address, deleted on drop. Nodes' namespaces are
/// plugged into it with [`Bridge::plug`].
pub struct Bridge {
    /// The interface's name.
    pub name: String,
    /// Its address (`10.213.X.1`).
    pub address: String,
    prefix: String,
}

impl Bridge {
    /// Makes the bridge `name` with `10.213.<subnet_octet(index)>.1/24`.
    pub fn new(name: &str, index: u8) -> Bridge {
        let prefix = format!("10.213.{}", subnet_octet(index));
        let _ = run("ip", &["link", "delete", name]);
        ip(&["link", "add", name, "type", "bridge"]);
        let b = Bridge {
            name: name.to_string(),
            address: format!("{prefix}.1"),
            prefix,
        };
        ip(&["addr", "add", &format!("{}/24", b.address), "dev", name]);
        ip(&["link", "set", name, "up"]);
        b
    }

    /// The address `.host` of the bridge's subnet.
    pub fn host(&self, host: u8) -> String {
        format!("{}.{host}", self.prefix)
    }

    /// Plugs `ns` in through a veth pair: the bridge's end is `outer`, the namespace's end `inner`,
    /// with address `.host`/24 when given (else left unaddressed, e.g. for a bridge inside `ns`).
    /// Deleting the namespace deletes the pair.
    pub fn plug(&self, ns: &Netns, outer: &str, inner: &str, host: Option<u8>) {
        let _ = run("ip", &["link", "delete", outer]);
        ip(&[
            "link", "add", outer, "type", "veth", "peer", "name", inner, "netns", &ns.name,
        ]);
        ip(&["link", "set", outer, "master", &self.name]);
        ip(&["link", "set", outer, "up"]);
        if let Some(h) = host {
            ip(&[
                "-n",
                &ns.name,
                "addr",
                "add",
                &format!("{}/24", self.host(h)),
                "dev",
                inner,
            ]);
        }
        ip(&["-n", &ns.name, "link", "set", inner, "up"]);
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        let _ = run("ip", &["link", "delete", &self.name]);
    }
}

/// A child process stopped on drop: SIGTERM, then SIGKILL after `grace`.
pub struct Guarded {
    /// The process.
    pub child: Option<Child>,
    /// How long it may take to stop after SIGTERM.
    pub grace: Duration,
}

impl Guarded {
    /// Guards a started process.
    pub fn new(child: Child, grace: Duration) -> Guarded {
        Guarded {
            child: Some(child),
            grace,
        }
    }

    /// Stops it now (SIGTERM, then SIGKILL after the grace); returns its exit status when it had one.
    pub fn stop(&mut self) -> Option<std::process::ExitStatus> {
        let mut child = self.child.take()?;
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        if let Ok(pid) = i32::try_from(child.id()) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGTERM,
            );
        }
        let deadline = Instant::now() + self.grace;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        child.wait().ok()
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A tap interface on a bridge, for a virtual machine's NIC (`-netdev tap,ifname=<name>`), deleted on
/// drop.
pub struct Tap {
    /// The interface's name.
    pub name: String,
}

impl Tap {
    /// Makes the tap `name` and plugs it into `bridge`.
    pub fn new(name: &str, bridge: &Bridge) -> Tap {
        let _ = run("ip", &["link", "delete", name]);
        ip(&["tuntap", "add", "dev", name, "mode", "tap"]);
        let tap = Tap {
            name: name.to_string(),
        };
        ip(&["link", "set", name, "master", &bridge.name]);
        ip(&["link", "set", name, "up"]);
        tap
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        let _ = run("ip", &["link", "delete", &self.name]);
    }
}

/// dnsmasq running in a namespace with a configuration of the test's, stopped on drop. Its files
/// (configuration, log, leases, errors) are `<dir>/<name>.*`.
pub struct Dnsmasq {
    /// The process.
    pub process: Guarded,
    /// Its log (`--log-facility`): the DHCP and TFTP answers it gave.
    pub log: PathBuf,
    errors: PathBuf,
    /// The configuration it runs with.
    pub conf: String,
}

impl Dnsmasq {
    /// Starts `program` in `ns` with `conf`, in the foreground, and checks that it keeps running.
    pub fn start(ns: &Netns, program: &Path, dir: &Path, name: &str, conf: &str) -> Dnsmasq {
        let file = |ext: &str| dir.join(format!("{name}.{ext}"));
        std::fs::write(file("conf"), conf).expect("dnsmasq's configuration");
        let errors = file("err");
        let child = ns
            .command(program)
            .arg("--keep-in-foreground")
            .arg(format!("--conf-file={}", file("conf").display()))
            // As root, dnsmasq serves world-readable files over TFTP (the TFTP root's are).
            .arg("--user=root")
            .arg(format!("--pid-file={}", file("pid").display()))
            .arg(format!("--dhcp-leasefile={}", file("leases").display()))
            .arg(format!("--log-facility={}", file("log").display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&errors).expect("dnsmasq's error file"))
            .spawn()
            .expect("dnsmasq starts");
        let mut d = Dnsmasq {
            process: Guarded::new(child, Duration::from_secs(5)),
            log: file("log"),
            errors,
            conf: conf.to_string(),
        };
        std::thread::sleep(Duration::from_millis(500));
        let running = d
            .process
            .child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)));
        assert!(running, "dnsmasq runs: {}\n{conf}", d.said());
        d
    }

    /// dnsmasq in `ns` as `plinth-controller netboot dnsmasq-config` configures it for `c`'s boot
    /// listener at `boot_url`: addresses `.100` to `.150` of `bridge` on `interface`, the boot script
    /// over TFTP from `<dir>/tftp`.
    pub fn for_boot(
        c: &crate::Controller,
        ns: &Netns,
        program: &Path,
        (bridge, interface): (&Bridge, &str),
        boot_url: &str,
        dir: &Path,
    ) -> Dnsmasq {
        let tftp = dir.join("tftp");
        let (ok, conf, err) = c.command(&[
            "netboot",
            "dnsmasq-config",
            "--interface",
            interface,
            "--dhcp-range",
            &format!("{},{},255.255.255.0,1h", bridge.host(100), bridge.host(150)),
            "--boot-url",
            boot_url,
            "--tftp-root",
            &tftp.display().to_string(),
        ]);
        assert!(ok, "dnsmasq-config: {err}");
        Dnsmasq::start(ns, program, dir, "dnsmasq", &conf)
    }

    /// What it said: its errors and its log's last lines.
    pub fn said(&self) -> String {
        format!(
            "{}{}",
            std::fs::read_to_string(&self.errors).unwrap_or_default(),
            crate::tail(&std::fs::read_to_string(&self.log).unwrap_or_default(), 40)
        )
    }

    /// Stops it now.
    pub fn stop(&mut self) {
        self.process.stop();
    }
}
