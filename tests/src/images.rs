//! Booted images: a Debian root file system built once per run with `packaging/make-image` (cached under
//! `target/plinth-images/`), the agent injected with `plinth-agent image inject`, and nodes booted from
//! it with `systemd-nspawn --boot` in network namespaces of their own. A node's root is an overlay of the
//! image (shared, read-only) and a layer of its own; its agent state (`/var/lib/plinth-agent`) is a
//! directory bound in from outside, the node's persistent disk, which survives replacing the image.
//! A reboot inside the node ends `systemd-nspawn` with status 133 and the node is started again, as
//! `systemd-nspawn@.service` does. Everything is stopped and unmounted on drop. Needs root.
//! Network boot images (`make-image --format netboot`) are made from a cached tree of their own, with
//! Debian's kernel in it ([`netboot_image`]).

use crate::netns::Netns;
use std::io::Write as _;
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Packages the test image has besides systemd and iproute2.
pub const INCLUDE: &str = "puppet";

/// The workspace's `target/` directory.
pub fn target_dir() -> PathBuf {
    crate::bin_dir()
        .parent()
        .expect("binaries live in target/<profile>")
        .to_path_buf()
}

/// The workspace's root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The base root file system (no agent in it), built with `packaging/make-image --no-agent` on first use
/// and kept under `target/plinth-images/` for later tests and runs; its name carries a digest of the
/// script and the package list, so a changed recipe builds a new one.
pub fn base_rootfs() -> PathBuf {
    cached_rootfs("rootfs", INCLUDE)
}

/// Packages a network boot image's tree has besides systemd and iproute2: those `make-image --format
/// netboot` adds itself (the kernel, udev, kmod, tiny-initramfs, the smallest initramfs tool the
/// kernel package accepts, and what the agent runs to prepare an installed system).
pub const NETBOOT_INCLUDE: &str = "linux-image-amd64,tiny-initramfs,udev,kmod,efibootmgr,e2fsprogs";

/// The root file system of network boot images (Debian's kernel in it, no agent), built and cached as
/// [`base_rootfs`] is.
pub fn netboot_rootfs() -> PathBuf {
    cached_rootfs("netboot-rootfs", NETBOOT_INCLUDE)
}

/// A network boot image (`OUT/vmlinuz`, `OUT/initrd.img`) of [`netboot_rootfs`] with the workspace's
/// agent in it and nothing about any controller, made by `packaging/make-image --format netboot` into
/// `out` (a fast zstd level: the test wants it soon, not small). Returns what make-image said.
pub fn netboot_image(out: &Path) -> String {
    let rootfs = netboot_rootfs();
    let agent = crate::bin("plinth-agent");
    make_image(&[
        "--from",
        &rootfs.display().to_string(),
        "--agent",
        &agent.display().to_string(),
        "--format",
        "netboot",
        "--zstd-level",
        "3",
        &out.display().to_string(),
    ])
}

/// Packages a whole-disk image's tree has besides systemd and iproute2: those `make-image --format disk`
/// adds itself (the kernel, initramfs-tools, udev, kmod, e2fsprogs), and puppet, which the provisioned
/// system runs.
pub const DISK_INCLUDE: &str = "linux-image-amd64,initramfs-tools,udev,kmod,e2fsprogs,puppet";

/// The root file system of whole-disk images (Debian's kernel in it, no agent), built and cached as
/// [`base_rootfs`] is.
pub fn disk_rootfs() -> PathBuf {
    cached_rootfs("disk-rootfs", DISK_INCLUDE)
}

/// A whole-disk image (`packaging/make-image --format disk`, raw) of [`disk_rootfs`] without the agent,
/// written to `out`. Returns what make-image said.
pub fn disk_image(out: &Path) -> String {
    let rootfs = disk_rootfs();
    make_image(&[
        "--from",
        &rootfs.display().to_string(),
        "--no-agent",
        "--format",
        "disk",
        &out.display().to_string(),
    ])
}

