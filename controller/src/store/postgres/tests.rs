//! What only the PostgreSQL backend has: its migrations' bookkeeping, the database URL and TLS, the
//! bridge from any thread, and coming back after the server restarts. The behaviour both backends
//! share is tested once for both in `store::suite`.

use super::*;
use crate::store::postgres::scratch::ScratchPostgres;
use crate::store::sql::access::{args, sql_id};
use crate::store::sql::nodes::one_node;
use crate::store::*;
use plinth_common::wire::DeploymentEvent;

fn reg(key: &str) -> NodeRegistration {
    NodeRegistration {
        node_key: key.into(),
        public_key: "pk".into(),
        name: key.into(),
        facts: serde_json::json!({}),
        tags: vec![],
        labels: Default::default(),
        rack: None,
        now_ms: 1,
        max_discovered: 10,
        identity: Default::default(),
    }
}

fn server() -> ScratchPostgres {
    ScratchPostgres::start().expect("a scratch PostgreSQL (scripts/test.sh installs it)")
}

#[test]
fn migrations_correspond_to_sqlite_and_run_once() {
    assert_eq!(
        schema::MIGRATIONS.len(),
        crate::store::sqlite::MIGRATIONS.len(),
        "one PostgreSQL migration for each SQLite migration"
    );
    let pg = server();
    let url = pg.fresh_database().unwrap();
    {
        let s = PgStore::open(&url).unwrap();
        s.register_node(&reg("k1"), NodeAdmission::Accepted)
            .unwrap();
    }
    // Two controllers starting together: both open, neither migrates twice.
    let (a, b) = std::thread::scope(|scope| {
        let a = scope.spawn(|| PgStore::open(&url));
        let b = scope.spawn(|| PgStore::open(&url));
        (a.join().unwrap().unwrap(), b.join().unwrap().unwrap())
    });
    assert_eq!(a.list_nodes().unwrap().len(), 1);
    let version = a
        .read(|t| t.int("SELECT version FROM plinth_schema", args![]))
        .unwrap();
    assert_eq!(version as usize, schema::MIGRATIONS.len());
    assert_eq!(b.list_nodes().unwrap().len(), 1);
    // A database from a newer controller is refused, not used.
    a.write(|t| t.exec("UPDATE plinth_schema SET version = 999", args![]))
        .unwrap();
    let newer = PgStore::open(&url).err().expect("refused").to_string();
    assert!(newer.contains("schema version 999"), "{newer}");
}

#[test]
fn tls_is_used_and_the_certificate_checked() {
    let pg = server();
    let url = pg.fresh_database().unwrap();
    let s = PgStore::open(&url).unwrap();
    let ssl = s
        .read(|t| {
            t.int(
                "SELECT CASE WHEN ssl THEN 1 ELSE 0 END FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                args![],
            )
        })
        .unwrap()
        == 1;
    assert!(ssl, "the connection is TLS");
    // Trusting another certificate: refused, the server's certificate does not verify.
    let other = pg.certificate().with_file_name("other.crt");
    let made = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into()]).unwrap();
    std::fs::write(&other, made.cert.pem()).unwrap();
    let wrong = url.replace(
        &pg.certificate().display().to_string(),
        &other.display().to_string(),
    );
    let err = PgStore::open(&wrong).err().expect("refused").to_string();
    assert!(
        err.contains("certificate") || err.contains("Certificate"),
        "{err}"
    );
    // sslmode=disable: plain text, by choice.
    let plain = format!("{}?sslmode=disable", url.split('?').next().unwrap());
    let s = PgStore::open(&plain).unwrap();
    let ssl = s
        .read(|t| {
            t.int(
                "SELECT CASE WHEN ssl THEN 1 ELSE 0 END FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                args![],
            )
        })
        .unwrap()
        == 1;
    assert!(!ssl);
}

