//! Test fixtures: the default study and a realistic, made-up run of it (`tests/fixtures/samples.jsonl`:
//! 2 probes × 4 scales × 3 repeats, Go at 1M repeat 2 OOM-killed).

use crate::sample::{Sample, parse_lines};
use crate::study::Study;
use crate::summary::{Summary, summarize};
use crate::verdict::{Verdict, judge};

const SAMPLES: &str = include_str!("../../tests/fixtures/samples.jsonl");

pub fn study() -> Study {
    Study::default_study()
}

pub fn samples() -> Vec<Sample> {
    let (good, bad) = parse_lines(SAMPLES.as_bytes()).unwrap();
    assert!(bad.is_empty(), "fixture lines malformed: {bad:?}");
    good
}

pub fn summary() -> Summary {
    summarize(&study(), &samples())
}

pub fn verdicts() -> Vec<Verdict> {
    judge(&study().claims, &summary())
}
