//! Unit-aware option values: durations (`10s`, `250ms`, `1.5s`, `500us`), counts (`100k`, `1m`) and hold
//! times (`0`, `2ms`, or a range `1ms..5ms`).

use std::fmt;
use std::time::Duration;

/// Parses `10s`, `250ms`, `500us` (or `µs`), `1m`, `1.5s`, `2h`; a bare `0` is zero. Other bare numbers
/// are rejected: `--ttl 10` could mean seconds or milliseconds, so the unit must be said.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let s = text.trim();
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| format!("`{text}` has no unit (use e.g. 10s, 250ms, 500us)"))?;
    let (number, unit) = s.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration (use e.g. 10s, 250ms, 500us)"))?;
    let scale = match unit.trim() {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" | "sec" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        other => {
            return Err(format!(
                "`{text}`: unknown unit `{other}` (use ns, us, ms, s, m or h)"
            ))
        }
    };
    let secs = value * scale;
    if !secs.is_finite() || secs > 1e9 {
        return Err(format!("`{text}` is too large"));
    }
    Ok(Duration::from_secs_f64(secs))
}

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

/// Parses `0`, `2ms` or `1ms..5ms`.
pub fn parse_hold(text: &str) -> Result<Hold, String> {
    match text.split_once("..") {
        None => parse_duration(text).map(Hold::fixed),
        Some((lo, hi)) => {
            let (min, max) = (parse_duration(lo)?, parse_duration(hi)?);
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
    fn durations() {
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("500us").unwrap(), Duration::from_micros(500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
        assert_eq!(parse_duration("0ms").unwrap(), Duration::ZERO);
        assert!(parse_duration("10").is_err());
        assert!(parse_duration("ten s").is_err());
        assert!(parse_duration("5parsecs").is_err());
    }

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
        let mut rng = fastrand::Rng::with_seed(1);
        assert!((0..100).all(|_| (h.min..=h.max).contains(&h.sample(&mut rng))));
    }
}
