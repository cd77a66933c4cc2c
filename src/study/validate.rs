//! The checks a study passes once deserialized: ids, the protocol's values, every probe, every
//! claim against the probes, their kinds and scales, and the factors. Each error names the node it
//! is about by its path (`claims[3].tolerance`), so that loading shows the file's line and column.

use anyhow::{Context, Result, ensure};

use crate::study::claim::{Claim, Expected, Than};
use crate::study::kind::Kind;
use crate::study::probe::{Probe, check_env_name};
use crate::study::stat::Stat;
use crate::study::{Study, claim, cpuset, factor, placeholders};
use crate::yaml::{At, Invalid, bail_at, ensure_at};

/// A check's outcome: nothing, or the node it failed on.
type Checked = std::result::Result<(), Invalid>;

impl Study {
    /// Checks the whole study; an error names the node it is about.
    pub(super) fn validate(&self) -> Checked {
        ensure_at!(
            valid_id(&self.id),
            "id",
            "study id {:?}: an id names the study's folder under results/, so it is lowercase \
             letters, digits, `-`, `_` and `.`, starting with a letter or digit (e.g. wait-1m)",
            self.id
        );
        self.validate_protocol()?;
        ensure_at!(
            !self.probes.is_empty(),
            "probes",
            "probes is empty: list at least one probe"
        );
        for (i, probe) in self.probes.iter().enumerate() {
            let at = format!("probes[{i}]");
            printable_id("probe", &probe.id).at(format!("{at}.id"))?;
            ensure_at!(
                !self.probes[..i].iter().any(|p| p.id == probe.id),
                format!("{at}.id"),
                "probe id {:?} appears twice",
                probe.id
            );
            self.validate_probe(probe)
                .map_err(|e| about(e, "probe", &probe.id).under(&at))?;
        }
        for (i, c) in self.claims.iter().enumerate() {
            let at = format!("claims[{i}]");
            printable_id("claim", &c.id).at(format!("{at}.id"))?;
            ensure_at!(
                !self.claims[..i].iter().any(|o| o.id == c.id),
                format!("{at}.id"),
                "claim id {:?} appears twice",
                c.id
            );
            self.validate_claim(c)
                .and_then(|()| self.validate_requires(c))
                .map_err(|e| about(e, "claim", &c.id).under(&at))?;
        }
        factor::validate(&self.factors, &self.probes).map_err(|e| e.under("factors"))
    }

    fn validate_protocol(&self) -> Checked {
        let p = &self.protocol;
        if let Some(i) = p.scales.iter().position(|&n| n == 0) {
            bail_at!(
                format!("protocol.scales[{i}]"),
                "protocol.scales: task counts must be > 0"
            );
        }
        if let Some(t) = p.target_cv {
            ensure_at!(
                t.is_finite() && t > 0.0,
                "protocol.target_cv",
                "protocol.target_cv is {t}: a positive fraction (0.02 = 2 %)"
            );
        }
        p.repeats.check()?;
        ensure_at!(
            p.samples > 0,
            "protocol.samples",
            "protocol.samples must be > 0"
        );
        ensure_at!(
            p.interval_ms > 0,
            "protocol.interval_ms",
            "protocol.interval_ms must be > 0"
        );
        ensure_at!(
            p.timeout_s > 0 && p.timeout_s <= MAX_TIMEOUT_S,
            "protocol.timeout_s",
            "protocol.timeout_s must be > 0 and at most {MAX_TIMEOUT_S} (a week)"
        );
        if let Some(d) = p.duration_s {
            ensure_at!(
                d.is_finite() && d > 0.0 && d < p.timeout_s as f64,
                "protocol.duration_s",
                "protocol.duration_s is {d}: the seconds every process runs at least, > 0 and \
                 below protocol.timeout_s ({} s), or left out",
                p.timeout_s
            );
        }
        ensure_at!(
            p.pids_limit > 0,
            "protocol.pids_limit",
            "protocol.pids_limit must be > 0: the tasks a probe's container may hold at once, the \
             sampler's included (leave it out for {})",
            crate::study::protocol::DEFAULT_PIDS_LIMIT
        );
        if let Some(why) = p.drop_batches.invalid() {
            bail_at!("protocol.drop_batches", "{why}");
        }
        cpuset::parse(&p.cpus)
            .context("protocol.cpus")
            .at("protocol.cpus")?;
        for (i, k) in p.kernels.iter().enumerate() {
            ensure_at!(
                valid_id(k) && !p.kernels[..i].contains(k),
                format!("protocol.kernels[{i}]"),
                "protocol.kernels: {k:?} is {}: name each kernel once, `host` or a guest kernel \
                 such as debian-6.1 (a docker/kernel-<name>/ folder)",
                if valid_id(k) {
                    "named twice"
                } else {
                    "not a kernel name"
                }
            );
        }
        ensure_at!(
            p.guest_memory_mib.is_none_or(|m| m >= 256),
            "protocol.guest_memory_mib",
            "protocol.guest_memory_mib must be at least 256 (MiB)"
        );
        Ok(())
    }

