//! fred's answers as the engine's: a reply as a [`Reply`], fred's error as a [`NodeError`].

use ::fred::prelude::{Error as FredError, ErrorKind, Value};

use crate::error::NodeError;
use crate::protocol::cmd::{NodeResult, Reply};

pub(super) fn reply(result: Result<Value, FredError>) -> NodeResult {
    match result {
        Ok(Value::Null) => Ok(Reply::Nil),
        Ok(Value::Integer(i)) => Ok(Reply::Int(i)),
        Ok(Value::String(s)) => Ok(Reply::Data(s.into_inner())),
        Ok(Value::Bytes(b)) => Ok(Reply::Data(b)),
        Ok(_) => Ok(Reply::Other),
        Err(e) => Err(node_error(&e)),
    }
}

/// Maps fred's error to ours. fred files server errors under generic kinds (`ERR` is `Unknown`, `WRONGTYPE`
/// is `InvalidArgument`, see `protocol::utils::pretty_error`) but keeps the full message, whose first word is
/// the server's all-caps error code; fred's own messages are in sentence case.
fn node_error(e: &FredError) -> NodeError {
    let details = e.details();
    let code = details.split_whitespace().next().unwrap_or("");
    let from_server = code.len() >= 2
        && code
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit());
    match e.kind() {
        ErrorKind::Timeout => NodeError::Timeout,
        ErrorKind::Backpressure => NodeError::Backpressure,
        // The connection closed under the command: it may have run.
        ErrorKind::IO | ErrorKind::Canceled => NodeError::ConnectionLost,
        _ if from_server => NodeError::Server(details.to_string()),
        // e.g. "Too many failed write attempts." (fred refused to send it again after a reconnect).
        ErrorKind::Unknown | ErrorKind::Routing => NodeError::ConnectionLost,
        kind => NodeError::Protocol(format!("{kind:?}: {details}")),
    }
}
