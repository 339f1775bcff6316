//! The memory node against a real `redis-server`, so the two cannot drift apart: the same seeded
//! random runs of the engine's real operations go to both — every kind's acquire, release, extend
//! and holds built by the kinds' own command builders (`Kind`), their other scripts, the plain
//! lock's hand-off, the coalesced releases and extend, the operator's inspect and forced release,
//! plain `SET NX PX`, `GET`, `DEL` — and each step requires the same reply and the same keys (type,
//! value, members and scores, TTL or none), and each burst the same pub/sub messages.
//!
//! Time is the one thing the two cannot share: each has its own clock and they run each command
//! about a millisecond apart. So numbers that are times (a `PTTL`, a score of `now + ttl`) compare
//! within a tolerance, and expiry happens only between bursts: a burst is kept much shorter than
//! the short TTL, and the pause after it outlasts every short expiry (twice the TTL: the fair
//! queue's keys), so no key expires while the two could disagree on whether it has.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::node::MemoryNode;
use super::reply::Reply;
use crate::algo::keys::{key, KeyFormat};
use crate::algo::value::LockValue;
use crate::kinds::exclusive::{labeled_acquire, EXCLUSIVE, LABELED};
use crate::kinds::fair::FAIR;
use crate::kinds::fenced::{COMMIT_FENCE, FENCED};
use crate::kinds::multi::MULTI;
use crate::kinds::rwlock::{READ, WRITE};
use crate::kinds::semaphore::SEMAPHORE;
use crate::protocol::cmd::{script_cmd, Args, Cmd, Keys, Script};
use crate::protocol::handoff::{Entry, PLAIN_HANDOFF};
use crate::protocol::scripts::{
    BUSY, EXTEND_MANY, MARK_WAITING, RELEASE_MANY, RELEASE_MANY_ANY_SLOT, RELEASE_NOTIFY_MANY,
    RELEASE_NOTIFY_MANY_ANY_SLOT,
};
use crate::protocol::server::Profile;
use crate::protocol::spec::{Kind, Spec};

/// The short TTL: keys with it live through one burst and are gone before the next.
const SHORT: u64 = 200;
/// The long TTL: outlives the test.
const LONG: u64 = 60_000;
/// A burst ends by this much time, well inside [`SHORT`], or after this many steps (so that
/// expiries come often)...
const BURST: Duration = Duration::from_millis(SHORT / 3);
const BURST_STEPS: usize = 20;
/// ...and the pause after it outlasts every short expiry (`2 * SHORT`: the fair queue's keys).
const PAUSE: Duration = Duration::from_millis(2 * SHORT + 150);
const PREFIX: &[u8] = b"d:";
const RESOURCES: [&[u8]; 2] = [b"a", b"b"];

/// A connection speaking RESP: one request out, one reply back.
struct Client {
    stream: TcpStream,
    buf: BytesMut,
}

impl Client {
    async fn connect(port: u16) -> Self {
        let stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        stream.set_nodelay(true).unwrap();
        Self {
            stream,
            buf: BytesMut::new(),
        }
    }

    async fn call(&mut self, request: &[u8]) -> Reply {
        self.stream.write_all(request).await.unwrap();
        self.read().await
    }

    async fn read(&mut self) -> Reply {
        loop {
            if let Some((reply, used)) = parse(&self.buf) {
                let _ = self.buf.split_to(used);
                return reply;
            }
            let n = self.stream.read_buf(&mut self.buf).await.unwrap();
            assert!(n > 0, "the server closed the connection");
        }
    }

    /// Every reply (pushed message) that arrives within `quiet` of the last one.
    async fn drain(&mut self, quiet: Duration) -> Vec<Reply> {
        let mut got = Vec::new();
        while let Ok(reply) = tokio::time::timeout(quiet, self.read()).await {
            got.push(reply);
        }
        got
    }
}

