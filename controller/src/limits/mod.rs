//! Bounds on what peers that are not yet trusted can make the controller hold: registrations per source
//! address ([`registrations`]) and connections ([`connections`]). Accepted agents and authenticated
//! operators are never counted against these bounds, so unauthenticated traffic cannot starve them.

pub mod connections;
pub mod registrations;

pub use connections::{ConnectionGate, ConnectionTicket, PeerAddr, Trust};
pub use registrations::RegistrationRate;
