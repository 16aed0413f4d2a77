use super::*;
use crate::store::NewEnrollment;

fn data_dir() -> (tempfile::TempDir, DataDir) {
    let dir = tempfile::tempdir().unwrap();
    let data = DataDir::new(dir.path());
    data.ensure().unwrap();
    data.load_or_create_signing_key().unwrap();
    (dir, data)
}

fn store(data: &DataDir) -> std::sync::Arc<dyn Store> {
    crate::store::open(None, &data.database()).unwrap()
}

fn enroll(store: &dyn Store, sealer: &Sealer) {
    store
        .enroll(&[NewEnrollment {
            name: "rack1-n01".into(),
            macs: vec!["52:54:00:00:00:01".into()],
            serial: None,
            uuid: None,
            tags: vec![],
            labels: Default::default(),
            rack: None,
            profile: Default::default(),
            bmc: None,
            bmc_secret: Some(sealer.seal("rack1-n01", "hunter2").unwrap()),
            now_ms: 0,
        }])
        .unwrap();
}

#[test]
fn a_rotation_announces_then_switches_retires_and_reseals() {
    let (_dir, data) = data_dir();
    let store = store(&data);
    let first = data.load_signing_key().unwrap();
    enroll(store.as_ref(), &Sealer::new(&first));

    let started = start(&data, 60, &TlsChange::Keep, 1_000).unwrap();
    assert_eq!(started.plan.switch_at, 1_060);
    let ring = KeyRing::new(load(&data).unwrap());
    let next = ring.now().next.clone().expect("announced");
    assert_eq!(
        signing::fingerprint(&next.key.verifying_key()),
        started.next
    );
    assert!(ring.now().announcement("ab", "00").is_some());
    // A second rotation waits for the first to switch.
    let err = start(&data, 60, &TlsChange::Keep, 1_001).unwrap_err();
    assert!(err.to_string().contains("already announced"), "{err}");

    assert_eq!(
        switch_if_due(&data, &ring, store.as_ref(), 1_059).unwrap(),
        None
    );
    let switched = switch_if_due(&data, &ring, store.as_ref(), 1_060).unwrap();
    assert_eq!(switched, Some(Switched { tls_renewed: false }));
    let now = ring.now();
    assert_eq!(now.signer.verifying_key(), next.key.verifying_key());
    assert!(now.next.is_none() && now.announcement("ab", "00").is_none());
    assert_eq!(
        now.retired.as_ref().map(SigningKey::verifying_key),
        Some(first.verifying_key())
    );
    // The password opens under the new key alone.
    let (_, sealed) = store.enrollment_secret("rack1-n01").unwrap();
    assert_eq!(
        Sealer::new(&next.key)
            .open("rack1-n01", &sealed.unwrap())
            .unwrap(),
        "hunter2"
    );
    // A restart reads the switched keys; the plan is gone.
    let again = load(&data).unwrap();
    assert_eq!(again.signer.verifying_key(), next.key.verifying_key());
    assert!(again.next.is_none());
    assert!(status(&data).unwrap().rotation.is_none());
}

#[test]
fn a_switch_stopped_after_the_key_moved_is_finished_at_the_next_start() {
    let (_dir, data) = data_dir();
    start(&data, 0, &TlsChange::Keep, 1_000).unwrap();
    let next = read_optional_key(&next_key_path(&data)).unwrap().unwrap();
    // The stop came after the rename and before the plan was removed.
    fs::rename(next_key_path(&data), data.signing_key()).unwrap();
    let keys = load(&data).unwrap();
    assert_eq!(keys.signer.verifying_key(), next.verifying_key());
    assert!(keys.next.is_none());
    assert!(!plan_path(&data).exists());
}

#[test]
fn a_plan_without_its_next_key_is_an_error_saying_what_to_copy() {
    let (_dir, data) = data_dir();
    start(&data, 60, &TlsChange::Keep, 1_000).unwrap();
    fs::remove_file(next_key_path(&data)).unwrap();
    let err = load(&data).unwrap_err().to_string();
    assert!(
        err.contains("signing.next.key") && err.contains("copy it"),
        "{err}"
    );
}

#[test]
fn renewing_the_tls_certificate_announces_its_pin_and_serves_it_at_the_switch() {
    let (_dir, data) = data_dir();
    crate::tls::certificate_files(&data, None, &[]).unwrap();
    let before = crate::tls::key_pin(&data.tls_cert()).unwrap();
    let started = start(
        &data,
        0,
        &TlsChange::Renew {
            names: vec!["controller.example".into()],
        },
        1_000,
    )
    .unwrap();
    let announced = started.plan.tls_pins.clone();
    assert_eq!(announced.len(), 1);
    assert_ne!(announced[0], before);
    let ring = KeyRing::new(load(&data).unwrap());
    let store = store(&data);
    let switched = switch_if_due(&data, &ring, store.as_ref(), 1_000).unwrap();
    assert_eq!(switched, Some(Switched { tls_renewed: true }));
    assert_eq!(crate::tls::key_pin(&data.tls_cert()).unwrap(), announced[0]);
}