/// One complete reply at the start of `buf`, and its length.
fn parse(buf: &[u8]) -> Option<(Reply, usize)> {
    let end = buf.windows(2).position(|w| w == b"\r\n")?;
    let line = std::str::from_utf8(&buf[1..end]).ok()?;
    let next = end + 2;
    match buf.first()? {
        b'+' => Some((Reply::Status(Bytes::copy_from_slice(line.as_bytes())), next)),
        b'-' => Some((Reply::Error(line.to_string()), next)),
        b':' => Some((Reply::Int(line.parse().ok()?), next)),
        b'$' => {
            let len: i64 = line.parse().ok()?;
            if len < 0 {
                return Some((Reply::Nil, next));
            }
            let stop = next + len as usize;
            (buf.len() >= stop + 2).then(|| {
                (
                    Reply::Bulk(Bytes::copy_from_slice(&buf[next..stop])),
                    stop + 2,
                )
            })
        }
        b'*' => {
            let n: i64 = line.parse().ok()?;
            if n < 0 {
                return Some((Reply::Nil, next));
            }
            let mut items = Vec::new();
            let mut at = next;
            for _ in 0..n {
                let (item, used) = parse(&buf[at..])?;
                items.push(item);
                at += used;
            }
            Some((Reply::Array(items), at))
        }
        _ => panic!("not RESP: {:?}", String::from_utf8_lossy(buf)),
    }
}

/// A command as its arguments.
fn request(args: &[&[u8]]) -> Vec<u8> {
    let mut out = BytesMut::new();
    Reply::Array(
        args.iter()
            .map(|a| Reply::Bulk(Bytes::copy_from_slice(a)))
            .collect(),
    )
    .encode(&mut out);
    out.to_vec()
}

/// An engine command as the engine's transport writes it to a Redis (its scripts' profile).
fn wire(cmd: &Cmd) -> Vec<u8> {
    let mut out = BytesMut::new();
    crate::transport::encode(&mut out, cmd, Profile::default());
    out.to_vec()
}

/// `EVALSHA` of `script` with byte keys and arguments (the operator's and coalesced calls' form).
fn evalsha(script: &Script, keys: &[Bytes], argv: &[Bytes]) -> Vec<u8> {
    let numkeys = keys.len().to_string();
    let mut args: Vec<&[u8]> = vec![b"EVALSHA", script.sha1.as_bytes(), numkeys.as_bytes()];
    args.extend(keys.iter().chain(argv).map(|a| &a[..]));
    request(&args)
}

/// The keys of `spec`'s lock on `resource`, as the engine's `Core::target` builds them.
fn keys_of(spec: &Spec, resource: &[u8]) -> Keys {
    let base = key(KeyFormat::Tagged, PREFIX, resource, b"").unwrap();
    if spec.suffixes.is_empty() {
        return Keys::One(base);
    }
    let mut keys = vec![base];
    for suffix in spec.suffixes {
        keys.push(key(KeyFormat::Tagged, PREFIX, resource, suffix.name).unwrap());
    }
    Keys::Many(keys.into())
}

/// Every key a resource can have (its own, and every kind's beside it).
fn every_key(resource: &[u8]) -> Vec<Bytes> {
    let suffixes = crate::kinds::catalog().keys().iter().map(|s| s.name);
    std::iter::once(&b""[..])
        .chain(suffixes)
        .map(|s| key(KeyFormat::Tagged, PREFIX, resource, s).unwrap())
        .collect()
}

/// The waiters' names the hand-off operations draw from (few, so that they meet).
const NAMES: [u64; 3] = [2, 3, 4];

/// What the runs draw from: few of each, so that operations meet (the same key, value, ticket).
struct World {
    rng: fastrand::Rng,
    values: Vec<LockValue>,
}

