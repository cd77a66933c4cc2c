//! The `{…}` words a probe's arguments and environment may hold, replaced per cell.

use std::collections::BTreeMap;

use anyhow::{Result, bail};

use crate::study::probe::Probe;

/// The words `args` and `env` may hold, each replaced per cell.
pub const PLACEHOLDERS: &[&str] = &["{tasks}", "{workers}", "{cpus}", "{other_cpus}"];

/// Fails when `text` (an argument or an environment value) holds a `{word}` that is not one of
/// [`PLACEHOLDERS`], naming them.
pub fn check(text: &str) -> Result<()> {
    if let Some(word) = unknown_placeholder(text) {
        bail!(
            "{word} in {text:?} is not a placeholder; use {}",
            PLACEHOLDERS.join(", ")
        );
    }
    Ok(())
}

/// The first `{word}` of `text` (a word of lowercase letters and `_`) that is not one of
/// [`PLACEHOLDERS`]; other braces (`{}`, JSON, `${VAR}`) are left alone.
fn unknown_placeholder(text: &str) -> Option<&str> {
    let mut from = 0;
    while let Some(at) = text[from..].find('{').map(|i| i + from) {
        let len = text[at + 1..]
            .find(|c: char| !(c.is_ascii_lowercase() || c == '_'))
            .unwrap_or(text.len() - at - 1);
        let end = at + 1 + len;
        if len > 0 && text[end..].starts_with('}') {
            let word = &text[at..=end];
            if !PLACEHOLDERS.contains(&word) {
                return Some(word);
            }
        }
        from = at + 1;
    }
    None
}

/// What the `{…}` words of a probe's arguments and environment stand for in one cell.
#[derive(Debug, Clone, PartialEq)]
pub struct Placeholders {
    /// `{tasks}`: the cell's task count.
    pub tasks: u64,
    /// `{cpus}`: the CPUs the probe is pinned to; `{workers}` is how many.
    pub cpus: Vec<usize>,
    /// `{other_cpus}`: the run's CPUs the probe is not pinned to (empty when it has them all), for
    /// a helper the probe starts on CPUs of its own, such as a load generator.
    pub other_cpus: Vec<usize>,
}

impl Placeholders {
    /// The words of a cell of `probe` at `tasks` in a run pinned to `run_cpus`; `Err` says why the
    /// run cannot give the probe its CPUs.
    pub fn of(probe: &Probe, tasks: u64, run_cpus: &[usize]) -> std::result::Result<Self, String> {
        let cpus = probe.pinned_cpus(run_cpus)?;
        let other_cpus = run_cpus
            .iter()
            .filter(|c| !cpus.contains(c))
            .copied()
            .collect();
        Ok(Self {
            tasks,
            cpus,
            other_cpus,
        })
    }

    fn expand(&self, s: &str) -> String {
        s.replace("{tasks}", &self.tasks.to_string())
            .replace("{workers}", &self.cpus.len().to_string())
            .replace(
                "{other_cpus}",
                &crate::study::cpuset::format(&self.other_cpus),
            )
            .replace("{cpus}", &crate::study::cpuset::format(&self.cpus))
    }
}

impl Probe {
    /// Arguments with `{tasks}`, `{workers}`, `{cpus}` and `{other_cpus}` replaced.
    pub fn expand_args(&self, words: &Placeholders) -> Vec<String> {
        self.args.iter().map(|a| words.expand(a)).collect()
    }

    /// Environment with the same words replaced.
    pub fn expand_env(&self, words: &Placeholders) -> BTreeMap<String, String> {
        self.env
            .iter()
            .map(|(k, v)| (k.clone(), words.expand(v)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::study::{DEFAULT_STUDY, Study};

    #[test]
    fn placeholders_name_the_cells_cpus_and_the_others() {
        let mut probe = Study::default_study().probes[1].clone();
        probe.args = vec![
            "-n={tasks}".into(),
            "{workers}".into(),
            "{cpus}".into(),
            "{other_cpus}".into(),
        ];
        probe.env = BTreeMap::from([("CPUS".to_string(), "{cpus}/{other_cpus}".to_string())]);
        let all = Placeholders::of(&probe, 10, &[0, 1, 2, 3]).unwrap();
        assert_eq!(probe.expand_args(&all), ["-n=10", "4", "0-3", ""]);
        probe.cpus = Some(1);
        let one = Placeholders::of(&probe, 10, &[0, 1, 2, 3]).unwrap();
        assert_eq!(probe.expand_args(&one), ["-n=10", "1", "0", "1-3"]);
        assert_eq!(probe.expand_env(&one)["CPUS"], "0/1-3");
        probe.cpus = Some(5);
        assert!(Placeholders::of(&probe, 10, &[0, 1]).is_err());
    }

    #[test]
    fn an_unknown_placeholder_is_refused_at_load() {
        let text = DEFAULT_STUDY.replacen(
            "\"--workers\", \"{workers}\"",
            "\"--workers\", \"{worker}\"",
            1,
        );
        assert_ne!(text, DEFAULT_STUDY);
        let err = format!("{:#}", Study::parse(&text).unwrap_err());
        assert!(err.contains("probe \"rust-tokio\""), "{err}");
        assert!(
            err.contains("{worker} in \"{worker}\" is not a placeholder; use {tasks}"),
            "{err}"
        );
        assert_eq!(unknown_placeholder("a {tasks} {cpus}"), None);
        assert_eq!(unknown_placeholder("{tasks}{x}"), Some("{x}"));
        assert_eq!(
            unknown_placeholder("{\"a\": {}} ${HOME} {Tasks} {tasks"),
            None
        );
        assert_eq!(unknown_placeholder("{{cpu}}"), Some("{cpu}"));
    }
}
