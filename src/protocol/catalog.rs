//! [`Catalog`]: the list of kinds (`crate::kinds::KINDS`, the only one) and everything derived from
//! it — the scripts a handshake loads (inspect's, made of the kinds' parts, among them), the keys a
//! resource can have, which kind drew a value. Built
//! once at the top (`crate::kinds::catalog`) and handed down, so the engine reads the list of kinds
//! without naming one.

use super::cmd::Script;
use super::inspect::{InspectPart, KeyState};
use super::spec::{Forced, LockKind, Spec, Suffix};

/// The kinds of lock the nodes can hold, and what is derived from their specs.
#[derive(Debug)]
pub(crate) struct Catalog {
    kinds: Vec<&'static Spec>,
    scripts: Vec<&'static Script>,
    keys: Vec<&'static Suffix>,
    /// Inspect's parts, once each in list order, and the script made of them.
    parts: Vec<&'static InspectPart>,
    inspect: &'static Script,
    /// The operator's forced release, with the kinds' queue parts (`super::operator`).
    force_release: &'static Script,
}

impl Catalog {
    /// The catalog of `kinds` (each kind's labeled form included).
    pub(crate) fn new(kinds: &[&'static Spec]) -> Self {
        let mut all: Vec<&'static Spec> = Vec::new();
        for spec in kinds {
            all.push(spec);
            all.extend(spec.labeled);
        }
        let mut scripts: Vec<&'static Script> = Vec::new();
        let mut keys: Vec<&'static Suffix> = Vec::new();
        let mut parts: Vec<&'static InspectPart> = Vec::new();
        for spec in &all {
            for part in spec.inspect {
                if !parts.iter().any(|p| std::ptr::eq(*p, *part)) {
                    parts.push(part);
                }
            }
            let own = [spec.release, spec.release_notify, spec.extend, spec.holds];
            for script in own.into_iter().chain(spec.scripts.iter().copied()) {
                if !scripts.iter().any(|s| s.sha1 == script.sha1) {
                    scripts.push(script);
                }
            }
            for suffix in spec.suffixes.iter().chain(spec.marks) {
                if !keys.iter().any(|k| k.name == suffix.name) {
                    keys.push(suffix);
                }
            }
        }
        let inspect = super::inspect::script(&parts);
        let queues = keys.iter().filter_map(|k| match k.forced {
            Forced::Queue(lua) => Some(lua),
            _ => None,
        });
        let force_release = super::operator::force_release(&queues.collect::<Vec<_>>());
        scripts.extend([inspect, force_release]);
        Self {
            kinds: kinds.to_vec(),
            scripts,
            keys,
            parts,
            inspect,
            force_release,
        }
    }

    /// The kinds, as listed.
    #[cfg(test)]
    pub(crate) fn kinds(&self) -> &[&'static Spec] {
        &self.kinds
    }

    /// Every script of every kind, and the operator's, once each: what each handshake loads.
    pub(crate) fn scripts(&self) -> &[&'static Script] {
        &self.scripts
    }

    /// Every key a resource can have after its own, once each, in list order.
    pub(crate) fn keys(&self) -> &[&'static Suffix] {
        &self.keys
    }

    /// Inspect's script (see `super::inspect`).
    pub(crate) fn inspect(&self) -> &'static Script {
        self.inspect
    }

    /// The operator's forced release (see `super::operator`), called with the keys and arguments
    /// of [`Self::forced`].
    pub(crate) fn force_release(&self) -> &'static Script {
        self.force_release
    }

    /// Reads one node's answer to [`Self::inspect`]; `None` when it is not of its format.
    pub(crate) fn read_inspection(&self, answer: &[u8]) -> Option<KeyState> {
        super::inspect::read(answer, &self.parts, |code| self.by_code(code))
    }

    /// The kind whose values carry `code` (see `Spec::code`).
    pub(crate) fn by_code(&self, code: u8) -> Option<LockKind> {
        let spec = self.kinds.iter().find(|s| s.code == code)?;
        Some(LockKind::of(spec))
    }

    /// The keys a forced release deletes and counts, deletes quietly, and keeps, in that order, and
    /// which of them wake waiters (see [`Self::force_release`]).
    pub(crate) fn forced(&self) -> Forcing {
        let of = |want: fn(Forced) -> bool| -> Vec<&'static [u8]> {
            let keys = self.keys.iter().filter(|k| want(k.forced));
            keys.map(|k| k.name).collect()
        };
        let counted = of(|f| f == Forced::Counted);
        let deleted = of(|f| f == Forced::Deleted);
        let kept = of(|f| matches!(f, Forced::Kept | Forced::Wakes | Forced::Queue(_)));
        let wakes = of(|f| f == Forced::Wakes);
        Forcing {
            counted,
            deleted,
            wakes,
            kept,
        }
    }
}

/// The key groups of a forced release, suffixes after the resource key (which is counted first).
#[derive(Debug)]
pub(crate) struct Forcing {
    pub(crate) counted: Vec<&'static [u8]>,
    pub(crate) deleted: Vec<&'static [u8]>,
    pub(crate) kept: Vec<&'static [u8]>,
    /// The kept keys whose presence makes the release publish (the waiter mark).
    pub(crate) wakes: Vec<&'static [u8]>,
}

impl Forcing {
    /// The suffixes of the keys after the resource key, in the script's order: counted, deleted,
    /// kept.
    pub(crate) fn suffixes(&self) -> impl Iterator<Item = &'static [u8]> + '_ {
        self.counted
            .iter()
            .chain(&self.deleted)
            .chain(&self.kept)
            .copied()
    }

    /// The script's arguments: how many keys are counted (the resource key among them), how many
    /// more are deleted, then the place in `KEYS` (from 1) of each kept key that wakes waiters.
    pub(crate) fn args(&self) -> Vec<bytes::Bytes> {
        let kept_from = 2 + self.counted.len() + self.deleted.len();
        let wakes = self.kept.iter().enumerate();
        let wakes = wakes.filter(|(_, k)| self.wakes.contains(k));
        [1 + self.counted.len(), self.deleted.len()]
            .into_iter()
            .chain(wakes.map(|(at, _)| kept_from + at))
            .map(|n| bytes::Bytes::from(n.to_string()))
            .collect()
    }
}
