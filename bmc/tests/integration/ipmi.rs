//! The IPMI driver through ipmitool, against virtualbmc driving a qemu domain, and against a UDP port
//! nothing answers.

use crate::support::{assert_no_password, assert_timed_out, program, VirtualBmc, USER};
use plinth_bmc::{
    Bmc, BmcConfig, BmcError, BootDevice, BootMode, IpmiConfig, PowerAction, PowerState, Secret,
};
use std::time::{Duration, Instant};

const PASSWORD: &str = "Ipmi-pa55-word";

fn bmc(port: u16, password: &str, timeout: Duration) -> Bmc {
    Bmc::new(BmcConfig::Ipmi(IpmiConfig {
        address: "127.0.0.1".to_string(),
        port,
        username: USER.to_string(),
        password: Secret::new(password),
    }))
    .unwrap()
    .with_timeout(timeout)
}

#[tokio::test]
async fn power_and_boot_device_through_virtualbmc() {
    let vbmc = VirtualBmc::start(PASSWORD);
    let bmc = bmc(vbmc.port, PASSWORD, Duration::from_secs(30));

    // The BMC takes a moment to listen after `vbmc start`.
    let start = Instant::now();
    let first = loop {
        match bmc.power_state().await {
            Ok(state) => break state,
            Err(e) if start.elapsed() < Duration::from_secs(60) => {
                eprintln!("virtualbmc not answering yet: {e}");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(e) => panic!("virtualbmc never answered: {e}"),
        }
    };
    assert_eq!(first, PowerState::Off);
    assert_eq!(vbmc.domain_state(), "shut off");

    bmc.set_boot_device(BootDevice::Pxe, true, Some(BootMode::Uefi))
        .await
        .unwrap();
    bmc.set_boot_device(BootDevice::Disk, false, None)
        .await
        .unwrap();

    bmc.power(PowerAction::On).await.unwrap();
    assert_eq!(bmc.power_state().await.unwrap(), PowerState::On);
    assert_eq!(vbmc.domain_state(), "running");

    bmc.power(PowerAction::Reset).await.unwrap();
    assert_eq!(bmc.power_state().await.unwrap(), PowerState::On);
    // Asked to shut down, the firmware does nothing; the request itself is accepted.
    bmc.power(PowerAction::SoftOff).await.unwrap();

    bmc.power(PowerAction::Off).await.unwrap();
    assert_eq!(bmc.power_state().await.unwrap(), PowerState::Off);
    assert_eq!(vbmc.domain_state(), "shut off");

    let wrong = "Wrong-ipmi-pa55";
    let e = self::bmc(vbmc.port, wrong, Duration::from_secs(30))
        .power_state()
        .await
        .unwrap_err();
    assert!(matches!(e, BmcError::Credentials { .. }), "{e}");
    assert!(e.to_string().contains("RAKP 2 HMAC is invalid"), "{e}");
    assert_no_password(&e, wrong);
}

#[tokio::test]
async fn silent_bmc_times_out() {
    program("ipmitool", "ipmitool");
    // Bound and kept, never read: the datagrams go nowhere.
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let password = "Silent-ipmi-pa55word";
    let timeout = Duration::from_secs(2);
    let start = Instant::now();
    let e = bmc(port, password, timeout)
        .power(PowerAction::On)
        .await
        .unwrap_err();
    let took = start.elapsed();
    assert_timed_out(&e, timeout, took);
    assert_no_password(&e, password);
    drop(silent);
}
