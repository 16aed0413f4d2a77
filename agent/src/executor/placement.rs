//! Putting files in place for tasks: a file is written to a temporary file beside its destination, given
//! its mode and owner, fsynced and renamed over the destination, and the directory is fsynced, so a
//! reader sees the old file or the new one, never a part. Missing parent directories are made with the
//! task's directory mode. Owners are `user`, `user:group` or `:group`, by name or number.

use nix::unistd::{chown, Gid, Group, Uid, User};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// An owner to give files: user and/or group ids.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Owner {
    /// The user, when set.
    pub uid: Option<Uid>,
    /// The group, when set.
    pub gid: Option<Gid>,
}

impl Owner {
    /// Reads `user`, `user:group` or `:group` (names or numbers), looking names up in the system's user
    /// and group databases.
    pub fn parse(text: &str) -> Result<Owner, String> {
        let (user, group) = match text.split_once(':') {
            Some((u, g)) => (u, Some(g)),
            None => (text, None),
        };
        let uid = match user.trim() {
            "" => None,
            u => Some(lookup_user(u)?),
        };
        let gid = match group.map(str::trim) {
            None | Some("") => None,
            Some(g) => Some(lookup_group(g)?),
        };
        if uid.is_none() && gid.is_none() {
            return Err(format!("{text:?} names neither a user nor a group"));
        }
        Ok(Owner { uid, gid })
    }

    /// True when nothing is to be changed.
    pub fn is_empty(&self) -> bool {
        self.uid.is_none() && self.gid.is_none()
    }
}

fn lookup_user(name: &str) -> Result<Uid, String> {
    if let Ok(n) = name.parse::<u32>() {
        return Ok(Uid::from_raw(n));
    }
    match User::from_name(name) {
        Ok(Some(u)) => Ok(u.uid),
        Ok(None) => Err(format!("no user {name:?} on this node")),
        Err(e) => Err(format!("cannot look up user {name:?}: {e}")),
    }
}

fn lookup_group(name: &str) -> Result<Gid, String> {
    if let Ok(n) = name.parse::<u32>() {
        return Ok(Gid::from_raw(n));
    }
    match Group::from_name(name) {
        Ok(Some(g)) => Ok(g.gid),
        Ok(None) => Err(format!("no group {name:?} on this node")),
        Err(e) => Err(format!("cannot look up group {name:?}: {e}")),
    }
}

/// A file being written: a temporary file beside its destination, removed unless committed.
#[derive(Debug)]
pub struct Staged {
    tmp: PathBuf,
    dest: PathBuf,
    file: File,
    committed: bool,
}

