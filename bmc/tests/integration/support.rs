//! The real BMC emulators the tests drive, each started for one test and stopped when dropped:
//! sushy-tools' `sushy-emulator` (Redfish, its fake driver), and virtualbmc's `vbmcd` over a libvirt
//! domain (IPMI). They come from the virtual environment `scripts/bmc-emulators.sh` makes, named by
//! `PLINTH_BMC_VENV`; a test fails, never skips, when it is missing.

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use plinth_bmc::BmcError;
use std::fs;
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The user every emulator knows.
pub const USER: &str = "plinth";

/// How long an emulator may take to come up: generous, for a busy machine.
const STARTUP: Duration = Duration::from_secs(90);

/// Fails the test if `e`'s message or debug form holds `password`.
pub fn assert_no_password(e: &BmcError, password: &str) {
    for text in [e.to_string(), format!("{e:?}")] {
        assert!(!text.contains(password), "the password is in {text}");
    }
}

/// Fails the test unless `e` is the timeout `timeout`, reported soon after it passed (`took`).
pub fn assert_timed_out(e: &BmcError, timeout: Duration, took: Duration) {
    assert!(
        matches!(e, BmcError::Timeout { after, .. } if *after == timeout),
        "{e}"
    );
    assert!(
        took >= timeout && took < timeout + Duration::from_secs(3),
        "took {took:?}"
    );
}

/// Fails the test: `what` is missing, and `how` brings it.
fn missing(what: &str, how: &str) -> ! {
    panic!(
        "{what} is needed and missing: {how} (run scripts/bmc-emulators.sh, or scripts/test.sh, which runs it)"
    )
}

/// The bin directory of the emulators' virtual environment.
pub fn venv() -> PathBuf {
    let dir = std::env::var_os("PLINTH_BMC_VENV")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            missing(
                "PLINTH_BMC_VENV (the bin directory of the BMC emulators' virtual environment)",
                "export PLINTH_BMC_VENV=\"$(scripts/bmc-emulators.sh)\"",
            )
        });
    for tool in ["python", "sushy-emulator", "vbmcd", "vbmc"] {
        if !dir.join(tool).exists() {
            missing(
                &format!("{} in PLINTH_BMC_VENV", dir.join(tool).display()),
                "export PLINTH_BMC_VENV=\"$(scripts/bmc-emulators.sh)\"",
            );
        }
    }
    dir
}

/// A program the IPMI tests run, from Debian's packages.
pub fn program(name: &str, package: &str) -> PathBuf {
    ["/usr/bin", "/usr/sbin", "/bin", "/sbin"]
        .iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.exists())
        .unwrap_or_else(|| missing(name, &format!("apt-get install {package}")))
}

