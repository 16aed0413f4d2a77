//! Tests of the engine with real images made by the real tools (sgdisk, mkfs.ext4, mkswap, qemu-img,
//! gzip, xz, zstd), written to real loop devices, and compared with what `qemu-img convert` writes.
//! Every loop device is detached by a guard, also when a test fails.

mod refuse;
mod wipe;
mod write;

use super::*;
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

/// What stale data on a target disk looks like before an image is written over it.
const STALE: u8 = 0xa5;
/// The fixture disk's size.
const DISK: u64 = 32 << 20;

/// Runs a program, failing the test (with its output) when it fails; returns its standard output.
fn run(program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn s(path: &Path) -> &str {
    path.to_str().expect("test paths are UTF-8")
}

/// A loop device, detached when dropped.
struct Loop {
    path: PathBuf,
}

impl Loop {
    /// Attaches `file` (from `offset`, `len` bytes of it when given).
    fn attach(file: &Path, range: Option<(u64, u64)>) -> Loop {
        let mut args = vec!["-f".to_string(), "--show".to_string()];
        if let Some((offset, len)) = range {
            args.extend([
                "-o".into(),
                offset.to_string(),
                "--sizelimit".into(),
                len.to_string(),
            ]);
        }
        args.push(s(file).to_string());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let path = PathBuf::from(run("losetup", &args).trim());
        Loop { path }
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.path).status();
    }
}

/// A disk to write to: a file full of stale data, behind a loop device.
struct Target {
    file: PathBuf,
    dev: Loop,
    size: u64,
}

impl Target {
    fn new(dir: &Path, name: &str, size: u64) -> Target {
        let file = dir.join(name);
        let mut f = File::create(&file).unwrap();
        let block = vec![STALE; 1 << 20];
        let mut left = size;
        while left > 0 {
            let n = left.min(block.len() as u64) as usize;
            f.write_all(&block[..n]).unwrap();
            left -= n as u64;
        }
        f.sync_all().unwrap();
        let dev = Loop::attach(&file, None);
        Target { file, dev, size }
    }

    fn path(&self) -> &Path {
        &self.dev.path
    }

    /// The device's bytes in `[from, to)`.
    fn read(&self, from: u64, to: u64) -> Vec<u8> {
        let mut f = File::open(self.path()).unwrap();
        let mut out = vec![0u8; (to - from) as usize];
        std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(from)).unwrap();
        f.read_exact(&mut out).unwrap();
        out
    }

    /// The bytes past `from` are the stale data they were: nothing there was touched.
    fn assert_untouched_from(&self, from: u64) {
        let tail = self.read(from, self.size);
        assert!(
            tail.iter().all(|&b| b == STALE),
            "the disk past byte {from} was touched"
        );
    }

    /// Writes `image` with the engine.
    fn write(&self, image: &Path, options: &WriteOptions) -> Result<WriteReport, ImagingError> {
        write_image(File::open(image).unwrap(), self.path(), options)
    }
}

/// The SHA-256 of a file, as an expected digest.
fn digest_of(path: &Path, algorithm: HashAlgorithm) -> ExpectedDigest {
    let tool = match algorithm {
        HashAlgorithm::Sha256 => "sha256sum",
        HashAlgorithm::Sha512 => "sha512sum",
    };
    let out = run(tool, &[s(path)]);
    ExpectedDigest::new(algorithm, out.split_whitespace().next().unwrap()).unwrap()
}

