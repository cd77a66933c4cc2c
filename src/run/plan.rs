//! The plan of a run: how many processes it will start and how long they should take. Times come
//! from the study's latest earlier run (each cell's median container time) and, as the run goes, from
//! the processes it has finished; with neither, the plan says the time is not known yet.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::stats::median;
use crate::study::sample::{self, Sample};
use crate::study::{Order, Study};
use crate::text::count;

/// One process to run: a cell of the study matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    pub probe: usize,
    pub tasks: u64,
    pub repeat: u32,
    pub position: u32,
}

/// The planned matrix (`protocol.repeats`, its `min` when processes come on demand) in run
/// order: per scale, per repeat, the probes that run that scale (their own
/// `scales` or `protocol.scales`) — reversed on even repeats when the order alternates.
pub fn matrix(study: &Study) -> Vec<Cell> {
    let mut cells = Vec::new();
    for tasks in study.all_scales() {
        for repeat in 1..=study.protocol.repeats.min {
            let mut order: Vec<usize> = (0..study.probes.len())
                .filter(|&i| study.scales_of(&study.probes[i]).contains(&tasks))
                .collect();
            if study.protocol.order == Order::Alternate && repeat % 2 == 0 {
                order.reverse();
            }
            for probe in order {
                let position = cells.len() as u32;
                cells.push(Cell {
                    probe,
                    tasks,
                    repeat,
                    position,
                });
            }
        }
    }
    cells
}

/// Expected wall time per process, by (probe, tasks), ms.
#[derive(Debug, Default, Clone)]
pub struct Estimates {
    by_cell: BTreeMap<(String, u64), f64>,
    /// The run the estimates come from.
    pub source: Option<String>,
    /// Wall time of each process finished in this invocation, by (probe, tasks), ms.
    finished: BTreeMap<(String, u64), Vec<f64>>,
    /// Probes that start no process (their toolchain is unavailable): no time.
    not_run: std::collections::BTreeSet<String>,
    /// The kit's own time per process of this invocation, beyond each process's container time
    /// (creating, reading and removing containers), ms; `None` before the first has finished.
    between_ms: Option<f64>,
}

impl Estimates {
    /// From the samples of a run named `source` (`None`: no estimate is said to come from it).
    pub fn from_samples(samples: &[sample::Sample], source: Option<String>) -> Self {
        let mut times: BTreeMap<(String, u64), Vec<f64>> = BTreeMap::new();
        for s in samples {
            if let Some(ms) = s.timings.container_ms {
                times
                    .entry((s.probe.clone(), s.tasks))
                    .or_default()
                    .push(ms);
            }
        }
        let by_cell: BTreeMap<_, _> = times
            .into_iter()
            .filter_map(|(k, v)| Some((k, median(&v)?)))
            .collect();
        Self {
            source: source.filter(|_| !by_cell.is_empty()),
            by_cell,
            ..Self::default()
        }
    }

    /// Marks probes that start no process (an unavailable toolchain): their cells take no time.
    pub fn not_run(mut self, probes: impl IntoIterator<Item = String>) -> Self {
        self.not_run.extend(probes);
        self
    }

    /// Records a process this invocation finished.
    pub fn finished(&mut self, s: &Sample) {
        if let Some(ms) = s.timings.container_ms {
            let key = (s.probe.clone(), s.tasks);
            self.finished.entry(key).or_default().push(ms);
        }
    }

    /// The expected time of one process: this run's own times for the cell, then the earlier run's
    /// (at this machine's pace, [`Self::pace`]), then this run's times at the same scale, then the
    /// other probes' processes scaled by tasks, then the least time the study declares
    /// ([`least_ms`]), which is also the floor of every estimate.
    #[cfg(test)]
    fn of(&self, study: &Study, cell: &Cell) -> Option<f64> {
        Some(self.estimate(study, cell, self.pace(study))?.ms)
    }