/// A TCP port free on the loopback now (the OS's choice).
pub fn free_tcp_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A UDP port free on the loopback now (the OS's choice).
pub fn free_udp_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Waits until `ready` holds. `Err` (with the log at `log`) when the child ended first; fails the test
/// when it takes longer than [`STARTUP`].
fn wait_for(
    what: &str,
    log: &Path,
    child: &mut Child,
    mut ready: impl FnMut() -> bool,
) -> Result<(), String> {
    let start = Instant::now();
    while !ready() {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!(
                "{what} ended ({status}) before it was ready:\n{}",
                fs::read_to_string(log).unwrap_or_default()
            ));
        }
        if start.elapsed() > STARTUP {
            panic!(
                "{what} was not ready after {STARTUP:?}:\n{}",
                fs::read_to_string(log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}

/// Starts `command` in a process group of its own (so that it and its children can be stopped
/// together), its output going to `log`.
fn spawn_logged(command: &mut Command, log: &Path) -> std::io::Result<Child> {
    let out = fs::File::create(log)?;
    command
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .process_group(0)
        .spawn()
}

/// Stops a child started in its own process group: SIGTERM to the group, SIGKILL after `grace`.
fn stop_group(child: &mut Child, grace: Duration) {
    let group = Pid::from_raw(-(child.id() as i32));
    let _ = kill(group, Signal::SIGTERM);
    let start = Instant::now();
    while start.elapsed() < grace {
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = kill(group, Signal::SIGKILL);
    let _ = child.wait();
}

/// A bcrypt htpasswd line for `user` and `password`, made by the environment's Python.
fn htpasswd(venv: &Path, user: &str, password: &str) -> String {
    let out = Command::new(venv.join("python"))
        .args([
            "-c",
            "import bcrypt, os; u, p = os.environ['HT_USER'], os.environ['HT_PASSWORD']; \
             print(u + ':' + bcrypt.hashpw(p.encode(), bcrypt.gensalt(rounds=4)).decode())",
        ])
        .env("HT_USER", user)
        .env("HT_PASSWORD", password)
        .output()
        .expect("run the environment's python");
    assert!(
        out.status.success(),
        "bcrypt: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A PEM certificate and key for 127.0.0.1, made here.
pub struct TlsFiles {
    /// The certificate (also the CA to trust).
    pub cert: PathBuf,
    /// Its key.
    pub key: PathBuf,
}

impl TlsFiles {
    /// Writes a fresh self-signed certificate for 127.0.0.1 into `dir`.
    pub fn make(dir: &Path) -> TlsFiles {
        let made = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
        let files = TlsFiles {
            cert: dir.join("bmc.crt"),
            key: dir.join("bmc.key"),
        };
        fs::write(&files.cert, made.cert.pem()).unwrap();
        fs::write(&files.key, made.signing_key.serialize_pem()).unwrap();
        files
    }
}

/// A sushy-tools Redfish emulator on the loopback, with its fake driver (no hypervisor: a system's
/// power changes take effect a few seconds after they are asked) and basic authentication.
pub struct Sushy {
    child: Child,
    /// The emulator's files (configuration, users, state, log), removed when dropped.
    _dir: tempfile::TempDir,
    /// Its base URL.
    pub url: String,
    /// The systems' UUIDs, in order.
    pub systems: Vec<String>,
}

impl Sushy {
    /// Starts an emulator with `systems` fake systems (all off), which knows [`USER`] with `password`,
    /// over HTTPS when `tls` is given.
    pub fn start(systems: usize, password: &str, tls: Option<&TlsFiles>) -> Sushy {
        let venv = venv();
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("htpasswd"), htpasswd(&venv, USER, password)).unwrap();
        let uuids: Vec<String> = (0..systems)
            .map(|i| format!("5c0b5c7e-0000-4000-8000-{:012}", i + 1))
            .collect();
        let fake: Vec<String> = uuids
            .iter()
            .enumerate()
            .map(|(i, uuid)| {
                format!(
                    "{{'uuid': '{uuid}', 'name': 'node-{i}', 'power_state': 'Off', \
                     'nics': [{{'mac': '52:54:00:00:00:{i:02x}', 'ip': '192.0.2.{}'}}]}}",
                    i + 10
                )
            })
            .collect();
        // The port is free when chosen, but another process may take it before the emulator binds
        // it: then the emulator ends, and another port is tried.
        for attempt in 1.. {
            let port = free_tcp_port();
            let mut config = format!(
                "SUSHY_EMULATOR_FAKE_DRIVER = True\n\
                 SUSHY_EMULATOR_FAKE_SYSTEMS = [{}]\n\
                 SUSHY_EMULATOR_AUTH_FILE = {:?}\n\
                 SUSHY_EMULATOR_STATE_DIR = {:?}\n\
                 SUSHY_EMULATOR_LISTEN_IP = '127.0.0.1'\n\
                 SUSHY_EMULATOR_LISTEN_PORT = {port}\n",
                fake.join(", "),
                dir.path().join("htpasswd"),
                dir.path().join("state"),
            );
            if let Some(tls) = tls {
                config.push_str(&format!(
                    "SUSHY_EMULATOR_SSL_CERT = {:?}\nSUSHY_EMULATOR_SSL_KEY = {:?}\n",
                    tls.cert, tls.key
                ));
            }
            let config_path = dir.path().join("emulator.conf");
            fs::write(&config_path, config).unwrap();
            let log = dir.path().join("emulator.log");
            let mut child = spawn_logged(
                Command::new(venv.join("sushy-emulator"))
                    .arg("--config")
                    .arg(&config_path),
                &log,
            )
            .unwrap_or_else(|e| {
                missing(&format!("sushy-emulator ({e})"), "pip install sushy-tools")
            });
            match wait_for("sushy-emulator", &log, &mut child, || {
                TcpStream::connect(("127.0.0.1", port)).is_ok()
            }) {
                Ok(()) => {
                    let scheme = if tls.is_some() { "https" } else { "http" };
                    return Sushy {
                        child,
                        url: format!("{scheme}://127.0.0.1:{port}"),
                        _dir: dir,
                        systems: uuids,
                    };
                }
                Err(e) if attempt < 3 => eprintln!("{e}\ntrying another port"),
                Err(e) => panic!("{e}"),
            }
        }
        unreachable!("the loop returns or fails")
    }

    /// Starts an emulator with its libvirt driver (`qemu:///system`) for these libvirt domains (their
    /// UUIDs: the emulator shows no other), which knows [`USER`] with `password`. libvirt's daemons must
    /// run already ([`Libvirt::ensure`]).
    // For the end-to-end rack test, which includes this file too.
    #[allow(dead_code)]
    pub fn start_libvirt(domains: &[String], password: &str) -> Sushy {
        let venv = venv();
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("htpasswd"), htpasswd(&venv, USER, password)).unwrap();
        let allowed: Vec<String> = domains.iter().map(|d| format!("'{d}'")).collect();
        for attempt in 1.. {
            let port = free_tcp_port();
            let config = format!(
                "SUSHY_EMULATOR_LIBVIRT_URI = 'qemu:///system'\n\
                 SUSHY_EMULATOR_ALLOWED_INSTANCES = [{}]\n\
                 SUSHY_EMULATOR_AUTH_FILE = {:?}\n\
                 SUSHY_EMULATOR_STATE_DIR = {:?}\n\
                 SUSHY_EMULATOR_LISTEN_IP = '127.0.0.1'\n\
                 SUSHY_EMULATOR_LISTEN_PORT = {port}\n",
                allowed.join(", "),
                dir.path().join("htpasswd"),
                dir.path().join("state"),
            );
            let config_path = dir.path().join("emulator.conf");
            fs::write(&config_path, config).unwrap();
            let log = dir.path().join("emulator.log");
            let mut child = spawn_logged(
                Command::new(venv.join("sushy-emulator"))
                    .arg("--config")
                    .arg(&config_path),
                &log,
            )
            .unwrap_or_else(|e| {
                missing(&format!("sushy-emulator ({e})"), "pip install sushy-tools")
            });
            match wait_for("sushy-emulator", &log, &mut child, || {
                TcpStream::connect(("127.0.0.1", port)).is_ok()
            }) {
                Ok(()) => {
                    return Sushy {
                        child,
                        url: format!("http://127.0.0.1:{port}"),
                        _dir: dir,
                        systems: domains.to_vec(),
                    };
                }
                Err(e) if attempt < 3 => eprintln!("{e}\ntrying another port"),
                Err(e) => panic!("{e}"),
            }
        }
        unreachable!("the loop returns or fails")
    }

    /// The emulator's log so far.
    // For the end-to-end rack test, which includes this file too.
    #[allow(dead_code)]
    pub fn log(&self) -> String {
        fs::read_to_string(self._dir.path().join("emulator.log")).unwrap_or_default()
    }

    /// The path of system `i`.
    pub fn system_path(&self, i: usize) -> String {
        format!("/redfish/v1/Systems/{}", self.systems[i])
    }
}

impl Drop for Sushy {
    fn drop(&mut self) {
        stop_group(&mut self.child, Duration::from_secs(5));
    }
}

/// libvirt's daemons, started here unless they already run; those started here are stopped when
/// dropped.
pub struct Libvirt {
    started: Vec<Child>,
}

const LIBVIRT_SOCKET: &str = "/run/libvirt/libvirt-sock";
const VIRTLOGD_SOCKET: &str = "/run/libvirt/virtlogd-sock";

impl Libvirt {
    /// Makes sure `virtlogd` and `libvirtd` answer on their sockets.
    pub fn ensure() -> Libvirt {
        let mut libvirt = Libvirt {
            started: Vec::new(),
        };
        fs::create_dir_all("/var/log/libvirt").unwrap();
        fs::create_dir_all("/run/libvirt").unwrap();
        for (daemon, socket) in [("virtlogd", VIRTLOGD_SOCKET), ("libvirtd", LIBVIRT_SOCKET)] {
            if UnixStream::connect(socket).is_ok() {
                continue;
            }
            let program = program(daemon, "libvirt-daemon-system");
            let log = std::env::temp_dir().join(format!("plinth-bmc-{daemon}.log"));
            let mut child = spawn_logged(&mut Command::new(program), &log).unwrap_or_else(|e| {
                missing(
                    &format!("{daemon} ({e})"),
                    "apt-get install libvirt-daemon-system",
                )
            });
            wait_for(daemon, &log, &mut child, || {
                UnixStream::connect(socket).is_ok()
            })
            .unwrap_or_else(|e| panic!("{e}"));
            libvirt.started.push(child);
        }
        libvirt
    }
}

impl Drop for Libvirt {
    fn drop(&mut self) {
        // libvirtd first (it was started last), then virtlogd.
        while let Some(mut child) = self.started.pop() {
            stop_group(&mut child, Duration::from_secs(10));
        }
    }
}

/// Runs `virsh` against the system's qemu driver; `Err` carries what it printed.
pub fn virsh(args: &[&str]) -> Result<String, String> {
    let out = Command::new(program("virsh", "libvirt-clients"))
        .args(["-c", "qemu:///system"])
        .args(args)
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "virsh {}: {}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

static DOMAINS: AtomicUsize = AtomicUsize::new(0);

/// A virtualbmc BMC for a small qemu domain of its own (64 MiB, no disk: it only ever sits in its
/// firmware), on a UDP port of the loopback. Dropping it stops the BMC and vbmcd, destroys and
/// undefines the domain, then stops the libvirt daemons started for it.
pub struct VirtualBmc {
    /// The domain's name.
    pub domain: String,
    /// The BMC's UDP port.
    pub port: u16,
    vbmcd: Option<Child>,
    /// Whether the domain was defined here (and is undefined when dropped).
    owns_domain: bool,
    dir: tempfile::TempDir,
    venv: PathBuf,
    // Dropped last: the daemons outlive the domain.
    _libvirt: Libvirt,
}

impl VirtualBmc {
    /// Defines the domain (off) and starts a BMC for it that knows [`USER`] with `password`.
    pub fn start(password: &str) -> VirtualBmc {
        let venv = venv();
        program("ipmitool", "ipmitool");
        let libvirt = Libvirt::ensure();
        let dir = tempfile::tempdir().unwrap();
        let domain = format!(
            "plinth-bmc-test-{}-{}",
            std::process::id(),
            DOMAINS.fetch_add(1, Ordering::Relaxed)
        );
        let vbmc = VirtualBmc {
            domain: domain.clone(),
            port: free_udp_port(),
            vbmcd: None,
            owns_domain: true,
            dir,
            venv,
            _libvirt: libvirt,
        };
        let kind = if Path::new("/dev/kvm").exists() {
            "kvm"
        } else {
            "qemu"
        };
        let xml = format!(
            "<domain type='{kind}'>
               <name>{domain}</name>
               <memory unit='MiB'>64</memory>
               <vcpu>1</vcpu>
               <os><type arch='x86_64' machine='pc'>hvm</type><boot dev='network'/></os>
               <features><acpi/></features>
               <on_poweroff>destroy</on_poweroff>
               <devices>
                 <emulator>{}</emulator>
                 <memballoon model='none'/>
               </devices>
             </domain>",
            program("qemu-system-x86_64", "qemu-system-x86").display()
        );
        let xml_path = vbmc.dir.path().join("domain.xml");
        fs::write(&xml_path, xml).unwrap();
        virsh(&["define", xml_path.to_str().unwrap()]).unwrap();
        vbmc.serve(password)
    }

    /// A BMC for `domain`, a libvirt domain defined already (left defined when dropped), that knows
    /// [`USER`] with `password`, on a UDP port of the loopback.
    // For the end-to-end rack test, which includes this file too.
    #[allow(dead_code)]
    pub fn for_domain(domain: &str, password: &str) -> VirtualBmc {
        let venv = venv();
        program("ipmitool", "ipmitool");
        let libvirt = Libvirt::ensure();
        let vbmc = VirtualBmc {
            domain: domain.to_string(),
            port: free_udp_port(),
            vbmcd: None,
            owns_domain: false,
            dir: tempfile::tempdir().unwrap(),
            venv,
            _libvirt: libvirt,
        };
        vbmc.serve(password)
    }

    /// Starts vbmcd and the BMC of the domain.
    fn serve(mut self, password: &str) -> VirtualBmc {
        let vbmc = &mut self;
        let domain = vbmc.domain.clone();
        // vbmcd with its own configuration, state and control port, so that nothing is shared with
        // another run.
        let config = vbmc.dir.path().join("virtualbmc.conf");
        fs::create_dir_all(vbmc.dir.path().join("conf")).unwrap();
        fs::write(
            &config,
            format!(
                "[default]\nconfig_dir = {}\npid_file = {}\nserver_port = {}\n[log]\nlogfile = {}\n",
                vbmc.dir.path().join("conf").display(),
                vbmc.dir.path().join("vbmcd.pid").display(),
                free_tcp_port(),
                vbmc.dir.path().join("vbmcd.log").display(),
            ),
        )
        .unwrap();
        let log = vbmc.dir.path().join("vbmcd.out");
        let mut vbmcd = spawn_logged(
            Command::new(vbmc.venv.join("vbmcd"))
                .arg("--foreground")
                .env("VIRTUALBMC_CONFIG", &config),
            &log,
        )
        .unwrap();
        let pid_file = vbmc.dir.path().join("vbmcd.pid");
        wait_for("vbmcd", &log, &mut vbmcd, || pid_file.exists()).unwrap_or_else(|e| panic!("{e}"));
        vbmc.vbmcd = Some(vbmcd);
        let port = vbmc.port.to_string();
        vbmc.vbmc(&[
            "add",
            "--username",
            USER,
            "--password",
            password,
            "--port",
            &port,
            "--address",
            "127.0.0.1",
            "--libvirt-uri",
            "qemu:///system",
            &domain,
        ])
        .unwrap();
        vbmc.vbmc(&["start", &domain]).unwrap();
        self
    }

    /// Runs `vbmc` against this test's vbmcd.
    fn vbmc(&self, args: &[&str]) -> Result<String, String> {
        let out = Command::new(self.venv.join("vbmc"))
            .args(args)
            .env("VIRTUALBMC_CONFIG", self.dir.path().join("virtualbmc.conf"))
            .output()
            .map_err(|e| e.to_string())?;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if out.status.success() {
            Ok(text)
        } else {
            Err(format!("vbmc {}: {text}", args[0]))
        }
    }

    /// What libvirt says of the domain (`running`, `shut off`).
    pub fn domain_state(&self) -> String {
        virsh(&["domstate", &self.domain])
            .unwrap()
            .trim()
            .to_string()
    }
}

impl Drop for VirtualBmc {
    fn drop(&mut self) {
        let _ = self.vbmc(&["delete", &self.domain]);
        if let Some(mut vbmcd) = self.vbmcd.take() {
            stop_group(&mut vbmcd, Duration::from_secs(10));
        }
        if !self.owns_domain {
            return;
        }
        let _ = virsh(&["destroy", &self.domain]);
        if let Err(e) = virsh(&["undefine", &self.domain]) {
            eprintln!("cannot undefine the test domain {}: {e}", self.domain);
        }
    }
}
