//! Local gates: per engine, resource and K, at most K of the engine's tasks attempt at once, for the
//! kinds that ask (a counting semaphore, so its own contenders do not split the nodes' votes among
//! themselves). Kept by the engine's `Core`, so two engines in one process gate separately.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use bytes::Bytes;
use tokio::sync::Semaphore;

/// One engine's gates, by resource key and K. Entries go when nobody holds their gate (swept as the
/// map grows), so distinct resources do not accumulate. `None` once the engine is shut down.
#[derive(Debug)]
pub(crate) struct Gates(Mutex<Option<GateMap>>);

/// The live gates by resource key and K.
type GateMap = HashMap<(Bytes, u32), Weak<Semaphore>>;

impl Default for Gates {
    fn default() -> Self {
        Self(Mutex::new(Some(HashMap::new())))
    }
}

impl Gates {
    /// The gate for `key` with `permits`, made on first use.
    pub(crate) fn get(&self, key: &Bytes, permits: u32) -> Arc<Semaphore> {
        let id = (key.clone(), permits);
        let mut gates = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let Some(gates) = gates.as_mut() else {
            // Shut down: a closed gate, whose waiters are told so.
            let gate = Semaphore::new(0);
            gate.close();
            return Arc::new(gate);
        };
        if let Some(gate) = gates.get(&id).and_then(Weak::upgrade) {
            return gate;
        }
        if gates.len() >= 64 && gates.len().is_power_of_two() {
            gates.retain(|_, g| g.strong_count() > 0);
        }
        let gate = Arc::new(Semaphore::new(permits as usize));
        gates.insert(id, Arc::downgrade(&gate));
        gate
    }

    /// The engine shuts down: every gate is closed, so the tasks waiting at one stop waiting (their
    /// acquire ends with `LockError::Closed`), and so is every gate asked for later.
    pub(crate) fn close(&self) {
        let gates = self.0.lock().unwrap_or_else(|p| p.into_inner()).take();
        for gate in gates.into_iter().flat_map(HashMap::into_values) {
            if let Some(gate) = gate.upgrade() {
                gate.close();
            }
        }
    }
}