/// A root file system made by `packaging/make-image --no-agent --include PACKAGES`, cached under
/// `target/plinth-images/PREFIX-DIGEST`.
fn cached_rootfs(prefix: &str, include: &str) -> PathBuf {
    static BUILD: Mutex<()> = Mutex::new(());
    let _one_at_a_time = BUILD.lock().unwrap_or_else(|p| p.into_inner());
    let script = workspace().join("packaging/make-image");
    let text = std::fs::read(&script).expect("packaging/make-image");
    let digest = fnv1a(&[text.as_slice(), include.as_bytes()].concat());
    let cache = target_dir().join("plinth-images");
    std::fs::create_dir_all(&cache).expect("the image cache directory");
    let root = cache.join(format!("{prefix}-{digest:016x}"));
    // Another test process may be building it: the lock file serializes them.
    let lock = std::fs::File::create(cache.join("build.lock")).expect("the cache's lock file");
    let _lock = nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, e)| e)
        .expect("the cache's lock");
    if root.join("etc/os-release").exists() {
        return root;
    }
    let _ = std::fs::remove_dir_all(&root);
    let started = Instant::now();
    let out = Command::new(&script)
        .args(["--no-agent", "--include", include])
        .arg(&root)
        .output()
        .expect("make-image runs");
    assert!(
        out.status.success(),
        "make-image failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!(
        "built the {prefix} root file system in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    root
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x100000001b3)
    })
}

/// Copies the base root file system to `dest` (an image builder's working copy).
pub fn copy_tree(from: &Path, dest: &Path) {
    let ok = Command::new("cp")
        .args(["-a", "--reflink=auto"])
        .arg(from)
        .arg(dest)
        .status()
        .expect("cp runs");
    assert!(ok.success(), "cp -a {} {}", from.display(), dest.display());
}

/// Runs `packaging/make-image` with arguments; returns its standard error.
pub fn make_image(args: &[&str]) -> String {
    let out = Command::new(workspace().join("packaging/make-image"))
        .args(args)
        .output()
        .expect("make-image runs");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "make-image {args:?} failed:\n{err}");
    err
}

/// Runs `plinth-agent image inject` as an image builder would; returns its standard output and error.
pub fn inject(args: &[&str]) -> (String, String) {
    let out = Command::new(crate::bin("plinth-agent"))
        .args(["image", "inject"])
        .args(args)
        .output()
        .expect("plinth-agent image inject runs");
    assert!(
        out.status.success(),
        "image inject failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A scratch directory on a tmpfs of its own, unmounted (and so emptied at once) on drop: image copies
/// and the nodes' layers go there, so tearing them down does not unlink tens of thousands of files one by
/// one on a disk that discards each freed block.
pub struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    /// Mounts a tmpfs of at most `size` (e.g. `"3G"`) on a new temporary directory.
    pub fn new(size: &str) -> Scratch {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let ok = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0755"),
                "tmpfs",
            ])
            .arg(dir.path())
            .status()
            .expect("mount runs");
        assert!(
            ok.success(),
            "cannot mount a tmpfs on {}",
            dir.path().display()
        );
        Scratch { dir }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        for _ in 0..50 {
            let _ = Command::new("umount").arg(self.dir.path()).output();
            if !is_mounted(self.dir.path()) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        // Still busy: detach it so it goes when its last user does.
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .output();
    }
}

/// What the supervising thread shares with the container.
struct Shared {
    pid: AtomicI32,
    boots: AtomicU32,
    stopping: AtomicBool,
    last_exit: Mutex<Option<i32>>,
}

