//! `samples.csv`: one row per sample, flat columns, as recorded in `samples.jsonl` (stored fields, not
//! recomputed). RSS readings spread over `rss_1..rss_k`; each metric has its own column. Fields are
//! quoted per RFC 4180 when they hold a comma, quote or line break. Absent values are empty.

use std::collections::BTreeSet;

use anyhow::Result;

use crate::outputs::report::{Format, ReportInput};
use crate::run::run_dir;
use crate::study::sample::Sample;

/// `samples.csv`.
pub struct SamplesCsv;

const LEADING: [&str; 11] = [
    "run_id",
    "study",
    "probe",
    "tasks",
    "repeat",
    "position",
    "cpus_requested",
    "cpus_pinned",
    "cpus_in_force",
    "workers",
    "baseline_rss_bytes",
];

const TRAILING: [&str; 14] = [
    "rss_median_bytes",
    "per_task_bytes",
    "vm_hwm_bytes",
    "rss_anon_bytes",
    "rss_file_bytes",
    "threads",
    "completed",
    "expected",
    "valid",
    "error",
    "stderr_last_lines",
    "exit_code",
    "oom_killed",
    "image_id",
];

impl Format for SamplesCsv {
    fn name(&self) -> &'static str {
        run_dir::SAMPLES_CSV
    }

    fn render(&self, input: &ReportInput) -> Result<Vec<u8>> {
        let readings = input
            .samples
            .iter()
            .map(|s| s.rss_bytes.len())
            .max()
            .unwrap_or(0);
        let metrics: BTreeSet<&str> = input
            .samples
            .iter()
            .flat_map(|s| s.metrics.keys().map(String::as_str))
            .collect();
        let mut header: Vec<String> = LEADING.iter().map(ToString::to_string).collect();
        header.extend((1..=readings).map(|i| format!("rss_{i}")));
        header.extend(TRAILING.iter().map(ToString::to_string));
        header.extend(metrics.iter().map(ToString::to_string));
        let mut out = record(&header);
        for s in input.samples {
            out.push_str(&record(&row(s, readings, &metrics)));
        }
        Ok(out.into_bytes())
    }
}

fn row(s: &Sample, readings: usize, metrics: &BTreeSet<&str>) -> Vec<String> {
    let opt = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
    let mut r = vec![
        s.run_id.clone(),
        s.study.clone(),
        s.probe.clone(),
        s.tasks.to_string(),
        s.repeat.to_string(),
        s.position.to_string(),
        s.cpus_requested.clone(),
        s.cpus_pinned.clone(),
        s.cpus_in_force.clone().unwrap_or_default(),
        s.workers.to_string(),
        opt(s.baseline_rss_bytes),
    ];
    r.extend((0..readings).map(|i| opt(s.rss_bytes.get(i).copied())));
    r.extend([
        opt(s.rss_median_bytes),
        s.per_task_bytes.map(|v| v.to_string()).unwrap_or_default(),
        opt(s.vm_hwm_bytes),
        opt(s.rss_anon_bytes),
        opt(s.rss_file_bytes),
        opt(s.threads),
        opt(s.completed),
        s.expected.to_string(),
        s.valid.to_string(),
        s.error.clone().unwrap_or_default(),
        // A failed process's own last words; a valid one's stderr is no finding.
        match s.valid {
            true => String::new(),
            false => s.stderr_last_lines().join("\n"),
        },
        s.exit_code.map(|c| c.to_string()).unwrap_or_default(),
        s.oom_killed.to_string(),
        s.image_id.clone(),
    ]);
    r.extend(
        metrics
            .iter()
            .map(|m| s.metrics.get(*m).map(|v| v.to_string()).unwrap_or_default()),
    );
    r
}

/// One CSV record, ending in `\n`.
fn record(fields: &[String]) -> String {
    let quoted: Vec<String> = fields.iter().map(|f| quote(f)).collect();
    format!("{}\n", quoted.join(","))
}

fn quote(field: &str) -> String {
    if field.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outputs::report::fixture;

    #[test]
    fn quoting() {
        assert_eq!(quote("plain"), "plain");
        assert_eq!(quote("a,b"), "\"a,b\"");
        assert_eq!(quote("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(quote("two\nlines"), "\"two\nlines\"");
    }

    #[test]
    fn snapshot() {
        let (study, samples) = (fixture::study(), fixture::samples());
        let (summary, verdicts) = (fixture::summary(), fixture::verdicts());
        let input = fixture::input(&study, &samples, &summary, &verdicts);
        let text = String::from_utf8(SamplesCsv.render(&input).unwrap()).unwrap();
        assert_eq!(text.lines().count(), 25);
        let columns = text.lines().next().unwrap().split(',').count();
        assert!(
            text.lines().all(|l| l.split(',').count() == columns),
            "no field needs quoting here"
        );
        insta::assert_snapshot!("samples_csv", text);
    }
}
