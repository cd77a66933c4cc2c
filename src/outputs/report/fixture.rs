//! Test fixtures: the default study and a realistic, made-up run of it (`tests/fixtures/samples.jsonl`:
//! 2 probes × 4 scales × 3 repeats, Go at 1M repeat 2 OOM-killed).

use crate::outputs::report::ReportInput;
use crate::outputs::summary::{Summary, summarize};
use crate::outputs::verdict::{Verdict, judge};
use crate::run::warning::{Touches, Warning};
use crate::study::Study;
use crate::study::sample::Sample;

pub fn study() -> Study {
    Study::default_study()
}

pub use crate::study::sample::fixture::samples;

pub fn summary() -> Summary {
    summarize(&study(), &samples())
}

pub fn verdicts() -> Vec<Verdict> {
    judge(&study(), &summary())
}

/// A report input with a plausible environment that differs from the published one.
pub fn input<'a>(
    study: &'a Study,
    samples: &'a [Sample],
    summary: &'a Summary,
    verdicts: &'a [Verdict],
) -> ReportInput<'a> {
    let env = [
        ("CPU", "AMD EPYC 7B13 64-Core Processor (8 CPUs online)"),
        ("Kernel", "6.1.0-31-amd64"),
        ("OS", "Debian GNU/Linux 12 (bookworm)"),
        ("Docker Engine", "20.10.24"),
        ("go", "1.26.1"),
        ("rustc", "1.97.1"),
        ("tokio", "1.53.2"),
    ];
    ReportInput {
        study,
        run_id: "run-20260412-101500",
        samples,
        summary,
        verdicts,
        environment: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        deviations: vec![
            "CPU: AMD EPYC 7B13 instead of Ryzen 9 7950X.".into(),
            "Kernel: native Linux 6.1.0 instead of WSL2 Linux 6.6.87.2.".into(),
        ],
        warnings: vec![
            Warning {
                what: "transparent hugepages `always`: a page fault can map 2 MiB, so RSS can grow in 2 MiB steps".into(),
                touches: Touches::Memory,
            },
            Warning {
                what: "steal time 2.4 % of pinned CPUs 0-7's time while measuring: the hypervisor ran something else (a VM's noisy neighbour)".into(),
                touches: Touches::Time,
            },
        ],
        partial: None,
        per_class: None,
    }
}
