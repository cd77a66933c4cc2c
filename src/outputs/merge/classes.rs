//! Claims judged per hardware class, and per host when a class holds several hosts that measured the
//! same cells (a run across Engines, `--across`, or reruns merged). Classes are named by a short
//! label — `A`, `B`, … in order of first appearance — with a legend to the full class string; per
//! claim one line says on how many classes (and hosts) it is reproduced and names the others with
//! their finding: `reproduced on 2 of 3 classes: differs on class C`.
//!
//! A claim *holds* on a class when its verdict there is `reproduced` (the verdict words of
//! [`crate::outputs::verdict::Status`]); `differs`, `inconclusive` and `not measured` do not, and the
//! line names each with its classes.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::outputs::number::cell_text;
use crate::outputs::summary::{self, Summary};
use crate::outputs::verdict::{self, Verdict};
use crate::study::Study;
use crate::study::sample::Sample;

/// `classes.json`: the claims judged per hardware class, and per host when a class holds more than
/// one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judged {
    /// Each class's verdicts, in order of first appearance.
    pub classes: Vec<ClassVerdicts>,
    /// Each host's verdicts, in order of first appearance, when some class holds more than one host
    /// and two of them measured the same cell; else empty.
    pub hosts: Vec<HostVerdicts>,
}

/// One hardware class's verdicts in `classes.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassVerdicts {
    /// The class's short label: `A`, `B`, … in order of first appearance (`AA` after `Z`).
    pub label: String,
    /// The hardware class (CPU model, logical CPUs, memory band, kernel).
    pub class: String,
    /// Its samples.
    pub samples: usize,
    /// The hosts that measured its samples, in order of first appearance; empty when no sample names
    /// its host.
    pub hosts: Vec<String>,
    /// The claims judged on its samples alone.
    pub verdicts: Vec<Verdict>,
}

/// One host's verdicts in `classes.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostVerdicts {
    /// The host (Docker Engine) by name, as the samples give it.
    pub host: String,
    /// The label of its hardware class (`A`, `B`, …).
    pub class: String,
    /// Its samples.
    pub samples: usize,
    /// The claims judged on its samples alone.
    pub verdicts: Vec<Verdict>,
}

/// The short label of the `i`-th class (0-based): `A` … `Z`, then `AA`, `AB` …
pub fn label(i: usize) -> String {
    let letter = |n: usize| char::from(b'A' + (n % 26) as u8);
    match i {
        0..26 => letter(i).to_string(),
        _ => format!("{}{}", label(i / 26 - 1), letter(i)),
    }
}

/// A sample's hardware class; empty for the run's own machine.
fn class_of(s: &Sample) -> String {
    s.hardware.clone().unwrap_or_default()
}

/// A sample's host; empty when it names none.
fn host_of(s: &Sample) -> String {
    s.host
        .as_deref()
        .map(crate::run::hardware::clean)
        .unwrap_or_default()
}

/// The distinct values of `key` over `samples`, in order of first appearance.
fn distinct(samples: &[Sample], key: impl Fn(&Sample) -> String) -> Vec<String> {
    let mut seen = BTreeSet::new();
    let mut out: Vec<String> = Vec::new();
    for s in samples {
        let k = key(s);
        if seen.insert(k.clone()) {
            out.push(k);
        }
    }
    out
}

/// The samples of each distinct value of `key`, values in order of first appearance, samples in
/// their order: one pass over the samples, however many values there are (a merge of a thousand
/// machines has a thousand classes).
fn grouped(samples: &[Sample], key: impl Fn(&Sample) -> String) -> Vec<(String, Vec<Sample>)> {
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    let mut out: Vec<(String, Vec<Sample>)> = Vec::new();
    for s in samples {
        let k = key(s);
        let i = match index.get(&k) {
            Some(&i) => i,
            None => {
                index.insert(k.clone(), out.len());
                out.push((k, Vec::new()));
                out.len() - 1
            }
        };
        out[i].1.push(s.clone());
    }
    out
}

/// The samples' hardware classes, in order of first appearance.
pub fn classes(samples: &[Sample]) -> Vec<String> {
    distinct(samples, class_of)
}

/// Whether the claims are judged per class and host: the samples come from more than one hardware
/// class, or hosts of one class measured the same cells (replicates).
pub fn needed(samples: &[Sample]) -> bool {
    classes(samples).len() > 1 || hosts_replicate(samples)
}

/// Whether the hosts are judged alone: when some class holds more than one named host and two of
/// them measured the same cell (valid samples of it from each: the hosts are replicates, as in a
/// run across Engines, even when one of them lost some cells); then every host is. A run that dealt
/// its cells over the hosts of one class (`--spread`) measured each cell on one host, so it has no
/// host to judge alone.
fn hosts_replicate(samples: &[Sample]) -> bool {
    // Per cell of a class, the first host seen measuring it.
    let mut first: BTreeMap<(String, String, u64), String> = BTreeMap::new();
    samples
        .iter()
        .filter(|s| s.valid && !host_of(s).is_empty())
        .any(|s| {
            let first = first
                .entry((class_of(s), s.probe.clone(), s.tasks))
                .or_insert_with(|| host_of(s));
            *first != host_of(s)
        })
}

