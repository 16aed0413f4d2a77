//! Enrollments: servers known before they first boot. Each has a name, the MACs (and optionally the DMI
//! serial and UUID) an agent is matched by, the tags, labels and rack its node gets, a BMC and the
//! power state last read from it, and, once an agent called in, the node it became.
//!
//! The rules of matching (see `nodes::register_one`, which calls [`matching`] and [`take_over`]):
//! an agent whose MAC, serial or UUID names an enrollment becomes its node; a second agent with another
//! key is refused unless the enrollment is open to a new key (`rekey`: the controller booted it from the
//! network, or an operator released it).

use super::access::{args, sql_id, to_json, Arg, Row, Tx};
use crate::store::{
    NewEnrollment, NewRefusal, NodeIdentity, PowerReading, StoreError, StoreResult,
};
use plinth_api::enrollment::{BootTarget, EnrollmentRecord, PowerState, PowerView};
use std::collections::BTreeMap;

const COLUMNS: &str = "id, name, serial, uuid, tags, labels, rack, profile, bmc, node_id, rekey, \
                       boot, power, power_error, power_checked, enrolled_at";

/// An enrollment's record from its row, without its MACs (filled by [`query`]).
fn record(r: &dyn Row) -> StoreResult<EnrollmentRecord> {
    let bmc: Option<String> = r.opt_string(8)?;
    Ok(EnrollmentRecord {
        id: r.id(0)?,
        name: r.string(1)?,
        macs: Vec::new(),
        serial: r.opt_string(2)?,
        uuid: r.opt_string(3)?,
        tags: r.json(4, "enrollment tags")?,
        labels: r.json(5, "enrollment labels")?,
        rack: r.opt_string(6)?,
        profile: r.json(7, "enrollment profile")?,
        bmc: match bmc {
            Some(text) => Some(super::access::from_json(&text, "enrollment bmc")?),
            None => None,
        },
        node_id: r.opt_id(9)?,
        rekey: r.int(10)? != 0,
        boot: match r.text(11)? {
            "discovery" => BootTarget::Discovery,
            "disk" => BootTarget::Disk,
            other => return Err(StoreError::Corrupt(format!("enrollment boot {other:?}"))),
        },
        power: PowerView {
            state: match r.text(12)? {
                "on" => PowerState::On,
                "off" => PowerState::Off,
                "unknown" => PowerState::Unknown,
                other => return Err(StoreError::Corrupt(format!("enrollment power {other:?}"))),
            },
            error: r.opt_string(13)?,
            checked_ms: r.int(14)?,
        },
        enrolled_at_ms: r.int(15)?,
    })
}

