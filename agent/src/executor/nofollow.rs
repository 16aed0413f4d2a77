//! Reaching destinations without following links someone planted there. File tasks run as root and write
//! where a task says; a symbolic link in the way (`dst/a -> /etc`, made by whoever can write below the
//! destination) must never redirect those writes.
//!
//! Everything here works on open directory descriptors (`openat`, `mkdirat`, `renameat`, `unlinkat`
//! with `O_NOFOLLOW`), one path component at a time, so no link is followed behind the agent's back
//! and a directory swapped for a link after it was opened changes nothing: the agent keeps writing
//! into the directory it opened.
//!
//! - [`Dir::open`] reaches a destination's directory from `/`. A link on the way is followed only when
//!   it is owned by root or by the agent's own user (links the system ships, such as `/lib ->
//!   usr/lib`); a link owned by anyone else is refused. Its target is read from the very link whose
//!   owner was checked, so it cannot be swapped in between.
//! - Below a directory ([`Dir::child`], [`Dir::walk`]) no link is ever followed: a link where a
//!   directory belongs is replaced by the directory when the caller mirrors a tree (`sync`, as `rsync`
//!   does), and refused otherwise.
//! - Files are opened with `O_NOFOLLOW` and checked to be regular before they are read; new files are
//!   made with `O_CREAT | O_EXCL | O_NOFOLLOW`, and their owner and mode are set on the open
//!   descriptor.
//!
//! Walking one component at a time with `O_NOFOLLOW` is what `openat2`'s `RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS` would do in one call, and works on every kernel the agent runs on, so the agent
//! does not depend on `openat2` (Linux 5.6) being there.

use nix::errno::Errno;
use nix::fcntl::{openat, readlinkat, renameat, AtFlags, OFlag};
use nix::sys::stat::{fstat, fstatat, mkdirat, FileStat, Mode, SFlag};
use nix::unistd::{fsync, geteuid, unlinkat, UnlinkatFlags};
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// The most links followed while reaching one directory (the kernel's own limit).
pub const MAX_LINKS: usize = 40;

/// What a name in a directory is, read without following it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A directory.
    Directory,
    /// A regular file.
    File,
    /// A symbolic link.
    Link,
    /// Anything else (device, socket, FIFO).
    Other,
}

impl Kind {
    fn of(stat: &FileStat) -> Kind {
        match SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT {
            SFlag::S_IFDIR => Kind::Directory,
            SFlag::S_IFREG => Kind::File,
            SFlag::S_IFLNK => Kind::Link,
            _ => Kind::Other,
        }
    }
}

/// An open directory and the path it was reached by (for messages).
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

/// An error naming a path.
fn at(path: &Path, e: impl std::fmt::Display) -> io::Error {
    io::Error::other(format!("{}: {e}", path.display()))
}

const DIR_FLAGS: OFlag = OFlag::O_DIRECTORY
    .union(OFlag::O_NOFOLLOW)
    .union(OFlag::O_RDONLY)
    .union(OFlag::O_CLOEXEC);

