//! `summary.json` (the [`Summary`](crate::outputs::summary::Summary)) and `verdicts.json` (a
//! [`VerdictFile`]), pretty-printed with a final newline.

use anyhow::{Context, Result};
use serde::Serialize;

use crate::outputs::report::{Format, ReportInput};
use crate::outputs::verdict::VerdictFile;
use crate::run::run_dir;

/// `summary.json`: every statistic of the run.
pub struct SummaryJson;

/// `verdicts.json`: whether the data is partial, and one verdict per claim.
pub struct VerdictsJson;

impl Format for SummaryJson {
    fn name(&self) -> &'static str {
        run_dir::SUMMARY
    }

    fn render(&self, input: &ReportInput) -> Result<Vec<u8>> {
        pretty(input.summary)
    }
}

impl Format for VerdictsJson {
    fn name(&self) -> &'static str {
        run_dir::VERDICTS
    }

    fn render(&self, input: &ReportInput) -> Result<Vec<u8>> {
        pretty(&VerdictFile {
            partial: input.partial.is_some(),
            partial_reason: input.partial.clone(),
            verdicts: input.verdicts.to_vec(),
        })
    }
}

fn pretty(value: &impl Serialize) -> Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec_pretty(value).context("encoding JSON")?;
    bytes.push(b'\n');
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outputs::report::fixture;
    use crate::outputs::summary::Summary;

    #[test]
    fn snapshots_and_round_trip() {
        let (study, samples) = (fixture::study(), fixture::samples());
        let (summary, verdicts) = (fixture::summary(), fixture::verdicts());
        let mut input = fixture::input(&study, &samples, &summary, &verdicts);
        let text = String::from_utf8(SummaryJson.render(&input).unwrap()).unwrap();
        let back: Summary = serde_json::from_str(&text).unwrap();
        assert_eq!(back, summary);
        insta::assert_snapshot!("summary_json", text);

        input.partial = Some("samples.jsonl line 7 malformed".into());
        let text = String::from_utf8(VerdictsJson.render(&input).unwrap()).unwrap();
        let back: VerdictFile = serde_json::from_str(&text).unwrap();
        assert!(back.partial);
        assert_eq!(back.verdicts, verdicts);
        insta::assert_snapshot!("verdicts_json", text);
    }
}