/// The claims judged per class, and per host when hosts are judged alone; `None` when the samples
/// are of one class and no class holds several hosts ([`needed`]).
pub fn judge(study: &Study, samples: &[Sample]) -> Option<Judged> {
    if !needed(samples) {
        return None;
    }
    let judged = |mine: &[Sample]| verdict::judge(study, &summary::summarize(study, mine));
    let mut labels: BTreeMap<String, String> = BTreeMap::new();
    let per_class = grouped(samples, class_of).into_iter().enumerate();
    let per_class: Vec<ClassVerdicts> = per_class
        .map(|(i, (class, mine))| {
            labels.insert(class.clone(), label(i));
            let hosts = distinct(&mine, host_of);
            ClassVerdicts {
                label: label(i),
                samples: mine.len(),
                hosts: match hosts.iter().all(String::is_empty) {
                    true => Vec::new(),
                    false => hosts,
                },
                verdicts: judged(&mine),
                class,
            }
        })
        .collect();
    let hosts = match hosts_replicate(samples) {
        true => grouped(samples, host_of),
        false => Vec::new(),
    };
    let hosts = hosts.into_iter().map(|(host, mine)| HostVerdicts {
        class: labels
            .get(&class_of(&mine[0]))
            .cloned()
            .unwrap_or_else(|| label(0)),
        samples: mine.len(),
        verdicts: judged(&mine),
        host,
    });
    Some(Judged {
        hosts: hosts.collect(),
        classes: per_class,
    })
}

/// One hardware class's share of a run: its samples summarized and judged alone.
pub struct ClassRun {
    /// `A`, `B`, … in order of first appearance.
    pub label: String,
    /// The hardware class.
    pub class: String,
    /// Statistics of its samples alone.
    pub summary: Summary,
    /// The claims judged on its samples alone.
    pub verdicts: Vec<Verdict>,
}

/// Each class's samples summarized and judged alone, in order of first appearance.
pub fn split(study: &Study, samples: &[Sample]) -> Vec<ClassRun> {
    (grouped(samples, class_of).into_iter().enumerate())
        .map(|(i, (class, mine))| {
            let summary = summary::summarize(study, &mine);
            ClassRun {
                label: label(i),
                verdicts: verdict::judge(study, &summary),
                summary,
                class,
            }
        })
        .collect()
}

/// Each class's label, class and summary, for the figure's columns: empty for samples of one
/// class.
pub fn summaries(study: &Study, samples: &[Sample]) -> Vec<(String, String, Summary)> {
    match classes(samples).len() {
        0 | 1 => Vec::new(),
        _ => (split(study, samples).into_iter())
            .map(|c| (c.label, c.class, c.summary))
            .collect(),
    }
}

/// The one line of a claim (its `i`-th verdict): on how many of `judged` it is reproduced, then
/// each other finding with the `word`s (`class`, `host`) it was found on:
/// `reproduced on 2 of 3 classes: differs on class C`.
fn tally(judged: &[(String, &Verdict)], word: &str) -> String {
    let held = judged
        .iter()
        .filter(|(_, v)| v.status == verdict::Status::Reproduced)
        .count();
    let plural = |n: usize| match (n, word.ends_with('s')) {
        (1, _) => word.to_string(),
        (_, true) => format!("{word}es"),
        (_, false) => format!("{word}s"),
    };
    let mut out = format!(
        "reproduced on {held} of {} {}",
        judged.len(),
        plural(judged.len())
    );
    let mut others: Vec<(String, Vec<&str>)> = Vec::new();
    for (name, v) in judged
        .iter()
        .filter(|(_, v)| v.status != verdict::Status::Reproduced)
    {
        let finding = v.status_label();
        match others.iter_mut().find(|(f, _)| *f == finding) {
            Some((_, names)) => names.push(name),
            None => others.push((finding, vec![name])),
        }
    }
    let others: Vec<String> = others
        .into_iter()
        .map(|(f, names)| format!("{f} on {} {}", plural(names.len()), names.join(", ")))
        .collect();
    if !others.is_empty() {
        let _ = write!(out, ": {}", others.join("; "));
    }
    out
}

/// Per claim, its one line: the classes, then the hosts when they are judged alone.
pub fn lines(judged: &Judged) -> Vec<(String, String)> {
    let claims = judged.classes.first().map_or(&[][..], |c| &c.verdicts[..]);
    (claims.iter().enumerate())
        .map(|(i, v)| {
            let on_classes: Vec<(String, &Verdict)> = (judged.classes.iter())
                .filter_map(|c| Some((c.label.clone(), c.verdicts.get(i)?)))
                .collect();
            let mut line = tally(&on_classes, "class");
            if !judged.hosts.is_empty() {
                let on_hosts: Vec<(String, &Verdict)> = (judged.hosts.iter())
                    .filter_map(|h| Some((crate::text::markdown_code(&h.host), h.verdicts.get(i)?)))
                    .collect();
                let _ = write!(
                    line,
                    "; {}",
                    tally(&on_hosts, "host").replacen("reproduced ", "", 1)
                );
            }
            (v.claim.clone(), line)
        })
        .collect()
}

