//! The JSON encoding shared by fixtures and the adapter protocol (docs/fixtures.md).
//!
//! Writing: a finite float is the shortest decimal that round-trips (`8.0`,
//! `0.1`, `1e300`), negative zero keeps its sign (`-0.0`), and inf, -inf and
//! nan are the strings `"inf"`, `"-inf"` and `"nan"`. Objects keep their keys
//! in insertion order, so a gradients map lists nodes in creation order.
//!
//! Reading: any JSON number, `-0` written as an integer (Go's encoder does
//! that) as negative zero, and the three strings. `NaN` and `Infinity`
//! literals are not JSON and are rejected by the parser.

use std::fmt;

use serde_json::Value;

/// A JSON value to write, with floats in the wire encoding and ordered objects.
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A JSON integer (operand slots, protocol versions).
    Int(u64),
    /// A float, written in the wire encoding.
    Float(f64),
    /// A string.
    Str(String),
    /// An array.
    Array(Vec<Json>),
    /// An object whose keys are written in this order.
    Object(Vec<(String, Json)>),
    /// Any already-parsed value, written as it is (an echoed case name).
    Raw(Value),
    /// JSON text already written by [`Json::write_to`], copied as it is.
    Verbatim(String),
}

impl Json {
    /// An object from `(key, value)` pairs.
    pub fn object<K: Into<String>>(pairs: impl IntoIterator<Item = (K, Json)>) -> Json {
        Json::Object(
            pairs
                .into_iter()
                .map(|(key, value)| (key.into(), value))
                .collect(),
        )
    }

    /// A float that may be absent: `null` for `None`.
    pub fn optional_float(value: Option<f64>) -> Json {
        value.map_or(Json::Null, Json::Float)
    }

    /// Append this value's compact JSON text to `out`.
    pub fn write_to(&self, out: &mut String) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Int(n) => out.push_str(&n.to_string()),
            Json::Float(x) => write_float(*x, out),
            Json::Str(s) => write_string(s, out),
            Json::Array(items) => {
                out.push('[');
                for (index, item) in items.iter().enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    item.write_to(out);
                }
                out.push(']');
            }
            Json::Object(pairs) => {
                out.push('{');
                for (index, (key, value)) in pairs.iter().enumerate() {
                    if index > 0 {
                        out.push(',');
                    }
                    write_string(key, out);
                    out.push(':');
                    value.write_to(out);
                }
                out.push('}');
            }
            Json::Raw(value) => out.push_str(&value.to_string()),
            Json::Verbatim(text) => out.push_str(text),
        }
    }
}

impl fmt::Display for Json {
    /// The compact JSON text, one line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        self.write_to(&mut out);
        f.write_str(&out)
    }
}

/// Append a float in the wire encoding: shortest round-trip number, `-0.0`,
/// or `"inf"` / `"-inf"` / `"nan"`.
pub fn write_float(x: f64, out: &mut String) {
    if x.is_nan() {
        out.push_str("\"nan\"");
    } else if x.is_infinite() {
        out.push_str(if x > 0.0 { "\"inf\"" } else { "\"-inf\"" });
    } else {
        // serde_json writes the shortest round-trip decimal, with ".0" on integers and
        // the sign of negative zero; a finite f64 always serializes.
        out.push_str(&serde_json::to_string(&x).expect("a finite float serializes"));
    }
}

fn write_string(s: &str, out: &mut String) {
    out.push_str(&serde_json::to_string(s).expect("a string serializes"));
}

/// A value that is not a float in the wire encoding; the message says where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireError(pub String);

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for WireError {}

/// Read a JSON number or one of `"inf"`, `"-inf"`, `"nan"` as a float;
/// `where_` names the field for the error message.
pub fn decode_float(raw: &Value, where_: &str) -> Result<f64, WireError> {
    match raw {
        // serde_json keeps the number's text (arbitrary_precision): parsing it rounds
        // correctly, reads `-0` as negative zero, an overflowing literal as +-inf and an
        // underflowing one as +-0.0, as Python's float() does.
        Value::Number(number) => number.to_string().parse::<f64>().map_err(|error| {
            WireError(format!(
                "{where_}: the number {number} is not a float: {error}"
            ))
        }),
        Value::String(name) => match name.as_str() {
            "inf" => Ok(f64::INFINITY),
            "-inf" => Ok(f64::NEG_INFINITY),
            "nan" => Ok(f64::NAN),
            _ => Err(WireError(format!(
                "{where_}: expected a number or one of \"inf\", \"-inf\", \"nan\", got {raw}"
            ))),
        },
        _ => Err(WireError(format!("{where_}: expected a number, got {raw}"))),
    }
}

/// Parse one line of JSON text.
pub fn parse(text: &str) -> Result<Value, WireError> {
    serde_json::from_str(text).map_err(|error| WireError(format!("not JSON: {error}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(x: f64) -> String {
        Json::Float(x).to_string()
    }

    #[test]
    fn floats_are_written_in_the_wire_encoding() {
        assert_eq!(text(8.0), "8.0");
        assert_eq!(text(0.1), "0.1");
        assert_eq!(text(-0.0), "-0.0");
        assert_eq!(text(f64::INFINITY), "\"inf\"");
        assert_eq!(text(f64::NEG_INFINITY), "\"-inf\"");
        assert_eq!(text(f64::NAN), "\"nan\"");
        for x in [1e300, 5e-324, 1.0 / 3.0, -2.5e-8, 123456789.125] {
            assert_eq!(text(x).parse::<f64>().unwrap().to_bits(), x.to_bits());
        }
    }

    #[test]
    fn negative_zero_written_as_an_integer_reads_as_negative_zero() {
        let value = parse("[-0, 0, -0.0, 3, \"inf\", \"nan\", 1e400, -1e-400]").unwrap();
        let floats: Vec<f64> = value
            .as_array()
            .unwrap()
            .iter()
            .map(|v| decode_float(v, "x").unwrap())
            .collect();
        assert_eq!(floats[0].to_bits(), (-0.0f64).to_bits());
        assert_eq!(floats[1].to_bits(), 0.0f64.to_bits());
        assert_eq!(floats[2].to_bits(), (-0.0f64).to_bits());
        assert_eq!(floats[3], 3.0);
        assert_eq!(floats[4], f64::INFINITY);
        assert!(floats[5].is_nan());
        assert_eq!(floats[6], f64::INFINITY);
        assert_eq!(floats[7].to_bits(), (-0.0f64).to_bits());
    }

    #[test]
    fn non_numbers_and_literals_are_rejected() {
        assert!(decode_float(&Value::Bool(true), "x").is_err());
        assert!(decode_float(&Value::String("Infinity".into()), "x").is_err());
        assert!(parse("NaN").is_err());
        assert!(parse("[Infinity]").is_err());
    }

    #[test]
    fn objects_keep_insertion_order() {
        let json = Json::object([("b", Json::Int(1)), ("a", Json::Null)]);
        assert_eq!(json.to_string(), "{\"b\":1,\"a\":null}");
    }
}