    /// A probe's own scales, program path, CPUs, THP mode and placeholders; paths are the probe's.
    fn validate_probe(&self, probe: &Probe) -> Checked {
        if let Some(mode) = &probe.thp {
            crate::study::check_thp_mode(mode).at("thp")?;
        }
        match &probe.scales {
            Some(s) => {
                ensure_at!(
                    !s.is_empty(),
                    "scales",
                    "scales is empty: list at least one task count, or leave it out"
                );
                if let Some(j) = s.iter().position(|&n| n == 0) {
                    bail_at!(format!("scales[{j}]"), "scales: task counts must be > 0");
                }
            }
            None => ensure_at!(
                !self.protocol.scales.is_empty(),
                "",
                "protocol.scales is empty and the probe lists no `scales`: list at least one task count"
            ),
        }
        ensure_at!(
            probe.program.starts_with('/'),
            "program",
            "program {:?} must be an absolute path inside the image",
            probe.program
        );
        ensure_at!(
            probe.cpus != Some(0),
            "cpus",
            "cpus: 0 — a probe needs at least one CPU (leave it out to use all of the run's)"
        );
        for (j, arg) in probe.args.iter().enumerate() {
            placeholders::check(arg).at(format!("args[{j}]"))?;
        }
        for (name, value) in &probe.env {
            check_env_name(name).at(format!("env.{name}"))?;
            placeholders::check(value).at(format!("env.{name}"))?;
        }
        Ok(())
    }

    /// Checks one claim against the probes, their kinds and the scales; paths are the claim's.
    fn validate_claim(&self, c: &Claim) -> Checked {
        self.check_claim_scales(c)?;
        claim::check_tolerance(c)?;
        match c.stat {
            Stat::Order => self.check_order(c)?,
            Stat::Ratio | Stat::LowerByPercent => self.check_comparison(c)?,
            stat => {
                let kind = self.kind_of(&c.probe).at("probe")?;
                claim::check_stat(stat, kind).at("stat")?;
                ensure_at!(
                    c.tasks.is_some() || stat == Stat::MetricMedian,
                    "tasks",
                    "stat {stat:?} needs `tasks`"
                );
            }
        }
        claim::check_fields(c)
    }

