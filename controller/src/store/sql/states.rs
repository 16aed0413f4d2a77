//! What each task last ran against, per node, for `changed()`: rows naming state blobs by the hash
//! of their text, each blob stored once.

use super::access::{args, id, sql_id, sql_ids, Arg, Rows, Tx};
use crate::store::compressed::stored_tree;
use crate::store::{StateBlob, StateRow, StoreResult};
use plinth_common::json::{Json, Keys};
use std::collections::HashMap;

/// The most task state rows one statement writes (two in the unit tests, so the store suite's few rows
/// take several statements).
const STATE_ROWS_PER_STATEMENT: usize = if cfg!(test) { 2 } else { 16_000 };
/// The most state blobs one statement writes (far larger than a row: a node's part, or the cluster part).
const BLOBS_PER_STATEMENT: usize = if cfg!(test) { 1 } else { 2_000 };

/// Of rows that may name a (node, task) more than once, the last of each, in the order given.
fn last_of_each(states: &[StateRow]) -> Vec<&StateRow> {
    let mut last: HashMap<(u64, &str), usize> = HashMap::with_capacity(states.len());
    for (i, (node_id, task, _)) in states.iter().enumerate() {
        last.insert((*node_id, &**task), i);
    }
    states
        .iter()
        .enumerate()
        .filter(|(i, (node_id, task, _))| last.get(&(*node_id, &**task)) == Some(i))
        .map(|(_, row)| row)
        .collect()
}

/// Records task states (one row per node and task, replaced) and the blobs they name.
pub(crate) fn save_task_states(
    t: &dyn Tx,
    blobs: &[StateBlob],
    states: &[StateRow],
) -> StoreResult<()> {
    let d = t.dialect();
    // A few large statements: a deployment's last step records a state for every node and task
    // (hundreds of thousands of rows), and a statement holds its parameters encoded, so each takes a
    // bounded share.
    for chunk in blobs.chunks(BLOBS_PER_STATEMENT) {
        let hashes: Vec<&str> = chunk.iter().map(|(h, _)| h.as_str()).collect();
        let texts: Vec<&str> = chunk.iter().map(|(_, b)| b.text().unwrap_or("")).collect();
        let packed: Vec<Option<&[u8]>> = chunk.iter().map(|(_, b)| b.packed()).collect();
        t.carrying(
            texts.iter().map(|b| b.len() + 64).sum::<usize>()
                + packed.iter().flatten().map(|b| b.len()).sum::<usize>(),
        );
        d.insert_rows(
            t,
            &Rows {
                table: "state_blobs",
                columns: &[
                    ("hash", Arg::Texts(&hashes)),
                    ("body", Arg::Texts(&texts)),
                    ("body_gz", Arg::BytesList(&packed)),
                ],
                filter: "",
                tail: "ON CONFLICT (hash) DO NOTHING",
                set: "",
            },
        )?;
    }
    // One statement cannot update a row twice: the last state given for a (node, task) wins, as it
    // would one statement at a time. Rows sorted by (node, task) without repeats, as a deployment's
    // end gives them, go as they are; others are first cut to the last of each (node, task), after
    // which the chunks may go in any order. (The search for repeats is a map of every row: at
    // 100,000 nodes and 20 tasks, two million entries.)
    let sorted = states
        .windows(2)
        .all(|w| (w[0].0, &*w[0].1) < (w[1].0, &*w[1].1));
    let kept: Vec<&StateRow> = if sorted {
        states.iter().collect()
    } else {
        last_of_each(states)
    };
    for chunk in kept.chunks(STATE_ROWS_PER_STATEMENT) {
        let mut nodes = Vec::with_capacity(chunk.len());
        let mut tasks = Vec::with_capacity(chunk.len());
        let mut texts = Vec::with_capacity(chunk.len());
        t.carrying(
            chunk
                .iter()
                .map(|(_, task, state)| 8 + task.len() + state.len())
                .sum(),
        );
        for (node_id, task, state) in chunk {
            nodes.push(sql_id(*node_id));
            tasks.push(&**task);
            texts.push(&**state);
        }
        d.insert_rows(
            t,
            &Rows {
                table: "task_states",
                columns: &[
                    ("node_id", Arg::Ints(&nodes)),
                    ("task_id", Arg::Texts(&tasks)),
                    ("state", Arg::Texts(&texts)),
                ],
                filter: "",
                tail: "ON CONFLICT (node_id, task_id) DO UPDATE SET state = excluded.state",
                set: "",
            },
        )?;
    }
    Ok(())
}

/// Stored blobs by hash, in the order asked (missing ones left out), read into compact trees whose
/// keys are shared.
pub(crate) fn state_blobs(t: &dyn Tx, hashes: &[String]) -> StoreResult<Vec<(String, Json)>> {
    let mut keys = Keys::default();
    let mut found: HashMap<String, Json> = HashMap::with_capacity(hashes.len());
    t.each(
        &format!(
            "SELECT hash, body, body_gz FROM state_blobs WHERE hash {}",
            t.dialect().in_list(1)
        ),
        args![hashes],
        &mut |r| {
            let tree = stored_tree(r.opt_bytes(2)?, r.text(1)?, "state blob", &mut keys)?;
            found.insert(r.string(0)?, tree);
            Ok(())
        },
    )?;
    Ok(hashes
        .iter()
        .filter_map(|h| found.remove(h).map(|tree| (h.clone(), tree)))
        .collect())
}

/// The recorded task states of these nodes: node by node as asked, each node's by task id.
pub(crate) fn task_states(
    t: &dyn Tx,
    node_ids: &[u64],
) -> StoreResult<Vec<(u64, String, serde_json::Value)>> {
    let ids = sql_ids(node_ids);
    let d = t.dialect();
    let mut by_node: HashMap<u64, Vec<(String, serde_json::Value)>> = HashMap::new();
    let mut count = 0;
    t.each(
        &format!(
            "SELECT node_id, task_id, state FROM task_states WHERE node_id {} \
             ORDER BY node_id, task_id {}",
            d.in_list(1),
            d.binary_order()
        ),
        args![&ids],
        &mut |r| {
            count += 1;
            by_node
                .entry(id(r.int(0)?))
                .or_default()
                .push((r.string(1)?, r.json(2, "task state")?));
            Ok(())
        },
    )?;
    let mut out = Vec::with_capacity(count);
    for node_id in node_ids {
        for (task, state) in by_node.get(node_id).into_iter().flatten() {
            out.push((*node_id, task.clone(), state.clone()));
        }
    }
    Ok(out)
}
