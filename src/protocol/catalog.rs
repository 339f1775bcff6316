//! [`Catalog`]: the list of kinds (`crate::kinds::KINDS`, the only one) and everything derived from
//! it — the scripts a handshake loads (inspect's, made of the kinds' parts, among them), the keys a
//! resource can have, which kind drew a value. Built
//! once at the top (`crate::kinds::catalog`) and handed down, so the engine reads the list of kinds
//! without naming one.

use super::cmd::Script;
use super::inspect::{InspectPart, KeyState};
use super::operator::FORCE_RELEASE;
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
        scripts.extend([inspect, &FORCE_RELEASE]);
        Self {
            kinds: kinds.to_vec(),
            scripts,
            keys,
            parts,
            inspect,
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
    /// the waiter mark's place among all of them (see `super::operator::FORCE_RELEASE`).
    pub(crate) fn forced(&self) -> Forcing {
        let of = |want: &[Forced]| -> Vec<&'static [u8]> {
            let keys = self.keys.iter().filter(|k| want.contains(&k.forced));
            keys.map(|k| k.name).collect()
        };
        let counted = of(&[Forced::Counted]);
        let deleted = of(&[Forced::Deleted]);
        let kept = of(&[Forced::Kept, Forced::Wakes]);
        let wakes = self.keys.iter().find(|k| k.forced == Forced::Wakes);
        Forcing {
            counted,
            deleted,
            wakes: wakes.map(|w| w.name),
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
    /// The kept key whose presence makes the release publish (the waiter mark).
    pub(crate) wakes: Option<&'static [u8]>,
}
