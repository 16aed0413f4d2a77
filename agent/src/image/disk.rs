//! Injecting into a disk image instead of a directory: an ext2/3/4 file system image, raw or in any
//! format `qemu-img` converts (qcow2, vmdk, ...), whole or at a byte offset inside a partitioned disk.
//!
//! Nothing is mounted (no root, no loop or nbd devices needed): the files are staged in a directory by
//! [`super::inject`], written into the file system with e2fsprogs' `debugfs`, read back and compared, and
//! only then does the new image replace the old one (a rename), so a failure leaves the image as it was.

use super::node_specific::{self, Entry, Kind, Listing};
use super::{ImageError, InjectOptions, Injected};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where in the image the file system is.
#[derive(Debug, Clone)]
pub struct DiskOptions {
    /// The disk image file.
    pub image: PathBuf,
    /// The file system's byte offset in the (raw) disk: 0 for a file system image, the partition's start
    /// (sector × sector size, as `fdisk -l` shows it) for a partitioned disk.
    pub offset: u64,
}

/// Puts the agent into the file system of a disk image. `opts.root` is ignored: the files are staged in a
/// temporary directory first.
pub fn inject_disk(opts: &InjectOptions, disk: &DiskOptions) -> Result<Injected, ImageError> {
    let work = tempfile::tempdir_in(disk.image.parent().unwrap_or(Path::new(".")))
        .map_err(|e| write_error(&disk.image, e))?;
    let stage = work.path().join("root");
    std::fs::create_dir(&stage).map_err(|e| write_error(&stage, e))?;
    let written = super::write_agent(&InjectOptions {
        root: stage.clone(),
        ..opts.clone()
    })?;

    let format = image_format(&disk.image)?;
    let raw = work.path().join("disk.raw");
    run(
        Command::new("qemu-img")
            .args(["convert", "-f", &format, "-O", "raw"])
            .arg(&disk.image)
            .arg(&raw),
        &disk.image,
    )?;
    let device = if disk.offset > 0 {
        format!("{}?offset={}", raw.display(), disk.offset)
    } else {
        raw.display().to_string()
    };

    has_file_system(&device, disk)?;
    let key = Path::new(crate::config::DEFAULT_STATE_DIR).join(crate::identity::NODE_KEY_FILE);
    if exists(&device, &key)? {
        return Err(ImageError::NodeKeyPresent(
            disk.image.join(key.strip_prefix("/").unwrap_or(&key)),
        ));
    }

    let listing = DiskListing { device: &device };
    let warnings = node_specific::scan(&listing);
    let etc = listing.entries("/etc");
    let present = |name: &str, nonempty: bool| {
        etc.iter()
            .any(|e| e.name == name && (!nonempty || (e.kind == Kind::File && e.size > 0)))
    };
    let mut cleared = Vec::new();
    if present("hostname", false) {
        cleared.push(node_specific::HOSTNAME.to_string());
    }
    if present("machine-id", true) {
        cleared.push(node_specific::MACHINE_ID.to_string());
    }
    let staged = Injected {
        written,
        cleared,
        warnings,
    };

    let script = work.path().join("debugfs.cmds");
    let empty = work.path().join("empty");
    std::fs::write(&empty, b"").map_err(|e| write_error(&empty, e))?;
    let mut cmds = commands(&stage, &staged.written);
    cmds.push_str(&clearing(&staged.cleared, &empty));
    std::fs::write(&script, cmds).map_err(|e| write_error(&script, e))?;
    run(
        Command::new("debugfs")
            .arg("-w")
            .arg("-f")
            .arg(&script)
            .arg(&device),
        &disk.image,
    )?;
    verify(&device, &stage, &staged, work.path())?;

    let out = work.path().join("disk.out");
    run(
        Command::new("qemu-img")
            .args(["convert", "-f", "raw", "-O", &format])
            .arg(&raw)
            .arg(&out),
        &disk.image,
    )?;
    std::fs::rename(&out, &disk.image).map_err(|e| write_error(&disk.image, e))?;
    Ok(staged)
}

/// The debugfs commands that remove `/etc/hostname` and replace `/etc/machine-id` with an empty file
/// (mode 0444, root's), for the paths in `cleared`.
fn clearing(cleared: &[String], empty: &Path) -> String {
    let mut out = String::new();
    for path in cleared {
        out.push_str(&format!("rm {path}\n"));
        if path == node_specific::MACHINE_ID {
            out.push_str(&format!(
                "write {} {path}\nsif {path} mode 0100444\nsif {path} uid 0\nsif {path} gid 0\n",
                empty.display()
            ));
        }
    }
    out
}

