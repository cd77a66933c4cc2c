//! YAML parsing shared by the study and pin files: errors carry line and column.

use anyhow::Result;
use serde::de::DeserializeOwned;

/// Parses YAML into `T`; a syntax error, an unknown field or a bad value says where.
pub fn parse<T: DeserializeOwned>(text: &str) -> Result<T> {
    serde_yaml::from_str(text).map_err(|e| {
        let at = e
            .location()
            .map(|l| format!("line {}, column {}: ", l.line(), l.column()))
            .unwrap_or_default();
        anyhow::anyhow!("{at}{e}")
    })
}
