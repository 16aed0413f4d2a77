//! Hostname, kernel release and the operating system (`/etc/os-release`).

use super::{sysfs, Sources};
use plinth_common::wire::OsRelease;

/// The hostname, from `/proc/sys/kernel/hostname` (or the running system when live).
pub fn hostname(src: &Sources) -> Option<String> {
    sysfs::read_trimmed(&src.path("/proc/sys/kernel/hostname")).or_else(|| {
        if src.live {
            nix::unistd::gethostname()
                .ok()
                .map(|h| h.to_string_lossy().into_owned())
        } else {
            None
        }
    })
}

/// The kernel release, from `/proc/sys/kernel/osrelease`.
pub fn kernel(src: &Sources) -> Option<String> {
    sysfs::read_trimmed(&src.path("/proc/sys/kernel/osrelease")).or_else(|| {
        if src.live {
            nix::sys::utsname::uname()
                .ok()
                .map(|u| u.release().to_string_lossy().into_owned())
        } else {
            None
        }
    })
}

/// The operating system from `/etc/os-release`, falling back to `/usr/lib/os-release`.
pub fn os_release(src: &Sources) -> Option<OsRelease> {
    let text = std::fs::read_to_string(src.path("/etc/os-release"))
        .or_else(|_| std::fs::read_to_string(src.path("/usr/lib/os-release")))
        .ok()?;
    let mut os = OsRelease::default();
    for line in text.lines() {
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let value = unquote(value.trim());
        match key.trim() {
            "ID" => os.id = Some(value),
            "VERSION_ID" => os.version_id = Some(value),
            "PRETTY_NAME" => os.pretty_name = Some(value),
            _ => {}
        }
    }
    Some(os)
}

/// Removes shell-style quotes and backslash escapes from an os-release value.
fn unquote(value: &str) -> String {
    let inner = value
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
        .unwrap_or(value);
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(next) = chars.next() {
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    out
}
