//! A kind that exists only in the tests, to prove that adding a kind is its file plus its line in
//! the list of kinds (`kinds::list`): nothing else in the crate names it, yet the handshake loads its script, inspect names
//! it and force-release deletes its extra key.

use crate::algo::value::LockValue;
use crate::kinds::base::BASE;
use crate::protocol::cmd::{script_cmd, Args, Cmd, Keys, Op, Script};
use crate::protocol::scripts::RELEASE;
use crate::protocol::spec::{Forced, Spec, Suffix};

/// The probe: an exclusive lock that also sets `prefix{resource}:probe`.
pub(crate) static PROBE: Spec = Spec {
    name: "probe",
    code: b't',
    acquire: acquire_probe,
    release_notify: &RELEASE,
    extends_first_key: false,
    suffixes: &[Suffix {
        name: b":probe",
        forced: Forced::Counted,
    }],
    marks: &[],
    queues_locally: false,
    hands_off: false,
    scripts: &[&ACQUIRE_PROBE],
    inspect: &[],
    ..BASE
};

/// `SET NX PX` on the lock key and, when it lands, the probe key for as long. Answers 1 or -1.
pub(crate) static ACQUIRE_PROBE: Script = Script {
    source: "if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then \
redis.call('SET', KEYS[2], '1', 'PX', ARGV[2]) return 1 end return -1",
    sha1: "7f359c5a16749accd2c43fdbea8e58a7d6075521",
    resend: false,
    op: Op::Own,
};

fn acquire_probe(keys: &Keys, value: LockValue, ttl_ms: u64, _: u64) -> Cmd {
    script_cmd(&ACQUIRE_PROBE, keys, value, Args::of(&[ttl_ms]))
}
