//! Writing the node's own files into the installed system: [`place_file`] for any file, and on it the
//! host name ([`write_hostname`]) and root's SSH keys ([`write_authorized_keys`]).
//!
//! Every path is inside the installed system's root and reached one component at a time without
//! following a symbolic link (the executor's `nofollow`): a link on the way is refused, wherever it
//! points, so an image cannot turn a write into one outside its root (`/etc -> /host/etc`) or onto
//! a file it was not meant for. A link where the file itself goes is replaced, not followed. Files are
//! written to a temporary file beside their destination, given their mode, fsynced and renamed over it
//! (the executor's `placement`).

use super::InstalledError;
use crate::executor::nofollow::Dir;
use crate::executor::placement::{Owner, Staged};
use std::ffi::OsStr;
use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};

/// The key types OpenSSH accepts in `authorized_keys`.
const KEY_TYPES: &[&str] = &[
    "ssh-ed25519",
    "ssh-rsa",
    "ssh-dss",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
];

/// `path` as a relative path inside the root: plain names only (a leading `/` is allowed and means
/// the root), ending in a file name.
fn inside(path: &Path) -> Result<PathBuf, InstalledError> {
    let refused = |why: &str| InstalledError::Refused {
        path: path.to_path_buf(),
        why: why.to_string(),
    };
    let mut rel = PathBuf::new();
    for c in path.components() {
        match c {
            Component::RootDir => {}
            Component::Normal(n) => rel.push(n),
            Component::ParentDir => {
                return Err(refused("`..` would leave the installed system's root"))
            }
            Component::CurDir | Component::Prefix(_) => return Err(refused("not a plain path")),
        }
    }
    if rel.as_os_str().is_empty() {
        return Err(refused("names no file"));
    }
    Ok(rel)
}

/// Opens the directory `rel` below `root` (made with mode 0755 where missing), refusing links.
fn directory(root: &Path, rel: &Path, asked: &Path) -> Result<Dir, InstalledError> {
    let top = Dir::open(root, None)
        .map_err(|e| InstalledError::io(root, "cannot open the installed system's root", e))?
        .ok_or_else(|| {
            InstalledError::io(
                root,
                "cannot open the installed system's root",
                std::io::ErrorKind::NotFound.into(),
            )
        })?;
    top.walk(rel, Some(0o755), false)
        .map_err(|e| InstalledError::Refused {
            path: asked.to_path_buf(),
            why: e.to_string(),
        })?
        .ok_or_else(|| InstalledError::Refused {
            path: asked.to_path_buf(),
            why: "its directory could not be made".to_string(),
        })
}

/// Writes `contents` to `path` inside the installed system whose root is mounted at `root` (e.g.
/// [`super::MountedRoot::path`]), with `mode` and root's ownership, making missing directories (mode
/// 0755). `path` is read inside the root (`/etc/x` is `root/etc/x`); `..` and symbolic links on the way
/// are refused. Returns the file's path on this machine.
pub fn place_file(
    root: &Path,
    path: &Path,
    contents: &[u8],
    mode: u32,
) -> Result<PathBuf, InstalledError> {
    if mode > 0o7777 {
        return Err(InstalledError::invalid(
            format!("{}: mode", path.display()),
            format!("{mode:o} is not a file mode (at most 7777)"),
        ));
    }
    let rel = inside(path)?;
    let parent = rel.parent().unwrap_or(Path::new(""));
    let name = rel.file_name().unwrap_or(OsStr::new(""));
    let dir = directory(root, parent, path)?;
    write_in(dir, name, contents, mode)
        .map_err(|e| InstalledError::io(root.join(&rel), "cannot write it", e))?;
    Ok(root.join(rel))
}

