//! Moving one hash slot between masters of a [`RedisCluster`] by hand, the way `redis-cli --cluster
//! reshard` does, in steps a test can interleave with load: [`RedisCluster::begin_migration`]
//! (`CLUSTER SETSLOT ... IMPORTING` on the target, `MIGRATING` on the source: from here the source
//! answers `ASK` for keys it no longer has), [`RedisCluster::migrate_keys`] (`MIGRATE` of the keys
//! still on the source, a few at a time) and [`RedisCluster::finish_migration`] (`SETSLOT ... NODE`
//! everywhere: from here the source answers `MOVED`).

use crate::cluster::RedisCluster;

impl RedisCluster {
    /// `CLUSTER MYID` of member `index`.
    pub fn node_id(&self, index: usize) -> String {
        self.members[index].cmd_str(&["CLUSTER", "MYID"])
    }

    /// Starts moving `slot` from member `from` to member `to` (both masters).
    ///
    /// # Panics
    /// If either member refuses.
    pub fn begin_migration(&self, slot: u16, from: usize, to: usize) {
        let slot = slot.to_string();
        let (from_id, to_id) = (self.node_id(from), self.node_id(to));
        let importing = ["CLUSTER", "SETSLOT", &slot, "IMPORTING", &from_id];
        assert_eq!(
            self.members[to].cmd_str(&importing),
            "OK",
            "SETSLOT IMPORTING"
        );
        let migrating = ["CLUSTER", "SETSLOT", &slot, "MIGRATING", &to_id];
        assert_eq!(
            self.members[from].cmd_str(&migrating),
            "OK",
            "SETSLOT MIGRATING"
        );
    }

    /// Moves up to `batch` keys of `slot` still on `from` to `to` with one `MIGRATE`; how many it
    /// moved (0: none left).
    ///
    /// # Panics
    /// If `MIGRATE` fails.
    pub fn migrate_keys(&self, slot: u16, from: usize, to: usize, batch: usize) -> usize {
        let listed = self.members[from].cmd_str(&[
            "CLUSTER",
            "GETKEYSINSLOT",
            &slot.to_string(),
            &batch.to_string(),
        ]);
        let keys: Vec<&str> = listed.split(' ').filter(|k| !k.is_empty()).collect();
        if keys.is_empty() {
            return 0;
        }
        let port = self.members[to].port.to_string();
        let mut args = vec!["MIGRATE", "127.0.0.1", &port, "", "0", "5000", "KEYS"];
        args.extend(&keys);
        let reply = self.members[from].cmd_str(&args);
        // NOKEY: every listed key expired or was deleted meanwhile (locks are released under load).
        assert!(reply == "OK" || reply == "NOKEY", "MIGRATE: {reply}");
        keys.len()
    }

    /// Ends the migration of `slot`: `to` owns it, told to every running master (the target first,
    /// as `redis-cli` does, so it never serves a slot nobody thinks it has).
    ///
    /// # Panics
    /// If a master refuses.
    pub fn finish_migration(&self, slot: u16, to: usize) {
        let (slot, to_id) = (slot.to_string(), self.node_id(to));
        let order = std::iter::once(to).chain((0..self.members.len()).filter(|&i| i != to));
        for i in order {
            if self.members[i].pid().is_none() || !self.is_master(i) {
                continue;
            }
            let reply = self.members[i].cmd_str(&["CLUSTER", "SETSLOT", &slot, "NODE", &to_id]);
            assert_eq!(reply, "OK", "SETSLOT NODE on member {i}");
        }
    }
}
