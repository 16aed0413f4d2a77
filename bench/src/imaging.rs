//! `imaging`: the agent's image writer against `qemu-img convert`, writing the same image to the same
//! loop device in the same run, for a raw image and for qcow2 with zstd-compressed clusters; and the
//! peak memory of a process that streams a larger image, in a child that does only that.
//!
//! The disk is a realistic one: a GPT with one ext4 partition holding a few hundred MiB of real files
//! (copied from `--files`), the rest empty. The raw image is a dense file (every byte stored, as a
//! download brings every byte); the qcow2 one is `qemu-img convert -O qcow2 -c -o compression_type=zstd`.
//! Each writer runs once first, uncounted; before each run everything is synced and the file systems are
//! given a few seconds to settle, so each run starts alike, the target holding the image the run before
//! wrote. The image files stay in the page cache (as a download comes from the network, not a disk).
//! Each run ends with the data synced (the engine's fsync, qemu-img's flush).

use anyhow::{bail, ensure, Context, Result};
use plinth_agent::imaging::{self, ExpectedDigest, HashAlgorithm, WriteOptions};
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The arguments of `imaging`.
#[derive(clap::Args)]
pub struct ImagingArgs {
    /// A directory for the images and the target disk's file (several GiB).
    #[arg(long)]
    dir: PathBuf,
    /// Where the files put into the image's file system come from.
    #[arg(long, default_value = "/usr/lib")]
    files: PathBuf,
    /// How many MiB of files go into the image.
    #[arg(long, default_value_t = 400)]
    fill_mib: u64,
    /// The image's (virtual disk's) size in MiB.
    #[arg(long, default_value_t = 2048)]
    size_mib: u64,
    /// Runs of each writer per image (the median is reported).
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// The size in MiB of the image streamed for the peak memory measure (0 leaves it out).
    #[arg(long, default_value_t = 4096)]
    rss_size_mib: u64,
}

/// The arguments of the child that streams one image and reports its peak memory.
#[derive(clap::Args)]
pub struct ChildArgs {
    /// The image.
    #[arg(long)]
    image: PathBuf,
    /// The disk.
    #[arg(long)]
    device: PathBuf,
    /// The image's SHA-256, checked as it streams.
    #[arg(long)]
    sha256: String,
}

/// A loop device, detached when dropped.
struct Loop(PathBuf);

impl Loop {
    fn attach(file: &Path) -> Result<Loop> {
        let out = command("losetup", &["-f", "--show", path_str(file)?])?;
        Ok(Loop(PathBuf::from(out.trim())))
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.0).status();
    }
}

fn path_str(p: &Path) -> Result<&str> {
    p.to_str().context("paths must be UTF-8")
}

fn command(program: &str, args: &[&str]) -> Result<String> {
    let out = Command::new(program)
        .args(args)
        .output()
        .with_context(|| format!("cannot run {program}"))?;
    ensure!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Copies regular files from `from` into `to` until `limit` bytes are copied; returns the bytes.
fn stage(from: &Path, to: &Path, limit: u64) -> Result<u64> {
    let mut total = 0;
    let mut dirs = vec![from.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if kind.is_dir() {
                dirs.push(path);
            } else if kind.is_file() {
                let len = entry.metadata().map(|m| m.len()).unwrap_or(0);
                if total + len > limit {
                    continue;
                }
                let dest = to.join(path.strip_prefix(from)?);
                std::fs::create_dir_all(dest.parent().context("a file has a parent")?)?;
                if std::fs::copy(&path, &dest).is_ok() {
                    total += len;
                }
            }
        }
    }
    Ok(total)
}

/// A sparse raw disk of `size` bytes: a GPT, one ext4 partition with `fill` bytes of files.
fn make_disk(args: &ImagingArgs, path: &Path, size: u64) -> Result<u64> {
    let stage_dir = args.dir.join("stage");
    let staged = if stage_dir.exists() {
        command("du", &["-sb", path_str(&stage_dir)?])?
            .split_whitespace()
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    } else {
        std::fs::create_dir_all(&stage_dir)?;
        stage(&args.files, &stage_dir, args.fill_mib << 20)?
    };
    File::create(path)?.set_len(size)?;
    command(
        "sgdisk",
        &["-n", "1:2048:0", "-t", "1:8300", path_str(path)?],
    )?;
    let sectors = size / 512 - 2048 - 34;
    command(
        "mkfs.ext4",
        &[
            "-q",
            "-F",
            "-d",
            path_str(&stage_dir)?,
            "-E",
            "offset=1048576",
            path_str(path)?,
            &format!("{}k", sectors / 2),
        ],
    )?;
    Ok(staged)
}