    /// [`Self::of`] at a pace computed once for many cells.
    fn estimate(&self, study: &Study, cell: &Cell, pace: f64) -> Option<Estimate> {
        let key = (study.probes[cell.probe].id.clone(), cell.tasks);
        if self.not_run.contains(&key.0) {
            return Some(Estimate::measured(0.0));
        }
        let same_scale: Vec<f64> = self
            .finished
            .iter()
            .filter(|((probe, _), _)| !self.not_run.contains(probe))
            .filter(|((_, t), _)| *t == cell.tasks)
            .flat_map(|(_, v)| v.iter().copied())
            .collect();
        let least = least_ms(study, &study.probes[cell.probe]);
        let measured = (self.finished.get(&key))
            .and_then(|v| median(v))
            .or_else(|| {
                let earlier = self.by_cell.get(&key)?;
                Some(least + (earlier - least).max(0.0) * pace)
            })
            .or_else(|| self.by_scale(&key.0, cell.tasks))
            .or_else(|| median(&same_scale))
            .or_else(|| self.by_other_probes(&key.0, cell.tasks));
        match measured {
            Some(t) => Some(Estimate::measured(t.max(least))),
            None if least > 0.0 => Some(Estimate {
                ms: least,
                least_only: true,
            }),
            None => None,
        }
    }

    /// How much longer this run's processes take than the earlier run's of the same cells, in the
    /// time beyond the least each takes ([`least_ms`]: a steady process's settle and readings, a
    /// declared sleep), which no machine stretches: the median ratio over the cells both have (1
    /// before any). A reference run measured on a quicker machine, or a quieter one, then does not
    /// make every later estimate short by as much, and a pace read off small cells, mostly fixed
    /// time, carries over to large ones, mostly work.
    fn pace(&self, study: &Study) -> f64 {
        let ratios: Vec<f64> = (self.finished.iter())
            .filter_map(|((probe, tasks), v)| {
                let least = least_ms(study, study.probe(probe)?);
                let earlier = self.by_cell.get(&(probe.clone(), *tasks))? - least;
                // A cell of fixed time alone has no pace to tell (and would divide by noise).
                let now = median(v)? - least;
                (earlier > 0.05 * least.max(1.0)).then_some(now / earlier)
            })
            .filter(|r| r.is_finite() && *r > 0.0)
            .collect();
        median(&ratios).unwrap_or(1.0)
    }

    /// The time of one process of `probe` at `tasks` before any of its own has ended and before any
    /// process at that scale has: the median of the other probes' times at `tasks`, each modelled
    /// from its own scales ([`Self::by_scale`]). A probe measured only at 1M then has an estimate
    /// from the first process of the run, whichever probe and scale it was.
    fn by_other_probes(&self, probe: &str, tasks: u64) -> Option<f64> {
        let others: std::collections::BTreeSet<&String> = (self.finished.keys())
            .map(|(p, _)| p)
            .filter(|p| *p != probe && !self.not_run.contains(*p))
            .collect();
        let times: Vec<f64> = (others.into_iter())
            .filter_map(|p| self.by_scale(p, tasks))
            .collect();
        median(&times)
    }

    /// The time of one process of `probe` at `tasks`, modelled from its processes finished at other
    /// scales. With two scales or more: a line through their medians (least squares, time against
    /// tasks), never below the quickest of them. With one scale `n₁` (median `t₁`) the probe's own
    /// processes cannot tell its startup from its time per task, so the time per task is borrowed:
    /// `t₁ + s · (n − n₁)`, where `s` is the median slope of the other probes that have finished two
    /// scales or more (never below 0, and the time never below the quickest process this run has
    /// finished); before any probe has,
    /// every scale takes `t₁` — an underestimate of larger scales until a second scale gives a slope,
    /// but a known one, so a first run shows an ETA after each probe's first process. (Reading a
    /// slope off one point, e.g. treating `t₁` less the quickest process as time per task, turns a
    /// difference in startup at 1 task into hours at 1M.) `None` before any.
    fn by_scale(&self, probe: &str, tasks: u64) -> Option<f64> {
        let points = self.points(probe);
        match points.as_slice() {
            [] => None,
            [(n1, t1)] => {
                let slopes: Vec<f64> = self
                    .finished
                    .keys()
                    .map(|(p, _)| p)
                    .filter(|p| *p != probe)
                    .collect::<std::collections::BTreeSet<_>>()
                    .into_iter()
                    .filter_map(|p| slope(&self.points(p)))
                    .collect();
                // A probe quicker at more tasks is noise, not a time per task that shrinks.
                let Some(s) = median(&slopes).map(|s| s.max(0.0)) else {
                    return Some(*t1);
                };
                let quickest = self
                    .finished
                    .values()
                    .flatten()
                    .copied()
                    .fold(f64::INFINITY, f64::min);
                Some((t1 + s * (tasks as f64 - n1)).max(quickest))
            }
            _ => Some(least_squares(&points, tasks as f64)),
        }
    }

