//! What the end-to-end tests need beyond Rust, in one place. Each function finds a tool (or starts a
//! server) or fails the test with the Debian package or script that brings it: `scripts/test.sh`
//! installs every one of them, so no test is ever skipped for want of one.

use plinth_controller::store::postgres::scratch::ScratchPostgres;
use std::path::PathBuf;
use std::process::Command;

/// Fails the test: `what` is missing, and `how` brings it.
fn missing(what: &str, how: &str) -> ! {
    panic!("{what} is needed and missing: {how} (scripts/test.sh installs it)")
}

/// A scratch PostgreSQL server of its own, stopped and deleted when dropped (Debian's `postgresql`).
pub fn postgres() -> ScratchPostgres {
    ScratchPostgres::start()
        .unwrap_or_else(|e| missing(&format!("PostgreSQL ({e})"), "apt-get install postgresql"))
}

/// Chromium and its WebDriver, for the console's tests (Debian's `chromium` and `chromium-driver`).
pub fn chromium() -> (PathBuf, PathBuf) {
    let find = |names: &[&str]| names.iter().map(PathBuf::from).find(|p| p.exists());
    match (
        find(&["/usr/bin/chromium", "/usr/bin/chromium-browser"]),
        find(&["/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"]),
    ) {
        (Some(browser), Some(driver)) => (browser, driver),
        _ => missing(
            "Chromium with chromedriver",
            "apt-get install chromium chromium-driver",
        ),
    }
}

/// qemu, for the booted-image tests (Debian's `qemu-system-x86`).
pub fn qemu() -> PathBuf {
    let qemu = PathBuf::from("/usr/bin/qemu-system-x86_64");
    if !qemu.exists() {
        missing("qemu-system-x86_64", "apt-get install qemu-system-x86");
    }
    qemu
}

/// A Python 3.8 interpreter with `venv`, for Fuel's own client `fuel2` (python-fuelclient 11.0.0 runs
/// on nothing newer): `PLINTH_PYTHON38`, else `python3.8` on the path.
pub fn python38() -> PathBuf {
    std::env::var_os("PLINTH_PYTHON38")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .into_iter()
        .chain(std::iter::once(PathBuf::from("python3.8")))
        .find(|p| {
            Command::new(p)
                .args([
                    "-c",
                    "import sys, venv; assert sys.version_info[:2] == (3, 8)",
                ])
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .unwrap_or_else(|| missing("Python 3.8", "scripts/python38.sh finds or installs one"))
}

/// dnsmasq, the DHCP and TFTP server of the network-boot tests (Debian's `dnsmasq-base`), with
/// Debian's iPXE binaries (`ipxe`) that its configuration serves.
pub fn dnsmasq() -> PathBuf {
    let dnsmasq = PathBuf::from("/usr/sbin/dnsmasq");
    if !dnsmasq.exists() {
        missing("dnsmasq", "apt-get install dnsmasq-base");
    }
    if !std::path::Path::new("/usr/lib/ipxe/undionly.kpxe").exists() {
        missing("iPXE's binaries", "apt-get install ipxe");
    }
    dnsmasq
}

/// Debian's node_exporter, which serves the agent's metrics file through its textfile collector.
pub fn node_exporter() -> PathBuf {
    let exporter = PathBuf::from("/usr/bin/prometheus-node-exporter");
    if !exporter.exists() {
        missing(
            "prometheus-node-exporter",
            "apt-get install prometheus-node-exporter",
        );
    }
    exporter
}

pub fn prometheus() -> PathBuf {
    let prometheus = PathBuf::from("/usr/bin/prometheus");
    if !prometheus.exists() {
        missing("prometheus", "apt-get install prometheus");
    }
    prometheus
}
