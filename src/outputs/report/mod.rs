//! Reports of a run: every file format behind one small trait, plus the terminal verdict table.
//!
//! Each format renders the same [`ReportInput`] to the bytes of one file; [`write_all`] writes them
//! all into a run directory, each through a temporary file and a rename.

mod csv;
mod dropped;
mod html;

pub use dropped::line as dropped_line;
mod json;
pub(crate) mod kinds;
pub(crate) mod markdown;
pub(crate) mod svg;
pub mod terminal;

#[cfg(test)]
pub mod fixture;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::outputs::summary::Summary;
use crate::outputs::verdict::Verdict;
use crate::run::warning::Warning;
use crate::study::Study;
use crate::study::sample::Sample;

/// Everything a report is made from.
pub struct ReportInput<'a> {
    /// The study the run follows.
    pub study: &'a Study,
    /// Run identifier (the run directory's name).
    pub run_id: &'a str,
    /// Every sample read, valid or not.
    pub samples: &'a [Sample],
    /// Statistics computed from `samples`.
    pub summary: &'a Summary,
    /// One verdict per claim of the study.
    pub verdicts: &'a [Verdict],
    /// This run's environment as label → value (e.g. `("Kernel", "6.1.0")`), in display order.
    pub environment: Vec<(String, String)>,
    /// Differences from the published environment and protocol, one sentence each.
    pub deviations: Vec<String>,
    /// Host conditions that may have touched the numbers (swap, hugepages, steal …), each naming
    /// the figures it may touch; they explain samples, never invalidate them.
    pub warnings: Vec<Warning>,
    /// Why the data is partial (e.g. `samples.jsonl line 7 malformed`); `None` when complete.
    pub partial: Option<String>,
    /// A run whose samples come from more than one hardware class, or from hosts judged alone: its
    /// claims judged per class (and host), shown before the pooled verdicts.
    pub per_class: Option<&'a PerClass>,
}

/// The claims of a run judged per hardware class (and host), as the report shows them.
pub struct PerClass {
    /// The section shown before the pooled verdicts (Markdown).
    pub section: String,
    /// Each class's label, class and summary, for one panel column per class in the figure; empty
    /// when the samples are of one class.
    pub summaries: Vec<(String, String, Summary)>,
    /// Whether `environment` lists each merged run with its hardware class (`Run | Hardware class`)
    /// instead of one machine.
    pub runs_listed: bool,
}

/// One report file format.
pub trait Format {
    /// The file name written in the run directory (e.g. `report.md`).
    fn name(&self) -> &'static str;
    /// The file's bytes.
    fn render(&self, input: &ReportInput) -> Result<Vec<u8>>;
}

/// Every format, in the order they are written.
pub fn all() -> Vec<Box<dyn Format>> {
    vec![
        Box::new(json::SummaryJson),
        Box::new(json::VerdictsJson),
        Box::new(csv::SamplesCsv),
        Box::new(svg::Figure),
        Box::new(markdown::Markdown),
        Box::new(html::Html),
    ]
}

/// Renders every format into `dir`, each through a temporary file and a rename; returns the paths.
pub fn write_all(dir: &Path, input: &ReportInput) -> Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for format in all() {
        let bytes = format
            .render(input)
            .with_context(|| format!("rendering {}", format.name()))?;
        let path = dir.join(format.name());
        crate::files::write_atomic(&path, &bytes)?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_every_format() {
        let dir = tempfile::tempdir().unwrap();
        let (summary, verdicts) = (fixture::summary(), fixture::verdicts());
        let study = fixture::study();
        let samples = fixture::samples();
        let input = fixture::input(&study, &samples, &summary, &verdicts);
        let paths = write_all(dir.path(), &input).unwrap();
        let names: Vec<_> = paths
            .iter()
            .map(|p| p.file_name().unwrap().to_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "summary.json",
                "verdicts.json",
                "samples.csv",
                "figure.svg",
                "report.md",
                "report.html"
            ]
        );
        let leftovers = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(leftovers, 6, "no temporary files are left behind");
        let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
        assert!(md.contains("figure.svg"));
    }

    #[test]
    fn report_files_are_named_in_the_run_folder() {
        for format in all() {
            assert!(
                crate::run::run_dir::OPTIONAL.contains(&format.name()),
                "{}",
                format.name()
            );
        }
    }
}
