//! `report.md`: the human report — validity warnings, verdicts, environment, deviations, protocol,
//! results per scale, invalid samples, the figure and how to recompute everything.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use anyhow::Result;

use crate::engine::{NOBODY, TMP, TMP_OPTIONS};
use crate::outputs::number::{self, cell_text, grouped, mib};
use crate::outputs::report::{Format, ReportInput, kinds};
use crate::outputs::summary::Summary;
use crate::outputs::verdict::Verdict;
use crate::run::run_dir;
use crate::run::warning::{Touches, Warning};
use crate::study::kind::Kind;
use crate::study::sample::Sample;
use crate::study::{Isolation, Order, Study};
use crate::text;

/// `report.md`.
pub struct Markdown;

impl Format for Markdown {
    fn name(&self) -> &'static str {
        run_dir::REPORT
    }

    fn render(&self, input: &ReportInput) -> Result<Vec<u8>> {
        let sections = [
            header(input),
            warnings(&input.warnings),
            input
                .per_class
                .map(|p| p.section.clone())
                .unwrap_or_default(),
            verdicts(input.verdicts),
            environment(input),
            deviations(&input.deviations),
            protocol(input.study, input.samples),
            results(input.study, input.summary, &input.warnings),
            precision(input.summary),
            lower_by(input.study, input.summary),
            outliers(input.summary),
            invalid(input.summary),
            notes(input.summary),
            recompute(input),
        ];
        let text: Vec<String> = sections.into_iter().filter(|s| !s.is_empty()).collect();
        Ok(text.join("\n").into_bytes())
    }
}

fn header(input: &ReportInput) -> String {
    let (study, s) = (input.study, input.summary);
    let mut out = format!("# {}\n\n", text::markdown(&study.title));
    let _ = writeln!(
        out,
        "Run {} of study {}, after the article *{}*.\n",
        text::markdown_code(input.run_id),
        text::markdown_code(&study.id),
        text::markdown(&study.source.article)
    );
    if let Some(reason) = &input.partial {
        let _ = writeln!(
            out,
            "> **Partial data:** {}. Statistics and verdicts cover only the samples read.\n",
            text::markdown(reason)
        );
    }
    let not_measured = match s.not_measured {
        0 => String::new(),
        n => format!("{n} not measured (toolchain unavailable or build failed); "),
    };
    let _ = writeln!(
        out,
        "{} of {} processes valid; {} invalid; {not_measured}{} outside the study.",
        s.valid,
        s.samples,
        s.invalid - s.not_measured,
        s.outside
    );
    out
}

pub(crate) fn verdicts(verdicts: &[Verdict]) -> String {
    let mut out = String::from("## Verdicts\n\n");
    if verdicts.is_empty() {
        out.push_str("This study states no claims; no verdicts.\n");
        return out;
    }
    out.push_str("| Claim | Expected | Measured | Delta | Ratio | Tolerance | Status |\n");
    out.push_str("|---|--:|--:|--:|--:|--:|---|\n");
    for v in verdicts {
        let delta = v
            .delta
            .map_or_else(|| "—".into(), |d| number::signed(d, v.unit));
        let _ = writeln!(
            out,
            "| {} | {} | {} | {delta} | {} | {} | **{}** |",
            text::markdown_code(&v.claim),
            number::expected(&v.expected, v.unit),
            number::measured(v.measured.as_ref(), v.unit),
            number::ratio(v.ratio),
            v.tolerance,
            v.status_label()
        );
    }
    out.push_str(
        "\nDelta is measured − published; ratio is measured ÷ published (midpoints for ranges); ",
    );
    out.push_str("pp = percentage points.\n\n");
    for v in verdicts {
        let note = v
            .note
            .as_deref()
            .map(|n| format!(" — {}", text::markdown(n)))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "- {} ({}): {}{}",
            text::markdown_code(&v.claim),
            v.status_label(),
            text::markdown(&v.text),
            note
        );
    }
    out
}

fn environment(input: &ReportInput) -> String {
    let mut out = String::from("## Environment\n\n");
    if input.environment.is_empty() {
        out.push_str("Not recorded.\n");
    } else {
        out.push_str(match input.per_class.filter(|p| p.runs_listed) {
            Some(_) => "| Run | Hardware class |\n|---|---|\n",
            None => "| | This run |\n|---|---|\n",
        });
        for (label, value) in &input.environment {
            let _ = writeln!(out, "| {} | {} |", cell_text(label), cell_text(value));
        }
    }
    let src = &input.study.source;
    let tools: Vec<String> = src
        .toolchains
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    let _ = write!(out, "\nPublished: {}", text::markdown(&src.environment));
    if !tools.is_empty() {
        let _ = write!(out, "; {}", text::markdown(&tools.join(", ")));
    }
    let _ = writeln!(out, "; CPUs {}.", text::markdown_code(&src.cpus));
    out
}

