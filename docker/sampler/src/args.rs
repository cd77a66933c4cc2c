//! The sampler's command line.

pub const USAGE: &str = "usage: sampler [--cpus LIST] [--settle-ms 500] [--samples 5] [--interval-ms 50] \
                         [--timeout-s 300] -- <probe> <args…>";

#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    pub cpus: Option<String>,
    pub settle_ms: u64,
    pub samples: u32,
    pub interval_ms: u64,
    pub timeout_s: u64,
    pub command: Vec<String>,
}

pub fn parse_args(args: &[String]) -> Result<Options, String> {
    let mut opts = Options {
        cpus: None,
        settle_ms: 500,
        samples: 5,
        interval_ms: 50,
        timeout_s: 300,
        command: Vec::new(),
    };
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        if arg == "--" {
            opts.command = args[i + 1..].to_vec();
            break;
        }
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_owned())),
            _ => (arg.as_str(), None),
        };
        if !matches!(
            name,
            "--cpus" | "--settle-ms" | "--samples" | "--interval-ms" | "--timeout-s"
        ) {
            return Err(format!(
                "unknown argument {arg:?} (the probe's command goes after `--`)"
            ));
        }
        let value = match inline {
            Some(v) => v,
            None => {
                i += 1;
                args.get(i)
                    .cloned()
                    .ok_or_else(|| format!("{name} needs a value"))?
            }
        };
        let number = || {
            value
                .parse::<u64>()
                .map_err(|_| format!("{name}: {value:?} is not a non-negative integer"))
        };
        match name {
            "--cpus" => opts.cpus = Some(value.clone()),
            "--settle-ms" => opts.settle_ms = number()?,
            "--interval-ms" => opts.interval_ms = number()?,
            "--samples" => {
                opts.samples = u32::try_from(number()?)
                    .map_err(|_| format!("{name}: {value} is too large"))?;
                if opts.samples == 0 {
                    return Err("--samples must be at least 1".into());
                }
            }
            "--timeout-s" => {
                opts.timeout_s = number()?;
                if opts.timeout_s == 0 {
                    return Err("--timeout-s must be at least 1".into());
                }
            }
            _ => unreachable!(),
        }
        i += 1;
    }
    if opts.command.is_empty() {
        return Err("no probe command given after `--`".into());
    }
    Ok(opts)
}

/// The `--cpus` value of a command line that did not parse, for the report.
pub fn cpus_hint(args: &[String]) -> Option<String> {
    args.iter()
        .position(|a| a == "--cpus")
        .and_then(|i| args.get(i + 1))
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn args_defaults_and_values() {
        let o = parse_args(&args("-- ./probe --tasks 10")).unwrap();
        assert_eq!(
            (o.cpus, o.settle_ms, o.samples, o.interval_ms, o.timeout_s),
            (None, 500, 5, 50, 300)
        );
        assert_eq!(o.command, args("./probe --tasks 10"));
        let o = parse_args(&args(
            "--cpus 0-1 --settle-ms=10 --samples 3 --interval-ms 5 --timeout-s 9 -- p",
        ))
        .unwrap();
        assert_eq!(
            (
                o.cpus.as_deref(),
                o.settle_ms,
                o.samples,
                o.interval_ms,
                o.timeout_s
            ),
            (Some("0-1"), 10, 3, 5, 9)
        );
    }

    #[test]
    fn args_errors() {
        for bad in [
            "",
            "--",
            "p",
            "--cpus",
            "--samples 0 -- p",
            "--timeout-s 0 -- p",
            "--settle-ms x -- p",
            "--bogus 1 -- p",
        ] {
            assert!(parse_args(&args(bad)).is_err(), "{bad:?}");
        }
    }
}