impl World {
    fn resource(&mut self) -> &'static [u8] {
        RESOURCES[self.rng.usize(..RESOURCES.len())]
    }
    fn value(&mut self) -> LockValue {
        self.values[self.rng.usize(..self.values.len())]
    }
    fn ttl(&mut self) -> u64 {
        if self.rng.bool() {
            SHORT
        } else {
            LONG
        }
    }
    fn pick(&mut self, from: &[u64]) -> u64 {
        from[self.rng.usize(..from.len())]
    }
    /// A queue entry for `v` and `ttl` as the hand-off scripts take it: its name drawn first, then
    /// its enqueue time (the order every hand-off operation draws them in).
    fn entry(&mut self, v: LockValue, ttl: u64) -> Entry {
        Entry {
            name: self.pick(&NAMES),
            value: v,
            ttl_ms: ttl,
            since_us: self.pick(&[10, 20, 30]),
        }
    }
    fn any_key(&mut self) -> Bytes {
        let r = self.resource();
        let keys = every_key(r);
        keys[self.rng.usize(..keys.len())].clone()
    }

    /// One operation: its name (for the coverage count and a failure's history) and its bytes.
    fn op(&mut self) -> (&'static str, Vec<u8>) {
        let v = self.value();
        let r = self.resource();
        let ttl = self.ttl();
        let tickets = [1, 2, 3, 4, 5, 6];
        let [enqueue, _, _, _, unlock, leave] = FAIR.scripts else {
            panic!("the fair lock's scripts changed: update the differential test");
        };
        match self.rng.u32(..38) {
            0 => {
                let k = self.any_key();
                let ttl = ttl.to_string();
                let args: [&[u8]; 6] = [b"SET", &k, v.as_bytes(), b"NX", b"PX", ttl.as_bytes()];
                ("SET NX PX", request(&args))
            }
            1 => ("GET", request(&[b"GET", &self.any_key()])),
            2 => ("DEL", request(&[b"DEL", &self.any_key()])),
            3 => {
                let kind = Kind::new(&EXCLUSIVE, 0);
                (
                    "exclusive acquire",
                    wire(&kind.acquire_cmd(&keys_of(&EXCLUSIVE, r), v, ttl)),
                )
            }
            4 => {
                let notify = self.rng.bool();
                let kind = Kind::new(&EXCLUSIVE, 0);
                let cmd = kind.release_cmd(&keys_of(&EXCLUSIVE, r), v, notify);
                (
                    if notify { "RELEASE_NOTIFY" } else { "RELEASE" },
                    wire(&cmd),
                )
            }
            5 => {
                let kind = Kind::new(&EXCLUSIVE, 0);
                (
                    "EXTEND",
                    wire(&kind.extend_cmd(&keys_of(&EXCLUSIVE, r), v, ttl)),
                )
            }
            6 => {
                let kind = Kind::new(&EXCLUSIVE, 0);
                ("HOLDS", wire(&kind.holds_cmd(&keys_of(&EXCLUSIVE, r), v)))
            }
            7 => {
                let cmd = script_cmd(&MARK_WAITING, &keys_of(&EXCLUSIVE, r), v, Args::of(&[ttl]));
                ("MARK_WAITING", wire(&cmd))
            }
            8 => {
                let keys = keys_of(&LABELED, r);
                let cmd = script_cmd(&BUSY, &keys, LockValue::ZERO, Args::NONE);
                ("BUSY", wire(&cmd))
            }
            9 => {
                let label = Bytes::from_static(if self.rng.bool() { b"w-1" } else { b"job|7:x" });
                let label_ttl = self.ttl();
                let cmd = labeled_acquire(&keys_of(&LABELED, r), v, ttl, label_ttl, &label);
                ("ACQUIRE_LABELED", wire(&cmd))
            }
            10 => {
                let (kind, keys) = (Kind::new(&LABELED, 0), keys_of(&LABELED, r));
                ("EXTEND_LABELED", wire(&kind.extend_cmd(&keys, v, ttl)))
            }
            11 => {
                // The transport's coalesced releases: declared keys, or keys of any slot in ARGV.
                let (name, script, any_slot) = match self.rng.u32(..4) {
                    0 => ("RELEASE_MANY", &RELEASE_MANY, false),
                    1 => ("RELEASE_NOTIFY_MANY", &RELEASE_NOTIFY_MANY, false),
                    2 => ("RELEASE_MANY_ANY_SLOT", &RELEASE_MANY_ANY_SLOT, true),
                    _ => (
                        "RELEASE_NOTIFY_MANY_ANY_SLOT",
                        &RELEASE_NOTIFY_MANY_ANY_SLOT,
                        true,
                    ),
                };
                let locks: Vec<(Bytes, Bytes)> = (0..self.rng.usize(1..4))
                    .map(|_| {
                        let k = keys_of(&EXCLUSIVE, self.resource()).as_slice()[0].clone();
                        (k, Bytes::copy_from_slice(self.value().as_bytes()))
                    })
                    .collect();
                let keys: Vec<Bytes> = locks.iter().map(|(k, _)| k.clone()).collect();
                let values: Vec<Bytes> = locks.iter().map(|(_, v)| v.clone()).collect();
                let request = match any_slot {
                    false => evalsha(script, &keys, &values),
                    true => evalsha(script, &[], &[keys, values].concat()),
                };
                (name, request)
            }
            12 => {
                let mut keys = Vec::new();
                let mut argv = Vec::new();
                for _ in 0..self.rng.usize(1..4) {
                    keys.push(keys_of(&EXCLUSIVE, self.resource()).as_slice()[0].clone());
                    argv.push(Bytes::copy_from_slice(self.value().as_bytes()));
                    argv.push(Bytes::from(self.ttl().to_string()));
                }
                ("EXTEND_MANY", evalsha(&EXTEND_MANY, &keys, &argv))
            }
            13 => {
                let entry = self.entry(v, ttl);
                let mark = self.ttl();
                let keys = keys_of(&EXCLUSIVE, r);
                let sweep = self.pick(&[0, 1]) == 1;
                let cmd = PLAIN_HANDOFF.take_over_cmd(&keys, entry, mark, sweep);
                ("TAKE_OVER", wire(&cmd))
            }
            14 => {
                let cmd = PLAIN_HANDOFF.release_cmd(&keys_of(&EXCLUSIVE, r), v, SHORT);
                ("RELEASE_HANDOFF", wire(&cmd))
            }
            15 => {
                let name = self.pick(&NAMES);
                let cmd = PLAIN_HANDOFF.release_to_cmd(&keys_of(&EXCLUSIVE, r), v, SHORT, name);
                ("RELEASE_TO", wire(&cmd))
            }
            16 => {
                let entry = self.entry(v, ttl);
                let reserve = self.pick(&[0, SHORT]);
                let keys = keys_of(&EXCLUSIVE, r);
                let cmd = PLAIN_HANDOFF.step_back_cmd(&keys, entry, reserve);
                ("STEP_BACK", wire(&cmd))
            }
            17 => {
                let entry = self.entry(v, ttl);
                let sweep = self.pick(&[0, 1]) == 1;
                let cmd = PLAIN_HANDOFF.unmark_cmd(&keys_of(&EXCLUSIVE, r), entry, sweep);
                ("UNMARK", wire(&cmd))
            }
            18 => {
                let (kind, keys) = (Kind::new(&FENCED, 0), keys_of(&FENCED, r));
                ("ACQUIRE_FENCED", wire(&kind.acquire_cmd(&keys, v, ttl)))
            }
            19 => {
                // Proposals as the engine makes them: ms since 1970 times 1000, plus a step.
                let proposal = 1_760_000_000_000_000 + self.pick(&[0, 1000, 2000]);
                let cmd = script_cmd(
                    &COMMIT_FENCE,
                    &keys_of(&FENCED, r),
                    v,
                    Args::of(&[proposal]),
                );
                ("COMMIT_FENCE", wire(&cmd))
            }
            20 => self.kind_op(&FENCED, 0, r, v, ttl),
            21 | 22 => {
                let mut resources: Vec<&[u8]> = RESOURCES.to_vec();
                self.rng.shuffle(&mut resources);
                resources.truncate(self.rng.usize(1..=2));
                let keys: Vec<Bytes> = resources
                    .iter()
                    .map(|r| key(KeyFormat::Tagged, PREFIX, r, b"").unwrap())
                    .collect();
                let keys = Keys::Many(keys.into());
                let kind = Kind::new(&MULTI, 0);
                match self.rng.u32(..4) {
                    0 => ("ACQUIRE_MULTI", wire(&kind.acquire_cmd(&keys, v, ttl))),
                    1 => ("RELEASE_MULTI", wire(&kind.release_cmd(&keys, v, false))),
                    2 => ("EXTEND_MULTI", wire(&kind.extend_cmd(&keys, v, ttl))),
                    _ => ("HOLDS_ALL", wire(&kind.holds_cmd(&keys, v))),
                }
            }
            23 | 24 => {
                let max_readers = self.pick(&[1, 2]);
                self.kind_op(&READ, max_readers, r, v, ttl)
            }
            25 | 26 => {
                let ticket = self.pick(&[7, 8]);
                let kind = Kind::new(&WRITE, ticket);
                match kind.give_up_cmd(&keys_of(&WRITE, r)) {
                    Some(cmd) if self.rng.u32(..4) == 0 => ("write give up", wire(&cmd)),
                    _ => self.kind_op(&WRITE, ticket, r, v, ttl),
                }
            }
            27 | 28 => {
                let permits = self.pick(&[1, 2]);
                self.kind_op(&SEMAPHORE, permits, r, v, ttl)
            }
            29 | 30 | 37 => {
                let ticket = self.pick(&tickets);
                self.kind_op(&FAIR, ticket, r, v, ttl)
            }
            31 | 36 => {
                let hint = self.pick(&[1, 3, 6]);
                let cmd = script_cmd(enqueue, &keys_of(&FAIR, r), v, Args::of(&[ttl, hint]));
                ("ENQUEUE", wire(&cmd))
            }
            32 => {
                let keys = keys_of(&FAIR, r);
                match self.rng.bool() {
                    true => (
                        "UNLOCK_FAIR",
                        wire(&script_cmd(unlock, &keys, v, Args::NONE)),
                    ),
                    false => ("LEAVE", wire(&script_cmd(leave, &keys, v, Args::NONE))),
                }
            }
            33 => {
                let successor = FAIR.successor.expect("the fair lock names its successor");
                let (ticket, next) = (self.pick(&tickets), self.value());
                let cmd = (successor.release_to)(&keys_of(&FAIR, r), v, ttl, ticket, next);
                ("RELEASE_FAIR_TO", wire(&cmd))
            }
            34 => {
                // As `Redlock::inspect` asks: every key with its suffix, and an engine's tag.
                let suffixes = crate::kinds::catalog().keys();
                let keys = every_key(r);
                let mut argv = vec![Bytes::copy_from_slice(&v.as_bytes()[..8])];
                argv.extend(suffixes.iter().map(|s| Bytes::from_static(s.name)));
                let inspect = crate::kinds::catalog().inspect();
                ("INSPECT", evalsha(inspect, &keys, &argv))
            }
            _ => {
                // As `Redlock::force_release` asks: counted, deleted and kept keys, and the mark.
                let forcing = crate::kinds::catalog().forced();
                let mut keys = vec![key(KeyFormat::Tagged, PREFIX, r, b"").unwrap()];
                for suffix in forcing.suffixes() {
                    keys.push(key(KeyFormat::Tagged, PREFIX, r, suffix).unwrap());
                }
                (
                    "FORCE_RELEASE",
                    evalsha(
                        crate::kinds::catalog().force_release(),
                        &keys,
                        &forcing.args(),
                    ),
                )
            }
        }
    }

    /// A kind's own four operations, built by its `Kind` as the engine builds them.
    fn kind_op(
        &mut self,
        spec: &'static Spec,
        arg: u64,
        resource: &[u8],
        value: LockValue,
        ttl: u64,
    ) -> (&'static str, Vec<u8>) {
        let kind = Kind::new(spec, arg);
        let keys = keys_of(spec, resource);
        let (what, cmd) = match self.rng.u32(..5) {
            0 | 1 => ("acquire", kind.acquire_cmd(&keys, value, ttl)),
            2 => ("release", kind.release_cmd(&keys, value, self.rng.bool())),
            3 => ("extend", kind.extend_cmd(&keys, value, ttl)),
            _ => ("holds", kind.holds_cmd(&keys, value)),
        };
        let names = OP_NAMES
            .iter()
            .find(|(kind, _)| *kind == spec.name)
            .map_or(&OP_NAMES[0].1, |(_, names)| names);
        let at = OP_NAMES[0].1.iter().position(|w| *w == what).unwrap();
        (names[at], wire(&cmd))
    }
}

