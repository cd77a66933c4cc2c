//! The outcome of a run — statistics, verdicts, deviations and report inputs — recomputed from the run's
//! raw files only (study.yaml, samples.jsonl, env.json, run.json). The same function serves a fresh run,
//! `parkbench report` and `parkbench verify` on an archive, so they all print the same table.

use std::path::Path;

use anyhow::{Context, Result};

use crate::outputs::merge;
use crate::outputs::report::{self, ReportInput};
use crate::outputs::summary::{self, Summary};
use crate::outputs::verdict::{self, Status, Verdict};
use crate::run::env::Environment;
use crate::run::run_dir::{self, RunFiles, RunState};
use crate::run::warning::Warning;
use crate::study::Study;
use crate::study::sample::{self, Sample};

/// Everything recomputed from a run's raw files.
pub struct Outcome {
    pub run_id: String,
    pub study: Study,
    pub samples: Vec<Sample>,
    pub summary: Summary,
    pub verdicts: Vec<Verdict>,
    pub environment: Vec<(String, String)>,
    pub deviations: Vec<String>,
    /// Validity warnings from run.json: what may have touched the numbers (never an invalid sample).
    pub warnings: Vec<Warning>,
    /// Why the data is partial (malformed sample lines, an incomplete run); `None` when complete.
    pub partial: Option<String>,
    /// Samples of more than one hardware class, or of hosts judged alone: the claims judged per
    /// class and host (`classes.json`).
    pub judged: Option<merge::Judged>,
    /// The same as the report shows it.
    pub per_class: Option<report::PerClass>,
    /// The slice of the matrix the run measured (`run --shard`), from run.json; `None` for the
    /// whole matrix.
    pub shard: Option<crate::run::shard::Shard>,
}

/// Recomputes statistics and verdicts from the raw files.
pub fn recompute(text: &RunFiles) -> Result<Outcome> {
    let study = Study::parse(&text.study_yaml).context("in the run's study.yaml")?;
    let (samples, bad) = sample::parse_lines(text.samples_jsonl.as_bytes())?;
    let env: Option<Environment> = match &text.env_json {
        Some(json) => Some(serde_json::from_str(json).context("parsing env.json")?),
        None => None,
    };
    let state: Option<RunState> = match &text.run_json {
        Some(json) => Some(serde_json::from_str(json).context("parsing run.json")?),
        None => None,
    };
    let mut partial: Vec<String> = bad
        .shown()
        .iter()
        .map(|b| format!("samples.jsonl line {} is malformed ({})", b.line, b.error))
        .collect();
    if bad.not_shown() > 0 {
        partial.push(format!(
            "samples.jsonl has {} more malformed line(s)",
            bad.not_shown()
        ));
    }
    if let Some(s) = state
        .as_ref()
        .filter(|s| s.status != run_dir::Status::Complete)
    {
        partial.push(format!(
            "the run is {} (resume it to measure the missing cells)",
            s.status
        ));
    }
    // The processes per cell the run followed (`--repeats`), recorded in run.json.
    let study = match &state {
        Some(s) => s.in_force(study)?,
        None => study,
    };
    let rule = &study.protocol.drop_batches;
    if let Some(why) = crate::study::kind::batches::foreign_rule(rule, &samples) {
        anyhow::bail!("samples.jsonl: {why}");
    }
    let summary = summary::summarize(&study, &samples);
    let mut verdicts = verdict::judge(&study, &summary);
    if let Some(slice) = state.as_ref().and_then(|s| s.partial.as_ref()) {
        partial.push(format!(
            "a partial run ({}), never a reference run",
            slice.flags()
        ));
        not_in_slice(&mut verdicts, slice);
    }
    let mut deviations = state
        .as_ref()
        .map(|s| s.deviations.clone())
        .unwrap_or_default();
    deviations.extend(
        env.as_ref()
            .map(|e| environment_deviations(&study, e))
            .unwrap_or_default(),
    );
    let mut environment = env.as_ref().map(environment_labels).unwrap_or_default();
    if let Some(s) = &state {
        environment.extend(s.guests.iter().map(guest_label));
    }
    let (judged, per_class) = per_class(text, &study, &samples, &mut environment)?;
    let shard = match state.as_ref().and_then(|s| s.shard.as_ref()) {
        Some(s) => Some(s.shard()?),
        None => None,
    };
    Ok(Outcome {
        judged,
        per_class,
        shard,
        run_id: text.run_id.clone(),
        environment,
        study,
        samples,
        summary,
        verdicts,
        deviations,
        warnings: state.map(|s| s.warnings).unwrap_or_default(),
        partial: (!partial.is_empty()).then(|| partial.join("; ")),
    })
}

