//! Binaries of an earlier commit of this repository, for upgrade tests: "the release before", built
//! from the repository's own history into the target directory, once (later runs reuse them).

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The commit that stands for the previous release: the last one before agents said their protocol
/// at registration (its agent speaks protocol 1, the one before this controller's).
pub const PREVIOUS_RELEASE: &str = "f37a0f5fefa8b86b7a7675e21e2adb6731fb3841";

/// The repository's root (the workspace's).
fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate lives in the workspace")
        .to_path_buf()
}

/// The full hash `rev` names in the repository.
fn resolve(rev: &str) -> Result<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(repository())
        .args(["rev-parse", "--verify", &format!("{rev}^{{commit}}")])
        .output()
        .context("git runs")?;
    if !out.status.success() {
        bail!(
            "commit {rev} is not in this clone ({}): upgrade tests need the repository's history (a full clone)",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The directory holding `plinth-agent` and `plinth-controller` built from `rev`, building them
/// first when this target directory has not (a few minutes, once). Concurrent callers wait for one
/// build.
pub fn binaries(rev: &str) -> Result<PathBuf> {
    let commit = resolve(rev)?;
    let root = crate::bin_dir()
        .parent()
        .map(|target| target.join("earlier").join(&commit))
        .context("the binaries' directory has a parent")?;
    let bins = root.join("target").join("debug");
    let done = root.join("built");
    std::fs::create_dir_all(&root)?;
    let lock = std::fs::File::create(root.join("lock"))?;
    let _held = nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, e)| anyhow::anyhow!("cannot lock {}: {e}", root.display()))?;
    if done.exists() {
        return Ok(bins);
    }
    let source = root.join("source");
    if source.exists() {
        std::fs::remove_dir_all(&source)?;
    }
    std::fs::create_dir_all(&source)?;
    let status = Command::new("sh")
        .arg("-c")
        .arg("git -C \"$1\" archive --format=tar \"$2\" | tar -x -C \"$3\"")
        .args(["sh"])
        .arg(repository())
        .arg(&commit)
        .arg(&source)
        .status()
        .context("git archive runs")?;
    if !status.success() {
        bail!("cannot extract commit {commit}");
    }
    let out = Command::new(env!("CARGO"))
        .current_dir(&source)
        .args([
            "build",
            "--locked",
            "--bins",
            "-p",
            "plinth-agent",
            "-p",
            "plinth-controller",
        ])
        .env("CARGO_TARGET_DIR", root.join("target"))
        // Without debug information: half the time and a fraction of the disk.
        .env("CARGO_PROFILE_DEV_DEBUG", "0")
        .output()
        .context("cargo runs")?;
    if !out.status.success() {
        bail!(
            "building commit {commit} failed:\n{}",
            crate::tail(&String::from_utf8_lossy(&out.stderr), 40)
        );
    }
    std::fs::remove_dir_all(&source)?;
    std::fs::write(&done, b"")?;
    Ok(bins)
}
