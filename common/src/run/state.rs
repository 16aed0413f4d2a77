//! The part of a running deployment that is stored with it: enough, with its published lists and its
//! stored results, to rebuild the run after a restart ([`super::Run::restore`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::strategy::Sequencer;

/// A running deployment's stored state.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunState {
    /// The strategy's state machine.
    pub sequencer: Sequencer,
    /// When each running phase times out (ms), by `group/phase`.
    #[serde(default)]
    pub deadlines: BTreeMap<String, i64>,
    /// The graph type each phase runs, by phase name.
    #[serde(default)]
    pub phase_graph: BTreeMap<String, String>,
}
