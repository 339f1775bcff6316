//! Units people write in configuration: durations as `500ms`, `2s`, `1.5s`, `1m` ([`parse_duration`],
//! the one duration parser of the workspace: `REDLOCK_*` variables, configuration files, the
//! `redlock` command's and loadgen's flags), and, with the `serde` feature, the serde forms
//! `Config`'s fields use. Below `config` and `env`, which both use it, so neither names the other's
//! helpers.

use std::fmt;
use std::time::Duration;

/// Every unit a duration may carry, with its length in nanoseconds.
const UNITS: [(&str, u128); 9] = [
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("sec", 1_000_000_000),
    ("m", 60_000_000_000),
    ("min", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

/// Reads a duration as people write it: a number and a unit — `500ms`, `2s`, `1.5s`, `1m` (or
/// `1min`), `1h`, `250us` (or `250µs`), `10ns` — or `0` alone.
///
/// A number without a unit is refused, `0` excepted (zero in every unit): for a lock TTL, `10`
/// read as seconds or as milliseconds is a 1000x difference, and an error at start-up beats a
/// silent guess. The number is decimal (`1.5s`, `.5s`) and read exactly, to the nanosecond.
///
/// ```
/// use std::time::Duration;
/// assert_eq!(redlock_engine::parse_duration("1.5s")?, Duration::from_millis(1500));
/// assert_eq!(redlock_engine::parse_duration("0")?, Duration::ZERO);
/// let err = redlock_engine::parse_duration("10").unwrap_err();
/// assert!(err.to_string().contains("give a unit: 10s or 10ms"), "{err}");
/// # Ok::<(), redlock_engine::DurationError>(())
/// ```
///
/// # Errors
/// [`DurationError`] for an empty text, a negative number, no number, a number without a unit (but
/// `0`), a unit not listed above, or a duration larger than [`Duration::MAX`].
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let fail = |problem| {
        Err(DurationError {
            text: text.to_string(),
            problem,
        })
    };
    let s = text.trim();
    if s.is_empty() {
        return fail(Problem::Empty);
    }
    if s.starts_with('-') {
        return fail(Problem::Negative);
    }
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    let unit = unit.trim_start();
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if (whole.is_empty() && fraction.is_empty()) || fraction.contains('.') {
        return fail(Problem::NoNumber);
    }
    let digits = || whole.chars().chain(fraction.chars());
    if unit.is_empty() {
        return if digits().all(|c| c == '0') {
            Ok(Duration::ZERO)
        } else {
            fail(Problem::NoUnit(number.to_string()))
        };
    }
    let Some(&(_, unit_ns)) = UNITS.iter().find(|(name, _)| *name == unit) else {
        return fail(Problem::UnknownUnit(unit.to_string()));
    };
    match nanoseconds(whole, fraction, unit_ns) {
        Some(ns) => match u64::try_from(ns / 1_000_000_000) {
            // The remainder is below 10^9, so it fits a u32.
            Ok(secs) => Ok(Duration::new(secs, (ns % 1_000_000_000) as u32)),
            Err(_) => fail(Problem::TooLarge),
        },
        None => fail(Problem::TooLarge),
    }
}

/// `whole.fraction` units of `unit_ns` nanoseconds each, in whole nanoseconds (the rest dropped);
/// `None` past `u128`. Integers, not `f64`: `0.1s` is 100 ms exactly, and a value `f64` would round
/// is either read right or refused.
fn nanoseconds(whole: &str, fraction: &str, unit_ns: u128) -> Option<u128> {
    // Both are ASCII digits only (or empty), so a failed parse is an overflow.
    let int = |digits: &str| match digits {
        "" => Some(0),
        digits => digits.parse::<u128>().ok(),
    };
    // 20 places are below a nanosecond even in hours, and keep `fraction * unit_ns` in a u128.
    let fraction = &fraction[..fraction.len().min(20)];
    let scale = 10u128.pow(fraction.len() as u32);
    let (whole, part) = (int(whole)?, int(fraction)?);
    whole
        .checked_mul(unit_ns)?
        .checked_add(part * unit_ns / scale)
}

/// A text [`parse_duration`] refused. Its `Display` names the text, what is wrong with it and the
/// forms a duration takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DurationError {
    text: String,
    problem: Problem,
}

