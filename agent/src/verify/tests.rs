use super::*;
use crate::testutil::*;

fn keys(dir: &Path) -> Arc<Keyring> {
    Arc::new(Keyring::open(dir, controller_key().verifying_key()).unwrap())
}

fn verifier(dir: &Path) -> Verifier {
    Verifier::open(dir, keys(dir), &node_fingerprint()).unwrap()
}

fn simple(revision: u64) -> TaskList {
    list(
        revision,
        vec![shell("a", serde_json::json!({"cmd": "true"}))],
    )
}

#[test]
fn accepted_revision_is_persisted_before_returning() {
    let dir = tempfile::tempdir().unwrap();
    let mut v = verifier(dir.path());
    assert_eq!(v.last_revision(), 0);
    let l = simple(5);
    let got = v
        .accept(&envelope(&controller_key(), &l), NONCE, NOW)
        .unwrap();
    assert_eq!(got, l);
    assert_eq!(v.last_revision(), 5);
    assert_eq!(
        std::fs::read_to_string(dir.path().join(REVISION_FILE)).unwrap(),
        "5"
    );
    // A new verifier (a restarted agent) remembers it and refuses a replay.
    let mut v = verifier(dir.path());
    assert_eq!(v.last_revision(), 5);
    let err = v
        .accept(&envelope(&controller_key(), &l), NONCE, NOW)
        .unwrap_err();
    assert!(matches!(
        err,
        Refused::Invalid {
            error: VerifyError::StaleRevision { last: 5, found: 5 },
            claimed_revision: Some(5)
        }
    ));
}

#[test]
fn every_check_refuses_and_nothing_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let mut v = verifier(dir.path());
    v.accept(&envelope(&controller_key(), &simple(10)), NONCE, NOW)
        .unwrap();
    let other_key = signing::signing_key_from_seed([99; 32]);

    let mut wrong_node = simple(11);
    wrong_node.node_key = signing::fingerprint(&other_key.verifying_key());
    let mut wrong_nonce = simple(11);
    wrong_nonce.nonce = "ffffffffffffffffffffffffffffffff".into();
    let mut expired = simple(11);
    expired.expires_at = NOW - 1;
    let mut future = simple(11);
    future.issued_at = NOW + 3600;
    let mut format = simple(11);
    format.format = 99;

    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("signature", envelope(&other_key, &simple(11))),
        ("node", envelope(&controller_key(), &wrong_node)),
        ("nonce", envelope(&controller_key(), &wrong_nonce)),
        ("older revision", envelope(&controller_key(), &simple(9))),
        ("expired", envelope(&controller_key(), &expired)),
        ("future", envelope(&controller_key(), &future)),
        ("format", envelope(&controller_key(), &format)),
        ("garbage", b"<html>502</html>".to_vec()),
        ("too large", vec![b' '; MAX_TASK_LIST_BYTES + 1]),
    ];
    for (name, body) in cases {
        let err = v.accept(&body, NONCE, NOW).unwrap_err();
        let Refused::Invalid {
            error,
            claimed_revision,
        } = &err
        else {
            panic!("{name}: {err}");
        };
        let ok = match name {
            "signature" => *error == VerifyError::BadSignature,
            "node" => matches!(error, VerifyError::WrongNode { .. }),
            "nonce" => *error == VerifyError::WrongNonce,
            "older revision" => matches!(error, VerifyError::StaleRevision { last: 10, found: 9 }),
            "expired" => matches!(error, VerifyError::Expired { .. }),
            "future" => matches!(error, VerifyError::FromTheFuture { .. }),
            "format" => *error == VerifyError::UnsupportedFormat(99),
            "garbage" => matches!(error, VerifyError::Malformed(_)),
            "too large" => matches!(error, VerifyError::TooLarge(_)),
            _ => unreachable!(),
        };
        assert!(ok, "{name}: {error}");
        if !matches!(name, "garbage" | "too large") {
            assert!(claimed_revision.is_some(), "{name}");
        }
        assert_eq!(v.last_revision(), 10, "{name}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join(REVISION_FILE)).unwrap(),
            "10",
            "{name}"
        );
    }
    // The stored list is still the accepted one.
    assert_eq!(v.pending().unwrap().unwrap().revision, 10);
}

