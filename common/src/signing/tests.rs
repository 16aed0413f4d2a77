use super::*;
use crate::wire::{TaskKind, TaskSpec};

fn key(n: u8) -> SigningKey {
    signing_key_from_seed([n; 32])
}

fn list(node_key: &str, revision: u64, nonce: &str) -> TaskList {
    TaskList {
        format: TASK_LIST_FORMAT,
        node_key: node_key.to_string(),
        node_id: 1,
        deployment_id: 7,
        phase: "deploy".into(),
        revision,
        issued_at: 1_000,
        expires_at: 2_000,
        nonce: nonce.into(),
        noop: false,
        cancel: false,
        tasks: vec![TaskSpec {
            id: "hello".into(),
            kind: TaskKind::Shell,
            parameters: serde_json::json!({"cmd": "echo hi"})
                .as_object()
                .cloned()
                .unwrap(),
            skip_reason: None,
            waits_for: vec![],
            gated: false,
            manifests: Default::default(),
        }]
        .into(),
    }
}

fn expect<'a>(node: &'a str, nonce: &'a str) -> Expectations<'a> {
    Expectations {
        node_key: node,
        last_revision: 3,
        nonce: Some(nonce),
        now: Some(1_500),
    }
}

fn envelope(key: &SigningKey, l: &TaskList) -> Vec<u8> {
    serde_json::to_vec(&sign_task_list(key, l)).unwrap()
}

const NONCE: &str = "00112233445566778899aabbccddeeff";

#[test]
fn a_good_list_verifies() {
    let controller = key(1);
    let node = fingerprint(&key(2).verifying_key());
    let l = list(&node, 4, NONCE);
    let got = verify_task_list(
        &controller.verifying_key(),
        &envelope(&controller, &l),
        &expect(&node, NONCE),
    );
    assert_eq!(got, Ok(l));
}

#[test]
fn another_key_is_refused() {
    let node = fingerprint(&key(2).verifying_key());
    let l = list(&node, 4, NONCE);
    let got = verify_task_list(
        &key(1).verifying_key(),
        &envelope(&key(9), &l),
        &expect(&node, NONCE),
    );
    assert_eq!(got, Err(VerifyError::BadSignature));
}

#[test]
fn every_check_refuses() {
    let c = key(1);
    let pk = c.verifying_key();
    let node = fingerprint(&key(2).verifying_key());
    let other = fingerprint(&key(3).verifying_key());
    let e = expect(&node, NONCE);
    assert!(matches!(
        verify_task_list(&pk, &envelope(&c, &list(&other, 4, NONCE)), &e),
        Err(VerifyError::WrongNode { .. })
    ));
    assert_eq!(
        verify_task_list(&pk, &envelope(&c, &list(&node, 3, NONCE)), &e),
        Err(VerifyError::StaleRevision { last: 3, found: 3 })
    );
    assert_eq!(
        verify_task_list(&pk, &envelope(&c, &list(&node, 4, "ffffffffffffffff")), &e),
        Err(VerifyError::WrongNonce)
    );
    let mut expired = list(&node, 4, NONCE);
    expired.expires_at = 1_500;
    assert!(matches!(
        verify_task_list(&pk, &envelope(&c, &expired), &e),
        Err(VerifyError::Expired { .. })
    ));
    let mut future = list(&node, 4, NONCE);
    future.issued_at = 1_500 + MAX_CLOCK_SKEW_SECS + 1;
    future.expires_at = future.issued_at + 10;
    assert!(matches!(
        verify_task_list(&pk, &envelope(&c, &future), &e),
        Err(VerifyError::FromTheFuture { .. })
    ));
}