/// Writes `name` in `dir` atomically with `mode`, root's.
fn write_in(dir: Dir, name: &OsStr, contents: &[u8], mode: u32) -> std::io::Result<()> {
    let mut staged = Staged::create_in(dir, name)?;
    staged.file().write_all(contents)?;
    let root = Owner {
        uid: Some(nix::unistd::Uid::from_raw(0)),
        gid: Some(nix::unistd::Gid::from_raw(0)),
    };
    let owner = if nix::unistd::geteuid().is_root() {
        root
    } else {
        Owner::default()
    };
    staged.commit(mode, owner)
}

/// Reads the regular file `path` inside the root (no link followed); `None` when it is missing.
fn read_inside(root: &Path, path: &Path) -> Result<Option<String>, InstalledError> {
    let rel = inside(path)?;
    let parent = rel.parent().unwrap_or(Path::new(""));
    let name = rel.file_name().unwrap_or(OsStr::new(""));
    let dir = directory(root, parent, path)?;
    let Some((mut file, _)) = dir
        .open_regular(name)
        .map_err(|e| InstalledError::io(root.join(&rel), "cannot open it", e))?
    else {
        return Ok(None);
    };
    let mut text = String::new();
    file.read_to_string(&mut text)
        .map_err(|e| InstalledError::io(root.join(&rel), "cannot read it", e))?;
    Ok(Some(text))
}

/// Checks a host name: dot-separated labels of 1 to 63 letters, digits and hyphens, not starting or
/// ending with a hyphen, 253 characters at most (RFC 1123).
fn check_hostname(name: &str) -> Result<(), InstalledError> {
    let bad = |why: &str| InstalledError::invalid("host name", format!("{name:?}: {why}"));
    if name.is_empty() || name.len() > 253 {
        return Err(bad("must be 1 to 253 characters"));
    }
    for label in name.split('.') {
        if label.is_empty() || label.len() > 63 {
            return Err(bad("each dot-separated part must be 1 to 63 characters"));
        }
        if !label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        {
            return Err(bad("only letters, digits, hyphens and dots"));
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Err(bad("a part may not start or end with a hyphen"));
        }
    }
    Ok(())
}

/// What `/etc/hosts` holds when the image has none.
const DEFAULT_HOSTS: &str = "127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\nff02::1\t\tip6-allnodes\nff02::2\t\tip6-allrouters\n";

/// `hosts` with its `127.0.1.1` line naming `name` (the full name, then the short one, as Debian's
/// installer writes it): the first such line replaced and any others dropped, or one added after
/// `127.0.0.1`'s (at the top when there is none).
fn with_hostname(hosts: &str, name: &str) -> String {
    let short = name.split('.').next().unwrap_or(name);
    let line = if short == name {
        format!("127.0.1.1\t{name}")
    } else {
        format!("127.0.1.1\t{name} {short}")
    };
    let is_ours = |l: &str| l.split_whitespace().next() == Some("127.0.1.1");
    let mut out: Vec<String> = Vec::new();
    let mut placed = false;
    for l in hosts.lines() {
        if is_ours(l) {
            if !placed {
                out.push(line.clone());
                placed = true;
            }
            continue;
        }
        out.push(l.to_string());
    }
    if !placed {
        let at = out
            .iter()
            .position(|l| l.split_whitespace().next() == Some("127.0.0.1"))
            .map_or(0, |i| i + 1);
        out.insert(at, line);
    }
    let mut text = out.join("\n");
    text.push('\n');
    text
}

/// Gives the installed system its host name: `/etc/hostname` and the `127.0.1.1` line of
/// `/etc/hosts` (made from Debian's default when missing).
pub fn write_hostname(root: &Path, name: &str) -> Result<(), InstalledError> {
    check_hostname(name)?;
    place_file(
        root,
        Path::new("/etc/hostname"),
        format!("{name}\n").as_bytes(),
        0o644,
    )?;
    let hosts =
        read_inside(root, Path::new("/etc/hosts"))?.unwrap_or_else(|| DEFAULT_HOSTS.to_string());
    place_file(
        root,
        Path::new("/etc/hosts"),
        with_hostname(&hosts, name).as_bytes(),
        0o644,
    )?;
    Ok(())
}

