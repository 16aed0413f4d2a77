//! The IPMI driver: `ipmitool -I lanplus`, one process per operation. The password goes through the
//! `IPMI_PASSWORD` environment variable (`-E`), never the command line, which any user of the
//! machine can read.

use crate::{
    truncate, BmcError, BootDevice, BootMode, IpmiConfig, PowerAction, PowerState, Secret,
};
use std::process::Stdio;

/// The tool, found on the `PATH`.
const IPMITOOL: &str = "ipmitool";

#[derive(Debug)]
pub(crate) struct Ipmi {
    address: String,
    port: u16,
    username: String,
    password: Secret,
    bmc: String,
}

impl Ipmi {
    pub(crate) fn new(config: IpmiConfig, bmc: &str) -> Ipmi {
        Ipmi {
            address: config.address,
            port: config.port,
            username: config.username,
            password: config.password,
            bmc: bmc.to_string(),
        }
    }

    pub(crate) async fn power_state(&self) -> Result<PowerState, BmcError> {
        let out = self.run(&["chassis", "power", "status"]).await?;
        parse_power_status(&out).ok_or_else(|| BmcError::Answer {
            bmc: self.bmc.clone(),
            reason: format!(
                "ipmitool printed no power state: {:?}",
                truncate(&self.password.redact(out.trim()), 300)
            ),
        })
    }

    pub(crate) async fn power(&self, action: PowerAction) -> Result<(), BmcError> {
        let verb = match action {
            PowerAction::On => "on",
            PowerAction::Off => "off",
            PowerAction::SoftOff => "soft",
            PowerAction::Reset => "reset",
        };
        self.run(&["chassis", "power", verb]).await.map(drop)
    }

    pub(crate) async fn set_boot_device(
        &self,
        device: BootDevice,
        once: bool,
        mode: Option<BootMode>,
    ) -> Result<(), BmcError> {
        let device = match device {
            BootDevice::Pxe => "pxe",
            BootDevice::Disk => "disk",
        };
        let mut options = Vec::new();
        if !once {
            options.push("persistent");
        }
        if mode == Some(BootMode::Uefi) {
            options.push("efiboot");
        }
        let options = format!("options={}", options.join(","));
        let mut args = vec!["chassis", "bootdev", device];
        if options != "options=" {
            args.push(&options);
        }
        self.run(&args).await.map(drop)
    }

    /// Runs ipmitool with `args` after the session's options and returns what it printed on success.
    /// The process is killed when the caller stops waiting (the operation's timeout).
    async fn run(&self, args: &[&str]) -> Result<String, BmcError> {
        let port = self.port.to_string();
        let mut command = tokio::process::Command::new(IPMITOOL);
        command
            .args(["-I", "lanplus", "-H", &self.address, "-p", &port])
            .args(["-U", &self.username, "-E"])
            // Verbose: the reason a session failed ("RAKP 2 HMAC is invalid") is printed only then.
            .arg("-v")
            .args(args)
            .env("IPMI_PASSWORD", self.password.expose())
            .env_remove("IPMITOOL_PASSWORD")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        tracing::debug!(bmc = %self.bmc, command = %args.join(" "), "ipmitool");
        let child = command.spawn().map_err(|e| BmcError::Tool {
            bmc: self.bmc.clone(),
            message: if e.kind() == std::io::ErrorKind::NotFound {
                "ipmitool is not installed (Debian's package ipmitool)".to_string()
            } else {
                format!("cannot run ipmitool: {e}")
            },
        })?;
        let output = child.wait_with_output().await.map_err(|e| BmcError::Tool {
            bmc: self.bmc.clone(),
            message: format!("cannot read ipmitool's output: {e}"),
        })?;
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        if output.status.success() {
            return Ok(stdout);
        }
        let stderr = String::from_utf8_lossy(&output.stderr);
        Err(self.failure(&stderr, &stdout, output.status))
    }

    /// What a failed ipmitool run means, from what it printed.
    fn failure(&self, stderr: &str, stdout: &str, status: std::process::ExitStatus) -> BmcError {
        let said = self
            .password
            .redact(&error_lines(&format!("{stderr}\n{stdout}")));
        let said = if said.is_empty() {
            format!("ipmitool ended with {status} and printed no error")
        } else {
            said
        };
        match classify(stderr) {
            Failure::Credentials => BmcError::Credentials {
                bmc: self.bmc.clone(),
                username: self.username.clone(),
                detail: said,
            },
            Failure::Unreachable => BmcError::Unreachable {
                bmc: self.bmc.clone(),
                reason: format!("no IPMI session could be opened: {said}"),
            },
            Failure::Other => BmcError::Tool {
                bmc: self.bmc.clone(),
                message: said,
            },
        }
    }
}

/// `Chassis Power is on` / `off`.
fn parse_power_status(out: &str) -> Option<PowerState> {
    out.lines().find_map(|line| {
        let line = line.trim().to_ascii_lowercase();
        match line.strip_prefix("chassis power is ")?.trim() {
            "on" => Some(PowerState::On),
            "off" => Some(PowerState::Off),
            _ => None,
        }
    })
}

#[derive(Debug, PartialEq, Eq)]
enum Failure {
    Credentials,
    Unreachable,
    Other,
}

