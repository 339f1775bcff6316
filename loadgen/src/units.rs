//! Unit-aware option values: durations (`10s`, `250ms`, `1.5s`, `500us`: the library's
//! [`parse_duration`]), counts (`100k`, `1m`) and hold times (`0`, `2ms`, or a range `1ms..5ms`).

use std::fmt;
use std::time::Duration;

/// Durations are read as the library reads them (`10s`, `250ms`, `500us`, `1.5s`, `2m`; `0` alone),
/// so `--ttl 10` is an error here as `REDLOCK_MAX_TTL=10` is there, not a guess at the unit.
pub use redlock_engine::parse_duration;

/// Parses `64`, `100k`, `1m` / `1M`, `2g` (decimal multiples: k = 1 000).
pub fn parse_count(text: &str) -> Result<u64, String> {
    let s = text.trim().replace('_', "");
    let (number, mult) = match s.chars().last() {
        Some('k' | 'K') => (&s[..s.len() - 1], 1_000.0),
        Some('m' | 'M') => (&s[..s.len() - 1], 1_000_000.0),
        Some('g' | 'G') => (&s[..s.len() - 1], 1_000_000_000.0),
        _ => (s.as_str(), 1.0),
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a count (use e.g. 64, 100k, 1m)"))?;
    let n = value * mult;
    if !(0.0..=1e15).contains(&n) || n.fract() != 0.0 {
        return Err(format!("`{text}` is not a whole count"));
    }
    Ok(n as u64)
}

/// How long a worker holds a lock before releasing it: fixed, or uniform in a range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Hold {
    /// Shortest hold.
    pub min: Duration,
    /// Longest hold (equal to `min` for a fixed hold).
    pub max: Duration,
}

impl Hold {
    /// A fixed hold.
    pub fn fixed(d: Duration) -> Self {
        Self { min: d, max: d }
    }

    /// Draws one hold time.
    pub fn sample(&self, rng: &mut fastrand::Rng) -> Duration {
        if self.max <= self.min {
            return self.min;
        }
        let span = u64::try_from((self.max - self.min).as_micros()).unwrap_or(u64::MAX);
        self.min + Duration::from_micros(rng.u64(0..=span))
    }

    /// Mean hold in microseconds (for the report).
    pub fn mean_us(&self) -> u64 {
        u64::try_from((self.min + self.max).as_micros() / 2).unwrap_or(u64::MAX)
    }
}

impl fmt::Display for Hold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.max.is_zero() {
            f.write_str("0")
        } else if self.min == self.max {
            write!(f, "{:?}", self.min)
        } else {
            write!(f, "{:?}..{:?}", self.min, self.max)
        }
    }
}

/// [`parse_duration`] with its error as text, as clap shows it.
fn duration(text: &str) -> Result<Duration, String> {
    parse_duration(text).map_err(|e| e.to_string())
}

/// Parses `0`, `2ms` or `1ms..5ms`.
pub fn parse_hold(text: &str) -> Result<Hold, String> {
    match text.split_once("..") {
        None => duration(text).map(Hold::fixed),
        Some((lo, hi)) => {
            let (min, max) = (duration(lo)?, duration(hi)?);
            if min > max {
                return Err(format!("hold range `{text}` is backwards"));
            }
            Ok(Hold { min, max })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts() {
        assert_eq!(parse_count("64").unwrap(), 64);
        assert_eq!(parse_count("100k").unwrap(), 100_000);
        assert_eq!(parse_count("1M").unwrap(), 1_000_000);
        assert_eq!(parse_count("1.5k").unwrap(), 1_500);
        assert_eq!(parse_count("1_000").unwrap(), 1_000);
        assert!(parse_count("-1").is_err());
        assert!(parse_count("1.5").is_err());
        assert!(parse_count("lots").is_err());
    }

    #[test]
    fn holds() {
        assert_eq!(parse_hold("0").unwrap(), Hold::default());
        assert_eq!(
            parse_hold("2ms").unwrap(),
            Hold::fixed(Duration::from_millis(2))
        );
        let h = parse_hold("1ms..5ms").unwrap();
        assert_eq!(
            (h.min, h.max),
            (Duration::from_millis(1), Duration::from_millis(5))
        );
        assert!(parse_hold("5ms..1ms").is_err());
        assert!(parse_hold("1..5ms").unwrap_err().contains("no unit"));
        let mut rng = fastrand::Rng::with_seed(1);
        assert!((0..100).all(|_| (h.min..=h.max).contains(&h.sample(&mut rng))));
    }
}
