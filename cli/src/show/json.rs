//! `--json`: the CLI's own serde types, mapped from the library's (which stay serde-free). Durations
//! are whole milliseconds (`_ms`) or microseconds (`_us`); absent things are `null`.

use serde::Serialize;

use redlock_engine::{ForceRelease, Inspection, NodeStatus, QuarantineState};

use super::table::{kind, verdict};

#[derive(Serialize)]
struct InspectionJson<'a> {
    resource: String,
    verdict: &'static str,
    quorum: usize,
    held_on: usize,
    free_on: usize,
    nodes: Vec<NodeJson<'a>>,
}

#[derive(Serialize)]
struct NodeJson<'a> {
    node: &'a str,
    votes: bool,
    /// `quarantined`, `clock_jump`, or the error's text.
    not_voting: Option<String>,
    /// Why the node gave no answer.
    error: Option<String>,
    held: Option<bool>,
    kind: Option<&'static str>,
    ttl_ms: Option<u128>,
    ours: Option<bool>,
    readers: Option<u64>,
    our_readers: Option<u64>,
    write_intent_ms: Option<u128>,
    fence: Option<u64>,
    waiters_ms: Option<u128>,
    /// A semaphore's live permits on the node, and its K (null: no semaphore).
    permits: Option<u64>,
    permit_limit: Option<u64>,
    /// The fair lock's waiters queued on the node (the holder not counted).
    fair_waiters: Option<u64>,
    label: Option<&'a str>,
}

fn ms(d: Option<std::time::Duration>) -> Option<u128> {
    d.map(|d| d.as_millis())
}

pub fn inspection(seen: &Inspection) -> String {
    let nodes = seen
        .nodes
        .iter()
        .map(|n| {
            let state = n.state.as_ref().ok();
            NodeJson {
                node: &n.node,
                votes: n.not_voting.is_none(),
                not_voting: n.not_voting.as_ref().map(|e| match e {
                    redlock_engine::NodeError::Quarantined => "quarantined".into(),
                    redlock_engine::NodeError::ClockJump => "clock_jump".into(),
                    other => other.to_string(),
                }),
                error: n.state.as_ref().err().map(ToString::to_string),
                held: state.map(|s| s.held),
                kind: state.and_then(|s| s.kind.map(|k| kind(Some(k)))),
                ttl_ms: state.and_then(|s| ms(s.remaining)),
                ours: state.map(|s| s.ours),
                readers: state.map(|s| s.readers),
                our_readers: state.map(|s| s.our_readers),
                write_intent_ms: state.and_then(|s| ms(s.write_intent)),
                fence: state.and_then(|s| s.fence),
                waiters_ms: state.and_then(|s| ms(s.waiters)),
                permits: state.map(|s| s.permits),
                permit_limit: state.and_then(|s| s.permit_limit),
                fair_waiters: state.map(|s| s.fair_waiters),
                label: state.and_then(|s| s.label.as_deref()),
            }
        })
        .collect();
    to_string(&InspectionJson {
        resource: String::from_utf8_lossy(&seen.resource).into_owned(),
        verdict: verdict(seen.verdict),
        quorum: seen.quorum,
        held_on: seen.held_on,
        free_on: seen.free_on,
        nodes,
    })
}

#[derive(Serialize)]
struct StatusJson<'a> {
    node: &'a str,
    connected: bool,
    votes: bool,
    rtt_us: Option<u128>,
    run_id: Option<&'a str>,
    uptime_s: Option<u64>,
    identity_read_ms_ago: Option<u128>,
    /// `off`, `clear`, `quarantined`, `unidentified`.
    quarantine: &'static str,
    quarantine_left_ms: Option<u128>,
    clock_silenced_ms: Option<u128>,
    durable_claim: bool,
    durable_trusted: Option<bool>,
    last_error: Option<String>,
}

pub fn nodes(status: &[NodeStatus]) -> String {
    let nodes: Vec<StatusJson> = status
        .iter()
        .map(|s| {
            let (quarantine, left) = match s.quarantine {
                QuarantineState::Off => ("off", None),
                QuarantineState::Clear => ("clear", None),
                QuarantineState::For(left) => ("quarantined", Some(left.as_millis())),
                _ => ("unidentified", None),
            };
            StatusJson {
                node: &s.node,
                connected: s.connected,
                votes: s.votes,
                rtt_us: s.rtt.map(|r| r.as_micros()),
                run_id: s.identity.as_ref().map(|i| i.run_id.as_str()),
                uptime_s: s.identity.as_ref().map(|i| i.uptime.as_secs()),
                identity_read_ms_ago: s.identity.as_ref().map(|i| i.read_ago.as_millis()),
                quarantine,
                quarantine_left_ms: left,
                clock_silenced_ms: ms(s.clock_silenced_for),
                durable_claim: s.durable_claim,
                durable_trusted: s
                    .identity
                    .as_ref()
                    .filter(|_| s.durable_claim)
                    .map(|i| i.durable),
                last_error: s.last_error.as_ref().map(ToString::to_string),
            }
        })
        .collect();
    to_string(&serde_json::json!({ "nodes": nodes }))
}

#[derive(Serialize)]
struct ForcedNode<'a> {
    node: &'a str,
    deleted: Option<u64>,
    error: Option<String>,
}

pub fn forced(resource: &str, status: &[NodeStatus], done: &ForceRelease) -> String {
    let nodes: Vec<ForcedNode> = status
        .iter()
        .zip(&done.nodes)
        .map(|(s, n)| ForcedNode {
            node: &s.node,
            deleted: n.as_ref().ok().copied(),
            error: n.as_ref().err().map(ToString::to_string),
        })
        .collect();
    to_string(&serde_json::json!({
        "resource": resource,
        "answered": done.answered,
        "deleted_on": done.deleted_on,
        "nodes": nodes,
    }))
}

fn to_string(value: &impl Serialize) -> String {
    // Plain data, string keys: serialization cannot fail.
    serde_json::to_string(value).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}
