//! What the steady programs of this image share: their arguments (`--name value` or
//! `--name=value`) and the two sides of the probe protocol's handshake on stdin and stdout
//! (see docker/README.md).

use std::io::{self, BufRead, Write};

/// The `--name value` pairs of the command line, checked against the names a program takes.
pub struct Flags {
    pairs: Vec<(String, String)>,
}

impl Flags {
    /// Reads the command line; an unknown name or a name without a value is an error.
    pub fn parse(names: &[&str]) -> Result<Self, String> {
        let mut pairs = Vec::new();
        let mut args = std::env::args().skip(1);
        while let Some(arg) = args.next() {
            let (name, inline) = match arg.split_once('=') {
                Some((n, v)) => (n.to_owned(), Some(v.to_owned())),
                None => (arg.clone(), None),
            };
            if !names.contains(&name.as_str()) {
                return Err(format!("unknown argument {arg:?}"));
            }
            let value = inline
                .or_else(|| args.next())
                .ok_or_else(|| format!("{name} needs a value"))?;
            pairs.push((name, value));
        }
        Ok(Self { pairs })
    }

    /// The last value given for `name`, if any.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// A required non-negative integer.
    pub fn count(&self, name: &str) -> Result<u64, String> {
        let value = self
            .get(name)
            .ok_or_else(|| format!("{name} is required"))?;
        value
            .parse()
            .map_err(|_| format!("{name}: {value:?} is not a non-negative integer"))
    }
}

/// Prints `program: error` and the usage on stderr; returns exit status 2.
pub fn usage_error(program: &str, usage: &str, error: &str) -> std::process::ExitCode {
    eprintln!("{program}: {error}\n{usage}");
    std::process::ExitCode::from(2)
}

/// Prints one protocol line on stdout and flushes it.
pub fn say(line: &str) -> io::Result<()> {
    let mut out = io::stdout().lock();
    writeln!(out, "{line}")?;
    out.flush()
}

/// Waits for one line on stdin; end of input is an error.
pub fn wait_line() -> io::Result<()> {
    let mut line = String::new();
    if io::stdin().lock().read_line(&mut line)? == 0 {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "stdin closed"));
    }
    Ok(())
}

/// The process's OS threads (`Threads:` of `/proc/self/status`), as the article's program counts
/// them; 0 when it cannot be read.
pub fn os_threads() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("Threads:"))
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(0)
}