/// A node booted from an image with `systemd-nspawn --boot`.
pub struct Container {
    /// The machine name (the node's host name).
    pub name: String,
    /// Its home: `upper/` and `work/` (its overlay layer), `root/` (the overlay), `state/` (its
    /// persistent agent state), `boot.log` (the console).
    pub home: PathBuf,
    ns: Arc<Netns>,
    image: PathBuf,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Container {
    /// Boots `name` from `image` in `ns`, with its own home under `base`.
    pub fn boot(name: &str, base: &Path, ns: Arc<Netns>, image: &Path) -> Container {
        let home = base.join(name);
        for d in ["upper", "work", "root", "state"] {
            std::fs::create_dir_all(home.join(d)).expect("the container's directories");
        }
        let mut c = Container {
            name: name.to_string(),
            home,
            ns,
            image: image.to_path_buf(),
            shared: Arc::new(Shared {
                pid: AtomicI32::new(0),
                boots: AtomicU32::new(0),
                stopping: AtomicBool::new(false),
                last_exit: Mutex::new(None),
            }),
            thread: None,
        };
        c.start();
        c
    }

    /// How many times it has booted.
    pub fn boots(&self) -> u32 {
        self.shared.boots.load(Ordering::SeqCst)
    }

    /// A file of its root as the node sees it (read from its overlay).
    pub fn path(&self, inside: &str) -> PathBuf {
        self.home.join("root").join(inside.trim_start_matches('/'))
    }

    /// Its persistent agent state directory, seen from outside.
    pub fn state(&self) -> PathBuf {
        self.home.join("state")
    }

    /// Its console output so far.
    pub fn console(&self) -> String {
        String::from_utf8_lossy(&std::fs::read(self.home.join("boot.log")).unwrap_or_default())
            .into_owned()
    }

    fn start(&mut self) {
        let root = self.home.join("root");
        let options = format!(
            "lowerdir={},upperdir={},workdir={}",
            self.image.display(),
            self.home.join("upper").display(),
            self.home.join("work").display()
        );
        let ok = Command::new("mount")
            .args(["-t", "overlay", "overlay", "-o", &options])
            .arg(&root)
            .status()
            .expect("mount runs");
        assert!(ok.success(), "cannot mount the overlay for {}", self.name);
        let mut nspawn = Command::new("systemd-nspawn");
        nspawn
            .arg("--boot")
            .arg(format!("--directory={}", root.display()))
            .arg(format!("--machine={}", self.name))
            .arg(format!(
                "--network-namespace-path={}",
                self.ns.path().display()
            ))
            // The host's init may not be systemd: no machined, no scope unit of its own.
            .args(["--register=no", "--keep-unit"])
            .arg(format!(
                "--bind={}:/var/lib/plinth-agent",
                self.home.join("state").display()
            ))
            .args([
                "--console=read-only",
                "--resolv-conf=off",
                "--timezone=off",
                "--link-journal=no",
            ])
            .stdin(Stdio::null());
        let log_path = self.home.join("boot.log");
        let shared = self.shared.clone();
        shared.stopping.store(false, Ordering::SeqCst);
        let name = self.name.clone();
        self.thread = Some(std::thread::spawn(move || loop {
            let log = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&log_path)
                .expect("the console log");
            let err = log.try_clone().expect("the console log");
            let mut child = match nspawn.stdout(log).stderr(err).spawn() {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("{name}: cannot run systemd-nspawn: {e}");
                    return;
                }
            };
            shared.boots.fetch_add(1, Ordering::SeqCst);
            shared
                .pid
                .store(i32::try_from(child.id()).unwrap_or(0), Ordering::SeqCst);
            let status = child.wait().ok();
            shared.pid.store(0, Ordering::SeqCst);
            let code = status.and_then(|s| s.code().or(s.signal().map(|n| 128 + n)));
            *shared.last_exit.lock().unwrap_or_else(|p| p.into_inner()) = code;
            // 133: the node rebooted; start it again (what systemd-nspawn@.service's
            // RestartForceExitStatus=133 does).
            if code != Some(133) || shared.stopping.load(Ordering::SeqCst) {
                return;
            }
            if let Ok(mut f) = std::fs::OpenOptions::new().append(true).open(&log_path) {
                let _ = writeln!(f, "\n--- {name} rebooted: starting it again ---");
            }
        }));
    }

    /// Shuts the node down (SIGTERM makes systemd-nspawn power the node off cleanly; SIGKILL after
    /// `grace`) and unmounts its root.
    pub fn stop(&mut self, grace: Duration) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let deadline = Instant::now() + grace;
            let mut signalled = false;
            while !thread.is_finished() {
                let pid = self.shared.pid.load(Ordering::SeqCst);
                if pid > 0 {
                    let signal = if Instant::now() < deadline {
                        if signalled {
                            None
                        } else {
                            signalled = true;
                            Some(nix::sys::signal::Signal::SIGTERM)
                        }
                    } else {
                        Some(nix::sys::signal::Signal::SIGKILL)
                    };
                    if let Some(signal) = signal {
                        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal);
                    }
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = thread.join();
        }
        let root = self.home.join("root");
        for _ in 0..50 {
            let out = Command::new("umount").arg(&root).output();
            if !is_mounted(&root) || out.is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = Command::new("umount").arg("-l").arg(&root).output();
    }

    /// Replaces the node's image and boots it again: shuts it down, drops its own layer (the old root
    /// file system goes entirely), and boots from `image`; the persistent state stays.
    pub fn replace_image(&mut self, image: &Path) {
        self.stop(Duration::from_secs(60));
        for d in ["upper", "work"] {
            let p = self.home.join(d);
            std::fs::remove_dir_all(&p).expect("the old layer goes");
            std::fs::create_dir_all(&p).expect("a new layer");
        }
        self.image = image.to_path_buf();
        self.start();
    }
}

fn is_mounted(path: &Path) -> bool {
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let p = path.display().to_string();
    mounts
        .lines()
        .any(|l| l.split(' ').nth(1) == Some(p.as_str()))
}

impl Drop for Container {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(30));
    }
}
