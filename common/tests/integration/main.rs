//! The behaviour tests of `plinth-common`, one module a subject, in one test binary: Fuel's
//! expressions, graphs against Fuel's corpus, strategies against Shipyard's documents and the seed, the running deployment against its recorded cases.
//!
//! One subject: `cargo test -p plinth-common --test integration MODULE::`. The expression language's
//! own tests are in the `plinth-yaql` crate.

mod run_support;
mod support;

mod deploy_facts_changed;
mod deploy_seed_001;
mod deploy_shared;
mod expr_fuel;
mod expr_fuel_library;
mod expr_fuel_results;
mod graph_checks_dot;
mod graph_computed_fields;
mod graph_errors;
mod graph_fuel_corpus;
mod graph_fuel_yaql;
mod graph_merge_props;
mod graph_model_load;
mod graph_resolve;
mod graph_unknown_keys;
mod run_cases;
mod run_graph_type;
mod run_properties;
mod snapshot_resolve;
mod strategy_document;
mod strategy_properties;
mod strategy_seed;
mod strategy_sequencer;
mod strategy_shipyard_corpus;
mod tags_matching;
mod tags_primary;
mod tags_rules;