/// ipmitool's messages for refused credentials, lower case: the RAKP exchange's own status codes
/// (`RAKP 2 message indicates an error : unauthorized name`), the HMAC that does not match the
/// password, and a BMC that answers the session request but goes silent once it has the user name
/// or the proof of the password (pyghmi, and so virtualbmc, does so for an unknown user).
const CREDENTIAL_SIGNS: &[&str] = &[
    "rakp 2 hmac is invalid",
    "rakp 4 hmac is invalid",
    "unauthorized name",
    "invalid username length",
    "invalid integrity check value",
    "unauthorized role or privilege level requested",
    "no response from rakp 1 message",
    "no response from rakp 3 message",
    "password",
];

/// ipmitool's messages for a BMC that cannot be reached at all.
const UNREACHABLE_SIGNS: &[&str] = &[
    "unable to establish ipmi v2 / rmcp+ session",
    "get auth capabilities error",
    "error issuing get channel authentication capabilities request",
    "address lookup for",
    "no response",
    "connection refused",
];

fn classify(stderr: &str) -> Failure {
    let lower = stderr.to_ascii_lowercase();
    if CREDENTIAL_SIGNS.iter().any(|s| lower.contains(s)) {
        Failure::Credentials
    } else if UNREACHABLE_SIGNS.iter().any(|s| lower.contains(s)) {
        Failure::Unreachable
    } else {
        Failure::Other
    }
}

/// What ipmitool printed less its verbose chatter, on one line, cut short.
fn error_lines(text: &str) -> String {
    const CHATTER: &[&str] = &[
        "loading iana pen registry",
        "using best available cipher suite",
        "running get vso capabilities",
        "invalid completion code received: invalid command",
        "discovered ipmb address",
    ];
    let lines: Vec<&str> = text
        .lines()
        .map(|l| l.trim().trim_start_matches('>').trim())
        .filter(|l| !l.is_empty())
        .filter(|l| {
            let lower = l.to_ascii_lowercase();
            !CHATTER.iter().any(|c| lower.starts_with(c))
        })
        .collect();
    let mut kept: Vec<&str> = Vec::new();
    for line in lines {
        if !kept.contains(&line) {
            kept.push(line);
        }
    }
    let start = kept.len().saturating_sub(8);
    truncate(&kept[start..].join("; "), 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_never_quote_the_password() {
        use std::os::unix::process::ExitStatusExt;
        let ipmi = Ipmi::new(
            IpmiConfig {
                address: "10.0.0.7".into(),
                port: 623,
                username: "root".into(),
                password: Secret::new("calvin"),
            },
            "10.0.0.7:623",
        );
        let e = ipmi.failure(
            "Error: bad password calvin\n",
            "",
            std::process::ExitStatus::from_raw(256),
        );
        assert!(matches!(e, BmcError::Credentials { .. }), "{e}");
        assert_eq!(
            e.to_string(),
            "the BMC at 10.0.0.7:623 refused the credentials of user \"root\": Error: bad password ***"
        );
    }

    #[test]
    fn power_status() {
        assert_eq!(
            parse_power_status("Chassis Power is on\n"),
            Some(PowerState::On)
        );
        assert_eq!(
            parse_power_status("junk\nChassis Power is off"),
            Some(PowerState::Off)
        );
        assert_eq!(parse_power_status("Chassis Power is maybe"), None);
        assert_eq!(parse_power_status(""), None);
    }

    #[test]
    fn failures() {
        // As ipmitool 1.8.19 prints them with -v against virtualbmc and against nothing.
        let wrong_password =
            "Loading IANA PEN Registry...\nUsing best available cipher suite 3\n\n\
            > RAKP 2 HMAC is invalid\nError: Unable to establish IPMI v2 / RMCP+ session\n";
        let wrong_user = "> Error: no response from RAKP 1 message\n> Error: no response from RAKP 1 message\n\
            Set Session Privilege Level to ADMINISTRATOR failed\nError: Unable to establish IPMI v2 / RMCP+ session\n";
        let nothing = "Loading IANA PEN Registry...\nGet Auth Capabilities error\n\
            Error issuing Get Channel Authentication Capabilities request\nError: Unable to establish IPMI v2 / RMCP+ session\n";
        let refused = "RAKP 2 message indicates an error : unauthorized name\n";
        assert_eq!(classify(wrong_password), Failure::Credentials);
        assert_eq!(classify(wrong_user), Failure::Credentials);
        assert_eq!(classify(refused), Failure::Credentials);
        assert_eq!(classify(nothing), Failure::Unreachable);
        assert_eq!(
            classify("Address lookup for bmc.invalid failed"),
            Failure::Unreachable
        );
        assert_eq!(classify("Error: Unable to set boot device"), Failure::Other);
        assert_eq!(
            error_lines(wrong_password),
            "RAKP 2 HMAC is invalid; Error: Unable to establish IPMI v2 / RMCP+ session"
        );
        assert_eq!(
            error_lines(wrong_user),
            "Error: no response from RAKP 1 message; Set Session Privilege Level to ADMINISTRATOR failed; \
             Error: Unable to establish IPMI v2 / RMCP+ session"
        );
    }
}
