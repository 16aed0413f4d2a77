//! The messages agents and the controller exchange.
