//! CPU lists in the kernel's format (`0-3,6`), as used by the study, `--cpus` and `Cpus_allowed_list`.

use anyhow::{Context, Result, bail};

/// Parses a CPU list into sorted, unique CPU numbers.
pub fn parse(list: &str) -> Result<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in list.split(',').map(str::trim) {
        if part.is_empty() {
            bail!("empty entry in CPU list {list:?}: use a form like 0-3 or 0,2");
        }
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (num(a, list)?, num(b, list)?),
            None => (num(part, list)?, num(part, list)?),
        };
        if lo > hi {
            bail!("CPU range {part:?} in {list:?} runs backwards");
        }
        cpus.extend(lo..=hi);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

fn num(s: &str, list: &str) -> Result<usize> {
    s.trim()
        .parse()
        .with_context(|| format!("{s:?} in CPU list {list:?} is not a CPU number"))
}

/// Formats CPU numbers as a compact list (`0-3,6`).
pub fn format(cpus: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        while i + 1 < cpus.len() && cpus[i + 1] == cpus[i] + 1 {
            i += 1;
        }
        out.push(if cpus[i] == start {
            start.to_string()
        } else {
            format!("{start}-{}", cpus[i])
        });
        i += 1;
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        assert_eq!(parse("0-3").unwrap(), vec![0, 1, 2, 3]);
        assert_eq!(parse("3,0-1,1").unwrap(), vec![0, 1, 3]);
        assert_eq!(format(&[0, 1, 2, 3, 6, 8, 9]), "0-3,6,8-9");
        assert!(parse("3-1").is_err());
        assert!(parse("a").is_err());
        assert!(parse("").is_err());
    }
}
