//! Which batches of a timed process count: a batch (one `result` line) is dropped when what
//! disturbed it (`Sample::batches`, read by the sampler) passes the rule the study declared
//! (`protocol.drop_batches`, recorded in the sample as `drop_batches`). Everything here is
//! recomputed from the sample alone; a sample without counters or without a rule (written before
//! batches were read) drops nothing, so its values are what they always were.

use std::collections::BTreeMap;

use crate::study::protocol::DropBatches;
use crate::study::sample::{BatchCounters, Sample};

/// Why a batch was dropped: the first threshold it passed, in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Why {
    /// Steal on the pinned CPUs above `steal_above`.
    Steal,
    /// Run-queue wait above `wait_above`, beyond the process's quietest batch.
    Wait,
    /// Involuntary switches above `involuntary_switches_above`.
    Switches,
}

impl Why {
    /// The reason's name in summaries and reports.
    pub fn name(self) -> &'static str {
        match self {
            Why::Steal => "steal",
            Why::Wait => "run-queue wait",
            Why::Switches => "involuntary switches",
        }
    }
}

/// Per `result` line of the sample, in order, why it is dropped (`None`: it counts). Nothing is
/// dropped without a rule, without counters, or when the counters do not match the result lines
/// one to one (which [`mismatch`] reports).
pub fn dropped(s: &Sample) -> Vec<Option<Why>> {
    let none = vec![None; s.results.len()];
    let Some(rule) = &s.drop_batches else {
        return none;
    };
    if s.batches.is_empty() || mismatch(s).is_some() {
        return none;
    }
    let cpus = crate::study::cpuset::parse(&s.cpus_pinned)
        .map_or(1, |c| c.len())
        .max(1);
    let quietest = own_wait(s, cpus);
    s.batches
        .iter()
        .map(|b| why(b, rule, cpus, quietest))
        .collect()
}

/// Why the sample's counters cannot be matched to its batches, if so.
pub fn mismatch(s: &Sample) -> Option<String> {
    let (counted, lines) = (s.batches.len(), s.results.len());
    (counted != 0 && counted != lines)
        .then(|| format!("the sampler read {counted} batches' counters for {lines} `result` lines"))
}

/// The `result` lines that count, in order.
pub fn kept(s: &Sample) -> Vec<&BTreeMap<String, f64>> {
    s.results
        .iter()
        .zip(dropped(s))
        .filter(|(_, why)| why.is_none())
        .map(|(r, _)| r)
        .collect()
}

/// Per key, the median of some `result` lines.
pub fn medians<'a>(
    lines: impl IntoIterator<Item = &'a BTreeMap<String, f64>>,
) -> BTreeMap<String, f64> {
    let mut by_key: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for (k, &v) in lines.into_iter().flatten() {
        by_key.entry(k.clone()).or_default().push(v);
    }
    by_key
        .into_iter()
        .filter_map(|(k, v)| Some((k, crate::stats::median(&v)?)))
        .collect()
}

/// The run-queue wait that is the program's own, as a fraction of a window: none when it never had
/// more threads than pinned CPUs (a thread then waits only for another task), else that of its
/// quietest batch (its threads waiting for each other at every hand-off).
fn own_wait(s: &Sample, cpus: usize) -> f64 {
    let threads = s.peak.as_ref().and_then(|p| p.threads_max);
    if threads.is_some_and(|t| t <= cpus as u64) {
        return 0.0;
    }
    let waits = s.batches.iter().filter_map(wait_fraction);
    waits.reduce(f64::min).unwrap_or(0.0)
}

fn wait_fraction(b: &BatchCounters) -> Option<f64> {
    (b.window_ms > 0.0).then_some(b.runqueue_wait_ms? / b.window_ms)
}

