//! A minimal JSON value and writer: just enough for the sampler's one output object.

use std::fmt::Write as _;

/// A JSON value. Objects keep their keys in insertion order.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    UInt(u64),
    Int(i64),
    /// Written with the given number of digits after the point, or in the shortest form that
    /// reads back exactly when `None`; non-finite numbers are written as `null`.
    Float(f64, Option<usize>),
    Str(String),
    Arr(Vec<Value>),
    Obj(Vec<(String, Value)>),
}

impl Value {
    pub fn opt_u64(v: Option<u64>) -> Value {
        v.map_or(Value::Null, Value::UInt)
    }

    pub fn opt_str(v: Option<&str>) -> Value {
        v.map_or(Value::Null, |s| Value::Str(s.to_owned()))
    }

    /// Milliseconds with microsecond resolution, or `null`.
    pub fn opt_ms(v: Option<f64>) -> Value {
        v.map_or(Value::Null, |ms| Value::Float(ms, Some(3)))
    }

    pub fn to_json(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    pub fn write(&self, out: &mut String) {
        match self {
            Value::Null => out.push_str("null"),
            Value::UInt(n) => {
                let _ = write!(out, "{n}");
            }
            Value::Int(n) => {
                let _ = write!(out, "{n}");
            }
            Value::Float(x, decimals) => match (x.is_finite(), decimals) {
                (false, _) => out.push_str("null"),
                (true, Some(d)) => {
                    let _ = write!(out, "{x:.d$}");
                }
                (true, None) => {
                    let _ = write!(out, "{x}");
                }
            },
            Value::Str(s) => write_str(s, out),
            Value::Arr(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    v.write(out);
                }
                out.push(']');
            }
            Value::Obj(fields) => {
                out.push('{');
                for (i, (k, v)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_str(k, out);
                    out.push(':');
                    v.write(out);
                }
                out.push('}');
            }
        }
    }
}

/// Writes `s` as a JSON string literal (RFC 8259): quotes, backslashes and all control
/// characters are escaped; everything else, including non-ASCII, is written as UTF-8.
pub fn write_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            // Line and paragraph separators are valid JSON but break JavaScript parsers.
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(text: &str) -> String {
        let mut out = String::new();
        write_str(text, &mut out);
        out
    }

    #[test]
    fn escapes_quotes_and_backslashes() {
        assert_eq!(s(r#"say "hi" \ bye"#), r#""say \"hi\" \\ bye""#);
    }

    #[test]
    fn escapes_control_characters() {
        assert_eq!(s("a\nb\rc\td"), r#""a\nb\rc\td""#);
        assert_eq!(s("\u{08}\u{0c}"), r#""\b\f""#);
        assert_eq!(
            s("\u{00}\u{01}\u{1f}\u{7f}"),
            r#""\u0000\u0001\u001f\u007f""#
        );
    }

    #[test]
    fn keeps_unicode() {
        assert_eq!(s("100 万 – ü"), "\"100 万 – ü\"");
        assert_eq!(s("\u{2028}"), r#""\u2028""#);
        assert_eq!(s(""), r#""""#);
    }

    #[test]
    fn writes_values() {
        let v = Value::Obj(vec![
            ("a".into(), Value::Null),
            ("b".into(), Value::UInt(18_446_744_073_709_551_615)),
            ("c".into(), Value::Int(-3)),
            ("d".into(), Value::Float(1.23456, Some(3))),
            ("e".into(), Value::Float(f64::NAN, Some(3))),
            ("g".into(), Value::Float(0.5, None)),
            (
                "f".into(),
                Value::Arr(vec![Value::Str("x\"".into()), Value::Obj(vec![])]),
            ),
        ]);
        assert_eq!(
            v.to_json(),
            r#"{"a":null,"b":18446744073709551615,"c":-3,"d":1.235,"e":null,"g":0.5,"f":["x\"",{}]}"#
        );
    }
}