/// Checks one `authorized_keys` line: a key type OpenSSH knows, its base64 blob (whose first field
/// names the same type), an optional comment; no options, no line breaks.
fn check_key(index: usize, key: &str) -> Result<(), InstalledError> {
    use base64::Engine as _;
    let bad = |why: String| InstalledError::invalid(format!("SSH key {}", index + 1), why);
    if key.contains(['\n', '\r', '\0']) {
        return Err(bad("holds a line break: give one key per entry".to_string()));
    }
    let mut fields = key.split_whitespace();
    let kind = fields.next().unwrap_or("");
    if !KEY_TYPES.contains(&kind) {
        return Err(bad(format!(
            "does not start with an OpenSSH public key type ({}): {:.40}",
            KEY_TYPES.join(", "),
            key
        )));
    }
    let blob = fields.next().unwrap_or("");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(blob)
        .map_err(|e| bad(format!("its key is not base64: {e}")))?;
    let named = bytes
        .get(..4)
        .and_then(|n| <[u8; 4]>::try_from(n).ok())
        .map(|n| u32::from_be_bytes(n) as usize)
        .and_then(|n| bytes.get(4..4 + n));
    if named != Some(kind.as_bytes()) {
        return Err(bad(format!("its key is not an {kind} key")));
    }
    Ok(())
}

/// Writes root's `/root/.ssh/authorized_keys` (mode 0600, in `.ssh` of mode 0700), one key a line,
/// replacing what the image had. Each key must look like an OpenSSH public key (`type base64
/// [comment]`); nothing is written unless all do. Returns the file's path on this machine.
pub fn write_authorized_keys(root: &Path, keys: &[String]) -> Result<PathBuf, InstalledError> {
    for (i, key) in keys.iter().enumerate() {
        check_key(i, key.trim())?;
    }
    let asked = Path::new("/root/.ssh/authorized_keys");
    let home = directory(root, Path::new("root"), asked)?;
    let ssh = home
        .child(OsStr::new(".ssh"), Some(0o700), false)
        .map_err(|e| InstalledError::Refused {
            path: asked.to_path_buf(),
            why: e.to_string(),
        })?
        .ok_or_else(|| InstalledError::Refused {
            path: asked.to_path_buf(),
            why: "/root/.ssh could not be made".to_string(),
        })?;
    let target = root.join("root/.ssh/authorized_keys");
    ssh.set_mode(0o700)
        .map_err(|e| InstalledError::io(root.join("root/.ssh"), "cannot set its mode", e))?;
    let mut text = String::new();
    for key in keys {
        text.push_str(key.trim());
        text.push('\n');
    }
    write_in(ssh, OsStr::new("authorized_keys"), text.as_bytes(), 0o600)
        .map_err(|e| InstalledError::io(&target, "cannot write it", e))?;
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hosts_line_is_replaced_or_added_once() {
        let debian = "127.0.0.1\tlocalhost\n127.0.1.1\tdebian\n::1\tlocalhost\n";
        assert_eq!(
            with_hostname(debian, "n1.rack7.example"),
            "127.0.0.1\tlocalhost\n127.0.1.1\tn1.rack7.example n1\n::1\tlocalhost\n"
        );
        let without = "127.0.0.1 localhost\n::1 localhost\n";
        assert_eq!(
            with_hostname(without, "n2"),
            "127.0.0.1 localhost\n127.0.1.1\tn2\n::1 localhost\n"
        );
        let twice = "127.0.1.1 a\n127.0.1.1 b\n";
        assert_eq!(with_hostname(twice, "c"), "127.0.1.1\tc\n");
    }

    #[test]
    fn host_names_are_checked() {
        for good in ["n1", "r7-n01.example.org", "a1"] {
            check_hostname(good).unwrap();
        }
        for bad in ["", "-a", "a-", "a..b", "a_b", "a b", &"x".repeat(64)] {
            let e = check_hostname(bad).unwrap_err().to_string();
            assert!(e.starts_with("host name: "), "{e}");
        }
    }
}