/// Each kind's coverage names for its acquire, release, extend and holds (a kind not listed is
/// counted under the first row's plain names).
const OP_NAMES: [(&str, [&str; 4]); 6] = [
    ("", ["acquire", "release", "extend", "holds"]),
    (
        "fenced",
        [
            "fenced acquire",
            "fenced release",
            "fenced extend",
            "fenced holds",
        ],
    ),
    (
        "read",
        [
            "ACQUIRE_READ",
            "RELEASE_READ",
            "EXTEND_READ",
            "HOLDS_MEMBER (read)",
        ],
    ),
    (
        "write",
        [
            "ACQUIRE_WRITE",
            "write release",
            "write extend",
            "write holds",
        ],
    ),
    (
        "semaphore",
        [
            "ACQUIRE_PERMIT",
            "RELEASE_PERMIT",
            "EXTEND_PERMIT",
            "HOLDS_MEMBER (permit)",
        ],
    ),
    (
        "fair",
        ["ATTEMPT", "RELEASE_FAIR", "fair extend", "fair holds"],
    ),
];

/// Whether two numbers are the same: exactly, or within 50 for two that are times (a `PTTL`, a
/// score of `now + ttl`; counts and codes stay below 20 here and compare exactly).
fn near(a: f64, b: f64) -> bool {
    a == b || (a.abs() >= 20.0 && b.abs() >= 20.0 && (a - b).abs() <= 50.0)
}