/// The summary shown both in `classes.md` and in the report: a line per claim, the legend of the
/// classes, a table of the verdicts per class and, when hosts are judged alone, one per host.
/// `h` is the heading level of its subsections (`###` in the report, `##` in classes.md).
pub fn summary_markdown(judged: &Judged, h: &str) -> String {
    let mut out = String::new();
    for (claim, line) in lines(judged) {
        let _ = writeln!(out, "- {}: {line}", crate::text::markdown_code(&claim));
    }
    let _ = writeln!(out, "\n{h} Classes\n");
    for c in &judged.classes {
        let hosts = match c.hosts.is_empty() {
            true => String::new(),
            false => format!("; hosts {}", c.hosts.join(", ")),
        };
        let _ = writeln!(
            out,
            "- **{}**: {} ({} samples{})",
            c.label,
            cell_text(&c.class),
            c.samples,
            cell_text(&hosts)
        );
    }
    let _ = writeln!(out, "\n{h} Verdicts per class\n");
    let heads: Vec<String> = judged.classes.iter().map(|c| c.label.clone()).collect();
    let columns: Vec<&[Verdict]> = judged.classes.iter().map(|c| &c.verdicts[..]).collect();
    out.push_str(&table(&heads, &columns));
    if !judged.hosts.is_empty() {
        let _ = writeln!(out, "\n{h} Verdicts per host\n");
        let heads: Vec<String> = (judged.hosts.iter())
            .map(|x| format!("{} ({})", cell_text(&x.host), cell_text(&x.class)))
            .collect();
        let columns: Vec<&[Verdict]> = judged.hosts.iter().map(|x| &x.verdicts[..]).collect();
        out.push_str(&table(&heads, &columns));
    }
    out
}

/// A Markdown table: a row per claim, a column per head with the claim's finding there.
fn table(heads: &[String], columns: &[&[Verdict]]) -> String {
    let mut out = format!("| Claim | {} |\n|---|", heads.join(" | "));
    out.push_str(&"---|".repeat(heads.len()));
    out.push('\n');
    let claims = columns.first().copied().unwrap_or_default();
    for (i, v) in claims.iter().enumerate() {
        let cells: Vec<String> = columns
            .iter()
            .map(|c| c.get(i).map_or("—".into(), Verdict::status_label))
            .collect();
        let claim = crate::text::markdown_code(&v.claim);
        let _ = writeln!(out, "| {claim} | {} |", cells.join(" | "));
    }
    out
}

/// The report's section of the claims per class (shown before its pooled verdicts).
pub fn section(judged: &Judged) -> String {
    let hosts = match judged.hosts.len() {
        0 => String::new(),
        n => format!(", and on each of its {n} hosts' samples alone"),
    };
    format!(
        "## Verdicts per hardware class\n\nThe samples come from {} hardware {}; each claim is \
         judged on each class's samples alone{hosts} (as in classes.md), then on all of them \
         pooled (the verdicts below). A claim holds on a class when it is reproduced there.\n\n{}",
        judged.classes.len(),
        if judged.classes.len() == 1 {
            "class"
        } else {
            "classes"
        },
        summary_markdown(judged, "###")
    )
}

/// `classes.md`: the summary, then each class's (and host's) verdict table in full.
pub fn markdown(judged: &Judged) -> String {
    let mut out = String::from("# Claims per hardware class\n\n");
    out.push_str(&summary_markdown(judged, "##"));
    let full = |out: &mut String, title: String, verdicts: &[Verdict]| {
        let table = crate::outputs::report::terminal::verdict_table(verdicts);
        // A fence longer than any run of backticks in the table (claim ids may hold some), so
        // that no line of it closes the block.
        let fence = "`".repeat(longest_backticks(&table).max(2) + 1);
        let _ = write!(out, "\n## {title}\n\n{fence}\n{table}{fence}\n");
    };
    for c in &judged.classes {
        let title = format!(
            "{}: {} ({} samples)",
            cell_text(&c.label),
            cell_text(&c.class),
            c.samples
        );
        full(&mut out, title, &c.verdicts);
    }
    for x in &judged.hosts {
        let title = format!(
            "host {} (class {}, {} samples)",
            cell_text(&x.host),
            cell_text(&x.class),
            x.samples
        );
        full(&mut out, title, &x.verdicts);
    }
    out
}

/// The longest run of backticks in `text`.
fn longest_backticks(text: &str) -> usize {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    longest
}
