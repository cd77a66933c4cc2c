//! What a program run without the handshake says on stdout: `result key=value…` lines (what it
//! measured itself), `latency value_ns=<n> count=<n>` lines (one histogram bucket each) and
//! anything else, which is counted and otherwise ignored.

use std::collections::BTreeMap;

use crate::json::Value;
use crate::parse::{ProbeLine, parse_probe_line};
use crate::process::excerpt;

/// One stdout line, classified.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// `result key=value…`: its metrics, in order.
    Result(ProbeLine),
    /// `latency value_ns=<u64> count=<u64 ≥ 1>`.
    Latency { value_ns: u64, count: u64 },
    /// Any other line.
    Other,
}

/// Classifies one stdout line; `latency` lines count only when `with_latency` (otherwise they
/// are other lines). A `result` or (counted) `latency` line that does not parse is an error.
pub fn classify(line: &str, with_latency: bool) -> Result<Output, String> {
    match counted_word(line, with_latency) {
        Some("result") => parse_result(line).map(Output::Result),
        Some(_) => parse_latency(line),
        None => Ok(Output::Other),
    }
}

/// `result` or `latency` when `line` (or the beginning of a line) is one the sampler reads.
pub fn counted_word(line: &str, with_latency: bool) -> Option<&'static str> {
    match line.split_whitespace().next() {
        Some("result") => Some("result"),
        Some("latency") if with_latency => Some("latency"),
        _ => None,
    }
}

/// The message for a `word` line that does not parse.
pub fn malformed(word: &str, line: &str, why: &str) -> String {
    format!("protocol: malformed `{word}` line {}: {why}", excerpt(line))
}

fn parse_result(line: &str) -> Result<ProbeLine, String> {
    let parsed = parse_probe_line(line).map_err(|e| malformed("result", line, &e))?;
    if parsed.metrics.is_empty() {
        return Err(malformed("result", line, "no key=value metrics"));
    }
    Ok(parsed)
}

fn parse_latency(line: &str) -> Result<Output, String> {
    let bad = |why: &str| malformed("latency", line, why);
    let parsed = parse_probe_line(line).map_err(|e| bad(&e))?;
    if let Some((key, _)) = parsed
        .metrics
        .iter()
        .find(|(k, _)| k != "value_ns" && k != "count")
    {
        return Err(bad(&format!(
            "unexpected key {key:?} (only value_ns and count)"
        )));
    }
    let number = |key: &str| match parsed.get(key) {
        Some(Value::UInt(n)) => Ok(*n),
        Some(_) => Err(bad(&format!("{key} is not a non-negative integer"))),
        None => Err(bad(&format!("{key} is missing"))),
    };
    let value_ns = number("value_ns")?;
    let count = number("count")?;
    if count == 0 {
        return Err(bad("count must be at least 1"));
    }
    Ok(Output::Latency { value_ns, count })
}

/// Latencies in ns with how often each was seen; the same value seen again adds its count.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Histogram {
    counts: BTreeMap<u64, u64>,
}

impl Histogram {
    /// Adds `count` observations of `value_ns`; fails if the total would not fit in a u64.
    pub fn add(&mut self, value_ns: u64, count: u64) -> Result<(), String> {
        let total = self.counts.entry(value_ns).or_insert(0);
        *total = total.checked_add(count).ok_or_else(|| {
            format!("protocol: the count of latency value_ns={value_ns} overflows 64 bits")
        })?;
        Ok(())
    }

    /// `[[value_ns,count],…]`, by increasing value.
    pub fn to_json(&self) -> Value {
        Value::Arr(
            self.counts
                .iter()
                .map(|(&v, &c)| Value::Arr(vec![Value::UInt(v), Value::UInt(c)]))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_lines() {
        let Output::Result(l) = classify("result ns_per_op=12.5 batch=1 unit=ns", false).unwrap()
        else {
            panic!("not a result");
        };
        assert_eq!(
            l.metrics_json().to_json(),
            r#"{"ns_per_op":12.5,"batch":1,"unit":"ns"}"#
        );
        assert!(matches!(
            classify("  result a=1\r", true),
            Ok(Output::Result(_))
        ));
    }

    #[test]
    fn other_lines() {
        for line in [
            "",
            "hello world",
            "results a=1",
            "resultx",
            "# result a=1",
            "latency value_ns=1 count=1",
            "latency nonsense",
        ] {
            assert_eq!(classify(line, false), Ok(Output::Other), "{line:?}");
        }
        assert_eq!(classify("latencies x", true), Ok(Output::Other));
    }

    #[test]
    fn latency_lines() {
        assert_eq!(
            classify("latency value_ns=1500 count=3", true),
            Ok(Output::Latency {
                value_ns: 1500,
                count: 3
            })
        );
        assert_eq!(
            classify("latency count=1 value_ns=0", true),
            Ok(Output::Latency {
                value_ns: 0,
                count: 1
            })
        );
    }

    #[test]
    fn malformed_lines() {
        let cases = [
            (
                "result",
                "protocol: malformed `result` line \"result\": no key=value metrics",
            ),
            (
                "result a",
                "protocol: malformed `result` line \"result a\": \"a\" is not key=value",
            ),
            (
                "result a=1 a=2",
                "protocol: malformed `result` line \"result a=1 a=2\": key \"a\" appears twice",
            ),
            (
                "latency value_ns=1",
                "protocol: malformed `latency` line \"latency value_ns=1\": count is missing",
            ),
            (
                "latency value_ns=1 count=0",
                "protocol: malformed `latency` line \"latency value_ns=1 count=0\": count must be at least 1",
            ),
            (
                "latency value_ns=1.5 count=1",
                "protocol: malformed `latency` line \"latency value_ns=1.5 count=1\": value_ns is not a non-negative integer",
            ),
            (
                "latency value_ns=-1 count=1",
                "protocol: malformed `latency` line \"latency value_ns=-1 count=1\": value_ns is not a non-negative integer",
            ),
            (
                "latency value_ns=1 count=2 p=3",
                "protocol: malformed `latency` line \"latency value_ns=1 count=2 p=3\": unexpected key \"p\" (only value_ns and count)",
            ),
        ];
        for (line, msg) in cases {
            assert_eq!(classify(line, true), Err(msg.to_owned()), "{line:?}");
        }
    }

    #[test]
    fn histogram_merges_and_sorts() {
        let mut h = Histogram::default();
        assert_eq!(h.to_json().to_json(), "[]");
        for (v, c) in [(300, 1), (100, 2), (300, 4), (200, 1)] {
            h.add(v, c).unwrap();
        }
        assert_eq!(h.to_json().to_json(), "[[100,2],[200,1],[300,5]]");
        h.add(7, u64::MAX).unwrap();
        assert_eq!(
            h.add(7, 1).unwrap_err(),
            "protocol: the count of latency value_ns=7 overflows 64 bits"
        );
    }
}
