//! Results in groups: every agent's `POST /agent/v1/results` is judged, stored and folded in by one
//! committer, which takes all the reports waiting at that moment and stores them in one transaction
//! (one commit, one fsync, for hundreds of agents), then folds them into their deployments as one step
//! per deployment. A report arriving alone is handled at once; under load, the reports that arrive
//! while a commit runs make up the next group. Each agent is answered after its results are stored and
//! folded in, exactly as when they were handled one by one. The grouping itself is `groups`.

use super::board::Board;
use super::groups::{Answer, Groups};
use super::judge::{judge, record_refused_results, refused, verdict};
use super::IntakeError;
use crate::engine::Engine;
use crate::store::{Notice, Store, Stored};
use crate::workers::Workers;
use plinth_common::wire::{ResultVerdict, ResultsBatch, TaskResult, Verdict};
use std::sync::Arc;

/// The most reports stored in one transaction.
pub const MAX_GROUP: usize = 512;

/// One agent's report waiting for the committer.
struct Report {
    node_id: u64,
    accepted: bool,
    batch: ResultsBatch,
    answer: Answer<Vec<ResultVerdict>>,
}

/// What results are judged, stored and folded in with: the database, the engine that runs the
/// deployments, and the board of the lists issued.
struct Parts {
    store: Arc<dyn Store>,
    engine: Arc<Engine>,
    board: Arc<Board>,
}

/// The results committer.
pub struct Intake {
    groups: Groups<Parts, Report>,
}

impl Intake {
    /// The committer judging results against `engine`'s deployments and `board`'s lists, storing them
    /// in `store` as `workers`' jobs, and folding them into `engine`.
    pub fn new(
        store: Arc<dyn Store>,
        engine: Arc<Engine>,
        board: Arc<Board>,
        workers: Workers,
    ) -> Intake {
        Intake {
            groups: Groups::new(
                "results",
                MAX_GROUP,
                Parts {
                    store,
                    engine,
                    board,
                },
                workers,
                commit,
            ),
        }
    }

    /// Judges, stores and folds in one agent's report; answers its verdicts, in order.
    pub async fn submit(
        &self,
        node_id: u64,
        accepted: bool,
        batch: ResultsBatch,
    ) -> Result<Vec<ResultVerdict>, IntakeError> {
        self.groups
            .ask(|answer| Report {
                node_id,
                accepted,
                batch,
                answer,
            })
            .await
    }
}

/// Where one report's results stand while its group is committed.
struct Judged {
    report: Report,
    verdicts: Vec<Option<ResultVerdict>>,
    /// Indexes of the results to store.
    candidates: Vec<usize>,
}

fn commit(s: &Parts, group: Vec<Report>) {
    let (store, engine) = (s.store.as_ref(), s.engine.as_ref());
    let mut judged = Vec::with_capacity(group.len());
    for report in group {
        let (node, accepted) = (report.node_id, report.accepted);
        match judge(
            store,
            engine,
            &s.board,
            node,
            accepted,
            &report.batch.results,
        ) {
            Ok((verdicts, candidates)) => judged.push(Judged {
                report,
                verdicts,
                candidates,
            }),
            Err(e) => {
                let _ = report.answer.send(Err(IntakeError::from(e)));
            }
        }
    }
    let to_store: Vec<Vec<TaskResult>> = judged
        .iter()
        .map(|j| {
            j.candidates
                .iter()
                .map(|i| j.report.batch.results[*i].clone())
                .collect()
        })
        .collect();
    let batches: Vec<(u64, &[TaskResult])> = judged
        .iter()
        .zip(&to_store)
        .map(|(j, rs)| (j.report.node_id, rs.as_slice()))
        .collect();
    let began = std::time::Instant::now();
    let stored = store.store_result_batches(&batches);
    crate::metrics::metrics().transaction("results", began.elapsed());
    let stored = match stored {
        Ok(stored) => stored,
        Err(e) => {
            let e = IntakeError::from(e);
            for j in judged {
                let _ = j.report.answer.send(Err(e.clone()));
            }
            return;
        }
    };
    let sequencing = engine.is_sequencing();
    let mut fresh: Vec<(u64, Vec<TaskResult>)> = Vec::new();
    let mut answers = Vec::with_capacity(judged.len());
    // Nodes whose results the controller that sequences must fold in, by deployment.
    let mut to_tell: std::collections::BTreeMap<u64, std::collections::BTreeSet<u64>> =
        Default::default();
    for ((mut j, results), outcomes) in judged.into_iter().zip(to_store).zip(stored) {
        let node_id = j.report.node_id;
        let mut new = Vec::new();
        for ((i, r), outcome) in j.candidates.iter().zip(results).zip(outcomes) {
            if !sequencing && outcome != Stored::Final {
                // A repeat is told too: its first notice may be the one lost when a controller
                // stopped.
                to_tell.entry(r.deployment_id).or_default().insert(node_id);
            }
            j.verdicts[*i] = Some(match outcome {
                Stored::New => {
                    let v = verdict(&r, Verdict::Accepted);
                    if r.status != plinth_common::wire::ResultStatus::Running {
                        let graph_type = engine.graph_type_of(node_id, &r);
                        crate::metrics::metrics().task_ended(
                            graph_type.as_deref(),
                            r.status,
                            r.duration_ms,
                        );
                    }
                    new.push(r);
                    v
                }
                Stored::Duplicate => verdict(&r, Verdict::Duplicate),
                Stored::Final => refused(
                    &r,
                    format!(
                        "deployment {} has finished: its record is final",
                        r.deployment_id
                    ),
                ),
            });
        }
        let verdicts: Vec<ResultVerdict> = j.verdicts.into_iter().flatten().collect();
        record_refused_results(store, engine, node_id, &j.report.batch.results, &verdicts);
        if !new.is_empty() {
            fresh.push((node_id, new));
        }
        answers.push((j.report.answer, verdicts));
    }
    let mut notices = Vec::new();
    for (deployment, nodes) in to_tell {
        let nodes: Vec<u64> = nodes.into_iter().collect();
        for chunk in nodes.chunks(crate::store::NODES_PER_NOTICE) {
            notices.push(Notice::Results {
                deployment,
                nodes: chunk.to_vec(),
            });
        }
    }
    store.notify_all(&notices);
    if !fresh.is_empty() {
        let started = std::time::Instant::now();
        let published = engine.on_result_batches(&fresh);
        if published > 0 {
            tracing::info!(
                agents = fresh.len(),
                lists = published,
                took_ms = started.elapsed().as_secs_f64() * 1000.0,
                "results moved a deployment on: next lists published"
            );
        }
    }
    for (answer, verdicts) in answers {
        let _ = answer.send(Ok(verdicts));
    }
}
