//! A machine booted under qemu for a test: its serial console in a file, killed on drop (on every path,
//! failures included). The test gives what makes the machine its own (accelerator, memory, firmware,
//! drives, network); this adds what every test machine has: no display, no monitor, the console in
//! `HOME/NAME.console` and qemu's own errors in `HOME/NAME.qemu.err`.

use crate::netns::Guarded;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A running machine.
pub struct Vm {
    console: PathBuf,
    _qemu: Guarded,
    /// When qemu started.
    pub started: Instant,
}

impl Vm {
    /// Starts `qemu` (the test's command, with the machine's own arguments) as the machine `name`
    /// whose files go in `home`.
    pub fn start(home: &Path, name: &str, mut qemu: Command) -> Vm {
        let console = home.join(format!("{name}.console"));
        qemu.args(["-display", "none", "-monitor", "none"])
            .arg("-serial")
            .arg(format!("file:{}", console.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(home.join(format!("{name}.qemu.err"))).unwrap());
        let child = qemu.spawn().expect("qemu starts");
        Vm {
            console,
            _qemu: Guarded::new(child, Duration::from_secs(5)),
            started: Instant::now(),
        }
    }

    /// Its serial console so far, without the terminal's colours.
    pub fn console(&self) -> String {
        let text = std::fs::read(&self.console).unwrap_or_default();
        let text = String::from_utf8_lossy(&text).replace("\u{1b}[0m", "");
        text.split('\u{1b}')
            .enumerate()
            .map(|(i, part)| {
                if i == 0 {
                    part
                } else {
                    part.split_once('m').map_or(part, |(_, rest)| rest)
                }
            })
            .collect()
    }

    /// The last `lines` lines of its console.
    pub fn tail(&self, lines: usize) -> String {
        crate::tail(&self.console(), lines)
    }
}
