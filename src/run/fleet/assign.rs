//! Which host measures which cells, and which hosts may measure at once: pure functions of the
//! hosts as surveyed, unit-tested without an Engine.

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

use crate::run::shard::Shard;

/// How a study is laid over its hosts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Every cell on every host: each host a full replicate (`--across`).
    Across,
    /// The matrix dealt over hosts of one hardware class (`--spread`).
    Spread,
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Mode::Across => "across",
            Mode::Spread => "spread",
        })
    }
}

/// What each of `hosts` hosts measures, in the order given: the whole matrix (`None`) with
/// `--across`; with `--spread`, host j (0-based) shard (j+1)/n, dealt as `run --shard` deals.
pub fn assign(hosts: usize, mode: Mode) -> Vec<Option<Shard>> {
    (0..hosts)
        .map(|j| match mode {
            Mode::Across => None,
            Mode::Spread => Some(Shard {
                index: j as u32 + 1,
                count: hosts as u32,
            }),
        })
        .collect()
}

/// `--spread` needs hosts of one hardware class (`hosts`: name and class each): refused otherwise,
/// naming each class and its hosts, and suggesting `--across`.
pub fn one_class(hosts: &[(String, String)]) -> Result<()> {
    let mut classes: Vec<(&str, Vec<&str>)> = Vec::new();
    for (name, class) in hosts {
        match classes.iter_mut().find(|(c, _)| c == class) {
            Some((_, names)) => names.push(name),
            None => classes.push((class, vec![name])),
        }
    }
    if classes.len() > 1 {
        let said: Vec<String> = classes
            .iter()
            .map(|(c, names)| format!("{} ({c})", names.join(", ")))
            .collect();
        bail!(
            "--spread deals the matrix over interchangeable hosts, and these are of {} hardware \
             classes: {}; run every cell on every class with --across, or spread over hosts of \
             one class",
            classes.len(),
            said.join("; ")
        );
    }
    Ok(())
}

/// The hosts (by index) in groups: the hosts of one group measure one after another, the groups at
/// once. Hosts with the same kernel boot id are one machine and share a group (they would share
/// its CPUs); a host whose boot id is unknown (empty) could be any machine, so then every host is
/// in one group.
pub fn groups(boot_ids: &[&str]) -> Vec<Vec<usize>> {
    if boot_ids.iter().any(|b| b.is_empty()) {
        return vec![(0..boot_ids.len()).collect()];
    }
    let mut out: Vec<(&str, Vec<usize>)> = Vec::new();
    for (i, b) in boot_ids.iter().enumerate() {
        match out.iter_mut().find(|(id, _)| id == b) {
            Some((_, g)) => g.push(i),
            None => out.push((b, vec![i])),
        }
    }
    out.into_iter().map(|(_, g)| g).collect()
}

/// Names given twice in `--hosts` (a host named twice would measure beside itself).
pub fn distinct(names: &[String]) -> Result<()> {
    for (i, n) in names.iter().enumerate() {
        if names[..i].contains(n) {
            bail!("host `{n}` is named twice in --hosts: name each host once");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::shard;
    use crate::study::Study;

    fn study() -> Study {
        let mut s = Study::default_study();
        s.protocol.scales = vec![10, 100, 1000];
        s
    }

    #[test]
    fn across_gives_every_cell_to_every_host() {
        let s = study();
        let all = shard::cells(&s);
        for n in 1..=4 {
            let given = assign(n, Mode::Across);
            assert_eq!(given.len(), n);
            for g in given {
                assert_eq!(g, None);
                let cells = g.map_or_else(|| shard::cells(&s), |sh| shard::cells_of(&s, sh));
                assert_eq!(cells, all);
            }
        }
    }

    #[test]
    fn spread_gives_each_cell_to_exactly_one_host() {
        let s = study();
        let all = shard::cells(&s);
        for n in 1..=5 {
            let given = assign(n, Mode::Spread);
            let mut seen = Vec::new();
            for (j, g) in given.iter().enumerate() {
                let sh = g.expect("a shard per host");
                assert_eq!((sh.index, sh.count), (j as u32 + 1, n as u32));
                seen.extend(shard::cells_of(&s, sh));
            }
            for c in &all {
                assert_eq!(seen.iter().filter(|x| *x == c).count(), 1, "{c:?} with {n}");
            }
            assert_eq!(seen.len(), all.len());
        }
    }

    #[test]
    fn spread_over_two_classes_is_refused_naming_them_and_across() {
        let h = |n: &str, c: &str| (n.to_string(), c.to_string());
        one_class(&[h("a", "X"), h("b", "X")]).unwrap();
        let e = one_class(&[h("a", "X"), h("b", "Y"), h("c", "X")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("a, c (X)") && e.contains("b (Y)"), "{e}");
        assert!(e.contains("--across"), "{e}");
    }

    #[test]
    fn one_machine_measures_one_host_at_a_time() {
        assert_eq!(groups(&["m1", "m2", "m1"]), vec![vec![0, 2], vec![1]]);
        assert_eq!(groups(&["m1", "m2"]), vec![vec![0], vec![1]]);
        assert_eq!(groups(&["m1", "", "m2"]), vec![vec![0, 1, 2]]);
        assert!(groups(&[]).is_empty());
    }

    #[test]
    fn a_host_named_twice_is_refused() {
        let n = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        distinct(&n(&["a", "local"])).unwrap();
        let e = distinct(&n(&["a", "local", "a"])).unwrap_err().to_string();
        assert!(e.contains("`a`"), "{e}");
    }
}
