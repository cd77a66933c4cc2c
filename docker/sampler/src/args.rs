//! The sampler's command line.

pub const USAGE: &str = "usage: sampler [--kind steady|peak|timed|latency] [--cpus LIST] [--settle-ms 500] \
                         [--samples 5] [--interval-ms 50] [--timeout-s 300] [--drop-steal FRACTION] \
                         [--drop-wait FRACTION] [--drop-involuntary N] -- <probe> <args…>\n       \
                         sampler --serve   (a supervisor: one such command line per request on stdin)";

/// What the sampler measures, and how it talks to the program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The handshake protocol: memory while the probe's tasks are parked.
    Steady,
    /// No handshake: peak memory, CPU and wall time of the whole run.
    Peak,
    /// As `Peak`, and the program's `result` lines are what it measured.
    Timed,
    /// As `Timed`, plus the program's `latency` lines, merged into one histogram.
    Latency,
}

impl Kind {
    pub const ALL: [Kind; 4] = [Kind::Steady, Kind::Peak, Kind::Timed, Kind::Latency];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Steady => "steady",
            Kind::Peak => "peak",
            Kind::Timed => "timed",
            Kind::Latency => "latency",
        }
    }

    pub fn from_name(name: &str) -> Result<Kind, String> {
        Kind::ALL
            .into_iter()
            .find(|k| k.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
                format!(
                    "--kind: unknown kind {name:?} (accepted: {})",
                    names.join(", ")
                )
            })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    pub kind: Kind,
    pub cpus: Option<String>,
    pub settle_ms: u64,
    pub samples: u32,
    pub interval_ms: u64,
    pub timeout_s: u64,
    /// Timed kind: the study's rule for dropping a batch, echoed in the output (the driver
    /// applies it): steal above this fraction of the batch's window on the pinned CPUs…
    pub drop_steal: Option<f64>,
    /// …or run-queue wait above this fraction of its window, beyond the median batch's…
    pub drop_wait: Option<f64>,
    /// …or more involuntary switches than this during the batch.
    pub drop_involuntary: Option<u64>,
    pub command: Vec<String>,
}

pub fn parse_args(args: &[String]) -> Result<Options, String> {
    let mut opts = Options {
        kind: Kind::Steady,
        cpus: None,
        settle_ms: 500,
        samples: 5,
        interval_ms: 50,
        timeout_s: 300,
        drop_steal: None,
        drop_wait: None,
        drop_involuntary: None,
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
            "--kind"
                | "--cpus"
                | "--settle-ms"
                | "--samples"
                | "--interval-ms"
                | "--timeout-s"
                | "--drop-steal"
                | "--drop-wait"
                | "--drop-involuntary"
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
        set(&mut opts, name, &value)?;
        i += 1;
    }
    if opts.command.is_empty() {
        return Err("no probe command given after `--`".into());
    }
    if opts.kind != Kind::Steady && opts.interval_ms == 0 {
        return Err(format!(
            "--interval-ms must be at least 1 for --kind {}",
            opts.kind.name()
        ));
    }
    Ok(opts)
}

/// Sets the option `name` (one of the known ones) to `value`.
fn set(opts: &mut Options, name: &str, value: &str) -> Result<(), String> {
    let number = || {
        value
            .parse::<u64>()
            .map_err(|_| format!("{name}: {value:?} is not a non-negative integer"))
    };
    match name {
        "--kind" => opts.kind = Kind::from_name(value)?,
        "--cpus" => opts.cpus = Some(value.to_owned()),
        "--settle-ms" => opts.settle_ms = number()?,
        "--interval-ms" => opts.interval_ms = number()?,
        "--samples" => {
            opts.samples =
                u32::try_from(number()?).map_err(|_| format!("{name}: {value} is too large"))?;
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
        "--drop-involuntary" => opts.drop_involuntary = Some(number()?),
        "--drop-steal" => opts.drop_steal = Some(fraction(name, value)?),
        "--drop-wait" => opts.drop_wait = Some(fraction(name, value)?),
        _ => unreachable!("{name} is checked by parse_args"),
    }
    Ok(())
}

fn fraction(name: &str, value: &str) -> Result<f64, String> {
    match value.parse::<f64>() {
        Ok(f) if (0.0..=1.0).contains(&f) => Ok(f),
        _ => Err(format!("{name}: {value:?} is not a fraction from 0 to 1")),
    }
}

/// The `--cpus` value of a command line that did not parse, for the report.
pub fn cpus_hint(args: &[String]) -> Option<String> {
    args.iter()
        .position(|a| a == "--cpus")
        .and_then(|i| args.get(i + 1))
        .cloned()
}

/// The kind a command line that did not parse asked for, so that the report has its shape;
/// steady when it names none (or none that exists).
pub fn kind_hint(args: &[String]) -> Kind {
    let end = args.iter().position(|a| a == "--").unwrap_or(args.len());
    let args = &args[..end];
    args.iter()
        .enumerate()
        .filter_map(|(i, a)| match a.strip_prefix("--kind") {
            Some("") => args.get(i + 1).map(String::as_str),
            Some(rest) => rest.strip_prefix('='),
            None => None,
        })
        .filter_map(|name| Kind::from_name(name).ok())
        .next_back()
        .unwrap_or(Kind::Steady)
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
            "--kind -- p",
            "--kind peak --interval-ms 0 -- p",
            "--drop-steal 2 -- p",
            "--drop-steal x -- p",
            "--drop-wait -0.5 -- p",
            "--drop-involuntary -1 -- p",
        ] {
            assert!(parse_args(&args(bad)).is_err(), "{bad:?}");
        }
        // Steady keeps accepting a zero interval, as before.
        assert!(parse_args(&args("--interval-ms 0 -- p")).is_ok());
    }

    #[test]
    fn args_kind() {
        assert_eq!(parse_args(&args("-- p")).unwrap().kind, Kind::Steady);
        for kind in Kind::ALL {
            let o = parse_args(&args(&format!("--kind {} -- p", kind.name()))).unwrap();
            assert_eq!(o.kind, kind);
            let o = parse_args(&args(&format!("--kind={} -- p", kind.name()))).unwrap();
            assert_eq!(o.kind, kind);
        }
        // Options of the steady kind are accepted (and ignored) by the others.
        let o = parse_args(&args("--kind timed --settle-ms 9 --samples 2 -- p")).unwrap();
        assert_eq!((o.kind, o.settle_ms, o.samples), (Kind::Timed, 9, 2));
        let o = parse_args(&args(
            "--kind timed --drop-steal 0.01 --drop-wait 0.02 --drop-involuntary=3 -- p",
        ))
        .unwrap();
        assert_eq!(
            (o.drop_steal, o.drop_wait, o.drop_involuntary),
            (Some(0.01), Some(0.02), Some(3))
        );
        assert_eq!(
            parse_args(&args("--kind Peak -- p")).unwrap_err(),
            "--kind: unknown kind \"Peak\" (accepted: steady, peak, timed, latency)"
        );
    }

    #[test]
    fn kind_hint_of_a_bad_command_line() {
        assert_eq!(kind_hint(&args("--kind peak --bogus -- p")), Kind::Peak);
        assert_eq!(kind_hint(&args("--bogus --kind=latency")), Kind::Latency);
        assert_eq!(kind_hint(&args("--kind nonsense --bogus")), Kind::Steady);
        assert_eq!(kind_hint(&args("--bogus -- p --kind peak")), Kind::Steady);
        assert_eq!(kind_hint(&args("--kind")), Kind::Steady);
    }
}