fn deviations(list: &[String]) -> String {
    let mut out = String::from("## Deviations from the published setup\n\n");
    if list.is_empty() {
        out.push_str("None found.\n");
    }
    for d in list {
        let _ = writeln!(out, "- {}", text::markdown(d));
    }
    out
}

/// Before any number: what may have touched the numbers, and which of them.
fn warnings(list: &[Warning]) -> String {
    let mut out = String::from("## Validity warnings\n\n");
    if list.is_empty() {
        out.push_str("None seen.\n");
        return out;
    }
    out.push_str("Host conditions seen before or while measuring; they explain samples, never invalidate them.\n\n");
    for w in list {
        let what = text::markdown(&w.what);
        let _ = writeln!(out, "- {what} — may touch **{}**.", w.touches.label());
    }
    out
}

fn protocol(study: &Study, samples: &[Sample]) -> String {
    let p = &study.protocol;
    let scales: Vec<String> = p.scales.iter().map(|&n| grouped(n as f64, 0)).collect();
    let order = match p.order {
        Order::Fixed => "fixed (listed order every repeat)",
        Order::Alternate => "alternate (listed order on odd repeats, reversed on even ones)",
    };
    let mut out = String::from("## Protocol\n\n");
    let _ = writeln!(out, "- Scales: {} tasks.", scales.join("; "));
    for probe in study.probes.iter().filter(|p| p.scales.is_some()) {
        let own: Vec<String> = study
            .scales_of(probe)
            .iter()
            .map(|&n| grouped(n as f64, 0))
            .collect();
        let _ = writeln!(
            out,
            "- {} runs its own scales: {} tasks.",
            text::markdown(&probe.id),
            own.join("; ")
        );
    }
    // Said only where a probe's kind flags its cells by it (timed, latency).
    let flagged = (study.probes.iter()).any(|probe| probe.kind.measure().flags_target_cv());
    if let Some(t) = p.target_cv.filter(|_| flagged) {
        let _ = writeln!(
            out,
            "- Timed precision: a cell whose CV across process medians is above {} % is flagged.",
            grouped(t * 100.0, 2)
        );
    }
    let more = p
        .repeats
        .rule()
        .map(|r| format!(", {r} (standard deviation ÷ mean of the cell's headline values)"))
        .unwrap_or_default();
    let n = crate::text::count(
        p.repeats.min as usize,
        "independent process",
        "independent processes",
    );
    let _ = writeln!(
        out,
        "- Repeats: {n} per probe and scale{more}; order {order}."
    );
    let pinned: std::collections::BTreeSet<&str> =
        samples.iter().map(|s| s.cpus_pinned.as_str()).collect();
    let pinned = pinned
        .into_iter()
        .map(text::markdown_code)
        .collect::<Vec<_>>()
        .join(", ");
    let _ = writeln!(
        out,
        "- CPUs: the study pins every probe to {}; this run pinned to {} (sched_setaffinity; no CPU or memory limit).",
        text::markdown_code(&p.cpus),
        if pinned.is_empty() {
            "—".to_string()
        } else {
            pinned
        }
    );
    let kinds: std::collections::BTreeSet<Kind> = study.probes.iter().map(|p| p.kind).collect();
    for kind in kinds {
        let _ = writeln!(out, "- {}", kind.measure().describe(p));
    }
    let _ = writeln!(out, "- Timeout: {} s per process.", p.timeout_s);
    if let Some(line) = separation(samples) {
        let _ = writeln!(out, "{line}");
    }
    let _ = writeln!(out, "{}\n", isolation(study));
    out.push_str(&probe_table(study));
    out
}