/// Copies `from` to `to` storing every byte (no holes).
fn dense_copy(from: &Path, to: &Path) -> Result<()> {
    let mut src = File::open(from)?;
    let mut dst = File::create(to)?;
    let mut buf = vec![0u8; 4 << 20];
    loop {
        let n = src.read(&mut buf)?;
        if n == 0 {
            break;
        }
        dst.write_all(&buf[..n])?;
    }
    dst.sync_all()?;
    Ok(())
}

fn sha256_of(path: &Path) -> Result<String> {
    let mut f = File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 4 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex::encode(h.finalize()))
}

/// Syncs and lets the file systems settle (a journal commit, with the discards it sends), so every run
/// starts alike: the target holding the image the run before wrote.
fn settle() -> Result<()> {
    command("sync", &[])?;
    std::thread::sleep(Duration::from_secs(SETTLE_SECS));
    Ok(())
}

/// How long to let the file systems settle between runs (ext4 commits every 5 s).
const SETTLE_SECS: u64 = 6;

/// The CPU time this process (every thread) has used.
fn cpu() -> Duration {
    let usage = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_SELF);
    usage.map_or(Duration::ZERO, |u| {
        let t = |v: nix::sys::time::TimeVal| {
            Duration::from_secs(v.tv_sec() as u64) + Duration::from_micros(v.tv_usec() as u64)
        };
        t(u.user_time()) + t(u.system_time())
    })
}

fn engine(image: &Path, target: &Path, sha256: Option<&str>) -> Result<(Duration, Duration)> {
    settle()?;
    let options = WriteOptions {
        expected_digest: sha256
            .map(|hex| ExpectedDigest::new(HashAlgorithm::Sha256, hex))
            .transpose()?,
        ..WriteOptions::default()
    };
    let (start, cpu_start) = (Instant::now(), cpu());
    imaging::write_image(File::open(image)?, target, &options)?;
    Ok((start.elapsed(), cpu() - cpu_start))
}

/// `qemu-img convert` onto the target, with its default cache mode (`writeback`: through the page
/// cache, flushed at the end) or another (`none`: direct I/O).
fn qemu(image: &Path, format: &str, target: &Path, cache: &str) -> Result<Duration> {
    settle()?;
    let start = Instant::now();
    command(
        "qemu-img",
        &[
            "convert",
            "-n",
            "-t",
            cache,
            "-f",
            format,
            "-O",
            "raw",
            path_str(image)?,
            path_str(target)?,
        ],
    )?;
    Ok(start.elapsed())
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_default()
}

