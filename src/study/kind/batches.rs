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
    /// Run-queue wait above `wait_above`, beyond the process's median batch.
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
/// dropped without a rule, without counters, when the counters do not match the result lines one
/// to one (which [`mismatch`] reports), or when more than half of the batches were disturbed
/// (which [`kept_disturbed`] reports): the process is then judged on all of them.
pub fn dropped(s: &Sample) -> Vec<Option<Why>> {
    let would = disturbed(s);
    if 2 * would.iter().flatten().count() > would.len() {
        return vec![None; would.len()];
    }
    would
}

/// When more than half of a process's batches were disturbed past the rule, none is dropped and
/// this says so: `N of M batches disturbed (steal/wait): not dropped, the process is judged on all
/// of them`.
pub fn kept_disturbed(s: &Sample) -> Option<String> {
    let would = disturbed(s);
    let n = would.iter().flatten().count();
    (2 * n > would.len()).then(|| {
        format!(
            "{n} of {} batches disturbed (steal/wait): not dropped, the process is judged on all \
             of them",
            would.len()
        )
    })
}

/// Per `result` line, why the rule would drop it, before the more-than-half guard of [`dropped`].
fn disturbed(s: &Sample) -> Vec<Option<Why>> {
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
    let threads = s.peak.as_ref().and_then(|p| p.threads_max);
    // Run-queue wait is summed over threads: per CPU it is shared by as many CPUs as the program
    // could keep busy at once.
    let busy = threads.map_or(cpus, |t| (t as usize).clamp(1, cpus));
    let own = own_wait(s, cpus, busy);
    s.batches
        .iter()
        .map(|b| why(b, rule, cpus, busy, own))
        .collect()
}

