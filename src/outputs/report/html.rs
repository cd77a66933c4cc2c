//! `report.html`: the run's report as one self-contained page ([`crate::outputs::html`]) — what
//! report.md holds, with its verdicts as a sortable table (each claim's accepted interval and
//! sentence), every figure of the run inline, each cell's raw process values, and links to the
//! files of the run folder (relative, so the page works wherever the folder is).

use std::fmt::Write as _;

use anyhow::Result;

use crate::outputs::figure::{self, Figure};
use crate::outputs::html::{self, escape};
use crate::outputs::number::{self, grouped, mib};
use crate::outputs::report::markdown::Markdown;
use crate::outputs::report::{Format, ReportInput};
use crate::outputs::summary::{Cell, Summary};
use crate::outputs::verdict::{Status, Verdict};
use crate::run::run_dir;
use crate::study::Expected;

/// `report.html`.
pub struct Html;

impl Format for Html {
    fn name(&self) -> &'static str {
        run_dir::REPORT_HTML
    }

    fn render(&self, input: &ReportInput) -> Result<Vec<u8>> {
        let figures = figure::all(&figure::Input {
            study: input.study,
            summary: input.summary,
            verdicts: input.verdicts,
            classes: input.per_class.map_or(&[], |p| &p.summaries[..]),
        });
        let md = String::from_utf8(Markdown.render(input)?)?;
        // report.md's verdict section is replaced by the sortable table, which holds the same.
        let (before, rest) = md.split_once("\n## Verdicts\n").unwrap_or((&md, ""));
        let after = rest.find("\n## ").map_or("", |i| &rest[i..]);
        let mut body = String::new();
        body.push_str(&nav(&figures));
        body.push_str(&html::markdown(before, &[]));
        body.push_str(&verdicts(input.verdicts));
        body.push_str(&figures_section(&figures));
        body.push_str(&html::markdown(after, &[]));
        body.push_str(&raw_values(input.summary));
        body.push_str(&files());
        Ok(html::page(&input.study.title, &body).into_bytes())
    }
}

fn nav(figures: &[Figure]) -> String {
    let mut out = String::from("<nav><a href=\"#verdicts\">Verdicts</a>");
    if !figures.is_empty() {
        out.push_str("<a href=\"#figures\">Figures</a>");
    }
    out.push_str("<a href=\"#raw\">Raw process values</a><a href=\"#files\">Files</a></nav>\n");
    out
}

/// The midpoint of a published value or range, for sorting; `None` for a bound or an order.
fn expected_key(e: &Expected) -> Option<f64> {
    match e {
        Expected::Value(v) => Some(*v),
        Expected::Range([lo, hi]) => Some((lo + hi) / 2.0),
        _ => None,
    }
}

fn verdicts(verdicts: &[Verdict]) -> String {
    let mut out = String::from("<h2 id=\"verdicts\">Verdicts</h2>\n");
    if verdicts.is_empty() {
        out.push_str("<p>This study states no claims; no verdicts.</p>\n");
        return out;
    }
    out.push_str(
        "<p>Click a header to sort. Accepted: the interval a measurement must lie in to reproduce \
         the claim (the published value widened by its tolerance). Delta is measured − published; \
         ratio is measured ÷ published (midpoints for ranges).</p>\n",
    );
    let rows: Vec<Vec<(String, Option<f64>)>> = verdicts
        .iter()
        .map(|v| {
            let class = match v.status {
                Status::Reproduced => "reproduced",
                Status::Differs => "differs",
                Status::NotMeasured => "not-measured",
                Status::Inconclusive => "inconclusive",
            };
            let accepted = match v.accepted {
                [None, None] => "—".to_string(),
                [lo, hi] => [lo, hi]
                    .map(|b| b.map_or("…".into(), |b| number::value(b, v.unit)))
                    .join(" to "),
            };
            let mid = v
                .measured
                .as_ref()
                .and_then(|m| m.bounds())
                .map(|[a, b]| (a + b) / 2.0);
            let mut sentence = escape(&v.text);
            if let Some(note) = &v.note {
                let _ = write!(sentence, " <small>— {}</small>", escape(note));
            }
            vec![
                (format!("<code>{}</code>", escape(&v.claim)), None),
                (
                    format!("<b class=\"{class}\">{}</b>", escape(&v.status_label())),
                    None,
                ),
                (
                    escape(&number::expected(&v.expected, v.unit)),
                    expected_key(&v.expected),
                ),
                (escape(&number::measured(v.measured.as_ref(), v.unit)), mid),
                (escape(&accepted), v.accepted[0].or(v.accepted[1])),
                (
                    escape(
                        &v.delta
                            .map_or_else(|| "—".into(), |d| number::signed(d, v.unit)),
                    ),
                    v.delta,
                ),
                (escape(&number::ratio(v.ratio)), v.ratio),
                (escape(&v.tolerance), None),
                (sentence, None),
            ]
        })
        .collect();
    out.push_str(&html::sortable(
        "verdict-table",
        &[
            "Claim",
            "Status",
            "Expected",
            "Measured",
            "Accepted",
            "Delta",
            "Ratio",
            "Tolerance",
            "Claim's words",
        ],
        &rows,
    ));
    out
}