/// A disk image's file system, read with `debugfs`.
struct DiskListing<'a> {
    device: &'a str,
}

impl Listing for DiskListing<'_> {
    fn entries(&self, dir: &str) -> Vec<Entry> {
        Command::new("debugfs")
            .arg("-R")
            .arg(format!("ls -p {dir}"))
            .arg(self.device)
            .output()
            .map(|out| node_specific::parse_debugfs_ls(&String::from_utf8_lossy(&out.stdout)))
            .unwrap_or_default()
    }
}

/// The debugfs commands that create every parent directory, then write each staged file with its mode
/// and root ownership, then the links.
fn commands(stage: &Path, written: &[String]) -> String {
    let mut dirs: Vec<String> = Vec::new();
    let mut out = String::new();
    for path in written {
        let mut parent = String::new();
        let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        for part in &parts[..parts.len().saturating_sub(1)] {
            parent.push('/');
            parent.push_str(part);
            if !dirs.contains(&parent) {
                dirs.push(parent.clone());
                out.push_str(&format!("mkdir {parent}\n"));
            }
        }
    }
    for path in written {
        let local = stage.join(path.trim_start_matches('/'));
        out.push_str(&format!("rm {path}\n"));
        match std::fs::read_link(&local) {
            Ok(target) => out.push_str(&format!("symlink {path} {}\n", target.display())),
            Err(_) => {
                let mode = std::fs::metadata(&local)
                    .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o7777)
                    .unwrap_or(0o644);
                out.push_str(&format!(
                    "write {} {path}\nsif {path} mode 0{:o}\nsif {path} uid 0\nsif {path} gid 0\n",
                    local.display(),
                    0o100000 | mode
                ));
            }
        }
    }
    out
}

/// Reads every written file back out of the image and compares it with the staged one.
fn verify(device: &str, stage: &Path, staged: &Injected, work: &Path) -> Result<(), ImageError> {
    let back = work.join("readback");
    for path in &staged.written {
        let local = stage.join(path.trim_start_matches('/'));
        if std::fs::read_link(&local).is_ok() {
            if !exists(device, Path::new(path))? {
                return Err(not_written(path, "the link is missing"));
            }
            continue;
        }
        let _ = std::fs::remove_file(&back);
        run(
            Command::new("debugfs")
                .arg("-R")
                .arg(format!("dump {path} {}", back.display()))
                .arg(device),
            Path::new(path),
        )?;
        let want = std::fs::read(&local).map_err(|e| write_error(&local, e))?;
        if std::fs::read(&back).ok().as_deref() != Some(want.as_slice()) {
            return Err(not_written(path, "reading it back gave other bytes"));
        }
    }
    let etc = DiskListing { device }.entries("/etc");
    for path in &staged.cleared {
        let name = path.trim_start_matches("/etc/");
        let left = etc.iter().find(|e| e.name == name);
        let ok = if path == node_specific::MACHINE_ID {
            left.is_some_and(|e| e.kind == Kind::File && e.size == 0)
        } else {
            left.is_none()
        };
        if !ok {
            return Err(not_written(path, "it was not cleared"));
        }
    }
    Ok(())
}

fn not_written(path: &str, why: &str) -> ImageError {
    ImageError::Write {
        path: PathBuf::from(path),
        source: std::io::Error::other(format!("not written into the image: {why}")),
    }
}

/// Fails unless debugfs finds an ext2/3/4 file system at the offset.
fn has_file_system(device: &str, disk: &DiskOptions) -> Result<(), ImageError> {
    let out = Command::new("debugfs")
        .arg("-R")
        .arg("stats")
        .arg(device)
        .output()
        .map_err(|e| tool_missing("debugfs", e))?;
    if String::from_utf8_lossy(&out.stdout).contains("Block count:") {
        return Ok(());
    }
    Err(ImageError::Disk {
        path: disk.image.clone(),
        message: format!(
            "debugfs finds no ext2/3/4 file system at offset {}: {}",
            disk.offset,
            String::from_utf8_lossy(&out.stderr).trim()
        ),
    })
}

/// Whether `path` exists in the file system.
fn exists(device: &str, path: &Path) -> Result<bool, ImageError> {
    let out = Command::new("debugfs")
        .arg("-R")
        .arg(format!("stat {}", path.display()))
        .arg(device)
        .output()
        .map_err(|e| tool_missing("debugfs", e))?;
    Ok(String::from_utf8_lossy(&out.stdout).contains("Inode:"))
}

