//! What inspect reads of a resource on one node ([`KeyState`]), and the one read-only script that
//! reads it (behind `Redlock::inspect`): a prelude every kind shares — the resource key's type, time
//! to live, whether this engine took it, the kind byte of its value, the holder label — then each
//! kind's own part ([`InspectPart`], declared in the kind's file beside its scripts and gathered from
//! the list of kinds by `super::catalog::Catalog`). A kind added to the list is inspected without an
//! edit here; its part says what it adds and how that reads into a [`KeyState`].
//!
//! No part returns a lock value: "ours" is decided on the node by comparing the value's first bytes
//! with the engine tag it is given in `ARGV[1]`, and the holder label is shown only when the label's
//! digest (`redis.sha1hex`) matches the value that holds the lock now.
//!
//! The answer is one line, `|`-separated: the key's type (`s` string, `n` none, `o` another type),
//! its `PTTL`, ours (`1`/`0`), the value's kind byte (`-` none, `?` not a value of this format), each
//! part's fields in list order, and the holder label last (it may hold anything, `|` included).
//! KEYS: the resource key, then any of its other keys; ARGV: the tag, then each other key's suffix
//! (`:fence`, `:rw:readers`, ...), so a part finds a key by its suffix, and a suffix it does not know
//! is passed and ignored. A suffix not passed reads as an absent key. "Live" in a part means an
//! expiry after the node's `TIME`, as the kinds' own scripts prune.

use std::fmt;
use std::time::Duration;

use super::cmd::Script;

/// The kind of lock inspect found at a resource's key: the name of the kind that drew the value
/// ([`Self::name`]: `exclusive`, `fenced`, `multi`, `read`, `write`, `semaphore`, `fair`), or
/// [`FOREIGN`](Self::FOREIGN) / [`UNKNOWN`](Self::UNKNOWN). A name, not an enum: the list of kinds
/// is the engine's one list, and a kind added there is reported without a new variant here.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct LockKind(&'static str);

impl LockKind {
    /// Not a lock of this engine's format: another value length, or another data type at the key.
    pub const FOREIGN: Self = Self("foreign");
    /// A lock value whose kind byte this version does not know.
    pub const UNKNOWN: Self = Self("unknown");

    /// The kind named `name` (a kind's `Spec::name`: `LockKind::of`).
    pub(crate) const fn named(name: &'static str) -> Self {
        Self(name)
    }

    /// The kind's name: `exclusive` (also renewed, scoped, owner and slot locks), `fenced`,
    /// `multi`, `read`, `write`, `semaphore`, `fair`, `foreign` or `unknown`.
    pub fn name(self) -> &'static str {
        self.0
    }
}

impl fmt::Debug for LockKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl fmt::Display for LockKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// What one node holds for a resource: every key any kind of lock uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct KeyState {
    /// An exclusive holder (the resource's key) or at least one live reader.
    pub held: bool,
    /// The kind of lock at the resource's key, or the readers' (`read`) for readers alone.
    pub kind: Option<LockKind>,
    /// Time to live of the resource's key, or of the last reader when only readers hold it
    /// (`None`: nothing held, or a key without expiry).
    pub remaining: Option<Duration>,
    /// The holder's value (or a reader's) carries this engine's tag: this engine took it.
    pub ours: bool,
    /// Live readers.
    pub readers: u64,
    /// Of the first 256 live readers, how many are this engine's.
    pub our_readers: u64,
    /// A writer waits for the readers to leave (its intent's time to live).
    pub write_intent: Option<Duration>,
    /// The resource's fence counter (the last fencing token committed on this node).
    pub fence: Option<u64>,
    /// A client elsewhere marked itself as waiting (the mark's time to live).
    pub waiters: Option<Duration>,
    /// A semaphore's live permits on this node ([`crate::Redlock::acquire_permit`]).
    pub permits: u64,
    /// The semaphore's K, as its marker at the resource's key says (`None`: no semaphore here).
    pub permit_limit: Option<u64>,
    /// Live entries in this node's fair-lock queue other than the holder's: the waiters
    /// ([`crate::Redlock::acquire_fair`]). Liveness is read for the first 1,000 entries only;
    /// every entry after them counts, so a queue that long reads as at least its live waiters.
    pub fair_waiters: u64,
    /// The holder's label ([`crate::Builder::holder_label`]), shown only when it was written by
    /// the current holder's acquire.
    pub label: Option<String>,
}