#[test]
fn a_tampered_byte_is_refused_wherever_it_is() {
    let c = key(1);
    let node = fingerprint(&key(2).verifying_key());
    let signed = sign_task_list(&c, &list(&node, 4, NONCE));
    let payload = B64.decode(&signed.payload).unwrap();
    for i in 0..payload.len() {
        let mut p = payload.clone();
        p[i] ^= 0x01;
        let env = SignedTaskList {
            payload: B64.encode(&p),
            signature: signed.signature.clone(),
        };
        let got = verify_task_list(
            &c.verifying_key(),
            &serde_json::to_vec(&env).unwrap(),
            &expect(&node, NONCE),
        );
        assert_eq!(got, Err(VerifyError::BadSignature), "byte {i}");
    }
}

#[test]
fn parts_of_two_lists_cannot_be_combined() {
    let c = key(1);
    let node = fingerprint(&key(2).verifying_key());
    let a = sign_task_list(&c, &list(&node, 4, NONCE));
    let mut other = list(&node, 5, NONCE);
    other.tasks[0]
        .parameters
        .insert("cmd".into(), "rm -rf /".into());
    let b = sign_task_list(&c, &other);
    let mixed = SignedTaskList {
        payload: b.payload,
        signature: a.signature,
    };
    let got = verify_task_list(
        &c.verifying_key(),
        &serde_json::to_vec(&mixed).unwrap(),
        &expect(&node, NONCE),
    );
    assert_eq!(got, Err(VerifyError::BadSignature));
}

#[test]
fn oversize_and_garbage_are_refused_without_panic() {
    let pk = key(1).verifying_key();
    let e = expect("x", NONCE);
    let big = vec![b' '; MAX_TASK_LIST_BYTES + 1];
    assert!(matches!(
        verify_task_list(&pk, &big, &e),
        Err(VerifyError::TooLarge(_))
    ));
    for junk in [
        &b""[..],
        b"{}",
        b"[]",
        b"{\"payload\":\"@@\",\"signature\":\"\"}",
        b"\xff\xfe",
    ] {
        assert!(verify_task_list(&pk, junk, &e).is_err());
    }
}

#[test]
fn keys_round_trip_through_text() {
    let k = key(5);
    let pem = signing_key_to_pem(&k).unwrap();
    assert_eq!(signing_key_from_pem(&pem).unwrap().to_bytes(), k.to_bytes());
    let text = public_key_to_text(&k.verifying_key());
    assert_eq!(public_key_from_text(&text).unwrap(), k.verifying_key());
    assert_eq!(
        public_key_from_text(&hex::encode(k.verifying_key().as_bytes())).unwrap(),
        k.verifying_key()
    );
    assert!(public_key_from_text("not a key").is_err());
    assert!(signing_key_from_pem("-----BEGIN NOTHING-----").is_err());
}

fn gate_answer(node: &str, nonce: &str) -> GateAnswer {
    GateAnswer {
        node_key: node.into(),
        deployment: 7,
        task: "db".into(),
        nonce: nonce.into(),
        ready: true,
        waiting_for: vec![],
        blocked: false,
    }
}

#[test]
fn gate_answers_are_bound_to_key_node_deployment_task_and_nonce() {
    let controller = key(1);
    let node = fingerprint(&key(2).verifying_key());
    let request = GateRequest {
        node_key: &node,
        deployment: 7,
        task: "db",
        nonce: NONCE,
    };
    let good = gate_answer(&node, NONCE);
    let bytes =
        |k: &SigningKey, a: &GateAnswer| serde_json::to_vec(&sign_gate_answer(k, a)).unwrap();
    assert_eq!(
        verify_gate_answer(
            &controller.verifying_key(),
            &bytes(&controller, &good),
            &request
        ),
        Ok(good.clone())
    );
    assert_eq!(
        verify_gate_answer(
            &controller.verifying_key(),
            &bytes(&key(9), &good),
            &request
        ),
        Err(GateVerifyError::BadSignature)
    );
    // A task list signature never passes as a gate answer's, and the other way round.
    let as_list = serde_json::to_vec(&sign_payload(
        &controller,
        &serde_json::to_vec(&good).unwrap(),
    ))
    .unwrap();
    assert_eq!(
        verify_gate_answer(&controller.verifying_key(), &as_list, &request),
        Err(GateVerifyError::BadSignature)
    );
    for (field, a) in [
        (
            "node",
            GateAnswer {
                node_key: "other".into(),
                ..good.clone()
            },
        ),
        (
            "deployment",
            GateAnswer {
                deployment: 8,
                ..good.clone()
            },
        ),
        (
            "task",
            GateAnswer {
                task: "web".into(),
                ..good.clone()
            },
        ),
        (
            "nonce",
            GateAnswer {
                nonce: "0".repeat(32),
                ..good.clone()
            },
        ),
    ] {
        match verify_gate_answer(
            &controller.verifying_key(),
            &bytes(&controller, &a),
            &request,
        ) {
            Err(GateVerifyError::Mismatch { field: f, .. }) => assert_eq!(f, field),
            other => panic!("{field}: {other:?}"),
        }
    }
}

