//! A sorted set as Redis keeps one: members ordered by score, ties by member bytes (`memcmp`,
//! shorter first), each member once; and the score bounds its range commands take (`(5`, `-inf`).

use std::cmp::Ordering;
use std::collections::{BTreeSet, HashMap};

use bytes::Bytes;

/// A score: never NaN (refused when parsed), so it orders totally. `-0` and `0` are equal, as in
/// Redis's skiplist comparisons.
#[derive(Debug, Clone, Copy)]
struct Score(f64);

impl PartialEq for Score {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}
impl Eq for Score {}
impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Score {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.partial_cmp(&other.0).unwrap_or(Ordering::Equal)
    }
}

/// One sorted set.
#[derive(Debug, Clone, Default)]
pub(crate) struct SortedSet {
    scores: HashMap<Bytes, f64>,
    order: BTreeSet<(Score, Bytes)>,
}

/// What `ZADD`'s flags allow for one member.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct AddRule {
    /// `NX`: only new members.
    pub(crate) nx: bool,
    /// `XX`: only existing members.
    pub(crate) xx: bool,
    /// `GT`: an existing member only to a greater score.
    pub(crate) gt: bool,
    /// `LT`: an existing member only to a lower score.
    pub(crate) lt: bool,
}

/// What one `ZADD` of a member did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Added {
    New,
    Updated,
    Unchanged,
    Refused,
}

impl SortedSet {
    pub(crate) fn len(&self) -> usize {
        self.scores.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }

    pub(crate) fn score(&self, member: &[u8]) -> Option<f64> {
        self.scores.get(member).copied()
    }

    /// Adds or moves `member` to `score` under `rule`.
    pub(crate) fn add(&mut self, member: Bytes, score: f64, rule: AddRule) -> Added {
        match self.scores.get(&member).copied() {
            None if rule.xx => Added::Refused,
            None => {
                self.order.insert((Score(score), member.clone()));
                self.scores.insert(member, score);
                Added::New
            }
            Some(_) if rule.nx => Added::Refused,
            Some(old) if (rule.gt && score <= old) || (rule.lt && score >= old) => Added::Refused,
            Some(old) if old == score => Added::Unchanged,
            Some(old) => {
                self.order.remove(&(Score(old), member.clone()));
                self.order.insert((Score(score), member.clone()));
                self.scores.insert(member, score);
                Added::Updated
            }
        }
    }

    /// Removes `member`; whether it was there.
    pub(crate) fn remove(&mut self, member: &[u8]) -> bool {
        match self.scores.remove_entry(member) {
            Some((member, score)) => {
                self.order.remove(&(Score(score), member));
                true
            }
            None => false,
        }
    }

    /// Every member in order, with its score.
    pub(crate) fn iter(&self) -> impl DoubleEndedIterator<Item = (&Bytes, f64)> + '_ {
        self.order.iter().map(|(score, member)| (member, score.0))
    }

    /// The members ranked `start..=stop` (negative: from the end), as `ZRANGE` reads its indexes;
    /// `rev`: ranked from the highest.
    pub(crate) fn by_rank(&self, start: i64, stop: i64, rev: bool) -> Vec<(Bytes, f64)> {
        let len = self.len() as i64;
        let start = if start < 0 {
            (len + start).max(0)
        } else {
            start
        };
        let stop = if stop < 0 {
            len + stop
        } else {
            stop.min(len - 1)
        };
        if start > stop || start >= len {
            return Vec::new();
        }
        let take = (stop - start + 1) as usize;
        let pick = |(m, s): (&Bytes, f64)| (m.clone(), s);
        if rev {
            self.iter()
                .rev()
                .skip(start as usize)
                .take(take)
                .map(pick)
                .collect()
        } else {
            self.iter()
                .skip(start as usize)
                .take(take)
                .map(pick)
                .collect()
        }
    }

    /// The members whose score lies within `min..max`, in order (`rev`: from the highest).
    pub(crate) fn by_score(&self, min: Bound, max: Bound, rev: bool) -> Vec<(Bytes, f64)> {
        let inside = |(_, s): &(&Bytes, f64)| min.below(*s) && max.above(*s);
        let pick = |(m, s): (&Bytes, f64)| (m.clone(), s);
        if rev {
            self.iter().rev().filter(inside).map(pick).collect()
        } else {
            self.iter().filter(inside).map(pick).collect()
        }
    }

    /// Removes the lowest `count` members; what it removed, in order.
    pub(crate) fn pop_min(&mut self, count: usize) -> Vec<(Bytes, f64)> {
        let popped = self.by_rank(0, count as i64 - 1, false);
        for (member, _) in &popped {
            self.remove(member);
        }
        popped
    }
}