impl Staged {
    /// Makes the temporary file for `dest` (mode 0600 until committed), making missing parent
    /// directories with `dir_mode`.
    pub fn create(dest: &Path, dir_mode: u32) -> io::Result<Staged> {
        let name = dest
            .file_name()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?;
        let dir = match dest.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        fs::DirBuilder::new()
            .recursive(true)
            .mode(dir_mode)
            .create(&dir)?;
        let mut random = [0u8; 6];
        getrandom::fill(&mut random).map_err(|e| io::Error::other(e.to_string()))?;
        let mut tmp_name = std::ffi::OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(".plinth-{}", hex::encode(random)));
        let tmp = dir.join(tmp_name);
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        Ok(Staged {
            tmp,
            dest: dest.to_path_buf(),
            file,
            committed: false,
        })
    }

    /// The temporary file, to write into.
    pub fn file(&mut self) -> &mut File {
        &mut self.file
    }

    /// Another handle on the temporary file (for asynchronous writers).
    pub fn async_handle(&self) -> io::Result<tokio::fs::File> {
        Ok(tokio::fs::File::from_std(self.file.try_clone()?))
    }

    /// Gives the file its mode and owner, fsyncs it, renames it over the destination and fsyncs the
    /// directory.
    pub fn commit(mut self, mode: u32, owner: Owner) -> io::Result<()> {
        self.file.flush()?;
        if !owner.is_empty() {
            chown(&self.tmp, owner.uid, owner.gid).map_err(io::Error::from)?;
        }
        // After chown: changing the owner clears set-id bits.
        self.file
            .set_permissions(fs::Permissions::from_mode(mode))?;
        self.file.sync_all()?;
        fs::rename(&self.tmp, &self.dest)?;
        self.committed = true;
        let dir = self.dest.parent().filter(|p| !p.as_os_str().is_empty());
        crate::fsutil::sync_dir(dir.unwrap_or(Path::new(".")))
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.committed {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

/// Writes `bytes` to `dest` atomically with `mode` and `owner`.
pub fn write_file(
    dest: &Path,
    bytes: &[u8],
    mode: u32,
    dir_mode: u32,
    owner: Owner,
) -> io::Result<()> {
    let mut staged = Staged::create(dest, dir_mode)?;
    staged.file().write_all(bytes)?;
    staged.commit(mode, owner)
}

/// The SHA-256 (lowercase hex) of a file's content, or `None` when it is missing or not a regular file.
pub fn file_sha256(path: &Path) -> io::Result<Option<String>> {
    use sha2::{Digest, Sha256};
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    if !meta.is_file() {
        return Ok(None);
    }
    let mut file = File::open(path)?;
    let mut hasher = Sha256::new();
    io::copy(&mut file, &mut hasher)?;
    Ok(Some(hex::encode(hasher.finalize())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn writes_atomically_with_mode_and_parents() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("a/b/c.conf");
        write_file(&dest, b"one", 0o640, 0o750, Owner::default()).unwrap();
        write_file(&dest, b"two", 0o604, 0o750, Owner::default()).unwrap();
        assert_eq!(fs::read(&dest).unwrap(), b"two");
        assert_eq!(fs::metadata(&dest).unwrap().mode() & 0o7777, 0o604);
        // Made with the directory mode (less what the umask takes away).
        let dir_mode = fs::metadata(dir.path().join("a/b")).unwrap().mode() & 0o777;
        assert_eq!(dir_mode & !0o750, 0, "{dir_mode:o}");
        // Only the file is left: no temporary files.
        assert_eq!(fs::read_dir(dir.path().join("a/b")).unwrap().count(), 1);
    }

    #[test]
    fn an_abandoned_file_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("f");
        {
            let mut s = Staged::create(&dest, 0o755).unwrap();
            s.file().write_all(b"partial").unwrap();
        }
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn owners_by_name_and_number() {
        let root = Owner::parse("root").unwrap();
        assert_eq!(root.uid, Some(Uid::from_raw(0)));
        assert_eq!(root.gid, None);
        let both = Owner::parse("0:0").unwrap();
        assert_eq!(both.gid, Some(Gid::from_raw(0)));
        let group = Owner::parse(":root").unwrap();
        assert_eq!((group.uid, group.gid), (None, Some(Gid::from_raw(0))));
        assert!(Owner::parse("no-such-user-here")
            .unwrap_err()
            .contains("no-such-user-here"));
        assert!(Owner::parse(":").is_err());
    }

    #[test]
    fn ownership_is_applied_when_allowed() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("owned");
        let me = Owner {
            uid: Some(Uid::current()),
            gid: Some(Gid::current()),
        };
        write_file(&dest, b"x", 0o600, 0o755, me).unwrap();
        let meta = fs::metadata(&dest).unwrap();
        assert_eq!(meta.uid(), Uid::current().as_raw());
        if Uid::current().is_root() {
            let nobody = Owner::parse("65534:65534").unwrap();
            write_file(&dest, b"y", 0o644, 0o755, nobody).unwrap();
            let meta = fs::metadata(&dest).unwrap();
            assert_eq!((meta.uid(), meta.gid()), (65534, 65534));
        }
    }
}