/// Runs the benchmark.
pub fn run(args: ImagingArgs) -> Result<()> {
    std::fs::create_dir_all(&args.dir)?;
    let size = args.size_mib << 20;
    let disk = args.dir.join("disk.raw");
    let staged = make_disk(&args, &disk, size)?;
    let raw = args.dir.join("image.raw");
    dense_copy(&disk, &raw)?;
    let qcow2 = args.dir.join("image.qcow2");
    command(
        "qemu-img",
        &[
            "convert",
            "-f",
            "raw",
            "-O",
            "qcow2",
            "-c",
            "-o",
            "compression_type=zstd",
            path_str(&disk)?,
            path_str(&qcow2)?,
        ],
    )?;
    let target_file = args.dir.join("target");
    File::create(&target_file)?.set_len(size + (512 << 20))?;
    let target = Loop::attach(&target_file)?;
    println!(
        "disk: {} MiB, GPT, ext4 with {} MiB of files from {}; raw image {} MiB (dense), qcow2 zstd {} MiB",
        args.size_mib,
        staged >> 20,
        args.files.display(),
        std::fs::metadata(&raw)?.len() >> 20,
        std::fs::metadata(&qcow2)?.len() >> 20,
    );
    for (name, image, format) in [("raw", &raw, "raw"), ("qcow2 zstd", &qcow2, "qcow2")] {
        let hashing = Instant::now();
        let sha = sha256_of(image)?;
        println!(
            "{name}: SHA-256 of the image file alone (read and hashed on one thread): {:.2} s",
            hashing.elapsed().as_secs_f64()
        );
        let (mut ours, mut ours_plain, mut theirs, mut direct) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut cpu_sha, mut cpu_plain) = (Vec::new(), Vec::new());
        // A first run of each, not counted: the target then holds the image before every measured run.
        qemu(image, format, &target.0, "writeback")?;
        engine(image, &target.0, Some(&sha))?;
        for _ in 0..args.rounds {
            theirs.push(qemu(image, format, &target.0, "writeback")?);
            direct.push(qemu(image, format, &target.0, "none")?);
            let (wall, cpu) = engine(image, &target.0, Some(&sha))?;
            ours.push(wall);
            cpu_sha.push(cpu);
            let (wall, cpu) = engine(image, &target.0, None)?;
            ours_plain.push(wall);
            cpu_plain.push(cpu);
        }
        let rate = |d: Duration| size as f64 / d.as_secs_f64() / f64::from(1 << 20);
        let (o, p, t) = (median(ours), median(ours_plain), median(theirs));
        println!(
            "{name}: qemu-img convert {:.2} s ({:.0} MiB/s); Plinth with SHA-256 {:.2} s ({:.0} MiB/s, ratio {:.2}); \
             Plinth without a digest {:.2} s ({:.0} MiB/s, ratio {:.2}); load {}",
            t.as_secs_f64(),
            rate(t),
            o.as_secs_f64(),
            rate(o),
            t.as_secs_f64() / o.as_secs_f64(),
            p.as_secs_f64(),
            rate(p),
            t.as_secs_f64() / p.as_secs_f64(),
            load()
        );
        let d = median(direct);
        println!(
            "{name}: qemu-img convert -t none (direct I/O) {:.2} s ({:.0} MiB/s): Plinth with SHA-256 at {:.2} of it, without a digest at {:.2}",
            d.as_secs_f64(),
            rate(d),
            d.as_secs_f64() / o.as_secs_f64(),
            d.as_secs_f64() / p.as_secs_f64()
        );
        println!(
            "{name}: Plinth's CPU time (all threads) with SHA-256 {:.2} s, without {:.2} s",
            median(cpu_sha).as_secs_f64(),
            median(cpu_plain).as_secs_f64()
        );
    }
    drop(target);
    remove(&[&disk, &raw, &qcow2, &target_file]);
    if args.rss_size_mib > 0 {
        peak_memory(&args)?;
    }
    Ok(())
}

/// Removes what a measure made (several GiB; the staged files stay for the next run).
fn remove(files: &[&Path]) {
    for f in files {
        let _ = std::fs::remove_file(f);
    }
}

/// Streams a larger image in a child process and reports the child's peak resident memory.
fn peak_memory(args: &ImagingArgs) -> Result<()> {
    let size = args.rss_size_mib << 20;
    let disk = args.dir.join("big.raw");
    make_disk(args, &disk, size)?;
    let qcow2 = args.dir.join("big.qcow2");
    command(
        "qemu-img",
        &[
            "convert",
            "-f",
            "raw",
            "-O",
            "qcow2",
            "-c",
            "-o",
            "compression_type=zstd",
            path_str(&disk)?,
            path_str(&qcow2)?,
        ],
    )?;
    let target_file = args.dir.join("big-target");
    File::create(&target_file)?.set_len(size)?;
    let target = Loop::attach(&target_file)?;
    for (name, image) in [("raw", &disk), ("qcow2 zstd", &qcow2)] {
        let sha = sha256_of(image)?;
        settle()?;
        let start = Instant::now();
        let out = Command::new(std::env::current_exe()?)
            .args([
                "imaging-child",
                "--image",
                path_str(image)?,
                "--device",
                path_str(&target.0)?,
            ])
            .args(["--sha256", &sha])
            .output()?;
        ensure!(
            out.status.success(),
            "the child failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        println!(
            "{} MiB {name} image streamed in {:.1} s: {}",
            args.rss_size_mib,
            start.elapsed().as_secs_f64(),
            text.trim()
        );
    }
    drop(target);
    remove(&[&disk, &qcow2, &target_file]);
    Ok(())
}

/// The child: streams one image, then prints its own peak resident memory from /proc.
pub fn child(args: ChildArgs) -> Result<()> {
    let options = WriteOptions {
        expected_digest: Some(ExpectedDigest::new(HashAlgorithm::Sha256, &args.sha256)?),
        ..WriteOptions::default()
    };
    imaging::write_image(File::open(&args.image)?, &args.device, &options)?;
    let status = std::fs::read_to_string("/proc/self/status")?;
    let Some(line) = status.lines().find(|l| l.starts_with("VmHWM:")) else {
        bail!("no VmHWM in /proc/self/status");
    };
    let kib: f64 = line.split_whitespace().nth(1).context("VmHWM")?.parse()?;
    println!("peak RSS {:.1} MiB (VmHWM)", kib / 1024.0);
    Ok(())
}