/// The enrollments `where_clause` selects, by id, each with its MACs.
fn query(t: &dyn Tx, where_clause: &str, args: &[Arg<'_>]) -> StoreResult<Vec<EnrollmentRecord>> {
    let sql = format!("SELECT {COLUMNS} FROM enrollments {where_clause} ORDER BY id");
    let mut found = t.rows(&sql, args, record)?;
    if found.is_empty() {
        return Ok(found);
    }
    let ids: Vec<i64> = found.iter().map(|e| sql_id(e.id)).collect();
    let sql = format!(
        "SELECT enrollment_id, mac FROM enrollment_macs WHERE enrollment_id {} ORDER BY mac",
        t.dialect().in_list(1)
    );
    let mut macs: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    t.each(&sql, args![&ids], &mut |r| {
        macs.entry(r.id(0)?).or_default().push(r.string(1)?);
        Ok(())
    })?;
    for e in &mut found {
        e.macs = macs.remove(&e.id).unwrap_or_default();
    }
    Ok(found)
}

/// Every enrollment.
pub(crate) fn list(t: &dyn Tx) -> StoreResult<Vec<EnrollmentRecord>> {
    query(t, "", &[])
}

/// The enrollment of this name; `NotFound` when there is none.
pub(crate) fn by_name(t: &dyn Tx, name: &str) -> StoreResult<EnrollmentRecord> {
    query(t, "WHERE name = $1", args![name])?
        .pop()
        .ok_or_else(|| StoreError::NotFound {
            kind: "enrollment",
            id: name.to_string(),
        })
}

/// The enrollment this node was made from, if any.
pub(crate) fn of_node(t: &dyn Tx, node_id: u64) -> StoreResult<Option<EnrollmentRecord>> {
    Ok(query(t, "WHERE node_id = $1", args![sql_id(node_id)])?.pop())
}

/// The enrollment holding this MAC, if any.
pub(crate) fn by_mac(t: &dyn Tx, mac: &str) -> StoreResult<Option<EnrollmentRecord>> {
    Ok(query(
        t,
        "WHERE id = (SELECT enrollment_id FROM enrollment_macs WHERE mac = $1)",
        args![mac],
    )?
    .pop())
}

/// An enrollment's BMC password as sealed, if it has one.
pub(crate) fn sealed_secret(t: &dyn Tx, name: &str) -> StoreResult<Option<String>> {
    t.opt(
        "SELECT bmc_secret FROM enrollments WHERE name = $1",
        args![name],
        |r| r.opt_string(0),
    )
    .map(Option::flatten)
}

/// Every enrollment with its sealed BMC password.
pub(crate) fn list_with_secrets(
    t: &dyn Tx,
) -> StoreResult<Vec<(EnrollmentRecord, Option<String>)>> {
    let mut secrets: BTreeMap<u64, String> = BTreeMap::new();
    t.each(
        "SELECT id, bmc_secret FROM enrollments WHERE bmc_secret IS NOT NULL",
        &[],
        &mut |r| {
            secrets.insert(r.id(0)?, r.string(1)?);
            Ok(())
        },
    )?;
    Ok(list(t)?
        .into_iter()
        .map(|e| {
            let sealed = secrets.remove(&e.id);
            (e, sealed)
        })
        .collect())
}

/// Seals every stored BMC password again with what `reseal` makes of it (its enrollment's name and
/// the sealed text; `None` leaves it), in the caller's transaction; returns how many changed.
pub(crate) fn reseal(
    t: &dyn Tx,
    reseal: &mut dyn FnMut(&str, &str) -> Option<String>,
) -> StoreResult<usize> {
    let mut sealed = Vec::new();
    t.each(
        "SELECT id, name, bmc_secret FROM enrollments WHERE bmc_secret IS NOT NULL",
        &[],
        &mut |r| {
            sealed.push((r.id(0)?, r.string(1)?, r.string(2)?));
            Ok(())
        },
    )?;
    let mut changed = 0;
    for (id, name, old) in sealed {
        if let Some(new) = reseal(&name, &old) {
            t.exec(
                "UPDATE enrollments SET bmc_secret = $2 WHERE id = $1",
                args![sql_id(id), new.as_str()],
            )?;
            changed += 1;
        }
    }
    Ok(changed)
}

/// Enrolls servers, all or none: a name, MAC, serial or UUID already enrolled, or a name a node other
/// than the enrolled server already has, is a `Conflict` that names it.
pub(crate) fn enroll(t: &dyn Tx, new: &[NewEnrollment]) -> StoreResult<Vec<EnrollmentRecord>> {
    let mut ids = Vec::with_capacity(new.len());
    for e in new {
        let conflict = |what: String| StoreError::Conflict(format!("{}: {what}", e.name));
        if let Some(other) = t.opt(
            "SELECT id FROM enrollments WHERE name = $1",
            args![&e.name],
            |r| r.int(0),
        )? {
            return Err(conflict(format!(
                "the name is enrolled already (enrollment {other})"
            )));
        }
        if let Some(node) = t.opt(
            "SELECT id FROM nodes WHERE name = $1",
            args![&e.name],
            |r| r.int(0),
        )? {
            return Err(conflict(format!(
                "node {node} already has this name; rename or delete it first"
            )));
        }
        for (column, value) in [("serial", &e.serial), ("uuid", &e.uuid)] {
            let Some(value) = value else { continue };
            let sql = format!("SELECT name FROM enrollments WHERE {column} = $1");
            if let Some(other) = t.opt(&sql, args![value], |r| r.string(0))? {
                return Err(conflict(format!("{column} {value} is enrolled as {other}")));
            }
        }
        if !e.macs.is_empty() {
            let sql = format!(
                "SELECT m.mac, e.name FROM enrollment_macs m JOIN enrollments e ON e.id = m.enrollment_id \
                 WHERE m.mac {} ORDER BY m.mac",
                t.dialect().in_list(1)
            );
            if let Some((mac, other)) = t
                .rows(&sql, args![&e.macs], |r| Ok((r.string(0)?, r.string(1)?)))?
                .into_iter()
                .next()
            {
                return Err(conflict(format!("MAC {mac} is enrolled as {other}")));
            }
        }
        let bmc = e.bmc.as_ref().map(to_json);
        let new_id = t.int(
            "INSERT INTO enrollments (name, serial, uuid, tags, labels, rack, profile, bmc, bmc_secret, \
             enrolled_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id",
            args![
                &e.name,
                &e.serial,
                &e.uuid,
                &to_json(&e.tags),
                &to_json(&e.labels),
                &e.rack,
                &to_json(&e.profile),
                &bmc,
                &e.bmc_secret,
                e.now_ms
            ],
        )?;
        for mac in &e.macs {
            t.exec(
                "INSERT INTO enrollment_macs (mac, enrollment_id) VALUES ($1, $2)",
                args![mac, new_id],
            )?;
        }
        ids.push(new_id);
    }
    let clause = format!("WHERE id {}", t.dialect().in_list(1));
    query(t, &clause, args![&ids])
}

/// Deletes an enrollment (its node, if any, stays, no longer bound to it).
pub(crate) fn delete(t: &dyn Tx, name: &str) -> StoreResult<()> {
    let e = by_name(t, name)?;
    t.exec(
        "DELETE FROM enrollment_macs WHERE enrollment_id = $1",
        args![sql_id(e.id)],
    )?;
    t.exec("DELETE FROM enrollments WHERE id = $1", args![sql_id(e.id)])?;
    Ok(())
}

/// Forgets the node a deleted node's enrollment was bound to, so that the server's next agent is
/// matched afresh.
pub(crate) fn unbind_node(t: &dyn Tx, node_id: u64) -> StoreResult<()> {
    t.exec(
        "UPDATE enrollments SET node_id = NULL WHERE node_id = $1",
        args![sql_id(node_id)],
    )?;
    Ok(())
}

/// Records power readings.
pub(crate) fn set_power(t: &dyn Tx, readings: &[PowerReading]) -> StoreResult<()> {
    for r in readings {
        t.exec(
            "UPDATE enrollments SET power = $2, power_error = $3, power_checked = $4 WHERE id = $1",
            args![
                sql_id(r.enrollment_id),
                r.power.state.as_str(),
                &r.power.error,
                r.power.checked_ms
            ],
        )?;
    }
    Ok(())
}

/// Opens (or closes) an enrollment to a new agent key, and sets what it boots.
pub(crate) fn set_boot(
    t: &dyn Tx,
    name: &str,
    rekey: bool,
    boot: Option<BootTarget>,
) -> StoreResult<EnrollmentRecord> {
    let e = by_name(t, name)?;
    let boot = boot.unwrap_or(e.boot);
    t.exec(
        "UPDATE enrollments SET rekey = $2, boot = $3 WHERE id = $1",
        args![sql_id(e.id), i64::from(rekey), boot.as_str()],
    )?;
    by_name(t, name)
}

/// The one enrollment an agent's MACs, serial or UUID name, if any; a `Conflict` when they name
/// several.
pub(crate) fn matching(
    t: &dyn Tx,
    identity: &NodeIdentity,
) -> StoreResult<Option<EnrollmentRecord>> {
    if identity.macs.is_empty() && identity.serial.is_none() && identity.uuid.is_none() {
        return by_bmc_address(t, identity.bmc_address.as_deref());
    }
    let clause = format!(
        "WHERE id IN (SELECT enrollment_id FROM enrollment_macs WHERE mac {}) \
         OR serial = $2 OR uuid = $3",
        t.dialect().in_list(1)
    );
    let mut found = query(
        t,
        &clause,
        args![&identity.macs, &identity.serial, &identity.uuid],
    )?;
    match found.len() {
        0 => by_bmc_address(t, identity.bmc_address.as_deref()),
        1 => Ok(found.pop()),
        _ => {
            let names: Vec<&str> = found.iter().map(|e| e.name.as_str()).collect();
            Err(StoreError::Conflict(format!(
                "the agent's MACs, serial and UUID name several enrolled servers ({}); \
                 an enrollment file gives one server's MACs to another",
                names.join(", ")
            )))
        }
    }
}

/// The one enrollment with no MAC, serial or UUID whose BMC is at `address` (the host of a Redfish
/// URL, an IPMI BMC's address), as an agent read it in band. Only such enrollments are known by their
/// BMC: one that gives a MAC, serial or UUID is known by those alone.
fn by_bmc_address(t: &dyn Tx, address: Option<&str>) -> StoreResult<Option<EnrollmentRecord>> {
    let Some(address) = address else {
        return Ok(None);
    };
    // A coarse filter in SQL (the BMC is stored as JSON text), the exact comparison here.
    let pattern = format!("%{}%", address.replace(['%', '_'], ""));
    let found: Vec<EnrollmentRecord> = query(
        t,
        "WHERE bmc LIKE $1 AND serial IS NULL AND uuid IS NULL \
         AND id NOT IN (SELECT enrollment_id FROM enrollment_macs)",
        args![&pattern],
    )?
    .into_iter()
    .filter(|e| {
        e.bmc
            .as_ref()
            .is_some_and(|b| bmc_host(&b.address) == address)
    })
    .collect();
    match found.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(one.clone())),
        several => Err(StoreError::Conflict(format!(
            "the agent's BMC address {address} is the BMC of several enrolled servers ({})",
            several
                .iter()
                .map(|e| e.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// The host a BMC's address names: a Redfish URL's host, an IPMI address as it is.
fn bmc_host(address: &str) -> &str {
    let rest = address.split_once("://").map_or(address, |(_, r)| r);
    let host = rest.split(['/', '?']).next().unwrap_or(rest);
    if let Some(inner) = host.strip_prefix('[') {
        return inner.split(']').next().unwrap_or(inner);
    }
    match host.rsplit_once(':') {
        Some((h, port)) if port.chars().all(|c| c.is_ascii_digit()) && !h.contains(':') => h,
        _ => host,
    }
}

/// Makes `node_id` the enrollment's node: its name, tags, labels and rack become the enrollment's,
/// and the enrollment is closed to new keys.
pub(crate) fn bind(t: &dyn Tx, e: &EnrollmentRecord, node_id: u64) -> StoreResult<()> {
    t.exec(
        "UPDATE nodes SET name = $2, tags = $3, labels = $4, rack = $5 WHERE id = $1",
        args![
            sql_id(node_id),
            &e.name,
            &to_json(&e.tags),
            &to_json(&e.labels),
            &e.rack
        ],
    )?;
    t.exec(
        "UPDATE enrollments SET node_id = $2, rekey = 0 WHERE id = $1",
        args![sql_id(e.id), sql_id(node_id)],
    )?;
    Ok(())
}

/// A new agent key for an enrolled server whose node another key holds: taken over when the
/// enrollment is open to a new key (the node keeps its id, records and admission), else refused, and
/// the refusal recorded on the node. Answers the node's id when taken over.
pub(crate) fn take_over(
    t: &dyn Tx,
    e: &EnrollmentRecord,
    holder: u64,
    node_key: &str,
    public_key: &str,
    now_ms: i64,
) -> StoreResult<u64> {
    if e.rekey {
        t.exec(
            "UPDATE nodes SET node_key = $2, public_key = $3, last_seen = $4 WHERE id = $1",
            args![sql_id(holder), node_key, public_key, now_ms],
        )?;
        bind(t, e, holder)?;
        return Ok(holder);
    }
    refuse_claim(t, e, holder, node_key, now_ms)
}

/// Refuses an agent's claim of an enrolled server another node holds, recording the refusal on that
/// node; always answers `Claimed`.
pub(crate) fn refuse_claim(
    t: &dyn Tx,
    e: &EnrollmentRecord,
    holder: u64,
    node_key: &str,
    now_ms: i64,
) -> StoreResult<u64> {
    let reason = format!(
        "an agent with another key ({node_key}) claimed enrolled server {}, which node {holder} holds; \
         refused (`plinthctl nodes release {}` lets a new agent take it)",
        e.name, e.name
    );
    super::results::record_refusals(
        t,
        holder,
        &[NewRefusal {
            kind: "claim".into(),
            deployment_id: None,
            reason: reason.clone(),
            detail: serde_json::json!({"node_key": node_key, "enrollment": e.name}),
            at_ms: now_ms,
        }],
    )?;
    Err(StoreError::Claimed(reason))
}

/// Whether this node is an enrolled server's (so what its agent says of its name, tags, labels and rack
/// is a report, not the record).
pub(crate) fn is_bound(t: &dyn Tx, node_id: u64) -> StoreResult<bool> {
    t.exists(
        "SELECT 1 FROM enrollments WHERE node_id = $1",
        args![sql_id(node_id)],
    )
}
