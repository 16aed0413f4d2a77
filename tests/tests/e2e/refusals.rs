//! The agent refuses every list that fails a check, reports the refusal, and runs nothing from it.

use plinth_e2e::attacker::{self, Attacker};
use plinth_e2e::*;
use std::time::Duration;

#[test]
fn forged_replayed_expired_misdirected_and_tampered_lists_run_nothing() {
    // A real controller made the keys and certificate; the attacker serves with its TLS key.
    let c = Controller::start();
    let real = c.signing_key();
    let evil = Attacker::start(&c.cert_path(), &c.data_dir().join("tls").join("key.pem"));
    let agent = Agent::start_at(
        &evil.url,
        &c.cert_path(),
        "victim",
        &["x"],
        &c.public_key(),
        "",
    );
    let key_path = agent.dir.path().join("state").join("node.key");
    wait_until("the agent's node key", Duration::from_secs(30), || {
        key_path.exists()
    });
    let node_key = plinth_common::signing::fingerprint(
        &plinth_common::signing::signing_key_from_pem(&std::fs::read_to_string(&key_path).unwrap())
            .unwrap()
            .verifying_key(),
    );
    let marker = agent.work().join("MARKER");
    let other_node = plinth_common::signing::fingerprint(
        &plinth_common::signing::signing_key_from_seed([3; 32]).verifying_key(),
    );
    let stranger = plinth_common::signing::signing_key_from_seed([9; 32]);

    // First a genuine list (revision 5) that the agent accepts and runs, so a replay has something to replay.
    let ok_marker = agent.work().join("GENUINE");
    let (k, nk, m) = (real.clone(), node_key.clone(), ok_marker.clone());
    evil.push(Box::new(move |nonce, _| {
        attacker::envelope(&k, &attacker::list(&nk, 5, nonce, &m))
    }));
    wait_until("the genuine list to run", Duration::from_secs(30), || {
        ok_marker.exists()
    });

    let crafts: Vec<(&str, attacker::Craft)> = vec![
        ("another key", {
            let (nk, m) = (node_key.clone(), marker.clone());
            Box::new(move |nonce, _| {
                attacker::envelope(&stranger, &attacker::list(&nk, 9, nonce, &m))
            })
        }),
        ("another node", {
            let (k, m) = (real.clone(), marker.clone());
            Box::new(move |nonce, _| {
                attacker::envelope(&k, &attacker::list(&other_node, 9, nonce, &m))
            })
        }),
        ("replayed older revision", {
            let (k, nk, m) = (real.clone(), node_key.clone(), marker.clone());
            Box::new(move |nonce, _| attacker::envelope(&k, &attacker::list(&nk, 5, nonce, &m)))
        }),
        ("expired", {
            let (k, nk, m) = (real.clone(), node_key.clone(), marker.clone());
            Box::new(move |nonce, _| {
                let mut l = attacker::list(&nk, 9, nonce, &m);
                l.issued_at -= 7200;
                l.expires_at = l.issued_at + 60;
                attacker::envelope(&k, &l)
            })
        }),
        ("recorded answer with another nonce", {
            let (k, nk, m) = (real.clone(), node_key.clone(), marker.clone());
            Box::new(move |_, _| {
                attacker::envelope(
                    &k,
                    &attacker::list(&nk, 9, "00000000000000000000000000000000", &m),
                )
            })
        }),
        ("tampered byte", {
            let (k, nk, m) = (real.clone(), node_key.clone(), marker.clone());
            Box::new(move |nonce, _| attacker::tampered(&k, &attacker::list(&nk, 9, nonce, &m)))
        }),
        (
            "oversize",
            Box::new(|_, _| vec![b' '; plinth_common::wire::MAX_TASK_LIST_BYTES + 10]),
        ),
        ("garbage", Box::new(|_, _| b"{\"payload\": 12}".to_vec())),
    ];
    let count = crafts.len();
    for (_, craft) in crafts {
        evil.push(craft);
    }
    wait_until(
        "every crafted list to be refused",
        Duration::from_secs(60),
        || evil.log.lock().unwrap().refusals.len() >= count,
    );
    // Then a genuine list: the agent runs lists one after another, so once this one has run, a crafted
    // list it had run would have left its marker already.
    let last = agent.work().join("LAST");
    let (k, nk, m) = (real.clone(), node_key.clone(), last.clone());
    evil.push(Box::new(move |nonce, _| {
        attacker::envelope(&k, &attacker::list(&nk, 10, nonce, &m))
    }));
    wait_until(
        "the genuine list after them to run",
        Duration::from_secs(60),
        || last.exists(),
    );
    assert!(!marker.exists(), "a refused list ran:\n{}", agent.log());
    let log = evil.log.lock().unwrap();
    let reasons: Vec<String> = log
        .refusals
        .iter()
        .map(|r| r["reason"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(reasons.len(), count, "{reasons:#?}");
    assert!(
        reasons.iter().any(|r| r.contains("signature")),
        "{reasons:#?}"
    );
    assert!(
        reasons.iter().any(|r| r.contains("not this node")),
        "{reasons:#?}"
    );
    assert!(
        reasons.iter().any(|r| r.contains("revision")),
        "{reasons:#?}"
    );
    assert!(
        reasons.iter().any(|r| r.contains("expired")),
        "{reasons:#?}"
    );
    assert!(reasons.iter().any(|r| r.contains("nonce")), "{reasons:#?}");
    // Only the genuine lists' tasks were ever reported as run.
    assert!(
        log.results
            .iter()
            .all(|r| r["task_id"] == "plant-marker" && (r["revision"] == 5 || r["revision"] == 10)),
        "{:#?}",
        log.results
    );
}
