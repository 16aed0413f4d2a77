//! The Redfish driver against sushy-tools' emulator, and against listeners that misbehave.

use crate::support::{assert_no_password, assert_timed_out, free_tcp_port, Sushy, TlsFiles, USER};
use plinth_bmc::{
    Bmc, BmcConfig, BmcError, BootDevice, BootMode, PowerAction, PowerState, RedfishConfig, Secret,
    Url,
};
use serde_json::Value;
use std::time::{Duration, Instant};

const PASSWORD: &str = "Redfish-pa55-word";

fn config(url: &str, system_id: Option<String>, password: &str) -> RedfishConfig {
    RedfishConfig {
        address: Url::parse(url).unwrap(),
        system_id,
        verify_tls: true,
        ca_cert: None,
        username: USER.to_string(),
        password: Secret::new(password),
    }
}

fn bmc(config: RedfishConfig) -> Bmc {
    // Generous: the emulator is Python on a busy machine.
    Bmc::new(BmcConfig::Redfish(config))
        .unwrap()
        .with_timeout(Duration::from_secs(30))
}

/// Waits until the emulator's fake driver has applied a change (it does so 1 to 11 seconds after it
/// was asked).
async fn wait_for_state(bmc: &Bmc, want: PowerState) {
    let start = Instant::now();
    loop {
        let now = bmc.power_state().await.unwrap();
        if now == want {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(90),
            "still {now:?} after 90 s, waiting for {want:?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The system's `Boot`, read straight from the emulator.
async fn boot_of(sushy: &Sushy, system: usize) -> Value {
    let doc: Value = reqwest::Client::new()
        .get(format!("{}{}", sushy.url, sushy.system_path(system)))
        .basic_auth(USER, Some(PASSWORD))
        .send()
        .await
        .unwrap()
        .error_for_status()
        .unwrap()
        .json()
        .await
        .unwrap();
    doc["Boot"].clone()
}

#[tokio::test]
async fn power_and_boot_device_through_sushy() {
    let sushy = Sushy::start(1, PASSWORD, None);
    // No system_id: the emulator's only system is found.
    let bmc = bmc(config(&sushy.url, None, PASSWORD));
    assert_eq!(bmc.power_state().await.unwrap(), PowerState::Off);

    bmc.set_boot_device(BootDevice::Pxe, true, Some(BootMode::Uefi))
        .await
        .unwrap();
    let boot = boot_of(&sushy, 0).await;
    assert_eq!(boot["BootSourceOverrideTarget"], "Pxe", "{boot}");
    assert_eq!(boot["BootSourceOverrideMode"], "UEFI", "{boot}");

    bmc.power(PowerAction::On).await.unwrap();
    wait_for_state(&bmc, PowerState::On).await;
    // Already on: nothing is sent, nothing fails.
    bmc.power(PowerAction::On).await.unwrap();

    bmc.power(PowerAction::Reset).await.unwrap();
    wait_for_state(&bmc, PowerState::On).await;

    bmc.set_boot_device(BootDevice::Disk, false, Some(BootMode::Legacy))
        .await
        .unwrap();
    let boot = boot_of(&sushy, 0).await;
    assert_eq!(boot["BootSourceOverrideTarget"], "Hdd", "{boot}");
    assert_eq!(boot["BootSourceOverrideMode"], "Legacy", "{boot}");

    bmc.power(PowerAction::SoftOff).await.unwrap();
    wait_for_state(&bmc, PowerState::Off).await;
    bmc.power(PowerAction::On).await.unwrap();
    wait_for_state(&bmc, PowerState::On).await;
    bmc.power(PowerAction::Off).await.unwrap();
    wait_for_state(&bmc, PowerState::Off).await;
}

#[tokio::test]
async fn system_chosen_among_several() {
    let sushy = Sushy::start(2, PASSWORD, None);
    let e = bmc(config(&sushy.url, None, PASSWORD))
        .power_state()
        .await
        .unwrap_err();
    let BmcError::Systems { reason, .. } = &e else {
        panic!("not a Systems error: {e}");
    };
    assert!(reason.contains("lists 2 systems"), "{e}");
    assert!(reason.contains(&sushy.systems[1]), "{e}");

    // Named, system 1 is driven and system 0 is left alone.
    let second = bmc(config(&sushy.url, Some(sushy.system_path(1)), PASSWORD));
    second.power(PowerAction::On).await.unwrap();
    wait_for_state(&second, PowerState::On).await;
    let first = bmc(config(&sushy.url, Some(sushy.system_path(0)), PASSWORD));
    assert_eq!(first.power_state().await.unwrap(), PowerState::Off);

    // A system the BMC does not have is its 404, with its message.
    let e = bmc(config(
        &sushy.url,
        Some("/redfish/v1/Systems/nope".into()),
        PASSWORD,
    ))
    .power_state()
    .await
    .unwrap_err();
    assert!(matches!(e, BmcError::Http { status: 404, .. }), "{e}");
}

#[tokio::test]
async fn wrong_password_is_credentials() {
    let sushy = Sushy::start(1, PASSWORD, None);
    let wrong = "Not-the-Redfish-pa55word";
    let bmc = bmc(config(&sushy.url, None, wrong));
    for e in [
        bmc.power_state().await.unwrap_err(),
        bmc.power(PowerAction::On).await.unwrap_err(),
        bmc.set_boot_device(BootDevice::Pxe, true, None)
            .await
            .unwrap_err(),
    ] {
        assert!(matches!(e, BmcError::Credentials { .. }), "{e}");
        assert!(e.to_string().contains(USER), "{e}");
        assert_no_password(&e, wrong);
    }
}

#[tokio::test]
async fn https_with_and_without_verification() {
    let dir = tempfile::tempdir().unwrap();
    let tls = TlsFiles::make(dir.path());
    let sushy = Sushy::start(1, PASSWORD, Some(&tls));
    assert!(sushy.url.starts_with("https://"));

    // The system's roots do not know the emulator's certificate.
    let e = bmc(config(&sushy.url, None, PASSWORD))
        .power_state()
        .await
        .unwrap_err();
    assert!(matches!(e, BmcError::Unreachable { .. }), "{e}");
    assert!(e.to_string().contains("certificate"), "{e}");

    // Trusted as the CA, or not checked.
    let mut trusted = config(&sushy.url, None, PASSWORD);
    trusted.ca_cert = Some(tls.cert.clone());
    assert_eq!(bmc(trusted).power_state().await.unwrap(), PowerState::Off);
    let mut unchecked = config(&sushy.url, None, PASSWORD);
    unchecked.verify_tls = false;
    assert_eq!(bmc(unchecked).power_state().await.unwrap(), PowerState::Off);
}

#[tokio::test]
async fn silent_bmc_times_out() {
    // Accepts connections and never answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let held = tokio::spawn(async move {
        let mut streams = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            streams.push(stream);
        }
    });
    let password = "Silent-pa55word";
    let timeout = Duration::from_secs(2);
    let bmc = Bmc::new(BmcConfig::Redfish(config(
        &format!("http://127.0.0.1:{port}"),
        None,
        password,
    )))
    .unwrap()
    .with_timeout(timeout);
    let start = Instant::now();
    let e = bmc.power(PowerAction::Off).await.unwrap_err();
    let took = start.elapsed();
    assert_timed_out(&e, timeout, took);
    assert!(e.to_string().contains("did not answer within 2s"), "{e}");
    assert_no_password(&e, password);
    held.abort();
}