/// Whether two bulk strings are the same, times in them (`|`- or `:`-separated) within tolerance.
fn same_text(a: &[u8], b: &[u8]) -> bool {
    if a == b {
        return true;
    }
    let split = |t: &[u8]| -> Vec<Vec<u8>> {
        t.split(|c| *c == b'|' || *c == b':')
            .map(<[u8]>::to_vec)
            .collect()
    };
    let (x, y) = (split(a), split(b));
    let number = |t: &[u8]| std::str::from_utf8(t).ok()?.parse::<f64>().ok();
    x.len() == y.len()
        && x.iter().zip(&y).all(|(p, q)| {
            p == q || matches!((number(p), number(q)), (Some(m), Some(n)) if near(m, n))
        })
}

/// Whether two replies are the same: errors by their code (the texts after it differ by design:
/// Redis names the script's function and line), numbers and texts as above.
fn same(a: &Reply, b: &Reply) -> bool {
    match (a, b) {
        (Reply::Error(x), Reply::Error(y)) => x.split(' ').next() == y.split(' ').next(),
        (Reply::Int(x), Reply::Int(y)) => near(*x as f64, *y as f64),
        (Reply::Bulk(x), Reply::Bulk(y)) => same_text(x, y),
        (Reply::Array(x), Reply::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        _ => a == b,
    }
}

/// One key as a server shows it: type, value (members with scores, fields), whether it expires.
#[derive(Debug, Clone)]
struct KeyState {
    kind: Reply,
    value: Reply,
    pttl: Reply,
}

/// Every key of the runs on a server, as its own commands read them.
async fn state(client: &mut Client) -> BTreeMap<Bytes, KeyState> {
    let Reply::Array(keys) = client.call(&request(&[b"KEYS", b"d:*"])).await else {
        panic!("KEYS answers an array");
    };
    let mut out = BTreeMap::new();
    for key in keys {
        let Reply::Bulk(key) = key else {
            panic!("a key")
        };
        let kind = client.call(&request(&[b"TYPE", &key])).await;
        let read: &[&[u8]] = match &kind {
            Reply::Status(t) if &t[..] == b"string" => &[b"GET"],
            Reply::Status(t) if &t[..] == b"zset" => &[b"ZRANGE", b"0", b"-1", b"WITHSCORES"],
            Reply::Status(t) if &t[..] == b"hash" => &[b"HGETALL"],
            _ => continue, // expired between KEYS and TYPE
        };
        let mut args = read.to_vec();
        args.insert(1, &key);
        let value = client.call(&request(&args)).await;
        let pttl = client.call(&request(&[b"PTTL", &key])).await;
        out.insert(key, KeyState { kind, value, pttl });
    }
    out
}

/// A sorted set's `ZRANGE ... WITHSCORES` as member -> score: two members whose times fell in one
/// millisecond on one server and in two on the other are ordered differently, and are the same set.
fn members(value: &Reply) -> Option<BTreeMap<Bytes, f64>> {
    let Reply::Array(flat) = value else {
        return None;
    };
    flat.chunks(2)
        .map(|pair| match pair {
            [Reply::Bulk(m), Reply::Bulk(s)] => {
                Some((m.clone(), std::str::from_utf8(s).ok()?.parse().ok()?))
            }
            _ => None,
        })
        .collect()
}

/// Where two servers' keys differ, if they do.
fn state_difference(
    real: &BTreeMap<Bytes, KeyState>,
    memory: &BTreeMap<Bytes, KeyState>,
) -> Option<String> {
    let names = |s: &BTreeMap<Bytes, KeyState>| s.keys().cloned().collect::<Vec<_>>();
    if names(real) != names(memory) {
        return Some(format!(
            "keys: redis {:?}, memory {:?}",
            names(real),
            names(memory)
        ));
    }
    for (key, r) in real {
        let m = &memory[key];
        let expiring = |p: &Reply| matches!(p, Reply::Int(t) if *t >= 0);
        let ttl_ok = match (&r.pttl, &m.pttl) {
            (Reply::Int(a), Reply::Int(b)) if expiring(&r.pttl) && expiring(&m.pttl) => {
                (a - b).abs() <= 100
            }
            (a, b) => a == b,
        };
        let same_value = match (members(&r.value), members(&m.value)) {
            (Some(a), Some(b)) if r.kind == Reply::Status(Bytes::from_static(b"zset")) => {
                a.len() == b.len()
                    && a.iter()
                        .zip(&b)
                        .all(|((ma, sa), (mb, sb))| ma == mb && near(*sa, *sb))
            }
            _ => same(&r.value, &m.value),
        };
        if r.kind != m.kind || !same_value || !ttl_ok {
            return Some(format!("{key:?}: redis {r:?}, memory {m:?}"));
        }
    }
    None
}

/// The channels a run's releases and wake-ups publish on: each resource's key (a plain release),
/// its hand-off waiters' (`:h:<name>`) and its fair waiters' (`:w:<the value's first 8 bytes>`).
fn channels(values: &[LockValue]) -> Vec<Bytes> {
    let mut out = Vec::new();
    for r in RESOURCES {
        let k = key(KeyFormat::Tagged, PREFIX, r, b"").unwrap();
        out.push(k.clone());
        for name in [2, 3, 4] {
            out.push(Bytes::from(
                [&k[..], b":h:", name.to_string().as_bytes()].concat(),
            ));
        }
        for v in values {
            let hex: String = v.as_bytes()[..8]
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            out.push(Bytes::from([&k[..], b":w:", hex.as_bytes()].concat()));
        }
    }
    out
}

/// Subscribes `client` to `channels`, reading the confirmations.
async fn subscribe(client: &mut Client, channels: &[Bytes]) {
    let mut args: Vec<&[u8]> = vec![b"SUBSCRIBE"];
    args.extend(channels.iter().map(|c| &c[..]));
    client.stream.write_all(&request(&args)).await.unwrap();
    for _ in channels {
        client.read().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_node_answers_the_engines_operations_as_redis_does() {
    const STEPS: usize = 360;
    let seed = 20_261_205;
    let started = Instant::now();
    let redis = testkit::RedisNode::start();
    let memory = MemoryNode::launch().await.unwrap();
    let redis_port: u16 = redis.addr().rsplit(':').next().unwrap().parse().unwrap();
    let mut real = Client::connect(redis_port).await;
    let mut mem = Client::connect(memory.port()).await;

    // Every script the engine loads compiles on both, to the same digest (and `BUSY`, which the
    // engine sends only when an acquire gives up, with `EVAL` after a `NOSCRIPT`).
    let scripts = crate::kinds::catalog().scripts().iter().copied();
    for script in scripts.chain([&BUSY]) {
        let load = request(&[b"SCRIPT", b"LOAD", script.source.as_bytes()]);
        let (a, b) = tokio::join!(real.call(&load), mem.call(&load));
        assert_eq!(a, Reply::bulk(script.sha1), "redis: {}", script.source);
        assert_eq!(
            b,
            Reply::bulk(script.sha1),
            "memory node: {}",
            script.source
        );
    }

    let mut world = World {
        rng: fastrand::Rng::with_seed(seed),
        // Two values: operations often meet the holder's own.
        values: (0..2).map(|_| LockValue::random().unwrap()).collect(),
    };
    let channels = channels(&world.values);
    let mut real_sub = Client::connect(redis_port).await;
    let mut mem_sub = Client::connect(memory.port()).await;
    subscribe(&mut real_sub, &channels).await;
    subscribe(&mut mem_sub, &channels).await;

    let mut history: Vec<String> = Vec::new();
    let mut coverage: BTreeMap<&str, usize> = BTreeMap::new();
    let mut burst = (Instant::now(), 0);
    let (mut bursts, mut messages) = (0, 0);
    for step in 0..STEPS {
        let (name, op) = world.op();
        *coverage.entry(name).or_default() += 1;
        let (a, b) = tokio::join!(real.call(&op), mem.call(&op));
        history.push(format!("{step}: {name} -> redis {a:?}, memory {b:?}"));
        let context = || history[history.len().saturating_sub(12)..].join("\n");
        assert!(
            same(&a, &b),
            "seed {seed}, step {step}, {name}:\n{}",
            context()
        );
        let (sa, sb) = tokio::join!(state(&mut real), state(&mut mem));
        if let Some(diff) = state_difference(&sa, &sb) {
            panic!("seed {seed}, step {step}, {name}: {diff}\n{}", context());
        }
        // End the burst before a short TTL could run out inside it; then let every short one end.
        burst.1 += 1;
        if burst.0.elapsed() > BURST || burst.1 == BURST_STEPS || step + 1 == STEPS {
            let (ma, mb) = tokio::join!(
                real_sub.drain(Duration::from_millis(30)),
                mem_sub.drain(Duration::from_millis(30))
            );
            assert!(
                ma.len() == mb.len() && ma.iter().zip(&mb).all(|(x, y)| same(x, y)),
                "seed {seed}, burst ending at step {step}: messages\nredis {ma:?}\nmemory {mb:?}\n{}",
                context()
            );
            messages += ma.len();
            bursts += 1;
            tokio::time::sleep(PAUSE).await;
            burst = (Instant::now(), 0);
        }
    }
    let covered: Vec<String> = coverage.iter().map(|(n, c)| format!("{n} {c}")).collect();
    eprintln!(
        "{STEPS} steps in {bursts} bursts, {messages} messages, {:?}: {}",
        started.elapsed(),
        covered.join(", ")
    );
}

/// The reply comparison's own rules: times within tolerance, everything else exact.
#[test]
fn replies_compare_times_within_tolerance_and_the_rest_exactly() {
    assert!(same(&Reply::Int(29_990), &Reply::Int(30_000)));
    assert!(!same(&Reply::Int(1), &Reply::Int(2)));
    assert!(same(
        &Reply::bulk("s|29990|1|x|-2"),
        &Reply::bulk("s|30001|1|x|-2")
    ));
    assert!(!same(&Reply::bulk("Q7"), &Reply::bulk("Q8")));
    assert!(same(
        &Reply::Error("WRONGTYPE a".into()),
        &Reply::Error("WRONGTYPE b".into())
    ));
}