/// The first sample whose recorded rule is not `rule` (the study's `protocol.drop_batches`) or is
/// out of range, named with both rules: a sample from elsewhere may not bring its own rule. A
/// sample without one (written before the rule existed) drops nothing and passes.
pub fn foreign_rule(rule: &DropBatches, samples: &[Sample]) -> Option<String> {
    samples.iter().find_map(|s| {
        let own = s.drop_batches.as_ref()?;
        let out_of_range = own.invalid();
        (own != rule || out_of_range.is_some()).then(|| {
            format!(
                "the sample of {} × {} tasks, repeat {} records drop_batches {{{}}}, but the \
                 study's protocol.drop_batches is {{{}}}{}: its batches would be dropped by a rule \
                 of its own; the run was altered, do not use it",
                s.probe,
                s.tasks,
                s.repeat,
                own.describe(),
                rule.describe(),
                out_of_range.map_or(String::new(), |why| format!(" (and {why})"))
            )
        })
    })
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

/// `/proc/stat` counts steal in `USER_HZ` ticks, 100 a second on every Linux: 10 ms.
const TICK_MS: f64 = 10.0;

/// The run-queue wait that is the program's own, as a fraction of a window per busy CPU: none when
/// it never had more threads than pinned CPUs (a thread then waits only for another task), else
/// that of its median batch (its threads waiting for each other at every hand-off).
fn own_wait(s: &Sample, cpus: usize, busy: usize) -> f64 {
    let threads = s.peak.as_ref().and_then(|p| p.threads_max);
    if threads.is_some_and(|t| t <= cpus as u64) {
        return 0.0;
    }
    let waits: Vec<f64> = s
        .batches
        .iter()
        .filter_map(|b| wait_fraction(b, busy))
        .collect();
    crate::stats::median(&waits).unwrap_or(0.0)
}

fn wait_fraction(b: &BatchCounters, busy: usize) -> Option<f64> {
    (b.window_ms > 0.0).then_some(b.runqueue_wait_ms? / (b.window_ms * busy as f64))
}

/// Steal's lower bound as a fraction of the window's CPU time: each pinned CPU's count may be one
/// tick more than it stole (a tick is charged whole), so one tick per CPU is taken off first.
fn steal_fraction(b: &BatchCounters, cpus: usize) -> Option<f64> {
    let window = b.window_ms * cpus as f64;
    let steal = b.steal_ms.filter(|_| window > 0.0)?;
    Some((steal - TICK_MS * cpus as f64).max(0.0) / window)
}

fn why(b: &BatchCounters, rule: &DropBatches, cpus: usize, busy: usize, own: f64) -> Option<Why> {
    let steal = steal_fraction(b, cpus);
    if steal.zip(rule.steal_above).is_some_and(|(f, t)| f > t) {
        return Some(Why::Steal);
    }
    let wait = wait_fraction(b, busy).map(|f| f - own);
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

    fn threads(s: &mut Sample, n: u64) {
        s.peak = Some(crate::study::sample::Peak {
            threads_max: Some(n),
            ..Default::default()
        });
    }

    #[test]
    fn each_threshold_drops_its_batches() {
        let rule = DropBatches {
            involuntary_switches_above: Some(5),
            ..DropBatches::default()
        };
        let s = sample(
            vec![
                batch(1000.0, 0.0, 1, 10.0),  // wait 1 %: the median batch's
                batch(1000.0, 70.0, 1, 10.0), // steal at least 60 ms: 6 %
                batch(1000.0, 0.0, 1, 80.0),  // wait 8 %: 7 % beyond the median's
                batch(1000.0, 0.0, 6, 10.0),  // 6 switches
                batch(1000.0, 0.0, 5, 10.0),  // counts
                batch(1000.0, 0.0, 5, 10.0),  // counts
            ],
            Some(rule),
        );
        let (steal, wait, switches) = (Some(Why::Steal), Some(Why::Wait), Some(Why::Switches));
        assert_eq!(dropped(&s), vec![None, steal, wait, switches, None, None]);
        // Three of six is not more than half: they are dropped, without a warning.
        assert_eq!(kept_disturbed(&s), None);
        assert_eq!(medians(kept(&s))["ns"], 14.0);
        assert_eq!(medians(&s.results)["ns"], 12.5);
    }

    #[test]
    fn steal_is_judged_by_its_lower_bound_one_tick_per_pinned_cpu_less() {
        let mut s = sample(
            vec![
                batch(100.0, 10.0, 0, 0.0),
                batch(100.0, 20.0, 0, 0.0),
                batch(100.0, 0.0, 0, 0.0),
            ],
            Some(DropBatches::default()),
        );
        // One tick in 100 ms may be no steal at all; two ticks are at least 10 %.
        assert_eq!(dropped(&s), vec![None, Some(Why::Steal), None]);
        // On two CPUs each may have been charged one tick too many: 20 ms is at least none.
        s.cpus_pinned = "0-1".into();
        assert_eq!(dropped(&s), vec![None; 3]);
        s.batches[1].steal_ms = Some(40.0);
        assert_eq!(dropped(&s), vec![None, Some(Why::Steal), None]);
        s.drop_batches = Some(DropBatches {
            steal_above: None,
            ..DropBatches::default()
        });
        assert_eq!(dropped(&s), vec![None; 3], "null turns it off");
    }

    #[test]
    fn wait_is_per_cpu_the_program_could_keep_busy() {
        let mut s = sample(
            vec![
                batch(1000.0, 0.0, 0, 120.0),
                batch(1000.0, 0.0, 0, 0.0),
                batch(1000.0, 0.0, 0, 0.0),
            ],
            Some(DropBatches::default()),
        );
        s.cpus_pinned = "0-3".into();
        // Four threads on four CPUs: 120 ms of wait in 1 s is 3 % per CPU, and owns none.
        threads(&mut s, 4);
        assert_eq!(dropped(&s), vec![None; 3]);
        // One thread can keep only one CPU busy: 12 %.
        threads(&mut s, 1);
        assert_eq!(dropped(&s), vec![Some(Why::Wait), None, None]);
        // Unknown threads: the pinned CPUs.
        s.peak = None;
        s.batches[1].runqueue_wait_ms = Some(120.0);
        s.batches[2].runqueue_wait_ms = Some(120.0);
        s.batches[0].runqueue_wait_ms = Some(1000.0);
        // The median batch waits 3 % per CPU; the first 25 %, 22 % beyond it.
        assert_eq!(dropped(&s), vec![Some(Why::Wait), None, None]);
    }

    #[test]
    fn the_programs_own_wait_is_its_median_batchs() {
        let mut s = sample(
            vec![
                batch(1000.0, 0.0, 0, 100.0),
                batch(1000.0, 0.0, 0, 100.0),
                batch(1000.0, 0.0, 0, 170.0),
                batch(1000.0, 0.0, 0, 20.0),
                batch(1000.0, 0.0, 0, 100.0),
            ],
            Some(DropBatches::default()),
        );
        // Four threads on one CPU wait for each other: 10 % is the median batch's, its own; the
        // quietest batch's 2 % would have made four of five batches look disturbed.
        threads(&mut s, 4);
        assert_eq!(dropped(&s), vec![None, None, Some(Why::Wait), None, None]);
        // One thread on one CPU owns no wait: every batch past 5 % is another task's.
        threads(&mut s, 1);
        s.batches[2].runqueue_wait_ms = Some(20.0);
        s.batches[4].runqueue_wait_ms = Some(20.0);
        assert_eq!(
            dropped(&s),
            vec![Some(Why::Wait), Some(Why::Wait), None, None, None]
        );
    }

    #[test]
    fn when_more_than_half_were_disturbed_none_is_dropped_and_it_is_said() {
        let mut s = sample(
            vec![
                batch(100.0, 30.0, 0, 0.0),
                batch(100.0, 30.0, 0, 0.0),
                batch(100.0, 0.0, 0, 0.0),
            ],
            Some(DropBatches::default()),
        );
        assert_eq!(dropped(&s), vec![None; 3]);
        assert_eq!(kept(&s).len(), 3);
        assert_eq!(
            kept_disturbed(&s).as_deref(),
            Some(
                "2 of 3 batches disturbed (steal/wait): not dropped, the process is judged on \
                 all of them"
            )
        );
        s.batches.push(batch(100.0, 0.0, 0, 0.0));
        s.results.push(BTreeMap::from([("ns".to_string(), 13.0)]));
        assert_eq!(
            dropped(&s),
            vec![Some(Why::Steal), Some(Why::Steal), None, None],
            "two of four is not more than half"
        );
        assert_eq!(kept_disturbed(&s), None);
    }

    #[test]
    fn a_sample_with_a_rule_of_its_own_is_refused_naming_both() {
        let study = DropBatches::default();
        let mut s = sample(vec![batch(10.0, 0.0, 0, 0.0); 3], Some(study));
        let old = sample(Vec::new(), None);
        assert_eq!(foreign_rule(&study, &[old.clone(), s.clone()]), None);
        s.drop_batches = Some(DropBatches {
            steal_above: Some(0.9),
            ..study
        });
        let err = foreign_rule(&study, &[old, s.clone()]).unwrap();
        assert!(
            err.starts_with(&format!(
                "the sample of {} × {} tasks, repeat {} records drop_batches {{steal_above: 0.9, \
                 wait_above: 0.05, involuntary_switches_above: null}}, but the study's \
                 protocol.drop_batches is {{steal_above: 0.05,",
                s.probe, s.tasks, s.repeat
            )),
            "{err}"
        );
        // Out of range, even when the study's own rule says the same.
        let odd = DropBatches {
            wait_above: Some(2.0),
            ..study
        };
        s.drop_batches = Some(odd);
        let err = foreign_rule(&odd, &[s]).unwrap();
        assert!(
            err.contains("(and protocol.drop_batches.wait_above must be"),
            "{err}"
        );
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