#[tokio::test]
async fn refused_connection_is_unreachable() {
    let port = free_tcp_port();
    let password = "Refused-pa55word";
    let bmc = Bmc::new(BmcConfig::Redfish(config(
        &format!("http://127.0.0.1:{port}"),
        None,
        password,
    )))
    .unwrap()
    .with_timeout(Duration::from_secs(5));
    let e = bmc.power_state().await.unwrap_err();
    assert!(matches!(e, BmcError::Unreachable { .. }), "{e}");
    assert_no_password(&e, password);
}

#[tokio::test]
async fn hostile_answers_are_errors() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    // Each connection gets the next canned answer.
    let huge = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n[{}",
        "1,".repeat(1 << 20)
    );
    let reply = |status: &str, headers: &str, body: &str| {
        format!(
            "HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
    };
    let answers: Vec<String> = vec![
        reply("200 OK", "", "not json!"),
        huge,
        reply("200 OK", "", r#"{"Members": 7}"#),
        reply(
            "200 OK",
            "",
            r#"{"Members": [{"@odata.id": "http://evil.example/x"}]}"#,
        ),
        reply("500 Oops", "", "\u{0}\u{1}binary\u{ff}"),
        reply("302 Found", "Location: https://elsewhere/\r\n", ""),
    ];
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = answers.len();
    let server = tokio::spawn(async move {
        for answer in answers {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut request = vec![0u8; 4096];
            let _ = stream.read(&mut request).await;
            let _ = stream.write_all(answer.as_bytes()).await;
            let _ = stream.shutdown().await;
        }
    });
    let mut errors = Vec::new();
    for _ in 0..count {
        // A fresh client each time: one connection per canned answer.
        let bmc = Bmc::new(BmcConfig::Redfish(config(
            &format!("http://127.0.0.1:{port}"),
            None,
            PASSWORD,
        )))
        .unwrap()
        .with_timeout(Duration::from_secs(20));
        errors.push(bmc.power_state().await.unwrap_err());
    }
    server.await.unwrap();
    let texts: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert!(matches!(errors[0], BmcError::Answer { .. }), "{}", texts[0]);
    assert!(texts[0].contains("not JSON"), "{}", texts[0]);
    assert!(texts[1].contains("larger than 1024 KiB"), "{}", texts[1]);
    assert!(texts[2].contains("no Members list"), "{}", texts[2]);
    assert!(
        texts[3].contains("points away from the BMC"),
        "{}",
        texts[3]
    );
    assert!(
        matches!(errors[4], BmcError::Http { status: 500, .. }),
        "{}",
        texts[4]
    );
    assert!(
        matches!(errors[5], BmcError::Http { status: 302, .. }),
        "{}",
        texts[5]
    );
    assert!(texts[5].contains("https://elsewhere/"), "{}", texts[5]);
}