/// A claim of a partial run on a cell it left out is `not measured`, for that reason alone.
fn not_in_slice(verdicts: &mut [Verdict], slice: &crate::run::slice::Slice) {
    for v in verdicts.iter_mut() {
        let out = !slice.covers(&v.probe, v.tasks) || !v.missing.is_empty();
        if v.status == Status::NotMeasured && out {
            v.note = Some(crate::run::slice::NOT_IN.into());
        }
    }
}

/// The claims judged per class (and host) when the samples call for it, and as the report shows
/// them. A merged run of several hardware classes lists each run's class instead of one machine in
/// `environment`.
fn per_class(
    text: &RunFiles,
    study: &Study,
    samples: &[Sample],
    environment: &mut Vec<(String, String)>,
) -> Result<(Option<merge::Judged>, Option<report::PerClass>)> {
    let record: Option<merge::MergeRecord> = match &text.merge_json {
        Some(json) => Some(serde_json::from_str(json).context("parsing merge.json")?),
        None => None,
    };
    let runs_listed = match record.filter(|r| r.classes.len() > 1) {
        Some(r) => {
            *environment = r.runs.iter().map(merge::run_label).collect();
            true
        }
        None => false,
    };
    let judged = merge::judge(study, samples);
    let per_class = judged.as_ref().map(|j| report::PerClass {
        section: merge::classes::section(j),
        summaries: merge::summaries(study, samples),
        runs_listed,
    });
    Ok((judged, per_class))
}

impl Outcome {
    /// The report input for every format.
    pub fn report_input(&self) -> ReportInput<'_> {
        ReportInput {
            study: &self.study,
            run_id: &self.run_id,
            samples: &self.samples,
            summary: &self.summary,
            verdicts: &self.verdicts,
            environment: self.environment.clone(),
            deviations: self.deviations.clone(),
            warnings: self.warnings.clone(),
            partial: self.partial.clone(),
            per_class: self.per_class.as_ref(),
        }
    }

    /// Writes report.md, figure.svg, samples.csv, summary.json and verdicts.json into `dir`, and
    /// classes.json and classes.md when the claims are judged per class.
    pub fn write_report(&self, dir: &Path) -> Result<()> {
        report::write_all(dir, &self.report_input())?;
        if let Some(j) = &self.judged {
            let json = serde_json::to_string_pretty(j)? + "\n";
            crate::files::write_atomic(&dir.join(run_dir::CLASSES_JSON), json.as_bytes())?;
            let md = merge::classes::markdown(j);
            crate::files::write_atomic(&dir.join(run_dir::CLASSES_MD), md.as_bytes())?;
        }
        link_explanations(dir)
    }

    /// The terminal text: verdict table, deviations, validity warnings, partial data.
    pub fn terminal(&self) -> String {
        self.terminal_with(true)
    }

    /// As [`Outcome::terminal`], without the validity warnings (for a caller that printed them
    /// already, as `reproduce` does after its run).
    pub fn terminal_with(&self, warnings: bool) -> String {
        let mut out = report::terminal::verdict_table(&self.verdicts);
        out.push_str(&report::terminal::outliers(&self.summary));
        if !self.deviations.is_empty() {
            out.push_str("\nDeviations from the published setup:\n");
            for d in &self.deviations {
                out.push_str(&format!("  - {}\n", crate::text::printable(d)));
            }
        }
        if warnings {
            out.push_str(&report::terminal::warnings(&self.warnings));
        }
        if let Some(p) = &self.partial {
            out.push_str(&format!("\nPartial data: {}\n", crate::text::printable(p)));
        }
        out
    }

    /// True when any claim was not reproduced.
    pub fn claims_differ(&self) -> bool {
        self.verdicts.iter().any(|v| v.status != Status::Reproduced)
    }
}

