#![warn(missing_docs)]
//! Deployment strategies: node groups, selectors, success criteria and the sequencing state machine.
//!
//! This module owns everything about a strategy that is logic, so that the controller and `plinthctl`'s
//! offline commands run the same code:
//!
//! | module | owns |
//! |---|---|
//! | `model` | the strategy as data ([`Strategy`], [`Group`], [`Selector`], [`SuccessCriteria`], [`Phase`]) |
//! | `load` | one or several texts to a strategy, with warnings and provenance ([`load_strategy`]); a site design is rendered with `plinth_deckhand` (YAML 1.1, layering, substitution) |
//! | `configuration` | Shipyard's `DeploymentConfiguration`: the strategy's name and the phase timeouts |
//! | `parse` | reading Shipyard's document or the plain form ([`parse_strategy`]) |
//! | `validate` | the rules across fields: names, dependencies, cycles, ranges ([`Strategy::validate`]) |
//! | `finding` | problems found ([`Finding`]) and the error carrying all of them ([`StrategyError`]) |
//! | `inventory` | the nodes a strategy selects from ([`InventoryNode`], [`parse_inventory`]) |
//! | `select` | which nodes a group selects |
//! | `criteria` | evaluating success criteria ([`CriterionFailure`]) |
//! | `status` | node, group, phase and deployment states, actions and events ([`DeploymentEvent`], [`Action`]) |
//! | `sequencer` | the state machine ([`Sequencer`]) |
//! | `report` | the report and its text rendering ([`Report`]) |
//! | `check` | offline [`check`] and [`simulate`] |
//!
//! The rules, defaults and the order among ready groups are described in this folder's README.

mod check;
mod configuration;
mod criteria;
mod finding;
mod inventory;
mod load;
mod model;
mod parse;
mod report;
mod select;
mod sequencer;
mod status;
mod text;
mod validate;

pub use check::{
    check, simulate, CheckReport, GroupCheck, PhaseCheck, SimulatedFailure, SimulatedFailureError,
    Simulation, Warning,
};
pub use configuration::LoadedConfiguration;
pub use configuration::{
    load_configuration, DeploymentConfiguration, CONFIGURATION_SCHEMA, DEFAULT_STRATEGY_NAME,
};
pub use criteria::{Criterion, CriterionFailure};
pub use finding::{Finding, StrategyError};
pub use inventory::{check_inventory, parse_inventory, InventoryError, InventoryNode};
pub use load::{load_strategy, LoadedStrategy, Source};
pub use model::{
    Group, Label, Phase, Selector, Strategy, SuccessCriteria, DEFAULT_GROUP_NAME,
    DEFAULT_MAX_CONCURRENT_GROUPS, DEFAULT_PHASE_TIMEOUT_SECS, SHIPYARD_SCHEMA,
};
pub use parse::{parse_strategy, strategy_from_value};
pub use report::{GroupReport, NodeReport, PhaseReport, Report, Step};
pub use sequencer::{InFlightPhase, SequenceError, Sequencer};
pub use status::{
    Action, DeploymentEvent, DeploymentStatus, FailureReason, GroupStatus, NodeOutcome, NodeResult,
    NodeStatus, PhaseOutcome, SkipCause,
};
