//! Putting files in place for tasks: a file is written to a temporary file beside its destination, given
//! its mode and owner on the open file, fsynced and renamed over the destination, and the directory is
//! fsynced, so a reader sees the old file or the new one, never a part. The destination's directory is
//! reached without following links planted on the way (see [`super::nofollow`]); missing parent
//! directories are made with the task's directory mode. Owners are `user`, `user:group` or `:group`, by name or number.

use super::nofollow::Dir;
use nix::unistd::{fchown, Gid, Group, Uid, User};
use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

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

/// A file being written: a temporary file beside its destination, in the destination's open
/// directory (see [`super::nofollow`]), removed unless committed.
#[derive(Debug)]
pub struct Staged {
    dir: Dir,
    tmp: OsString,
    name: OsString,
    file: File,
    committed: bool,
}

/// The open directory a destination lives in and its file name. The directory is reached without
/// following untrusted links, and made (with `dir_mode`) when `dir_mode` is given.
pub fn destination(dest: &Path, dir_mode: Option<u32>) -> io::Result<Option<(Dir, OsString)>> {
    let name = dest
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?;
    let parent = match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::env::current_dir()?,
    };
    Ok(Dir::open(&parent, dir_mode)?.map(|d| (d, name.to_os_string())))
}

impl Staged {
    /// Makes the temporary file for `dest` (mode 0600 until committed), making missing parent
    /// directories with `dir_mode`.
    pub fn create(dest: &Path, dir_mode: u32) -> io::Result<Staged> {
        let (dir, name) = destination(dest, Some(dir_mode))?
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no parent directory"))?;
        Staged::create_in(dir, &name)
    }

    /// Makes the temporary file for `name` in the open directory `dir`.
    pub fn create_in(dir: Dir, name: &OsStr) -> io::Result<Staged> {
        let mut random = [0u8; 6];
        getrandom::fill(&mut random).map_err(|e| io::Error::other(e.to_string()))?;
        let mut tmp = std::ffi::OsString::from(".");
        tmp.push(name);
        tmp.push(format!(".plinth-{}", hex::encode(random)));
        let file = dir.create_new(&tmp)?;
        Ok(Staged {
            dir,
            tmp,
            name: name.to_os_string(),
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

    /// Gives the file its mode and owner (on the open file), fsyncs it, renames it over the
    /// destination (a link there is replaced, not followed) and fsyncs the directory.
    pub fn commit(mut self, mode: u32, owner: Owner) -> io::Result<()> {
        self.file.flush()?;
        if !owner.is_empty() {
            fchown(&self.file, owner.uid, owner.gid).map_err(io::Error::from)?;
        }
        // After chown: changing the owner clears set-id bits.
        self.file
            .set_permissions(fs::Permissions::from_mode(mode))?;
        self.file.sync_all()?;
        self.dir.rename(&self.tmp, &self.name)?;
        self.committed = true;
        self.dir.sync()
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.committed {
            let _ = self.dir.unlink(&self.tmp);
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

/// True when `name` in `dir` already is a regular file (not a link) with this content hash, mode and
/// owner.
pub fn in_place(dir: &Dir, name: &OsStr, sha256: &str, mode: u32, owner: Owner) -> bool {
    use sha2::{Digest, Sha256};
    let Ok(Some((mut file, stat))) = dir.open_regular(name) else {
        return false;
    };
    let owner_ok = owner.uid.is_none_or(|u| u.as_raw() == stat.st_uid)
        && owner.gid.is_none_or(|g| g.as_raw() == stat.st_gid);
    if !owner_ok || stat.st_mode & 0o7777 != mode {
        return false;
    }
    let mut hasher = Sha256::new();
    io::copy(&mut file, &mut hasher).is_ok() && hex::encode(hasher.finalize()) == sha256
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