fn why(b: &BatchCounters, rule: &DropBatches, cpus: usize, quietest: f64) -> Option<Why> {
    let window = b.window_ms * cpus as f64;
    let steal = b.steal_ms.filter(|_| window > 0.0).map(|s| s / window);
    if steal.zip(rule.steal_above).is_some_and(|(f, t)| f > t) {
        return Some(Why::Steal);
    }
    let wait = wait_fraction(b).map(|f| f - quietest);
    if wait.zip(rule.wait_above).is_some_and(|(f, t)| f > t) {
        return Some(Why::Wait);
    }
    let switches = b.involuntary_switches.zip(rule.involuntary_switches_above);
    switches
        .is_some_and(|(n, t)| n > t)
        .then_some(Why::Switches)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::study::sample::Kind;

    fn batch(window: f64, steal: f64, switches: u64, wait: f64) -> BatchCounters {
        BatchCounters {
            window_ms: window,
            steal_ms: Some(steal),
            involuntary_switches: Some(switches),
            runqueue_wait_ms: Some(wait),
            window_batches: 1,
        }
    }

    fn sample(batches: Vec<BatchCounters>, rule: Option<DropBatches>) -> Sample {
        let mut s = crate::study::sample::fixture::samples()[0].clone();
        s.kind = Kind::Timed;
        s.cpus_pinned = "0".into();
        s.results = (0..batches.len().max(3))
            .map(|i| BTreeMap::from([("ns".to_string(), 10.0 + i as f64)]))
            .collect();
        s.batches = batches;
        s.drop_batches = rule;
        s
    }

    #[test]
    fn a_sample_without_counters_or_rule_drops_nothing() {
        let old = sample(Vec::new(), None);
        assert_eq!(dropped(&old), vec![None; 3]);
        assert_eq!(kept(&old).len(), 3);
        let no_rule = sample(vec![batch(10.0, 10.0, 9, 9.0); 3], None);
        assert_eq!(dropped(&no_rule), vec![None; 3]);
    }

    #[test]
    fn each_threshold_drops_its_batches() {
        let rule = DropBatches {
            involuntary_switches_above: Some(5),
            ..DropBatches::default()
        };
        let s = sample(
            vec![
                batch(20.0, 0.0, 1, 1.0),  // quietest wait: 5 %
                batch(20.0, 10.0, 1, 1.0), // steal 50 %
                batch(20.0, 0.0, 1, 1.3),  // wait 6.5 %: 1.5 % beyond the quietest
                batch(20.0, 0.0, 6, 1.1),  // wait 5.5 %, but 6 switches
                batch(20.0, 0.0, 5, 1.1),  // counts
            ],
            Some(rule),
        );
        assert_eq!(
            dropped(&s),
            vec![
                None,
                Some(Why::Steal),
                Some(Why::Wait),
                Some(Why::Switches),
                None
            ]
        );
        assert_eq!(medians(kept(&s))["ns"], 12.0);
        assert_eq!(medians(&s.results)["ns"], 12.0);
    }

    #[test]
    fn a_program_with_no_more_threads_than_cpus_owns_no_wait() {
        let mut s = sample(
            vec![
                batch(20.0, 0.0, 1, 1.0),
                batch(20.0, 0.0, 1, 0.1),
                batch(20.0, 0.0, 1, 0.1),
            ],
            Some(DropBatches::default()),
        );
        // Unknown threads: the quietest batch's 0.5 % is the program's own; 5 % is 4.5 % more.
        assert_eq!(dropped(&s), vec![Some(Why::Wait), None, None]);
        s.peak = Some(crate::study::sample::Peak {
            threads_max: Some(1),
            ..Default::default()
        });
        s.batches[0].runqueue_wait_ms = Some(0.15);
        // One thread on one CPU: any wait is another task's, 0.75 % and 0.5 % both under 1 %.
        assert_eq!(dropped(&s), vec![None, None, None]);
        s.batches[1].runqueue_wait_ms = Some(0.3);
        assert_eq!(dropped(&s), vec![None, Some(Why::Wait), None]);
    }

    #[test]
    fn steal_is_shared_by_the_pinned_cpus_and_null_disables_a_threshold() {
        let mut s = sample(
            vec![batch(1000.0, 15.0, 0, 0.0); 3],
            Some(DropBatches::default()),
        );
        // 15 ms of steal in 1 s on one CPU is 1.5 %; on two CPUs 0.75 %.
        assert_eq!(dropped(&s), vec![Some(Why::Steal); 3]);
        s.cpus_pinned = "0-1".into();
        assert_eq!(dropped(&s), vec![None; 3]);
        s.cpus_pinned = "0".into();
        s.drop_batches = Some(DropBatches {
            steal_above: None,
            ..DropBatches::default()
        });
        assert_eq!(dropped(&s), vec![None; 3]);
    }

    #[test]
    fn counters_that_do_not_match_the_lines_drop_nothing_and_say_so() {
        let s = sample(
            vec![batch(10.0, 10.0, 0, 0.0); 2],
            Some(DropBatches::default()),
        );
        assert_eq!(dropped(&s), vec![None; 3]);
        assert_eq!(
            mismatch(&s).as_deref(),
            Some("the sampler read 2 batches' counters for 3 `result` lines")
        );
    }
}