/// A guest kernel's row of the environment table.
fn guest_label(k: &crate::run::guest::GuestKernel) -> (String, String) {
    let accel = match (k.accel, k.accel_note.is_empty()) {
        (a, true) => a.to_string(),
        (a, false) => format!("{a} ({})", k.accel_note),
    };
    (
        format!("Guest kernel {}", k.name),
        format!(
            "{}; vmlinuz sha256 {}; config sha256 {}; THP {}; {accel}; {} MiB; image {}",
            k.release, k.vmlinuz_sha256, k.config_sha256, k.thp, k.memory_mib, k.image
        ),
    )
}

/// Label → value pairs for the report's environment table.
fn environment_labels(e: &Environment) -> Vec<(String, String)> {
    let os = e
        .host
        .os_release
        .get("PRETTY_NAME")
        .cloned()
        .unwrap_or_default();
    let gib = |b: u64| format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64);
    let mut out = vec![
        ("CPU".to_string(), e.host.cpu_model.clone()),
        (
            "Logical CPUs".into(),
            format!("{} (online {})", e.host.logical_cpus, e.host.cpus_online),
        ),
        ("Memory".into(), gib(e.host.mem_total_bytes)),
        ("Kernel".into(), e.host.kernel_release.clone()),
        ("Host OS".into(), os),
        ("WSL".into(), if e.host.wsl { "yes" } else { "no" }.into()),
        (
            "Transparent hugepages".into(),
            e.host
                .thp_enabled
                .clone()
                .unwrap_or_else(|| "not visible".into()),
        ),
        (
            "Engine".into(),
            format!(
                "{} {} (API {})",
                e.engine.product(),
                e.engine.version,
                e.engine.api_version
            ),
        ),
        (
            "cgroups".into(),
            format!("v{} ({})", e.engine.cgroup_version, e.engine.cgroup_driver),
        ),
        ("Container glibc".into(), e.container.glibc.clone()),
        (
            "Seccomp".into(),
            crate::run::seccomp::describe(e.seccomp.as_ref()),
        ),
    ];
    if !e.container.limits.is_empty() {
        out.push(("Container limits".into(), e.container.limits.clone()));
    }
    for (k, v) in &e.toolchains {
        out.push((k.clone(), v.lines().next().unwrap_or_default().to_string()));
    }
    out
}

/// Differences between the published environment and this one: toolchains, CPU model, kernel, WSL.
fn environment_deviations(study: &Study, e: &Environment) -> Vec<String> {
    let mut out = Vec::new();
    for (name, published) in &study.source.toolchains {
        let ours = ours_version(name, e);
        match ours {
            Some(v) if v == *published => {}
            Some(v) => out.push(format!("{name} {v} instead of the published {published}")),
            None => out.push(format!(
                "{name}: version not recorded (published {published})"
            )),
        }
    }
    let published = &study.source.environment;
    if unknown_environment(published) {
        // Nothing published is nothing to deviate from.
        return out;
    }
    if !e.host.cpu_model.is_empty() && !published.contains(e.host.cpu_model.trim()) {
        out.push(format!(
            "CPU {} instead of the published environment ({published})",
            e.host.cpu_model.trim()
        ));
    }
    let published_wsl = published.to_lowercase().contains("wsl");
    if published_wsl != e.host.wsl {
        let ours = if e.host.wsl {
            "under WSL"
        } else {
            "not under WSL"
        };
        out.push(format!(
            "kernel {} {ours}; the article ran {published}",
            e.host.kernel_release
        ));
    } else if let Some(theirs) = published_kernel(published)
        && !same_version(&e.host.kernel_release, theirs)
    {
        out.push(format!(
            "kernel {} instead of the published {theirs}",
            e.host.kernel_release
        ));
    }
    out
}