fn figures_section(figures: &[Figure]) -> String {
    if figures.is_empty() {
        return String::new();
    }
    let mut out = String::from("<h2 id=\"figures\">Figures</h2>\n");
    for f in figures {
        let _ = writeln!(
            out,
            "<figure id=\"figure-{}\" data-design=\"{}\" aria-label=\"{}\">{}</figure>",
            escape(&f.id),
            f.design.class(),
            escape(&f.title),
            f.svg
        );
    }
    out
}

/// Each cell's valid processes with their values, by repeat.
fn raw_values(summary: &Summary) -> String {
    let mut out = String::from(
        "<h2 id=\"raw\">Raw process values</h2>\n<p>Per cell, each valid process's own value \
         (r1, r2 … by repeat), before any median over processes; every sample is in \
         <a href=\"samples.jsonl\">samples.jsonl</a> and <a href=\"samples.csv\">samples.csv</a>.</p>\n",
    );
    let rows: Vec<Vec<(String, Option<f64>)>> = summary
        .cells
        .iter()
        .map(|c| {
            vec![
                (escape(&c.probe), None),
                (grouped(c.tasks as f64, 0), Some(c.tasks as f64)),
                (c.kind.name().to_string(), None),
                (
                    format!("{} of {}", c.valid, summary.processes_of(c)),
                    Some(c.valid as f64),
                ),
                (escape(&process_values(c)), None),
            ]
        })
        .collect();
    out.push_str(&html::sortable(
        "raw-values",
        &["Probe", "Tasks", "Kind", "Valid", "Process values"],
        &rows,
    ));
    out
}

fn process_values(c: &Cell) -> String {
    let mut parts = Vec::new();
    let steady: Vec<String> = c
        .processes
        .iter()
        .filter_map(|p| Some(format!("r{} {} MiB", p.repeat, mib(p.rss_median_bytes?))))
        .collect();
    if !steady.is_empty() {
        parts.push(format!("RSS median: {}", steady.join(", ")));
    }
    for (key, s) in &c.stats {
        let repeats: Vec<u32> = c.processes.iter().map(|p| p.repeat).collect();
        let each: Vec<String> = s
            .values
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let r = (repeats.len() == s.values.len()).then(|| format!("r{} ", repeats[i]));
                format!("{}{}", r.unwrap_or_default(), trimmed(*v))
            })
            .collect();
        parts.push(format!("{key}: {}", each.join(", ")));
    }
    if parts.is_empty() {
        "—".into()
    } else {
        parts.join("; ")
    }
}

