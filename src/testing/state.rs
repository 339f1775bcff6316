//! Everything one memory node holds, behind its one mutex (which is what makes a script atomic):
//! its data (`super::db`), its scripts, and who it is — the run id and start time `INFO server`
//! reports, which a restart renews.

use super::db::Db;
use super::lua::Scripts;

/// Who a node is for this life (a restart makes another).
#[derive(Debug, Clone)]
pub(crate) struct Identity {
    /// 40 random hex digits, as Redis's `run_id`.
    pub(crate) run_id: String,
    /// When this life began, on the node's clock (ms): `uptime_in_seconds` counts from here.
    pub(crate) started_ms: i64,
    /// The port it listens on (`tcp_port`).
    pub(crate) port: u16,
}

impl Identity {
    fn new(port: u16, now_ms: i64) -> Self {
        Self {
            run_id: (0..5)
                .map(|_| format!("{:08x}", fastrand::u32(..)))
                .collect(),
            started_ms: now_ms,
            port,
        }
    }
}

/// One node's state.
#[derive(Debug)]
pub(crate) struct State {
    pub(crate) db: Db,
    pub(crate) scripts: Scripts,
    pub(crate) identity: Identity,
}

impl State {
    /// A node just started on `port`: no keys, no scripts, uptime 0.
    pub(crate) fn new(port: u16) -> Self {
        let db = Db::default();
        let identity = Identity::new(port, db.clock.now_ms());
        Self {
            db,
            scripts: Scripts::new(),
            identity,
        }
    }

    /// As after a crash and a restart without persistence: no keys, no scripts, no subscribers,
    /// a new run id and uptime 0. The clock keeps its steps: it is the machine's.
    pub(crate) fn restart_empty(&mut self) {
        self.db.keys.clear();
        self.db.channels.clear();
        self.scripts = Scripts::new();
        self.identity = Identity::new(self.identity.port, self.db.clock.now_ms());
    }
}