/// A kind's part of inspect (`Spec::inspect`): Lua run after the shared prelude, and how its
/// fields read into a [`KeyState`].
#[derive(Debug)]
pub(crate) struct InspectPart {
    /// Runs in a block of its own after the prelude, with these in scope: `K` (suffix → key; absent
    /// when not passed), `ty(k)` and `pttl(k)` (of an absent key: `none`, -2), `now` (the node's
    /// clock, ms) and `v` (the resource key's string value, or `false`). Pushes exactly `fields`
    /// values onto `out`, none holding `|`.
    pub(crate) lua: &'static str,
    pub(crate) fields: usize,
    /// Reads this part's fields, in order, into the state read so far (the prelude's, then every
    /// earlier part's); `None` when one is not of its format.
    pub(crate) read: fn(&[&[u8]], &mut KeyState) -> Option<()>,
}

/// The prelude: the resource key's fields, and the names the parts use (see [`InspectPart::lua`]).
const PRELUDE: &str = "local K = {} for i = 2, #KEYS do K[ARGV[i]] = KEYS[i] end \
local function ty(k) if not k then return 'none' end return redis.call('TYPE', k)['ok'] end \
local function pttl(k) if not k then return -2 end return redis.call('PTTL', k) end \
local tm = redis.call('TIME') local now = tm[1] * 1000 + math.floor(tm[2] / 1000) \
local t, v, ours, kind, label = ty(KEYS[1]), false, '0', '-', '' \
if t == 'string' then v = redis.call('GET', KEYS[1]) end \
if v then if string.sub(v, 1, 8) == ARGV[1] then ours = '1' end \
if #v == 25 then kind = string.sub(v, 9, 9) else kind = '?' end \
if ty(K[':holder']) == 'string' then local h = redis.call('GET', K[':holder']) \
if string.sub(h, 1, 40) == redis.sha1hex(v) then label = string.sub(h, 41) end end end \
local tc = 'o' if t == 'string' then tc = 's' elseif t == 'none' then tc = 'n' end \
local out = {tc, redis.call('PTTL', KEYS[1]), ours, kind} ";

/// Fields the prelude answers before the parts' (the label comes last, after them).
const PRELUDE_FIELDS: usize = 4;

/// The inspect script of `parts` ([`Script::built`]).
pub(crate) fn script(parts: &[&'static InspectPart]) -> &'static Script {
    let mut source = String::from(PRELUDE);
    for part in parts {
        source.push_str("do ");
        source.push_str(part.lua);
        source.push_str(" end ");
    }
    source.push_str("out[#out + 1] = label return table.concat(out, '|')");
    Script::built(source)
}

/// Reads one node's answer to [`script`] of `parts`; `by_code` names the kind that draws values
/// with a code (`Catalog::by_code`). `None` when the answer is not of its format.
pub(crate) fn read(
    answer: &[u8],
    parts: &[&'static InspectPart],
    by_code: impl Fn(u8) -> Option<LockKind>,
) -> Option<KeyState> {
    let count: usize = parts.iter().map(|p| p.fields).sum();
    let fields: Vec<&[u8]> = answer
        .splitn(PRELUDE_FIELDS + count + 1, |&b| b == b'|')
        .collect();
    if fields.len() != PRELUDE_FIELDS + count + 1 {
        return None;
    }
    let [kind_of_key, pttl, ours, code] = fields[..PRELUDE_FIELDS] else {
        return None;
    };
    let kind = match (kind_of_key, code) {
        (b"n", _) => None,
        (b"o", _) | (b"s", b"?") => Some(LockKind::FOREIGN),
        (b"s", [code]) => Some(by_code(*code).unwrap_or(LockKind::UNKNOWN)),
        (b"s", _) => Some(LockKind::UNKNOWN),
        _ => return None,
    };
    let label = fields[fields.len() - 1];
    let mut state = KeyState {
        kind,
        remaining: kind.and(ttl(pttl)?),
        ours: ours == b"1",
        label: (!label.is_empty()).then(|| String::from_utf8_lossy(label).into_owned()),
        ..KeyState::default()
    };
    let mut at = PRELUDE_FIELDS;
    for part in parts {
        (part.read)(&fields[at..at + part.fields], &mut state)?;
        at += part.fields;
    }
    state.held = state.kind.is_some();
    Some(state)
}

/// A field's integer.
pub(crate) fn int(field: &[u8]) -> Option<i64> {
    std::str::from_utf8(field).ok()?.parse().ok()
}

/// A field's count (a non-negative integer).
pub(crate) fn count(field: &[u8]) -> Option<u64> {
    u64::try_from(int(field)?).ok()
}

/// A field's `PTTL` as a duration: `Some(None)` for a missing key (-2) or one without expiry (-1).
pub(crate) fn ttl(field: &[u8]) -> Option<Option<Duration>> {
    Some(u64::try_from(int(field)?).ok().map(Duration::from_millis))
}

/// A field that is `-` (nothing there) or a count.
pub(crate) fn maybe_count(field: &[u8]) -> Option<Option<u64>> {
    match field {
        b"-" => Some(None),
        digits => Some(Some(count(digits)?)),
    }
}