/// A raw value as recorded, up to 3 decimals.
fn trimmed(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn files() -> String {
    let mut out = String::from(
        "<h2 id=\"files\">Files of the run folder</h2>\n<p>Relative to this page; a file the run \
         did not write (e.g. no manifest on a run without images) is missing.</p>\n<ul>\n",
    );
    for name in run_dir::REQUIRED.iter().chain(&run_dir::OPTIONAL) {
        let _ = writeln!(out, "<li><a href=\"{name}\">{name}</a></li>");
    }
    out.push_str("</ul>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outputs::report::fixture;
    use crate::outputs::summary::summarize;
    use crate::outputs::verdict::judge;

    fn render(study: &crate::study::Study, samples: &[crate::study::sample::Sample]) -> String {
        let summary = summarize(study, samples);
        let verdicts = judge(study, &summary);
        let input = fixture::input(study, samples, &summary, &verdicts);
        String::from_utf8(Html.render(&input).unwrap()).unwrap()
    }

    #[test]
    fn a_process_far_from_its_cells_others_is_named_in_every_report_and_kept() {
        let study = fixture::study();
        let plain = fixture::summary();
        assert!(
            plain.cells.iter().all(|c| c.outliers.is_empty()),
            "the fixture's spread is ordinary"
        );
        let mut samples = fixture::samples();
        let far = (samples.iter_mut())
            .find(|s| s.probe == "go" && s.tasks == 10_000 && s.repeat == 2)
            .unwrap();
        for b in &mut far.rss_bytes {
            *b *= 3;
        }
        let summary = summarize(&study, &samples);
        let cell = summary.cell("go", 10_000).unwrap();
        assert_eq!(cell.outliers.len(), 1, "{:?}", cell.outliers);
        assert_eq!(cell.outliers[0].repeat, 2);
        assert!(cell.outliers[0].measured > cell.outliers[0].median);
        assert_eq!(cell.valid, 3, "never dropped");
        let verdicts = judge(&study, &summary);
        let input = fixture::input(&study, &samples, &summary, &verdicts);
        let md = String::from_utf8(
            crate::outputs::report::markdown::Markdown
                .render(&input)
                .unwrap(),
        )
        .unwrap();
        assert!(
            md.contains("## Outliers") && md.contains("| go | 10,000 | 2 |"),
            "{md}"
        );
        let html = String::from_utf8(Html.render(&input).unwrap()).unwrap();
        assert!(
            html.contains("Outliers") && html.contains("cell median"),
            "the HTML names it"
        );
        let term = crate::outputs::report::terminal::outliers(&summary);
        assert!(term.contains("go at 10000 tasks, repeat 2:"), "{term}");
        assert!(crate::outputs::report::terminal::outliers(&plain).is_empty());
    }

    #[test]
    fn a_failed_process_shows_its_last_stderr_lines_escaped() {
        let fixture = include_str!("../../../tests/fixtures/samples.jsonl");
        let (mut samples, _) = crate::study::sample::parse_lines(fixture.as_bytes()).unwrap();
        let failed = samples.iter_mut().find(|s| !s.valid).unwrap();
        failed.stderr_tail = "warming up\n** (SystemLimitError) <a system limit> & more\n".into();
        let study = crate::study::Study::parse(crate::study::DEFAULT_STUDY).unwrap();
        let html = render(&study, &samples);
        let row = &html[html.find("Last lines of its stderr").expect("the column")..];
        assert!(
            row.contains(
                "<code>warming up ⏎ ** (SystemLimitError) &lt;a system limit&gt; &amp; more</code>"
            ),
            "{}",
            &row[..row.len().min(1500)]
        );
    }

    #[test]
    fn the_file_list_names_a_merged_runs_files() {
        let list = files();
        for name in run_dir::MERGED {
            assert!(
                list.contains(&format!("<a href=\"{name}\">")),
                "{name}: {list}"
            );
        }
    }

    #[test]
    fn holds_the_report_a_sortable_verdict_row_per_claim_every_figure_and_the_raw_values() {
        let (study, samples) = crate::outputs::figure::tests::kinds();
        let html = render(&study, &samples);
        let table = &html[html.find("id=\"verdict-table\"").unwrap()..];
        let table = &table[..table.find("</table>").unwrap()];
        assert_eq!(table.matches("<tr>").count(), study.claims.len() + 1);
        for c in &study.claims {
            assert!(
                table.contains(&format!("<code>{}</code>", c.id)),
                "{}",
                c.id
            );
        }
        for design in [
            "memory", "timed", "latency", "reported", "ratio", "order", "value",
        ] {
            assert!(
                html.contains(&format!("data-design=\"{design}\"")),
                "{design}"
            );
        }
        for section in [
            "## Environment",
            "Raw process values",
            "Files of the run folder",
        ] {
            let heading = section.trim_start_matches("## ");
            assert!(html.contains(heading), "{section}");
        }
        assert!(html.contains("<a href=\"samples.jsonl\">"));
        // Self-contained: one script (the sorter), no source or link to fetch.
        assert_eq!(html.matches("<script").count(), 1);
        assert!(!html.contains(" src="), "nothing to load");
        assert!(!html.contains("<link"), "no stylesheet to load");
    }

    #[test]
    fn markup_from_a_hostile_archive_is_text() {
        let (study, samples) = crate::outputs::figure::tests::hostile();
        let html = render(&study, &samples);
        assert_eq!(
            html.matches("<script").count(),
            1,
            "only the page's own sorter"
        );
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(!html.contains("<script>alert"));
    }
}