#[test]
fn manifest_digests_change_with_any_byte_mode_or_name() {
    use crate::wire::{FileManifest, ManifestFile, ManifestKind};
    let m = FileManifest {
        kind: ManifestKind::Directory,
        path: "mods".into(),
        files: vec![ManifestFile {
            path: "a.pp".into(),
            size: 1,
            sha256: "ab".repeat(32),
            mode: 0o644,
        }],
    };
    let d = manifest_digest(&m);
    assert_eq!(d.len(), 64);
    // The requested path is named by the list, not by the digest.
    assert_eq!(
        manifest_digest(&FileManifest {
            path: "x".into(),
            ..m.clone()
        }),
        d
    );
    let mut setuid = m.clone();
    setuid.files[0].mode = 0o4755;
    let mut renamed = m.clone();
    renamed.files[0].path = "b.pp".into();
    let mut other = m.clone();
    other.files[0].sha256 = "cd".repeat(32);
    let file = FileManifest {
        kind: ManifestKind::File,
        ..m.clone()
    };
    for changed in [setuid, renamed, other, file] {
        assert_ne!(manifest_digest(&changed), d, "{changed:?}");
    }
}

#[test]
fn a_tls_key_pin_is_the_sha256_of_the_spki_and_reads_back() {
    // SHA-256 of the empty input, a known value.
    let empty = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    assert_eq!(tls_key_pin(b""), empty);
    let spki = b"\x30\x2a\x30\x05\x06\x03\x2b\x65\x70\x03\x21\x00 thirty-two bytes of a key.......";
    let pin = tls_key_pin(spki);
    assert!(pin.starts_with("sha256:") && pin.len() == 7 + 64, "{pin}");
    assert!(pin[7..]
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
    assert_eq!(
        tls_key_pin_from_text(&pin).unwrap(),
        tls_key_pin_digest(spki)
    );
    // Upper case hex and surrounding blanks are read too.
    let upper = format!("sha256:{}", pin[7..].to_ascii_uppercase());
    assert_eq!(
        tls_key_pin_from_text(&format!(" {upper}\n")).unwrap(),
        tls_key_pin_digest(spki)
    );
    assert_ne!(tls_key_pin(b"another key"), pin);
}

#[test]
fn a_malformed_tls_key_pin_is_refused_saying_why() {
    let hex64 = "ab".repeat(32);
    for (text, why) in [
        (hex64.clone(), "does not start with sha256:"),
        (format!("SHA256:{hex64}"), "does not start with sha256:"),
        (format!("sha1:{hex64}"), "does not start with sha256:"),
        ("sha256:".to_string(), "0 hex characters"),
        (format!("sha256:{}", &hex64[..62]), "62 hex characters"),
        (format!("sha256:{hex64}ab"), "66 hex characters"),
        (format!("sha256:{}zz", &hex64[..62]), "Invalid character"),
        (
            format!("sha256:{hex64}").replace('a', "é"),
            "hex characters",
        ),
    ] {
        let err = tls_key_pin_from_text(&text).unwrap_err().to_string();
        assert!(err.starts_with("not a TLS key pin"), "{text}: {err}");
        assert!(err.contains(why), "{text}: {err}");
    }
}