    /// The median time of each scale `probe` has finished processes at: (tasks, ms).
    fn points(&self, probe: &str) -> Vec<(f64, f64)> {
        self.finished
            .iter()
            .filter(|((p, _), _)| p == probe)
            .filter_map(|((_, t), v)| Some((*t as f64, median(v)?)))
            .collect()
    }
    /// Records this invocation's wall time so far, ms, from just before its first process: what
    /// it took beyond its finished processes' container times is the kit's time per process,
    /// which every process still to start will take too.
    pub fn elapsed(&mut self, wall_ms: f64) {
        let times = self.finished.values().flatten();
        let (n, container) = times.fold((0usize, 0.0), |(n, sum), ms| (n + 1, sum + ms));
        if n > 0 {
            self.between_ms = Some(((wall_ms - container) / n as f64).max(0.0));
        }
    }

    /// The expected time of these processes, and how many of them have no estimate.
    pub fn total(&self, study: &Study, cells: &[Cell]) -> (Duration, usize) {
        let total = self.sum(study, cells);
        (total.time, total.unknown)
    }

    /// The expected time of these processes, how many have no estimate, and how many are
    /// estimated at their least time alone.
    pub fn sum(&self, study: &Study, cells: &[Cell]) -> Total {
        let pace = self.pace(study);
        let (mut ms, mut unknown, mut least_only) = (0.0, 0, 0);
        for c in cells {
            let runs = !self.not_run.contains(&study.probes[c.probe].id);
            match self.estimate(study, c, pace) {
                Some(e) => {
                    ms += e.ms
                        + if runs {
                            self.between_ms.unwrap_or(0.0)
                        } else {
                            0.0
                        };
                    least_only += usize::from(e.least_only);
                }
                None => unknown += 1,
            }
        }
        let time = Duration::try_from_secs_f64(ms / 1000.0).unwrap_or(Duration::MAX);
        Total {
            time,
            unknown,
            least_only,
        }
    }
}

impl Estimates {
    /// `ETA 12 min 05 s` for these processes, `ETA unknown` while some have no estimate, `done`
    /// when none are left.
    pub fn eta(&self, study: &Study, cells: &[Cell]) -> String {
        if cells.is_empty() {
            return "done".into();
        }
        match self.total(study, cells) {
            (left, 0) => format!("ETA {}", clock(left)),
            _ => "ETA unknown".into(),
        }
    }
}

/// One process's expected time.
struct Estimate {
    ms: f64,
    /// Nothing measured tells it: it is the least time the study declares ([`least_ms`]).
    least_only: bool,
}

impl Estimate {
    fn measured(ms: f64) -> Self {
        let least_only = false;
        Self { ms, least_only }
    }
}

/// The expected time of some processes ([`Estimates::sum`]).
#[derive(Debug, Clone, Copy)]
pub struct Total {
    /// The processes' expected time, those without an estimate left out.
    pub time: Duration,
    /// How many have no estimate.
    pub unknown: usize,
    /// How many are estimated at their least time alone (what the study declares).
    pub least_only: usize,
}