/// What is wrong with a refused duration.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Problem {
    Empty,
    Negative,
    NoNumber,
    /// The number as written.
    NoUnit(String),
    /// The unit as written.
    UnknownUnit(String),
    TooLarge,
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} ", self.text)?;
        match &self.problem {
            Problem::Empty => f.write_str("is empty")?,
            Problem::Negative => f.write_str("is negative")?,
            Problem::NoNumber => f.write_str("does not start with a number")?,
            Problem::NoUnit(n) => write!(f, "has no unit: give a unit: {n}s or {n}ms")?,
            Problem::UnknownUnit(unit) => write!(f, "has an unknown unit {unit:?}")?,
            Problem::TooLarge => f.write_str("is too large")?,
        }
        f.write_str(
            " (a duration is a number and a unit: ns, us, ms, s, m or h, as in 500ms, 2s, 1.5m; \
             0 alone is zero)",
        )
    }
}

impl std::error::Error for DurationError {}

/// Serde of a `Duration` as `"1500ms"`, read back by [`parse_duration`] (any of its forms).
#[cfg(feature = "serde")]
pub(crate) mod duration {
    use std::time::Duration;

    pub(crate) fn serialize<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("{}ms", d.as_millis()))
    }

    pub(crate) fn deserialize<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<Duration, D::Error> {
        let text = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(d)?;
        super::parse_duration(&text).map_err(serde::de::Error::custom)
    }
}

/// [`duration`] for an `Option<Duration>` (`null` or absent: `None`).
#[cfg(feature = "serde")]
pub(crate) mod maybe_duration {
    use std::time::Duration;

    pub(crate) fn serialize<S: serde::Serializer>(
        d: &Option<Duration>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => super::duration::serialize(d, s),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        let text = <Option<std::borrow::Cow<'de, str>> as serde::Deserialize>::deserialize(d)?;
        text.map(|text| super::parse_duration(&text).map_err(serde::de::Error::custom))
            .transpose()
    }
}

/// Serde of the key prefix as text (it is bytes; a prefix that is not UTF-8 is written lossily).
#[cfg(feature = "serde")]
pub(crate) mod text {
    pub(crate) fn serialize<S: serde::Serializer>(b: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&String::from_utf8_lossy(b))
    }

    pub(crate) fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = <String as serde::Deserialize>::deserialize(d)?;
        Ok(text.into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_people_write_them_and_a_bare_number_is_refused() {
        let (ns, us, ms, s) = (
            Duration::from_nanos,
            Duration::from_micros,
            Duration::from_millis,
            Duration::from_secs,
        );
        for (text, want) in [
            ("500ms", ms(500)),
            ("2s", s(2)),
            ("2sec", s(2)),
            ("2 s", s(2)),
            (" 30s ", s(30)),
            ("1.5s", ms(1500)),
            (".5s", ms(500)),
            ("0.1s", ms(100)),
            ("1m", s(60)),
            ("1.5m", s(90)),
            ("2min", s(120)),
            ("1h", s(3600)),
            ("250us", us(250)),
            ("250µs", us(250)),
            ("10ns", ns(10)),
            ("1000000001ns", ns(1_000_000_001)),
            ("0", Duration::ZERO),
            ("0.0", Duration::ZERO),
            ("0ms", Duration::ZERO),
            ("18446744073709551615s", Duration::from_secs(u64::MAX)),
        ] {
            assert_eq!(parse_duration(text), Ok(want), "{text}");
        }
        for (text, why) in [
            ("10", "has no unit: give a unit: 10s or 10ms"),
            ("1.5", "has no unit"),
            ("", "is empty"),
            ("  ", "is empty"),
            ("-1s", "is negative"),
            ("s", "does not start with a number"),
            ("ms5", "does not start with a number"),
            ("ten s", "does not start with a number"),
            (".", "does not start with a number"),
            ("1.2.3s", "does not start with a number"),
            ("2 parsecs", "unknown unit \"parsecs\""),
            ("1e99h", "unknown unit"),
            ("3x", "unknown unit"),
            ("10S", "unknown unit"),
            ("18446744073709551616s", "is too large"),
            ("99999999999999999999999999999999999999999h", "is too large"),
        ] {
            let err = parse_duration(text).unwrap_err().to_string();
            assert!(err.starts_with(&format!("{text:?} ")), "{text}: {err}");
            assert!(err.contains(why), "{text}: {err}");
            assert!(err.contains("500ms, 2s"), "the forms: {err}");
        }
    }
}
