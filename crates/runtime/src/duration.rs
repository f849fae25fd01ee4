//! Durations on the command line, written as Go's `time.ParseDuration` reads them (`30s`, `5m`, `1h30m`,
//! `1.5h`, `300ms`): OpenShift operators, their manifests and their users write durations this way, so a
//! flag of ours reads the same as a flag of theirs.
//!
//! A bare number is refused, except `0`: `--resync 10` could mean seconds or minutes, and a wrong guess
//! is silent.

use std::time::Duration;

/// Why a duration did not parse. The message names the input and shows a valid form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ParseDurationError {
    #[error("empty duration: write a number and a unit, e.g. 30s or 5m")]
    Empty,
    #[error("{input:?} has no unit: write {input}s for seconds (units: ns, us, ms, s, m, h)")]
    MissingUnit { input: String },
    #[error("{input:?}: unknown unit {unit:?} (units: ns, us, ms, s, m, h)")]
    UnknownUnit { input: String, unit: String },
    #[error("{input:?} is not a duration: write a number and a unit, e.g. 30s, 5m or 1h30m")]
    Invalid { input: String },
    #[error("{input:?} is too long a duration")]
    Overflow { input: String },
}

/// Parses `30s`, `5m`, `1h30m`, `1.5h`, `300ms`, `0` (Go's syntax without a sign: no flag of ours takes a
/// negative duration).
pub(crate) fn parse_duration(input: &str) -> Result<Duration, ParseDurationError> {
    let s = input.trim();
    if s.is_empty() {
        return Err(ParseDurationError::Empty);
    }
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    let invalid = || ParseDurationError::Invalid {
        input: input.to_string(),
    };
    let mut rest = s;
    let mut total_nanos: u128 = 0;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number = &rest[..number_len];
        rest = &rest[number_len..];
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return Err(invalid());
        }
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];
        let unit_nanos: u128 = match unit {
            "" => {
                return Err(ParseDurationError::MissingUnit {
                    input: input.to_string(),
                });
            }
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60 * 1_000_000_000,
            "h" => 3_600 * 1_000_000_000,
            other => {
                return Err(ParseDurationError::UnknownUnit {
                    input: input.to_string(),
                    unit: other.to_string(),
                });
            }
        };
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        let overflow = || ParseDurationError::Overflow {
            input: input.to_string(),
        };
        let whole: u128 = if whole.is_empty() {
            0
        } else {
            whole.parse().map_err(|_| overflow())?
        };
        let mut nanos = whole.checked_mul(unit_nanos).ok_or_else(overflow)?;
        // The fraction in nanoseconds of this unit, truncated (as Go does) past nanosecond precision.
        let mut scale = unit_nanos;
        for digit in fraction.bytes().map(|b| u128::from(b - b'0')) {
            scale /= 10;
            if scale == 0 {
                break;
            }
            nanos += digit * scale;
        }
        total_nanos = total_nanos.checked_add(nanos).ok_or_else(overflow)?;
    }
    let secs =
        u64::try_from(total_nanos / 1_000_000_000).map_err(|_| ParseDurationError::Overflow {
            input: input.to_string(),
        })?;
    Ok(Duration::new(secs, (total_nanos % 1_000_000_000) as u32))
}

// The election's messages and logs use it; `manifests-gen` (no features) only parses.
#[cfg(feature = "leader")]
/// Writes a duration the way [`parse_duration`] reads it, in whole units where possible: `137s`, `5m`,
/// `1h30m`, `250ms` (for logs, help texts and messages that echo a flag).
pub(crate) fn format_duration(d: Duration) -> String {
    if d.is_zero() {
        return "0s".into();
    }
    if d.subsec_nanos() != 0 {
        let nanos = d.as_nanos();
        return if nanos.is_multiple_of(1_000_000) && d.as_secs() == 0 {
            format!("{}ms", nanos / 1_000_000)
        } else if d.as_secs() == 0 && nanos.is_multiple_of(1_000) {
            format!("{}us", nanos / 1_000)
        } else if d.as_secs() == 0 {
            format!("{nanos}ns")
        } else {
            format!("{}s", d.as_secs_f64())
        };
    }
    let secs = d.as_secs();
    let (h, m, s) = (secs / 3600, secs % 3600 / 60, secs % 60);
    // Seconds below 10 minutes stay in seconds (`137s`, as OpenShift documents its lease timings).
    if secs < 600 && s != 0 {
        return format!("{secs}s");
    }
    let mut out = String::new();
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if m > 0 {
        out.push_str(&format!("{m}m"));
    }
    if s > 0 {
        out.push_str(&format!("{s}s"));
    }
    out
}