/// Whether a study's `source.environment` says the article did not publish its environment:
/// `unknown` (or `not published`, `not stated`, `not given`), in any case, or nothing.
pub fn unknown_environment(published: &str) -> bool {
    let said = published.trim().trim_end_matches('.').to_lowercase();
    said.is_empty()
        || ["unknown", "not published", "not stated", "not given"].contains(&said.as_str())
}

/// Whether a kernel release is the published version: every dotted part the article gives is the
/// same (`5.15.0-91-generic` is `5.15`; `5.15.0` is not `5.1`).
fn same_version(release: &str, published: &str) -> bool {
    let parts = |v: &str| -> Vec<String> { v.split(['.', '-', '+']).map(str::to_owned).collect() };
    let (ours, theirs) = (parts(release), parts(published));
    ours.len() >= theirs.len() && ours[..theirs.len()] == theirs[..]
}

/// The version after the word "kernel" in a published environment (`Ubuntu 22.04 (kernel 5.15)`).
fn published_kernel(environment: &str) -> Option<&str> {
    let lower = environment.to_ascii_lowercase();
    let at = lower.find("kernel ")? + "kernel ".len();
    let version = environment[at..]
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '-'))
        .next()?;
    version
        .starts_with(|c: char| c.is_ascii_digit())
        .then_some(version)
}

/// This run's version of a named toolchain (`rustc`, `go`, `tokio`, `cargo`).
fn ours_version(name: &str, e: &Environment) -> Option<String> {
    // Two labels for one key are refused before a run; in an archive's record, neither is ours.
    let label = crate::run::env::label_for(name, e.toolchains.keys()).ok()??;
    version_in(name, &e.toolchains[label])
}

/// The version of toolchain `name` in what its `versions:` command recorded.
fn version_in(name: &str, recorded: &str) -> Option<String> {
    match name {
        "rustc" => recorded
            .lines()
            .find_map(|l| l.strip_prefix("release: ").map(str::to_owned)),
        "go" => recorded
            .split_whitespace()
            .nth(2)
            .map(|v| v.trim_start_matches("go").to_owned()),
        "cargo" => recorded.split_whitespace().nth(1).map(str::to_owned),
        // The first word with a digit on the first line: `Python 3.13.5`, `v22.20.0`,
        // `openjdk 21.0.13.1 2026-11-17`, or the version a `pattern` put there.
        _ => recorded
            .lines()
            .next()?
            .split_whitespace()
            .find(|w| w.chars().any(|c| c.is_ascii_digit()))
            .map(str::to_owned),
    }
}

/// The "Explanations" section of a run's report.md, linking the index `parkbench explain` keeps
/// beside it: added once, when the index exists; nothing else in the run folder is touched.
pub fn link_explanations(dir: &Path) -> Result<()> {
    if !dir.join(run_dir::EXPLANATIONS).is_file() {
        return Ok(());
    }
    let path = dir.join(run_dir::REPORT);
    let mut text = crate::files::read_text(&path)?;
    const HEADING: &str = "\n## Explanations\n";
    if text.contains(HEADING) {
        return Ok(());
    }
    text.push_str(&format!(
        "{HEADING}\nClaims of this run explained by `parkbench explain`, with which factor \
         accounts for each difference: [{0}]({0}).\n",
        run_dir::EXPLANATIONS
    ));
    crate::files::write_atomic(&path, text.as_bytes())
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod partial_tests;