/// A deterministic pseudo-random generator (xorshift), for file contents.
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// A raw disk like a real one: a GPT with an ext4 partition holding files (some that compress, some
/// that do not) and a swap partition, the rest of the disk empty.
struct Fixture {
    dir: tempfile::TempDir,
    raw: PathBuf,
    /// The partitions' (offset, length) in bytes.
    partitions: Vec<(u64, u64)>,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let files = dir.path().join("files");
        std::fs::create_dir_all(files.join("etc")).unwrap();
        std::fs::create_dir_all(files.join("usr/lib")).unwrap();
        let mut noise = Noise(0x9e37_79b9_7f4a_7c15);
        for i in 0..24 {
            let len = 64 * 1024 + (noise.next() % (256 * 1024)) as usize;
            let data: Vec<u8> = if i % 2 == 0 {
                (0..len).map(|_| noise.next() as u8).collect()
            } else {
                (0..len)
                    .map(|j| b"plinth writes images onto disks\n"[(j + i) % 32])
                    .collect()
            };
            std::fs::write(files.join(format!("usr/lib/file{i}.bin")), data).unwrap();
        }
        std::fs::write(files.join("etc/hostname"), "node\n").unwrap();
        let raw = dir.path().join("disk.raw");
        File::create(&raw).unwrap().set_len(DISK).unwrap();
        run(
            "sgdisk",
            &[
                "-n",
                "1:2048:+20M",
                "-t",
                "1:8300",
                "-n",
                "2:0:+6M",
                "-t",
                "2:8200",
                s(&raw),
            ],
        );
        let p1 = (2048 * 512, 20 << 20);
        let p2 = (p1.0 + p1.1, 6 << 20);
        run(
            "mkfs.ext4",
            &[
                "-q",
                "-F",
                "-d",
                s(&files),
                "-E",
                &format!("offset={}", p1.0),
                s(&raw),
                "20M",
            ],
        );
        let swap = dir.path().join("swap");
        File::create(&swap).unwrap().set_len(p2.1).unwrap();
        run("mkswap", &["-q", s(&swap)]);
        let swap_bytes = std::fs::read(&swap).unwrap();
        let disk = std::fs::OpenOptions::new().write(true).open(&raw).unwrap();
        std::os::unix::fs::FileExt::write_all_at(&disk, &swap_bytes, p2.0).unwrap();
        Fixture {
            dir,
            raw,
            partitions: vec![p1, p2],
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The disk converted by `qemu-img convert` with `args` (`-O qcow2 -c ...`).
    fn convert(&self, name: &str, args: &[&str]) -> PathBuf {
        let out = self.path(name);
        let mut all = vec!["convert", "-f", "raw"];
        all.extend_from_slice(args);
        all.extend([s(&self.raw), s(&out)]);
        run("qemu-img", &all);
        out
    }
}

/// `file` compressed with `tool` (`gzip`, `xz`, `zstd`) into `out`.
fn compress(tool: &str, file: &Path, out: &Path) -> PathBuf {
    let data = Command::new(tool)
        .args(["-c", s(file)])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {tool}: {e}"));
    assert!(data.status.success(), "{tool} failed");
    std::fs::write(out, data.stdout).unwrap();
    out.to_path_buf()
}

/// The first `len` bytes of `path`, in a new file.
fn truncated(path: &Path, len: u64, out: &Path) -> PathBuf {
    let mut data = std::fs::read(path).unwrap();
    data.truncate(len as usize);
    std::fs::write(out, data).unwrap();
    out.to_path_buf()
}

/// Writes `image` (of qemu format `format`) with `qemu-img convert` onto a fresh target of `size`
/// bytes and checks that `ours` holds the same first `image_size` bytes.
fn assert_same_as_qemu(dir: &Path, image: &Path, format: &str, ours: &Target, image_size: u64) {
    let theirs = Target::new(dir, "qemu-target", ours.size);
    run(
        "qemu-img",
        &[
            "convert",
            "-n",
            "-f",
            format,
            "-O",
            "raw",
            s(image),
            s(theirs.path()),
        ],
    );
    let n = image_size.to_string();
    let out = Command::new("cmp")
        .args(["-n", &n, s(ours.path()), s(theirs.path())])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}: the disk differs from what qemu-img convert writes: {}",
        image.display(),
        String::from_utf8_lossy(&out.stdout)
    );
    drop(theirs);
    let _ = std::fs::remove_file(dir.join("qemu-target"));
}

/// What `blkid -p` finds on a device (empty when nothing).
fn blkid(dev: &Path) -> String {
    let out = Command::new("blkid").args(["-p", s(dev)]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Neither `wipefs` nor `blkid -p` finds a signature on the disk or in the partitions the image had,
/// and no GPT header is left anywhere on it.
fn assert_no_signatures(target: &Target, partitions: &[(u64, u64)]) {
    let listed = run("wipefs", &["--noheadings", s(target.path())]);
    assert!(listed.trim().is_empty(), "wipefs still finds: {listed}");
    assert_eq!(
        blkid(target.path()),
        "",
        "blkid -p still finds a signature on the disk"
    );
    for &(offset, len) in partitions {
        let part = Loop::attach(&target.file, Some((offset, len)));
        let found = blkid(&part.path);
        assert_eq!(
            found, "",
            "blkid -p still finds a signature in the partition at byte {offset}"
        );
        let listed = run("wipefs", &["--noheadings", s(&part.path)]);
        assert!(
            listed.trim().is_empty(),
            "wipefs still finds in the partition at {offset}: {listed}"
        );
    }
    let all = target.read(0, target.size);
    assert!(
        !all.windows(8).any(|w| w == b"EFI PART"),
        "a GPT header is left on the disk"
    );
}
