//! Running the system's tools (`partx`, `e2fsck`, `resize2fs`, `mount`, `efibootmgr`, `blkid`) with
//! their failures as [`InstalledError::Tool`], naming the device and what the tool said.

use super::InstalledError;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// Runs `cmd` on `device`; succeeds when its exit status is one of `ok` and gives its output.
pub(crate) fn run(device: &Path, cmd: &mut Command, ok: &[i32]) -> Result<Output, InstalledError> {
    let tool = cmd.get_program().to_string_lossy().into_owned();
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| InstalledError::Tool {
            device: device.to_path_buf(),
            tool: tool.clone(),
            message: format!("cannot run it: {e}"),
        })?;
    match out.status.code() {
        Some(code) if ok.contains(&code) => Ok(out),
        code => Err(InstalledError::Tool {
            device: device.to_path_buf(),
            tool,
            message: format!(
                "{}: {}",
                code.map_or_else(
                    || "killed by a signal".to_string(),
                    |c| format!("exit status {c}")
                ),
                said(&out)
            ),
        }),
    }
}

/// What a tool said (its standard error, else its standard output), on one line, at most 2,000 bytes.
pub(crate) fn said(out: &Output) -> String {
    let text = if out.stderr.iter().any(|b| !b.is_ascii_whitespace()) {
        &out.stderr
    } else {
        &out.stdout
    };
    let text = String::from_utf8_lossy(text);
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(2000) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}
