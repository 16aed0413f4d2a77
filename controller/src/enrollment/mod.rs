//! Servers known before they first boot: enrollment files read ([`file`]), BMC passwords sealed at
//! rest ([`secrets`]). The store keeps the enrollments (`store::sql::enrollments`), and matches agents
//! to them as they register.

pub mod file;
pub mod secrets;

use crate::store::NewEnrollment;
use file::Enrollee;
use secrets::{Sealer, SecretError};

/// An enrollee as the store writes it, its password sealed.
pub fn to_new(e: Enrollee, sealer: &Sealer, now_ms: i64) -> Result<NewEnrollment, SecretError> {
    let mut server = e.server;
    if let Some(password) = &e.password {
        server.bmc_secret = Some(sealer.seal(&server.name, password)?);
    }
    server.now_ms = now_ms;
    Ok(server)
}