    /// Every probe a claim names runs the scale it names (`tasks`, and `than_tasks` for what it is
    /// compared against).
    fn check_claim_scales(&self, c: &Claim) -> Checked {
        let named: Vec<&String> = match (&c.expected, c.stat) {
            (Expected::Order(ids), Stat::Order) => ids.iter().collect(),
            _ => vec![&c.probe],
        };
        if let Some(n) = c.tasks {
            for id in named.into_iter().filter(|id| self.probe(id).is_some()) {
                self.check_runs(id, n).at("tasks")?;
            }
        }
        let field = if c.than_tasks.is_some() {
            "than_tasks"
        } else {
            "tasks"
        };
        match (c.than_tasks.or(c.tasks), &c.than) {
            (Some(n), None) if c.than_tasks.is_some() => self.check_runs(&c.probe, n).at(field)?,
            (Some(n), Some(Than::One(id))) if id != "lowest" && id != "highest" => {
                self.check_runs(id, n).at(field)?
            }
            (Some(n), Some(Than::Each(ids))) => {
                for id in ids {
                    self.check_runs(id, n).at(field)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// A `stat: order` claim: two or more probes of one kind, ranked by a statistic they offer.
    fn check_order(&self, c: &Claim) -> Checked {
        let Expected::Order(ids) = &c.expected else {
            bail_at!(
                "expected",
                "stat order needs `expected` as a list of probes, lowest first"
            );
        };
        ensure_at!(
            ids.len() >= 2,
            "expected",
            "an order needs at least two probes"
        );
        let Some(of) = c.of else {
            bail_at!("of", "stat order needs `of`: the statistic ranked");
        };
        let kinds = ids
            .iter()
            .enumerate()
            .map(|(j, id)| self.kind_of(id).at(format!("expected[{j}]")))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        compared(of, ids, &kinds, "expected")?;
        ensure_at!(c.tasks.is_some(), "tasks", "stat order needs `tasks`");
        Ok(())
    }

    /// A `ratio` or `lower_by_percent` claim: its probe and what it is compared against are of one
    /// kind, which offers the statistic compared.
    fn check_comparison(&self, c: &Claim) -> Checked {
        if let Some(Than::Each(ids)) = &c.than {
            ensure_at!(
                ids.len() == 1 || matches!(c.expected, Expected::Bound(_)),
                "expected",
                "a ratio against each of several probes needs a bound as `expected` \
                 ({{above: …}} or {{below: …}}): one value cannot hold for every ratio"
            );
        }
        let kind = self.kind_of(&c.probe).at("probe")?;
        let of = match (c.stat, c.of) {
            (Stat::Ratio, Some(of)) => of,
            (Stat::Ratio, None) => bail_at!("of", "stat ratio needs `of`: the statistic divided"),
            _ => Stat::RssMedian,
        };
        let others = self.than_probes(c).at("than")?;
        let mut ids = vec![c.probe.clone()];
        ids.extend(others.iter().cloned());
        let mut kinds = vec![kind];
        for id in &others {
            let kind = self
                .kind_of(id)
                .map_err(|e| anyhow::anyhow!("in `than`: {e:#}"));
            kinds.push(kind.at(than_path(c, id))?);
        }
        compared(of, &ids, &kinds, "than")?;
        ensure_at!(
            c.tasks.is_some(),
            "tasks",
            "stat {:?} needs `tasks`",
            c.stat
        );
        Ok(())
    }

    /// The claims a claim `requires` exist and require nothing themselves.
    fn validate_requires(&self, c: &Claim) -> Checked {
        for (j, id) in c.requires.iter().enumerate() {
            let at = format!("requires[{j}]");
            let Some(r) = self.claims.iter().find(|r| &r.id == id) else {
                bail_at!(at, "requires {id:?}, which is not a claim of this study");
            };
            ensure_at!(id != &c.id, at, "requires itself");
            ensure_at!(
                r.requires.is_empty(),
                at,
                "requires {id:?}, which has `requires` of its own; name what it requires here instead"
            );
        }
        Ok(())
    }

    /// Fails unless probe `id` runs `tasks`, naming the scales it runs.
    fn check_runs(&self, id: &str, tasks: u64) -> Result<()> {
        let Some(p) = self.probe(id) else {
            return Ok(());
        };
        let scales = self.scales_of(p);
        let list = scales
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        let whose = if p.scales.is_some() {
            format!("probe {id}'s own scales")
        } else {
            "protocol.scales".to_string()
        };
        ensure!(
            scales.contains(&tasks),
            "tasks {tasks} is not in {whose} ({list}): probe {id} does not run {tasks} tasks"
        );
        Ok(())
    }
}

/// `of` can be compared across probes `ids` of these `kinds` (named in the claim's field `list`):
/// it is a single value per cell, and the probes are of one kind, which offers it.
/// The longest `protocol.timeout_s`: a week, past which a process is surely not measured (and times
/// derived from it stay far from overflow).
const MAX_TIMEOUT_S: u64 = 7 * 24 * 3600;

fn compared(of: Stat, ids: &[String], kinds: &[Kind], list: &str) -> Checked {
    claim::check_scalar(of).at("of")?;
    claim::check_one_kind(ids, kinds).at(list)?;
    match kinds.first() {
        Some(kind) => claim::check_stat(of, *kind).at("of"),
        None => Ok(()),
    }
}

/// Where claim `c` names probe `id` in its `than`: the list item, or the field.
fn than_path(c: &Claim, id: &str) -> String {
    match &c.than {
        Some(Than::Each(ids)) => match ids.iter().position(|i| i == id) {
            Some(j) => format!("than[{j}]"),
            None => "than".to_string(),
        },
        _ => "than".to_string(),
    }
}

/// `e` with its message led by what it is about (`claim "asm-switch": …`), for a reader who looks
/// at the message before the line.
fn about(mut e: Invalid, what: &str, id: &str) -> Invalid {
    e.message = format!("{what} {id:?}: {}", e.message);
    e
}

/// A probe's or a claim's id, which every table, report and terminal shows: not empty, and nothing
/// in it a terminal would act on or that reorders text ([`crate::text::printable`]).
fn printable_id(what: &str, id: &str) -> anyhow::Result<()> {
    if id.trim().is_empty() || crate::text::printable(id) != id {
        anyhow::bail!(
            "{what} id {:?} is empty or holds a control or bidirectional character: an id is \
             shown in tables and reports; use letters, digits and punctuation",
            crate::text::printable(id)
        );
    }
    Ok(())
}

/// A study id is one plain folder name: `[a-z0-9][a-z0-9._-]*` (so never `..`, `/` or absolute).
pub fn valid_id(id: &str) -> bool {
    let mut chars = id.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._-".contains(c))
}

#[cfg(test)]
mod tests {
    use crate::study::{DEFAULT_STUDY, Study};

    fn error(text: &str) -> String {
        format!("{:#}", Study::parse(text).unwrap_err())
    }

    #[test]
    fn an_id_a_terminal_would_act_on_is_refused() {
        for (from, to) in [
            ("  - id: rust-tokio", "  - id: \"rust\\e[2Jtokio\""),
            ("  - id: go-rss-1m", "  - id: \"go-rss\\u202e-1m\""),
            ("  - id: go-rss-1m", "  - id: \"go\\rrss\""),
        ] {
            let err = error(&DEFAULT_STUDY.replacen(from, to, 1));
            assert!(
                err.contains("holds a control or bidirectional character") && !err.contains('\x1b'),
                "{err}"
            );
        }
    }

    #[test]
    fn an_env_that_steers_the_loader_is_refused_where_it_is_written() {
        for name in ["LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "LD_BIND_NOW"] {
            // The Go probe's `GOGC: "100"`, line 28: its value at column 15 + the longer name.
            let text = DEFAULT_STUDY.replacen("GOGC: \"100\"", &format!("{name}: /x.so"), 1);
            let err = error(&text);
            let at = format!("study.yaml:28:{}: ", 9 + name.len());
            assert!(
                err.starts_with(&format!("{at}probe \"go\": env: {name} would load code")),
                "{err}"
            );
            assert!(err.contains("docker/<image>.<variant>/"), "{err}");
        }
        // A factor level's env, in flow style: its value.
        let text = DEFAULT_STUDY.replacen("{GOGC: \"50\"}", "{LD_PRELOAD: /x.so}", 1);
        let line = 1 + text.lines().position(|l| l.contains("LD_PRELOAD")).unwrap();
        let column = 1 + text.lines().nth(line - 1).unwrap().find("/x.so").unwrap();
        let err = error(&text);
        assert!(
            err.starts_with(&format!(
                "study.yaml:{line}:{column}: factor \"gogc\", level \"50\": env: LD_PRELOAD"
            )),
            "{err}"
        );
        // Names that only look alike are the probe's own business.
        let text = DEFAULT_STUDY.replacen("GOGC: \"100\"", "OLD_PRELOAD: x", 1);
        assert!(Study::parse(&text).is_ok());
    }
}