/// One end of a score range: `5` (inclusive), `(5` (exclusive), `-inf`, `+inf`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bound {
    value: f64,
    exclusive: bool,
}

impl Bound {
    /// Parses a range end; `None` where Redis answers "min or max is not a float".
    pub(crate) fn parse(text: &[u8]) -> Option<Self> {
        let (exclusive, number) = match text.strip_prefix(b"(") {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        Some(Self {
            value: parse_score(number)?,
            exclusive,
        })
    }

    /// Whether `score` is above this bound taken as a minimum.
    fn below(&self, score: f64) -> bool {
        if self.exclusive {
            score > self.value
        } else {
            score >= self.value
        }
    }

    /// Whether `score` is below this bound taken as a maximum.
    fn above(&self, score: f64) -> bool {
        if self.exclusive {
            score < self.value
        } else {
            score <= self.value
        }
    }
}

/// A score as Redis reads one (`strtod`: `inf`, `-inf`, `+inf`, exponents); NaN is refused.
pub(crate) fn parse_score(text: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(text).ok()?;
    let v: f64 = match text.to_ascii_lowercase().as_str() {
        "inf" | "+inf" | "infinity" | "+infinity" => f64::INFINITY,
        "-inf" | "-infinity" => f64::NEG_INFINITY,
        t if t.is_empty() || t.contains("inf") || t.contains("nan") => return None,
        t => t.parse().ok()?,
    };
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(entries: &[(&str, f64)]) -> SortedSet {
        let mut z = SortedSet::default();
        for (m, s) in entries {
            z.add(Bytes::copy_from_slice(m.as_bytes()), *s, AddRule::default());
        }
        z
    }

    fn names(entries: &[(Bytes, f64)]) -> Vec<&str> {
        entries
            .iter()
            .map(|(m, _)| std::str::from_utf8(m).unwrap())
            .collect()
    }

    #[test]
    fn ties_order_by_member_bytes_and_ranks_count_from_both_ends() {
        let z = set(&[("b", 1.0), ("a", 1.0), ("ab", 1.0), ("c", 0.0), ("d", 2.0)]);
        assert_eq!(names(&z.by_rank(0, -1, false)), ["c", "a", "ab", "b", "d"]);
        assert_eq!(names(&z.by_rank(-2, -1, false)), ["b", "d"]);
        assert_eq!(names(&z.by_rank(0, 0, true)), ["d"]);
        assert!(z.by_rank(3, 1, false).is_empty());
        assert!(z.by_rank(9, 10, false).is_empty());
        let (min, max) = (Bound::parse(b"(0").unwrap(), Bound::parse(b"1").unwrap());
        assert_eq!(names(&z.by_score(min, max, false)), ["a", "ab", "b"]);
        assert!(Bound::parse(b"nan").is_none() && Bound::parse(b"x").is_none());
    }

    #[test]
    fn add_rules_as_zadd_flags() {
        let mut z = set(&[("a", 1.0)]);
        let nx = AddRule {
            nx: true,
            ..AddRule::default()
        };
        let xx = AddRule {
            xx: true,
            ..AddRule::default()
        };
        assert_eq!(z.add(Bytes::from_static(b"a"), 5.0, nx), Added::Refused);
        assert_eq!(z.add(Bytes::from_static(b"b"), 5.0, xx), Added::Refused);
        assert_eq!(z.add(Bytes::from_static(b"a"), 5.0, xx), Added::Updated);
        assert_eq!(z.score(b"a"), Some(5.0));
        assert_eq!(names(&z.pop_min(3)), ["a"]);
        assert!(z.is_empty());
    }
}
