//! Units people write in configuration: durations as `500ms`, `2s`, `1.5s`, `1m` ([`parse_duration`]),
//! and, with the `serde` feature, the serde forms `Config`'s fields use. Below `config` and `env`,
//! which both use it, so neither names the other's helpers.

use std::time::Duration;

/// `500ms`, `2s`, `1.5s`, `1m`, `1h`, `250us`, `10ns`; a bare number is seconds.
pub(crate) fn parse_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let seconds = match unit.trim() {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "ns" => 1e-9,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return None,
    };
    Duration::try_from_secs_f64(number * seconds).ok()
}

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
        super::parse_duration(&text).ok_or_else(|| {
            serde::de::Error::custom(format!("{text:?} is not a duration (500ms, 2s)"))
        })
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
        text.map(|text| {
            super::parse_duration(&text).ok_or_else(|| {
                serde::de::Error::custom(format!("{text:?} is not a duration (500ms, 2s)"))
            })
        })
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
    fn durations_read_as_people_write_them() {
        let ms = Duration::from_millis;
        assert_eq!(parse_duration("500ms"), Some(ms(500)));
        assert_eq!(parse_duration("2s"), Some(ms(2000)));
        assert_eq!(parse_duration("1.5s"), Some(ms(1500)));
        assert_eq!(parse_duration("1m"), Some(ms(60_000)));
        assert_eq!(parse_duration("3"), Some(ms(3000)));
        assert_eq!(parse_duration("250us"), Some(Duration::from_micros(250)));
        for bad in ["", "s", "2 parsecs", "-1s", "1e99h", "ms5"] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }
}