#[test]
fn bad_urls_are_refused_without_repeating_them() {
    for (url, says) in [
        (
            "postgres://u:secret@127.0.0.1/db?sslmode=sometimes",
            "sslmode",
        ),
        (
            "postgres://u:secret@127.0.0.1/db?sslrootcert=/nonexistent/ca.pem",
            "sslrootcert",
        ),
        ("postgres://u:secret@127.0.0.1/db?colour=blue", "colour"),
    ] {
        let err = PgStore::open(url).err().expect("refused").to_string();
        assert!(err.contains("database_url") && err.contains(says), "{err}");
        assert!(!err.contains("secret"), "{err}");
    }
    let err = crate::store::open(Some("mysql://x"), std::path::Path::new("/nonexistent"))
        .err()
        .expect("refused")
        .to_string();
    assert!(err.contains("postgres://"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn works_from_a_runtime_worker_and_the_blocking_pool() {
    let pg = server();
    let url = pg.fresh_database().unwrap();
    // Opened on a runtime's worker thread, as the controller does at start.
    let s = std::sync::Arc::new(PgStore::open(&url).unwrap());
    let handles: Vec<_> = (0..32)
        .map(|i| {
            let s = s.clone();
            tokio::task::spawn_blocking(move || {
                s.register_node(&reg(&format!("k{i}")), NodeAdmission::Accepted)
                    .map(|n| n.id)
            })
        })
        .collect();
    for h in handles {
        h.await.unwrap().unwrap();
    }
    assert_eq!(s.list_nodes().unwrap().len(), 32);
    // Dropped on a worker thread too: the store's runtime shuts down without blocking.
    drop(s);
}

#[test]
fn the_store_comes_back_after_the_server_restarts() {
    let pg = server();
    let url = pg.fresh_database().unwrap();
    let s = PgStore::open(&url).unwrap();
    s.register_node(&reg("k1"), NodeAdmission::Accepted)
        .unwrap();
    assert_eq!(s.list_nodes().unwrap().len(), 1);
    pg.kill().unwrap();
    let down = s.list_nodes().expect_err("no database, no answer");
    assert!(matches!(down, StoreError::Database(_)), "{down:?}");
    pg.restart().unwrap();
    // The pooled connection died with the server; the next call opens a new one.
    assert_eq!(s.list_nodes().unwrap().len(), 1, "{}", pg.log());
    s.register_node(&reg("k2"), NodeAdmission::Accepted)
        .unwrap();
    assert_eq!(s.list_nodes().unwrap().len(), 2);
}

#[test]
fn a_step_recorded_under_a_lease_that_changed_hands_is_refused_and_writes_nothing() {
    let pg = server();
    let url = pg.fresh_database().unwrap();
    let (old, new) = (PgStore::open(&url).unwrap(), PgStore::open(&url).unwrap());
    let (nodes, d) = crate::store::suite::running_deployment(&old, 1);
    let token = old.claim_lease("a", None, 1_000, 5_000).unwrap().unwrap();
    old.set_fence(Some(Fence {
        holder: "a".into(),
        token,
    }));
    let step = |s: &PgStore| {
        let mut lists = [crate::store::suite::empty_list(nodes[0], d.id)];
        s.record_progress(d.id, &mut Progress::lists_only(&mut lists))
    };
    step(&old).expect("recorded while it holds the lease");
    // "a" stalls past its lease; "b" takes over.
    assert_eq!(
        new.claim_lease("b", None, 7_000, 5_000).unwrap(),
        Some(token + 1)
    );
    let refused = step(&old).expect_err("refused under the old token");
    assert!(matches!(refused, StoreError::Fenced(_)), "{refused}");
    assert_eq!(
        old.published_lists(d.id).unwrap().len(),
        1,
        "the refused step wrote nothing"
    );
}

#[test]
fn last_seen_flushes_never_collide_with_a_step_updating_the_same_nodes() {
    let pg = server();
    let url = pg.fresh_database().unwrap();
    let (step, other) = (PgStore::open(&url).unwrap(), PgStore::open(&url).unwrap());
    let (nodes, _) = crate::store::suite::running_deployment(&step, 1);
    let mut attempts = 0;
    step.write(|t| {
        attempts += 1;
        // The step reads the node (its snapshot is taken), another controller flushes the node's
        // last-seen time and commits, then the step updates the node.
        one_node(t, nodes[0])?;
        other.touch_nodes(&[(nodes[0], 1_000 + attempts)])?;
        t.exec(
            "UPDATE nodes SET status = 'ready' WHERE id = $1",
            args![sql_id(nodes[0])],
        )
    })
    .expect("the step commits");
    assert_eq!(attempts, 1, "the step was never refused and run again");
    let node = step.get_node(nodes[0]).unwrap();
    assert_eq!((node.status, node.last_seen_ms), (NodeStatus::Ready, 1_001));
}

#[test]
fn notices_sent_together_all_reach_a_listener_in_order() {
    let server = server();
    let store = PgStore::open(&server.fresh_database().unwrap()).unwrap();
    let mut notices = store.listen().expect("PostgreSQL carries notices");
    // The listener connects on its own: send rounds until one whole round has arrived after it did.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut got: Vec<Notice> = Vec::new();
    for round in 0u64.. {
        assert!(
            std::time::Instant::now() < deadline,
            "received only {got:?}"
        );
        let sent = [
            Notice::Node { id: round * 10 + 1 },
            Notice::Results {
                deployment: round,
                nodes: vec![1, 2, 3],
            },
            Notice::Node { id: round * 10 + 2 },
        ];
        store.notify_all(&sent);
        std::thread::sleep(std::time::Duration::from_millis(100));
        while let Ok(n) = notices.try_recv() {
            got.push(n);
        }
        if got.windows(3).any(|w| w == sent) {
            break;
        }
    }
}

#[test]
fn the_lease_is_renewed_while_bulk_work_holds_every_pooled_connection() {
    let server = server();
    let store = PgStore::open_with(&server.fresh_database().unwrap(), 1).unwrap();
    assert_eq!(store.claim_lease("a", None, 1_000, 5_000).unwrap(), Some(1));
    let (began, has_begun) = std::sync::mpsc::channel::<()>();
    let (release, released) = std::sync::mpsc::channel::<()>();
    std::thread::scope(|scope| {
        // Bulk work: a transaction holding the pool's only connection until the beat is done.
        let store = &store;
        let bulk = scope.spawn(move || {
            store.read(|_| {
                began.send(()).expect("the test waits");
                released.recv().expect("the test answers");
                Ok(())
            })
        });
        has_begun.recv().expect("the bulk transaction began");
        let beat = ControllerBeat {
            id: "a".into(),
            name: "a".into(),
            url: "https://a".into(),
            started_ms: 1_000,
            now_ms: 2_000,
            agents: 0,
        };
        let beaten = store.beat_controller(&beat);
        let renewed = store.claim_lease("a", Some(1), 2_000, 5_000);
        release.send(()).expect("the bulk transaction waits");
        bulk.join()
            .expect("no panic")
            .expect("the bulk transaction commits");
        beaten.expect("the heartbeat is recorded beside the bulk work");
        assert_eq!(
            renewed.expect("the lease is renewed beside the bulk work"),
            Some(1)
        );
    });
}

#[test]
fn a_connection_that_sent_a_large_message_is_closed_not_pooled() {
    let pg = server();
    let s = PgStore::open_with(&pg.fresh_database().unwrap(), 1).unwrap();
    let backend = |s: &PgStore| -> i64 {
        s.read(|t| t.int("SELECT pg_backend_pid()", args![]))
            .unwrap()
    };
    let (_, d) = crate::store::suite::running_deployment(&s, 1);
    let first = backend(&s);
    let small = DeploymentEvent::Warning {
        code: "small".into(),
        message: "x".into(),
    };
    s.append_events(d.id, &[small]).unwrap();
    assert_eq!(
        backend(&s),
        first,
        "a connection is pooled after a small write"
    );
    // tokio-postgres keeps a connection's buffers at its largest message: one that carried more
    // than LARGE_TRANSACTION is closed, and the next transaction opens another.
    let large = DeploymentEvent::Warning {
        code: "large".into(),
        message: "x".repeat(bridge::LARGE_TRANSACTION + 1),
    };
    s.append_events(d.id, &[large]).unwrap();
    let after = backend(&s);
    assert_ne!(after, first, "the connection that sent it was not reused");
    assert_eq!(backend(&s), after, "the new connection is pooled again");
    let events = s.events(d.id, 0).unwrap();
    assert_eq!(events.len(), 2, "both writes committed");
}