#[test]
fn a_swapped_payload_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut v = verifier(dir.path());
    let a = signing::sign_task_list(&controller_key(), &simple(1));
    let b = signing::sign_task_list(&controller_key(), &simple(2));
    let franken = signing::SignedTaskList {
        payload: b.payload,
        signature: a.signature,
    };
    let err = v
        .accept(&serde_json::to_vec(&franken).unwrap(), NONCE, NOW)
        .unwrap_err();
    assert!(matches!(
        err,
        Refused::Invalid {
            error: VerifyError::BadSignature,
            ..
        }
    ));
}

#[test]
fn pending_list_survives_restart_until_finished() {
    let dir = tempfile::tempdir().unwrap();
    let mut v = verifier(dir.path());
    assert_eq!(v.pending().unwrap(), None);
    let l = simple(3);
    v.accept(&envelope(&controller_key(), &l), NONCE, NOW)
        .unwrap();

    // Restarted long after the list expired: it is still resumed.
    let mut v = verifier(dir.path());
    assert_eq!(v.pending().unwrap(), Some(l));
    v.mark_finished(3).unwrap();
    let mut v = verifier(dir.path());
    assert_eq!(v.pending().unwrap(), None);
    assert_eq!(v.last_revision(), 3);
}

#[test]
fn a_stored_list_whose_revision_was_not_persisted_is_resumed_and_persisted() {
    let dir = tempfile::tempdir().unwrap();
    let l = simple(8);
    std::fs::write(dir.path().join(LIST_FILE), envelope(&controller_key(), &l)).unwrap();
    std::fs::write(dir.path().join(REVISION_FILE), "7").unwrap();
    let mut v = verifier(dir.path());
    assert_eq!(v.pending().unwrap().map(|l| l.revision), Some(8));
    assert_eq!(v.last_revision(), 8);
    assert_eq!(
        std::fs::read_to_string(dir.path().join(REVISION_FILE)).unwrap(),
        "8"
    );
}

#[test]
fn a_tampered_stored_list_is_refused_and_can_be_abandoned() {
    let dir = tempfile::tempdir().unwrap();
    let other = signing::signing_key_from_seed([99; 32]);
    std::fs::write(dir.path().join(LIST_FILE), envelope(&other, &simple(4))).unwrap();
    let mut v = verifier(dir.path());
    let err = v.pending().unwrap_err();
    assert!(matches!(
        err,
        Refused::Invalid {
            error: VerifyError::BadSignature,
            claimed_revision: Some(4)
        }
    ));
    v.abandon_pending().unwrap();
    assert_eq!(v.pending().unwrap(), None);
}

#[test]
fn a_corrupt_revision_file_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(REVISION_FILE), "seven").unwrap();
    let err = Verifier::open(dir.path(), keys(dir.path()), "n").unwrap_err();
    assert!(err.to_string().contains(REVISION_FILE), "{err}");
}

#[test]
fn once_the_next_key_signs_lists_signed_by_the_retired_key_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ring = keys(dir.path());
    let next = signing::signing_key_from_seed([33; 32]);
    let header = signing::sign_key_announcement(
        &controller_key(),
        &plinth_common::wire::KeyAnnouncement {
            node_key: node_fingerprint(),
            nonce: NONCE.into(),
            next_key: signing::public_key_to_text(&next.verifying_key()),
            switch_at: NOW + 3600,
            tls_pins: vec![],
        },
    );
    ring.consider(Some(&header), None, &node_fingerprint(), NONCE, NOW)
        .unwrap();
    let mut v = Verifier::open(dir.path(), ring, &node_fingerprint()).unwrap();
    // During the overlap both keys sign.
    v.accept(&envelope(&controller_key(), &simple(1)), NONCE, NOW)
        .unwrap();
    v.accept(&envelope(&next, &simple(2)), NONCE, NOW).unwrap();
    // The next key signed: the old one is retired.
    let err = v
        .accept(&envelope(&controller_key(), &simple(3)), NONCE, NOW)
        .unwrap_err();
    assert!(
        matches!(
            err,
            Refused::Invalid {
                error: VerifyError::BadSignature,
                ..
            }
        ),
        "{err}"
    );
    // A list accepted under the old key still reads back after a restart.
    assert_eq!(v.last_revision(), 2);
}
