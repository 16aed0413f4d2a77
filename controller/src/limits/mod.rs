//! Bounds on what peers that are not yet trusted can make the controller hold: registrations per source
//! address ([`registrations`]) and connections ([`connections`]); and the process's own open-file limit
//! ([`files`]), raised so that every agent can hold its connection. Accepted agents and authenticated
//! operators are never counted against these bounds, so unauthenticated traffic cannot starve them.

pub mod connections;
pub mod files;
pub mod registrations;

pub use connections::{ConnectionGate, ConnectionTicket, PeerAddr, Trust};
pub use registrations::RegistrationRate;