/// How the processes were kept apart, by probe where they differ; `None` when no sample says
/// (samples written before `isolation` was recorded: each had a container of its own).
fn separation(samples: &[Sample]) -> Option<String> {
    let mut by: BTreeMap<Isolation, BTreeSet<&str>> = BTreeMap::new();
    for s in samples {
        if let Some(isolation) = s.isolation {
            by.entry(isolation).or_default().insert(&s.probe);
        }
    }
    let parts: Vec<String> = by
        .iter()
        .map(|(isolation, probes)| {
            let how = match isolation {
                Isolation::Container => "in a fresh container of its own",
                Isolation::Process => {
                    "as a fresh process, in its own empty folder, in a container kept up for its \
                     probe and scale"
                }
            };
            let of = match by.len() {
                1 => String::new(),
                _ => format!(
                    ": {}",
                    probes
                        .iter()
                        .map(|p| text::markdown(p))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            format!("{how} (`isolation: {}`{of})", isolation.name())
        })
        .collect();
    (!parts.is_empty()).then(|| format!("- Each process ran {}.", parts.join("; ")))
}

/// How the probe containers were confined: the study's tasks limit, and what every container has.
fn isolation(study: &Study) -> String {
    let mut line = format!(
        "- Isolation: each probe container holds at most {} tasks (`protocol.pids_limit`) and runs \
         as `{NOBODY}` (nobody) with no capabilities, no network and a read-only root filesystem, its \
         one writable place `{TMP}` (a tmpfs, `{TMP_OPTIONS}`).",
        grouped(study.protocol.pids_limit as f64, 0)
    );
    if study.probes.iter().any(|p| p.kernel.is_some()) {
        line.push_str(
            " Under a guest kernel the VM's QEMU runs as root, with no capabilities either, and the \
             probe's tasks are the guest's.",
        );
    }
    line
}

/// What each probe runs: image, program, arguments, environment and CPUs.
fn probe_table(study: &Study) -> String {
    let mut out = String::from(
        "| Probe | Image | Program | Arguments | Environment | CPUs |\n|---|---|---|---|---|---|\n",
    );
    let code = |text: &str| {
        if text.is_empty() {
            "—".to_string()
        } else {
            text::markdown_code(text)
        }
    };
    for probe in &study.probes {
        let env: Vec<String> = probe.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let cpus = probe
            .cpus
            .map_or("all of the run's".to_string(), |n| format!("the first {n}"));
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {cpus} |",
            cell_text(&probe.id),
            cell_text(&probe.image),
            text::markdown_code(&probe.program),
            code(&probe.args.join(" ")),
            code(&env.join(" ")),
        );
    }
    out
}

fn results(study: &Study, summary: &Summary, warnings: &[Warning]) -> String {
    let mut out = String::from("## Results\n\n");
    let mut touched = warnings.iter().map(|w| w.touches);
    if let Some(first) = touched.next() {
        let label = if touched.any(|t| t != first) {
            Touches::All.label()
        } else {
            first.label()
        };
        let _ = writeln!(
            out,
            "> The validity warnings above may touch {label} here.\n"
        );
    }
    out.push_str("![Memory per scale: a dot per process, a bar at the median](figure.svg)\n\n");
    out.push_str(&kinds::tables(study, summary));
    out
}

/// Processes on demand: per cell the processes it ran and the CV it reached, against the target.
fn precision(summary: &Summary) -> String {
    let Some(first) = summary.precision.first() else {
        return String::new();
    };
    let met = summary.precision.iter().filter(|p| p.met).count();
    let mut out = String::from(
        "## Precision

",
    );
    let _ = writeln!(
        out,
        "Processes came on demand: {met} of {} cells met the target CV of {} % (standard deviation \
         ÷ mean of the cell's values: median RSS, peak, or the kind's least precise \
         statistic). A cell above the target got one more process at a time, up to {}; ⚠ marks \
         one that is still above it.\n",
        summary.precision.len(),
        grouped(first.target_cv * 100.0, 2),
        first.max
    );
    out.push_str("| Probe | Tasks | Statistic | Processes | Valid | CV | Target met |\n");
    out.push_str("|---|--:|---|--:|--:|--:|---|\n");
    for p in &summary.precision {
        let cv =
            p.cv.map_or("—".into(), |v| format!("{} %", grouped(v * 100.0, 2)));
        let met = match (p.met, p.valid) {
            (true, _) => "yes",
            (false, 0) => "⚠ no valid process",
            (false, _) => "⚠ no",
        };
        let stat = if p.stat.is_empty() {
            "—".to_string()
        } else {
            text::markdown_code(&p.stat)
        };
        let _ = writeln!(
            out,
            "| {} | {} | {stat} | {} | {} | {cv} | {met} |",
            cell_text(&p.probe),
            grouped(p.tasks as f64, 0),
            p.processes,
            p.valid
        );
    }
    out
}

fn lower_by(study: &Study, summary: &Summary) -> String {
    let mut lines = Vec::new();
    for tasks in study.all_scales() {
        for (i, a) in study.probes.iter().enumerate() {
            for b in &study.probes[i + 1..] {
                let pair = [
                    summary.ratio(&a.id, &b.id, tasks),
                    summary.ratio(&b.id, &a.id, tasks),
                ];
                let Some(r) = pair
                    .into_iter()
                    .flatten()
                    .find(|r| r.lower_by_percent >= 0.0)
                else {
                    continue;
                };
                let median = |p: &str| {
                    summary
                        .cell(p, tasks)
                        .and_then(|c| c.rss_median_bytes)
                        .unwrap_or(0.0)
                };
                lines.push(format!(
                    "- {} tasks: {} is {} % lower than {} (median {} MiB vs {} MiB).",
                    grouped(tasks as f64, 0),
                    text::markdown(&r.probe),
                    grouped(r.lower_by_percent, 2),
                    text::markdown(&r.than),
                    mib(median(&r.probe)),
                    mib(median(&r.than))
                ));
            }
        }
    }
    if lines.is_empty() {
        return String::new();
    }
    format!(
        "## Lower by\n\n(1 − lower ÷ higher) × 100, from unrounded medians.\n\n{}\n",
        lines.join("\n")
    )
}

/// Valid processes far from their cell's others; empty when there are none.
fn outliers(summary: &Summary) -> String {
    use crate::outputs::summary::outlier::{MAD_FLOOR, MADS, MIN_PROCESSES};
    let rows: Vec<String> = (summary.cells.iter())
        .flat_map(|c| c.outliers.iter().map(move |o| (c, o)))
        .map(|(c, o)| {
            format!(
                "| {} | {} | {} | {} |",
                cell_text(&c.probe),
                grouped(c.tasks as f64, 0),
                o.repeat,
                cell_text(&o.words())
            )
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    format!(
        "## Outliers

Valid processes more than {MADS} median absolute deviations (MADs) from their \
         cell's median, the MAD counted as at least {} % of the median (a cell of fewer than \
         {MIN_PROCESSES} valid processes flags none). They are kept in every statistic.\n\n\
         | Probe | Tasks | Repeat | Value |\n|---|--:|--:|---|\n{}\n",
        MAD_FLOOR * 100.0,
        rows.join("\n")
    )
}

fn invalid(summary: &Summary) -> String {
    let mut out = String::from("## Invalid samples\n\n");
    if summary.invalid_samples.is_empty() {
        out.push_str("None.\n");
        return out;
    }
    out.push_str(
        "| Probe | Tasks | Repeat | Reason | Last lines of its stderr |\n|---|--:|--:|---|---|\n",
    );
    for s in &summary.invalid_samples {
        let stderr = match s.stderr.is_empty() {
            true => String::new(),
            false => crate::text::markdown_code(&s.stderr.join(" ⏎ ")),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {stderr} |",
            cell_text(&s.probe),
            grouped(s.tasks as f64, 0),
            s.repeat,
            cell_text(&not_measured(&s.error))
        );
    }
    out
}

/// A sample's error as the report says it: `not measured: …` for a probe that never ran.
fn not_measured(error: &str) -> String {
    if crate::study::sample::never_ran(error) {
        format!("not measured: {error}")
    } else {
        error.to_string()
    }
}

fn notes(summary: &Summary) -> String {
    if summary.notes.is_empty() {
        return String::new();
    }
    let items: Vec<String> = (summary.notes.iter())
        .map(|n| format!("- {}", text::markdown(n)))
        .collect();
    format!("## Notes on the samples\n\n{}\n", items.join("\n"))
}

fn recompute(input: &ReportInput) -> String {
    let mut out = String::from("## Recompute\n\n");
    out.push_str(
        "Every number here comes from the raw samples in `samples.jsonl` (also flat in `samples.csv`; ",
    );
    out.push_str(
        "statistics in `summary.json`, verdicts in `verdicts.json`). To recompute them, run:\n\n",
    );
    let _ = writeln!(
        out,
        "```\nparkbench verify results/{}/runs/{}\n```\n\nfrom the repository root (or `parkbench \
         verify` on the folder this run was unpacked to, or on its archive).",
        input.study.id, input.run_id
    );
    out
}

#[cfg(test)]
mod tests;