/// The image's format as `qemu-img info` detects it.
fn image_format(image: &Path) -> Result<String, ImageError> {
    let out = Command::new("qemu-img")
        .args(["info", "--output=json"])
        .arg(image)
        .output()
        .map_err(|e| tool_missing("qemu-img", e))?;
    if !out.status.success() {
        return Err(ImageError::Disk {
            path: image.to_path_buf(),
            message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    serde_json::from_slice::<serde_json::Value>(&out.stdout)
        .ok()
        .and_then(|v| v["format"].as_str().map(str::to_string))
        .ok_or_else(|| ImageError::Disk {
            path: image.to_path_buf(),
            message: "qemu-img did not name the image's format".into(),
        })
}

fn run(cmd: &mut Command, subject: &Path) -> Result<(), ImageError> {
    let program = cmd.get_program().to_string_lossy().into_owned();
    let out = cmd.output().map_err(|e| tool_missing(&program, e))?;
    if out.status.success() {
        return Ok(());
    }
    Err(ImageError::Disk {
        path: subject.to_path_buf(),
        message: format!(
            "{program} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ),
    })
}

fn tool_missing(program: &str, e: std::io::Error) -> ImageError {
    ImageError::Disk {
        path: PathBuf::from(program),
        message: format!("cannot run it ({e}); disk images need qemu-img and e2fsprogs' debugfs"),
    }
}

fn write_error(path: &Path, source: std::io::Error) -> ImageError {
    ImageError::Write {
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn have_tools() -> bool {
        ["qemu-img", "debugfs", "mke2fs"].iter().all(|t| {
            Command::new(t)
                .arg("-V")
                .output()
                .map(|_| true)
                .unwrap_or(false)
        })
    }

    /// An ext4 image made from a small tree, converted to `format`.
    fn image(dir: &Path, format: &str) -> PathBuf {
        let tree = dir.join("tree");
        std::fs::create_dir_all(tree.join("etc")).unwrap();
        std::fs::write(tree.join("etc/hostname"), "image\n").unwrap();
        std::fs::write(
            tree.join("etc/machine-id"),
            "0123456789abcdef0123456789abcdef\n",
        )
        .unwrap();
        std::fs::write(tree.join("etc/motd"), "welcome\n").unwrap();
        std::fs::create_dir_all(tree.join("etc/ssh")).unwrap();
        std::fs::write(tree.join("etc/ssh/ssh_host_ed25519_key"), "key").unwrap();
        let raw = dir.join("fs.raw");
        let ok = Command::new("mke2fs")
            .args(["-q", "-F", "-t", "ext4", "-d"])
            .arg(&tree)
            .arg(&raw)
            .arg("32M")
            .status()
            .unwrap();
        assert!(ok.success());
        if format == "raw" {
            return raw;
        }
        let out = dir.join(format!("fs.{format}"));
        run(
            Command::new("qemu-img")
                .args(["convert", "-f", "raw", "-O", format])
                .arg(&raw)
                .arg(&out),
            &out,
        )
        .unwrap();
        out
    }

    fn options(dir: &Path) -> InjectOptions {
        super::super::tests::options(&dir.join("unused-root"))
    }

    fn cat(image: &Path, format: &str, path: &str) -> (String, String) {
        let dir = tempfile::tempdir().unwrap();
        let raw = dir.path().join("x.raw");
        run(
            Command::new("qemu-img")
                .args(["convert", "-f", format, "-O", "raw"])
                .arg(image)
                .arg(&raw),
            image,
        )
        .unwrap();
        let out = Command::new("debugfs")
            .arg("-R")
            .arg(format!("cat {path}"))
            .arg(&raw)
            .output()
            .unwrap();
        let stat = Command::new("debugfs")
            .arg("-R")
            .arg(format!("stat {path}"))
            .arg(&raw)
            .output()
            .unwrap();
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&stat.stdout).into_owned(),
        )
    }

    #[test]
    fn injects_into_raw_and_qcow2_file_system_images() {
        if !have_tools() {
            panic!("qemu-img, debugfs and mke2fs are needed (scripts/test.sh installs them)");
        }
        for format in ["raw", "qcow2"] {
            let dir = tempfile::tempdir().unwrap();
            let img = image(dir.path(), format);
            let opts = options(dir.path());
            let done = inject_disk(
                &opts,
                &DiskOptions {
                    image: img.clone(),
                    offset: 0,
                },
            )
            .unwrap();
            assert!(done.written.contains(&"/usr/bin/plinth-agent".to_string()));
            let (config, stat) = cat(&img, format, "/etc/plinth/agent.toml");
            assert!(
                config.contains("https://10.20.0.2:7443"),
                "{format}: {config}"
            );
            assert!(stat.contains("Mode:  0600"), "{format}: {stat}");
            let (binary, stat) = cat(&img, format, "/usr/bin/plinth-agent");
            assert_eq!(binary, "\u{7f}ELF binary");
            assert!(
                stat.contains("Mode:  0755") && stat.contains("User:     0"),
                "{stat}"
            );
            let (_, link) = cat(
                &img,
                format,
                "/etc/systemd/system/multi-user.target.wants/plinth-agent.service",
            );
            assert!(
                link.contains("Fast link dest: \"/lib/systemd/system/plinth-agent.service\""),
                "{link}"
            );
            let (motd, _) = cat(&img, format, "/etc/motd");
            assert_eq!(motd, "welcome\n", "what was there stays");
            // Nothing of the building machine's identity stays; what cannot be cleared is reported.
            let (_, hostname) = cat(&img, format, "/etc/hostname");
            assert!(!hostname.contains("Inode:"), "{format}: {hostname}");
            let (id, stat) = cat(&img, format, "/etc/machine-id");
            assert_eq!(id, "", "{format}");
            assert!(stat.contains("Mode:  0444"), "{format}: {stat}");
            assert_eq!(done.cleared, vec!["/etc/hostname", "/etc/machine-id"]);
            assert_eq!(done.warnings.len(), 1, "{:?}", done.warnings);
            assert!(done.warnings[0].starts_with("/etc/ssh/ssh_host_ed25519_key: an SSH host key"));
        }
    }

    #[test]
    fn injects_at_an_offset_inside_a_partitioned_disk() {
        if !have_tools() {
            panic!("qemu-img, debugfs and mke2fs are needed (scripts/test.sh installs them)");
        }
        let dir = tempfile::tempdir().unwrap();
        let fs = std::fs::read(image(dir.path(), "raw")).unwrap();
        // A disk whose first MiB is the partition table's and boot loader's, the file system after it.
        let offset = 1 << 20;
        let mut disk = vec![0xAAu8; offset];
        disk.extend_from_slice(&fs);
        let img = dir.path().join("disk.raw");
        std::fs::write(&img, &disk).unwrap();
        inject_disk(
            &options(dir.path()),
            &DiskOptions {
                image: img.clone(),
                offset: offset as u64,
            },
        )
        .unwrap();
        let after = std::fs::read(&img).unwrap();
        assert!(
            after[..offset].iter().all(|b| *b == 0xAA),
            "the bytes before the file system stay"
        );
        let out = Command::new("debugfs")
            .arg("-R")
            .arg("cat /etc/plinth/agent.toml")
            .arg(format!("{}?offset={offset}", img.display()))
            .output()
            .unwrap();
        assert!(String::from_utf8_lossy(&out.stdout).contains("controller_public_key"));
    }

    #[test]
    fn an_image_with_a_node_key_or_no_file_system_is_left_as_it_was() {
        if !have_tools() {
            panic!("qemu-img, debugfs and mke2fs are needed (scripts/test.sh installs them)");
        }
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("tree/var/lib/plinth-agent");
        std::fs::create_dir_all(&tree).unwrap();
        std::fs::write(tree.join(crate::identity::NODE_KEY_FILE), "secret").unwrap();
        let img = dir.path().join("keyed.raw");
        assert!(Command::new("mke2fs")
            .args(["-q", "-F", "-t", "ext4", "-d"])
            .arg(dir.path().join("tree"))
            .arg(&img)
            .arg("32M")
            .status()
            .unwrap()
            .success());
        let before = std::fs::read(&img).unwrap();
        let err = inject_disk(
            &options(dir.path()),
            &DiskOptions {
                image: img.clone(),
                offset: 0,
            },
        )
        .unwrap_err();
        assert!(matches!(err, ImageError::NodeKeyPresent(_)), "{err}");
        assert!(
            std::fs::read(&img).unwrap() == before,
            "the image is unchanged"
        );

        let junk = dir.path().join("junk.raw");
        std::fs::write(&junk, vec![0u8; 1 << 20]).unwrap();
        let err = inject_disk(
            &options(dir.path()),
            &DiskOptions {
                image: junk.clone(),
                offset: 0,
            },
        )
        .unwrap_err();
        assert!(err.to_string().contains("debugfs"), "{err}");
        assert_eq!(std::fs::read(&junk).unwrap(), vec![0u8; 1 << 20]);
    }
}