impl Total {
    /// The time is a lower bound: some processes have no estimate or only their least time.
    pub fn bound(&self) -> bool {
        self.unknown + self.least_only > 0
    }
}

/// The least time one process of `probe` takes by what the study declares, ms: the larger of
/// `protocol.duration_s` (the programs' own, e.g. a 10 s sleep) and what its kind's protocol alone
/// takes (the steady kind's settle and readings); 0 when neither says.
fn least_ms(study: &Study, probe: &crate::study::Probe) -> f64 {
    let declared = study.protocol.duration_s.unwrap_or(0.0) * 1000.0;
    declared.max(probe.kind.measure().least_ms(&study.protocol))
}

/// The least-squares line through `points` (tasks, ms) at `x`, never below the quickest point.
fn least_squares(points: &[(f64, f64)], x: f64) -> f64 {
    let n = points.len() as f64;
    let (mx, my) = (
        points.iter().map(|p| p.0).sum::<f64>() / n,
        points.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let floor = points.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    (my + slope(points).unwrap_or(0.0) * (x - mx)).max(floor)
}

/// The least-squares slope of `points` (tasks, ms): ms per task; `None` with fewer than two scales.
fn slope(points: &[(f64, f64)]) -> Option<f64> {
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    (points.len() >= 2 && sxx > 0.0).then(|| sxy / sxx)
}

/// The plan printed before a run starts: processes by probe and scale, and the expected time.
pub fn describe(study: &Study, todo: &[Cell], already: usize, est: &Estimates) -> String {
    let p = &study.protocol;
    let shape = if study.probes.iter().all(|probe| probe.scales.is_none()) {
        format!(
            "{} × {} × {} repeats",
            count(study.probes.len(), "probe", "probes"),
            count(p.scales.len(), "scale", "scales"),
            p.repeats
        )
    } else {
        let cells: usize = study.probes.iter().map(|p| study.scales_of(p).len()).sum();
        // A probe left out of a partial run or a shard has no scale here.
        let measured = (study.probes.iter())
            .filter(|p| !study.scales_of(p).is_empty())
            .count();
        let probes = count(measured, "probe", "probes");
        match cells == measured {
            true => format!("{probes} at one scale each, × {} repeats", p.repeats),
            false => format!(
                "{cells} probe × scale cells over {probes}, × {} repeats",
                p.repeats
            ),
        }
    };
    let more = p
        .repeats
        .rule()
        .map(|r| format!("; then {r}"))
        .unwrap_or_default();
    let mut out = format!(
        "plan: {} to run ({shape}; {already} already measured{more})",
        count(todo.len(), "process", "processes")
    );
    let total = est.sum(study, todo);
    let Total {
        time,
        unknown,
        least_only,
    } = total;
    // Processes estimated at their least time alone make the time a lower bound.
    let bound = if total.bound() { "≥" } else { "≈" };
    let mut without = Vec::new();
    if unknown > 0 {
        without.push(format!("{unknown} processes without an estimate"));
    }
    if least_only > 0 {
        without.push(format!(
            "{least_only} at their least time: `duration_s`, or their kind's settle and readings"
        ));
    }
    let without = without.iter().map(|w| format!("; {w}")).collect::<String>();
    match &est.source {
        _ if unknown == todo.len() && !todo.is_empty() => out.push_str(
            "; expected time not known yet (no earlier run of this study): the progress line \
             estimates it as processes finish",
        ),
        Some(run) => out.push_str(&format!(
            "; expected {bound} {} (container times of run {run}{without})",
            clock(time)
        )),
        None if est.finished.is_empty() => out.push_str(&format!(
            "; expected {bound} {} (no earlier run of this study{without}): the progress line \
             estimates it as processes finish",
            clock(time)
        )),
        None => {}
    }
    out
}

/// `1 h 02 min`, `12 min 05 s`, `42 s`.
pub fn clock(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min {:02} s", s / 60, s % 60),
        _ => format!("{} h {:02} min", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
mod tests;
