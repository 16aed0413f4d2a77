use super::*;
use crate::testutil::*;
use plinth_common::wire::KeyAnnouncement;

fn next_key() -> ed25519_dalek::SigningKey {
    signing::signing_key_from_seed([33; 32])
}

fn announcement(by: &ed25519_dalek::SigningKey, switch_at: i64, tls: Vec<String>) -> String {
    signing::sign_key_announcement(
        by,
        &KeyAnnouncement {
            node_key: node_fingerprint(),
            nonce: NONCE.into(),
            next_key: signing::public_key_to_text(&next_key().verifying_key()),
            switch_at,
            tls_pins: tls,
        },
    )
}

fn open(dir: &Path) -> Keyring {
    Keyring::open(dir, controller_key().verifying_key()).unwrap()
}

fn learn(ring: &Keyring, header: &str) {
    ring.consider(Some(header), None, &node_fingerprint(), NONCE, NOW)
        .unwrap();
}

#[test]
fn an_announcement_from_the_current_key_adds_the_next_key_until_the_switch() {
    let dir = tempfile::tempdir().unwrap();
    let ring = open(dir.path());
    assert_eq!(ring.trusted(NOW).unwrap().len(), 1);
    let pin = signing::tls_key_pin(b"next spki");
    learn(
        &ring,
        &announcement(&controller_key(), NOW + 600, vec![pin]),
    );
    assert_eq!(
        ring.trusted(NOW).unwrap(),
        vec![controller_key().verifying_key(), next_key().verifying_key()]
    );
    assert_eq!(
        *ring.tls_pins().read().unwrap(),
        vec![signing::tls_key_pin_digest(b"next spki")]
    );
    // A restarted agent keeps what it learned.
    let again = open(dir.path());
    assert_eq!(again.trusted(NOW).unwrap().len(), 2);
    assert_eq!(again.tls_pins().read().unwrap().len(), 1);
}

#[test]
fn the_next_key_signing_retires_the_old_one_for_good() {
    let dir = tempfile::tempdir().unwrap();
    let ring = open(dir.path());
    learn(&ring, &announcement(&controller_key(), NOW + 600, vec![]));
    ring.signed_by(&next_key().verifying_key()).unwrap();
    assert_eq!(ring.trusted(NOW).unwrap(), vec![next_key().verifying_key()]);
    // The old key still reads back a list accepted before the switch, but signs nothing new.
    assert!(ring.known().contains(&controller_key().verifying_key()));
    // The configuration still names the old key: the learned key wins over a retired one.
    let again = open(dir.path());
    assert_eq!(
        again.trusted(NOW).unwrap(),
        vec![next_key().verifying_key()]
    );
}

#[test]
fn past_the_switch_time_only_the_next_key_is_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let ring = open(dir.path());
    learn(&ring, &announcement(&controller_key(), NOW + 10, vec![]));
    let later = NOW + 10 + MAX_CLOCK_SKEW_SECS + 1;
    assert_eq!(
        ring.trusted(later).unwrap(),
        vec![next_key().verifying_key()]
    );
}

#[test]
fn announcements_not_signed_by_a_trusted_key_or_for_another_poll_teach_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let ring = open(dir.path());
    let stranger = signing::signing_key_from_seed([99; 32]);
    learn(&ring, &announcement(&stranger, NOW + 600, vec![]));
    learn(&ring, "not base64 at all");
    ring.consider(
        Some(&announcement(&controller_key(), NOW + 600, vec![])),
        None,
        &node_fingerprint(),
        "ffffffffffffffffffffffffffffffff",
        NOW,
    )
    .unwrap();
    assert_eq!(ring.trusted(NOW).unwrap().len(), 1);
}

#[test]
fn a_new_configured_key_replaces_what_was_learned() {
    let dir = tempfile::tempdir().unwrap();
    let ring = open(dir.path());
    learn(&ring, &announcement(&controller_key(), NOW + 600, vec![]));
    let fresh = signing::signing_key_from_seed([44; 32]).verifying_key();
    let repinned = Keyring::open(dir.path(), fresh).unwrap();
    assert_eq!(repinned.trusted(NOW).unwrap(), vec![fresh]);
}

#[test]
fn a_damaged_keys_file_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(KEYS_FILE), "{").unwrap();
    let err = Keyring::open(dir.path(), controller_key().verifying_key()).unwrap_err();
    assert!(err.to_string().contains(KEYS_FILE), "{err}");
}
