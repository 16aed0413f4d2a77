//! What can go wrong talking to a BMC.

use std::time::Duration;

/// A BMC operation that failed. `bmc` is the BMC's address (the Redfish base URL or the IPMI
/// `host:port`); no message ever holds the password (text from the BMC or ipmitool is redacted too).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BmcError {
    /// The BMC refused the user name or password (HTTP 401 or 403; an IPMI session refused for
    /// authentication).
    #[error("the BMC at {bmc} refused the credentials of user {username:?}: {detail}")]
    Credentials {
        /// The BMC.
        bmc: String,
        /// The user whose credentials were refused.
        username: String,
        /// What the BMC or ipmitool said.
        detail: String,
    },
    /// The BMC cannot be reached: connection refused, no route, a name that does not resolve, a TLS
    /// certificate that is not trusted, a connection cut short.
    #[error("cannot reach the BMC at {bmc}: {reason}")]
    Unreachable {
        /// The BMC.
        bmc: String,
        /// Why.
        reason: String,
    },
    /// The operation did not finish within the timeout.
    #[error("the BMC at {bmc} did not answer within {after:?}")]
    Timeout {
        /// The BMC.
        bmc: String,
        /// The timeout that passed.
        after: Duration,
    },
    /// The Redfish service answered with an HTTP error other than 401 or 403.
    #[error("the BMC at {bmc} answered HTTP {status}: {message}")]
    Http {
        /// The BMC.
        bmc: String,
        /// The HTTP status.
        status: u16,
        /// The Redfish error message (`error.@Message.ExtendedInfo[].Message`, else `error.message`),
        /// or the start of the body.
        message: String,
    },
    /// The BMC answered something that cannot be used (not JSON, a missing or unknown field, too large).
    #[error("the BMC at {bmc} sent an answer that cannot be used: {reason}")]
    Answer {
        /// The BMC.
        bmc: String,
        /// What is wrong with it.
        reason: String,
    },
    /// No `system_id` was given and the Redfish service lists no system, or several.
    #[error("the BMC at {bmc} {reason}")]
    Systems {
        /// The BMC.
        bmc: String,
        /// What it lists.
        reason: String,
    },
    /// ipmitool failed for another reason than the above (or cannot be run).
    #[error("ipmitool failed against the BMC at {bmc}: {message}")]
    Tool {
        /// The BMC.
        bmc: String,
        /// What ipmitool said (its error lines), or why it could not be run.
        message: String,
    },
    /// The client for the BMC cannot be made (a CA file that cannot be read, say).
    #[error("cannot set up the client for the BMC at {bmc}: {reason}")]
    Setup {
        /// The BMC.
        bmc: String,
        /// Why.
        reason: String,
    },
}