/// `value_parser` for clap: `#[arg(long, value_parser = capi_runtime::parse_duration_arg)]`.
pub fn parse_duration_arg(input: &str) -> Result<Duration, String> {
    parse_duration(input).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_go_durations() {
        let ms = Duration::from_millis;
        let s = Duration::from_secs;
        for (input, expected) in [
            ("0", Duration::ZERO),
            ("30s", s(30)),
            ("137s", s(137)),
            ("5m", s(300)),
            ("1h", s(3600)),
            ("1h30m", s(5400)),
            ("1h30m15s", s(5415)),
            ("1.5h", s(5400)),
            (".5s", ms(500)),
            ("1.s", s(1)),
            ("300ms", ms(300)),
            ("2m0.5s", ms(120_500)),
            ("10us", Duration::from_micros(10)),
            ("10µs", Duration::from_micros(10)),
            ("7ns", Duration::from_nanos(7)),
            ("1.0000000001s", s(1)),
            (" 30s ", s(30)),
        ] {
            assert_eq!(parse_duration(input), Ok(expected), "{input}");
        }
    }

    #[test]
    fn refuses_what_is_not_a_duration() {
        for (input, expected) in [
            ("", ParseDurationError::Empty),
            (
                "180",
                ParseDurationError::MissingUnit {
                    input: "180".into(),
                },
            ),
            (
                "1m30",
                ParseDurationError::MissingUnit {
                    input: "1m30".into(),
                },
            ),
            (
                "5 m",
                ParseDurationError::UnknownUnit {
                    input: "5 m".into(),
                    unit: " m".into(),
                },
            ),
            (
                "3d",
                ParseDurationError::UnknownUnit {
                    input: "3d".into(),
                    unit: "d".into(),
                },
            ),
            (
                "-5s",
                ParseDurationError::Invalid {
                    input: "-5s".into(),
                },
            ),
            ("s", ParseDurationError::Invalid { input: "s".into() }),
            (".s", ParseDurationError::Invalid { input: ".s".into() }),
            (
                "1.2.3s",
                ParseDurationError::Invalid {
                    input: "1.2.3s".into(),
                },
            ),
            (
                "99999999999999999999999999999999999999999h",
                ParseDurationError::Overflow {
                    input: "99999999999999999999999999999999999999999h".into(),
                },
            ),
        ] {
            assert_eq!(parse_duration(input), Err(expected), "{input:?}");
        }
        assert_eq!(
            parse_duration("180").unwrap_err().to_string(),
            "\"180\" has no unit: write 180s for seconds (units: ns, us, ms, s, m, h)"
        );
    }

    #[test]
    #[cfg(feature = "leader")]
    fn formats_what_it_parses() {
        for (d, text) in [
            (Duration::ZERO, "0s"),
            (Duration::from_secs(30), "30s"),
            (Duration::from_secs(137), "137s"),
            (Duration::from_secs(300), "5m"),
            (Duration::from_secs(600), "10m"),
            (Duration::from_secs(5400), "1h30m"),
            (Duration::from_secs(3601), "1h1s"),
            (Duration::from_millis(250), "250ms"),
            (Duration::from_millis(1500), "1.5s"),
            (Duration::from_micros(10), "10us"),
            (Duration::from_nanos(7), "7ns"),
        ] {
            assert_eq!(format_duration(d), text);
            assert_eq!(parse_duration(text), Ok(d), "{text} reads back");
        }
    }
}