/// Opens `name` in `dir` as a directory without following it; `Ok(None)` when it is missing,
/// `Err(ELOOP | ENOTDIR)` when it is a link or not a directory.
fn open_dir_at(dir: BorrowedFd<'_>, name: &OsStr) -> Result<Option<OwnedFd>, Errno> {
    match openat(dir, name, DIR_FLAGS, Mode::empty()) {
        Ok(fd) => Ok(Some(fd)),
        Err(Errno::ENOENT) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Makes `name` in `dir` with `mode` (an existing one is fine).
fn make_dir_at(dir: BorrowedFd<'_>, name: &OsStr, mode: u32) -> Result<(), Errno> {
    match mkdirat(dir, name, Mode::from_bits_truncate(mode)) {
        Ok(()) | Err(Errno::EEXIST) => Ok(()),
        Err(e) => Err(e),
    }
}

impl Dir {
    /// Reaches the absolute directory `path` from `/`, making missing directories with `create`'s
    /// mode when given (`Ok(None)` when one is missing and `create` is `None`). Links on the way are
    /// followed only when root or the agent's own user owns them.
    pub fn open(path: &Path, create: Option<u32>) -> io::Result<Option<Dir>> {
        if !path.is_absolute() {
            return Err(at(path, "not an absolute path"));
        }
        let root =
            || nix::fcntl::open("/", DIR_FLAGS, Mode::empty()).map_err(|e| at(Path::new("/"), e));
        let mut cur = root()?;
        let mut shown = PathBuf::from("/");
        let mut pending: Vec<OsString> = Vec::new();
        push_components(&mut pending, path);
        let mut links = 0usize;
        let me = geteuid().as_raw();
        while let Some(name) = pending.pop() {
            if name == ".." {
                cur = openat(&cur, "..", DIR_FLAGS, Mode::empty()).map_err(|e| at(&shown, e))?;
                shown.pop();
                continue;
            }
            let here = shown.join(&name);
            match open_dir_at(cur.as_fd(), &name) {
                Ok(Some(fd)) => {
                    cur = fd;
                    shown = here;
                }
                Ok(None) => match create {
                    Some(mode) => {
                        make_dir_at(cur.as_fd(), &name, mode).map_err(|e| at(&here, e))?;
                        pending.push(name);
                    }
                    None => return Ok(None),
                },
                Err(Errno::ELOOP | Errno::ENOTDIR) => {
                    // The link itself, never what it points to: its owner and its target come from
                    // the same inode.
                    let link = openat(
                        &cur,
                        name.as_os_str(),
                        OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
                        Mode::empty(),
                    )
                    .map_err(|e| at(&here, e))?;
                    let stat = fstat(&link).map_err(|e| at(&here, e))?;
                    if Kind::of(&stat) != Kind::Link {
                        return Err(at(&here, "not a directory"));
                    }
                    if stat.st_uid != 0 && stat.st_uid != me {
                        return Err(io::Error::new(
                            io::ErrorKind::PermissionDenied,
                            format!(
                                "{}: a symbolic link owned by uid {}: not followed (only links owned by root or the agent's user are)",
                                here.display(),
                                stat.st_uid
                            ),
                        ));
                    }
                    links += 1;
                    if links > MAX_LINKS {
                        return Err(at(&here, "too many levels of symbolic links"));
                    }
                    let target = readlinkat(&link, "").map_err(|e| at(&here, e))?;
                    let target = PathBuf::from(target);
                    if target.is_absolute() {
                        cur = root()?;
                        shown = PathBuf::from("/");
                    }
                    push_components(&mut pending, &target);
                }
                Err(e) => return Err(at(&here, e)),
            }
        }
        Ok(Some(Dir {
            fd: cur,
            path: shown,
        }))
    }

    /// The path this directory was reached by.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Another descriptor on the same directory.
    pub fn try_clone(&self) -> io::Result<Dir> {
        Ok(Dir {
            fd: self.fd.try_clone()?,
            path: self.path.clone(),
        })
    }

    /// The directory `name` below this one, never following a link. A missing one is made with
    /// `create`'s mode when given (else `Ok(None)`). A link in its place is removed and replaced by a
    /// directory when `replace_links` (mirroring a tree), and refused otherwise.
    pub fn child(
        &self,
        name: &OsStr,
        create: Option<u32>,
        replace_links: bool,
    ) -> io::Result<Option<Dir>> {
        let here = self.path.join(name);
        if name.is_empty() || name == "." || name == ".." || name.as_bytes().contains(&b'/') {
            return Err(at(&here, "not a plain name"));
        }
        for _ in 0..3 {
            match open_dir_at(self.fd.as_fd(), name) {
                Ok(Some(fd)) => return Ok(Some(Dir { fd, path: here })),
                Ok(None) => match create {
                    Some(mode) => {
                        make_dir_at(self.fd.as_fd(), name, mode).map_err(|e| at(&here, e))?
                    }
                    None => return Ok(None),
                },
                Err(Errno::ELOOP | Errno::ENOTDIR) => match self.kind(name)? {
                    Some(Kind::Link) if replace_links => {
                        tracing::warn!(path = %here.display(), "replacing a symbolic link where a directory belongs");
                        self.unlink(name)?;
                    }
                    Some(Kind::Link) => {
                        return Err(at(
                            &here,
                            "a symbolic link where a directory belongs: not followed",
                        ))
                    }
                    _ => return Err(at(&here, "not a directory")),
                },
                Err(e) => return Err(at(&here, e)),
            }
        }
        Err(at(&here, "changed while it was being made"))
    }

    /// The directory at the relative path `rel` below this one (see [`Dir::child`]).
    pub fn walk(
        &self,
        rel: &Path,
        create: Option<u32>,
        replace_links: bool,
    ) -> io::Result<Option<Dir>> {
        let mut cur = self.try_clone()?;
        for c in rel.components() {
            let Component::Normal(name) = c else {
                return Err(at(&self.path.join(rel), "not a plain relative path"));
            };
            match cur.child(name, create, replace_links)? {
                Some(next) => cur = next,
                None => return Ok(None),
            }
        }
        Ok(Some(cur))
    }

    /// What `name` is, without following it; `None` when missing.
    pub fn kind(&self, name: &OsStr) -> io::Result<Option<Kind>> {
        Ok(self.stat(name)?.map(|s| Kind::of(&s)))
    }

    /// `name`'s status, without following it; `None` when missing.
    pub fn stat(&self, name: &OsStr) -> io::Result<Option<FileStat>> {
        match fstatat(&self.fd, name, AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(s) => Ok(Some(s)),
            Err(Errno::ENOENT) => Ok(None),
            Err(e) => Err(at(&self.path.join(name), e)),
        }
    }

    /// Opens the regular file `name` for reading; `None` when it is missing, a link or not a regular
    /// file (a FIFO is never waited on).
    pub fn open_regular(&self, name: &OsStr) -> io::Result<Option<(File, FileStat)>> {
        let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
        let fd = match openat(&self.fd, name, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::ENOENT | Errno::ELOOP | Errno::ENXIO) => return Ok(None),
            Err(e) => return Err(at(&self.path.join(name), e)),
        };
        let stat = fstat(&fd).map_err(|e| at(&self.path.join(name), e))?;
        if Kind::of(&stat) != Kind::File {
            return Ok(None);
        }
        Ok(Some((File::from(fd), stat)))
    }

    /// Makes the new file `name` (mode 0600), failing when anything is already there.
    pub fn create_new(&self, name: &OsStr) -> io::Result<File> {
        let flags =
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        openat(&self.fd, name, flags, Mode::from_bits_truncate(0o600))
            .map(File::from)
            .map_err(|e| at(&self.path.join(name), e))
    }

    /// Renames `from` over `to`, both in this directory. A link at `to` is replaced, not followed.
    pub fn rename(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        renameat(&self.fd, from, &self.fd, to).map_err(|e| at(&self.path.join(to), e))
    }

    /// Removes the file or link `name`.
    pub fn unlink(&self, name: &OsStr) -> io::Result<()> {
        unlinkat(&self.fd, name, UnlinkatFlags::NoRemoveDir)
            .map_err(|e| at(&self.path.join(name), e))
    }

    /// Removes `name` and, for a directory, everything below it, never following a link.
    pub fn remove_tree(&self, name: &OsStr) -> io::Result<()> {
        match self.kind(name)? {
            None => Ok(()),
            Some(Kind::Directory) => {
                let Some(sub) = self.child(name, None, false)? else {
                    return Ok(());
                };
                for (entry, kind) in sub.entries()? {
                    if kind == Kind::Directory {
                        sub.remove_tree(&entry)?;
                    } else {
                        sub.unlink(&entry)?;
                    }
                }
                unlinkat(&self.fd, name, UnlinkatFlags::RemoveDir)
                    .map_err(|e| at(&self.path.join(name), e))
            }
            Some(_) => self.unlink(name),
        }
    }

    /// The names in this directory (without `.` and `..`) and what each is, read without following.
    pub fn entries(&self) -> io::Result<Vec<(OsString, Kind)>> {
        let fresh =
            openat(&self.fd, ".", DIR_FLAGS, Mode::empty()).map_err(|e| at(&self.path, e))?;
        let mut dir = nix::dir::Dir::from_fd(fresh).map_err(|e| at(&self.path, e))?;
        let mut out = Vec::new();
        for entry in dir.iter() {
            let entry = entry.map_err(|e| at(&self.path, e))?;
            let name = OsStr::from_bytes(entry.file_name().to_bytes()).to_os_string();
            if name == "." || name == ".." {
                continue;
            }
            let kind = match entry.file_type() {
                Some(nix::dir::Type::Directory) => Kind::Directory,
                Some(nix::dir::Type::File) => Kind::File,
                Some(nix::dir::Type::Symlink) => Kind::Link,
                Some(_) => Kind::Other,
                None => match self.kind(&name)? {
                    Some(k) => k,
                    None => continue,
                },
            };
            out.push((name, kind));
        }
        Ok(out)
    }

    /// Gives the directory `mode` (on the open descriptor: a link swapped in since cannot redirect it).
    pub fn set_mode(&self, mode: u32) -> io::Result<()> {
        nix::sys::stat::fchmod(&self.fd, Mode::from_bits_truncate(mode))
            .map_err(|e| at(&self.path, e))
    }

    /// Fsyncs the directory, so renames and removals in it are durable.
    pub fn sync(&self) -> io::Result<()> {
        fsync(&self.fd).map_err(|e| at(&self.path, e))
    }
}

/// Pushes `path`'s components on `stack` so that the first is popped first.
fn push_components(stack: &mut Vec<OsString>, path: &Path) {
    let parts: Vec<OsString> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
        })
        .collect();
    stack.extend(parts.into_iter().rev());
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn links_below_a_directory_are_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let top = Dir::open(&dir.path().join("dst"), Some(0o755))
            .unwrap()
            .unwrap();
        symlink(outside.path(), dir.path().join("dst/a")).unwrap();
        let e = top.child(OsStr::new("a"), Some(0o755), false).unwrap_err();
        assert!(e.to_string().contains("not followed"), "{e}");
        let a = top
            .walk(Path::new("a/b"), Some(0o755), true)
            .unwrap()
            .unwrap();
        assert!(a.path().ends_with("dst/a/b"));
        assert!(std::fs::symlink_metadata(dir.path().join("dst/a"))
            .unwrap()
            .is_dir());
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
        // A link to a file is not opened as one.
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        symlink(outside.path().join("secret"), dir.path().join("dst/f")).unwrap();
        assert!(top.open_regular(OsStr::new("f")).unwrap().is_none());
        assert_eq!(top.kind(OsStr::new("f")).unwrap(), Some(Kind::Link));
        // Removing a tree removes links, not what they point to.
        symlink(outside.path(), dir.path().join("dst/a/b/out")).unwrap();
        top.remove_tree(OsStr::new("a")).unwrap();
        assert!(outside.path().join("secret").exists());
        assert!(!dir.path().join("dst/a").exists());
    }

    #[test]
    fn links_on_the_way_are_followed_only_when_trusted() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        symlink("real", dir.path().join("mine")).unwrap();
        let d = Dir::open(&dir.path().join("mine/sub"), Some(0o755))
            .unwrap()
            .unwrap();
        assert!(d.path().ends_with("real/sub"), "{}", d.path().display());
        assert!(dir.path().join("real/sub").is_dir());
        assert!(Dir::open(&dir.path().join("none"), None).unwrap().is_none());
        if geteuid().is_root() {
            // A link someone else owns is refused.
            symlink("real", dir.path().join("theirs")).unwrap();
            nix::unistd::fchownat(
                nix::fcntl::AT_FDCWD,
                &dir.path().join("theirs"),
                Some(nix::unistd::Uid::from_raw(65534)),
                None,
                AtFlags::AT_SYMLINK_NOFOLLOW,
            )
            .unwrap();
            let e = Dir::open(&dir.path().join("theirs/x"), Some(0o755)).unwrap_err();
            assert!(e.to_string().contains("owned by uid 65534"), "{e}");
            assert!(!dir.path().join("real/x").exists());
        }
    }
}
