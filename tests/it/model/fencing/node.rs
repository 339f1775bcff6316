//! The fencing model's nodes: one message handled atomically, as its Lua script does.

#[derive(Clone, Copy)]
pub struct Guards {
    /// The commit raises a counter only while the committer's lock value is on the node.
    pub check_owner: bool,
    /// The commit refuses (CONFLICT) when the counter is already at or above the proposal.
    pub conflict: bool,
}

pub const TTL: u64 = 100;
pub const TIMEOUT: u64 = 10;
pub const DRIFT: u64 = 2;

#[derive(Default)]
pub struct Node {
    /// (value, expires_at)
    pub lock: Option<(u64, u64)>,
    pub counter: u64,
}

pub enum Msg {
    Acquire { value: u64 },
    Commit { value: u64, token: u64 },
    Release { value: u64 },
}

#[derive(Clone)]
pub enum Answer {
    Acquired { yes: bool, counter: u64 },
    Committed { ok: bool, conflict: Option<u64> },
}

/// One node handling one message atomically, as its Lua script does.
pub fn node_step(node: &mut Node, now: u64, msg: Msg, guards: Guards) -> Option<Answer> {
    if node.lock.is_some_and(|(_, exp)| exp <= now) {
        node.lock = None;
    }
    match msg {
        Msg::Acquire { value } => {
            let yes = node.lock.is_none();
            if yes {
                node.lock = Some((value, now + TTL));
            }
            Some(Answer::Acquired {
                yes,
                counter: node.counter,
            })
        }
        Msg::Commit { value, token } => {
            let owner = node.lock.is_some_and(|(v, _)| v == value);
            if guards.check_owner && !owner {
                Some(Answer::Committed {
                    ok: false,
                    conflict: None,
                })
            } else if guards.conflict && node.counter >= token {
                Some(Answer::Committed {
                    ok: false,
                    conflict: Some(node.counter),
                })
            } else {
                node.counter = node.counter.max(token);
                Some(Answer::Committed {
                    ok: true,
                    conflict: None,
                })
            }
        }
        Msg::Release { value } => {
            if node.lock.is_some_and(|(v, _)| v == value) {
                node.lock = None;
            }
            None
        }
    }
}
