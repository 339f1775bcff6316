//! [`Reply`]: a node's answer reduced to what the algorithm looks at, and [`NodeResult`]. Plain data,
//! so the vote readers (`quorum::Vote::of_set`, `of_script`) stay below the protocol that sends.

use bytes::Bytes;

use crate::error::NodeError;

/// A node's reply, reduced to what the algorithm looks at. Server errors arrive as [`NodeError::Server`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reply {
    /// `+OK`
    Ok,
    /// A nil reply (`SET NX` on an existing key).
    Nil,
    /// An integer reply (the scripts' `1`/`0`/`-1`).
    Int(i64),
    /// A bulk string (fred: also a simple string, which its RESP2 values cannot tell apart).
    Data(Bytes),
    /// A `TIME` reply (two bulk strings of digits: seconds, microseconds), as microseconds since the
    /// Unix epoch (pipeline transport).
    Time(i64),
    /// A simple string other than `OK` (pipeline transport). No command the engine sends answers one.
    Status(Bytes),
    /// Anything else (arrays); the algorithm never expects one.
    Other,
}

impl Reply {
    /// The reply's RESP type, for errors: never its content, which could be a lock value or megabytes.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Self::Ok => "status OK",
            Self::Nil => "nil",
            Self::Int(_) => "integer",
            Self::Data(_) => "bulk string",
            Self::Status(_) => "status string",
            Self::Time(_) => "TIME array",
            Self::Other => "array",
        }
    }

    /// The node error for a reply of the wrong type: names the command and the type received.
    pub(crate) fn unexpected(&self, command: &str) -> NodeError {
        NodeError::Protocol(format!("{command}: unexpected reply type {}", self.kind()))
    }
}

/// The result of one command on one node.
pub(crate) type NodeResult = Result<Reply, NodeError>;
