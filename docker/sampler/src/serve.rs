//! `sampler --serve`: the sampler as the small supervisor of a container kept up for the processes
//! of one cell (a study's `isolation: process`). Each request is one sample: a fresh process (the
//! sampler command line it names, which then starts the program as it always does), in its own
//! empty working folder, with `TMPDIR` pointing there and nothing else added to the container's
//! environment. When it has ended, everything it left is removed: as the container's first process
//! (PID 1), the supervisor kills every other process of the container and reaps them, then
//! deletes the folder.
//!
//! ## Protocol (stdin and stdout)
//!
//! ```text
//! request:  sample <n>\n  then n arguments, each  <byte length>\n<bytes>   (argv[0] first)
//! reply:    sampled <status> <stdout length> <stderr length>\n<stdout bytes><stderr bytes>
//! ```
//!
//! `status` is the exit code of the sampler it started, or 128 + the signal that killed it (as a
//! shell says it); 127 when it could not be started (its stderr then says why). End of stdin ends
//! the supervisor with exit 0; a malformed request ends it with exit 2 and a line on stderr.

use std::io::{self, BufRead, Write};
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Most arguments a request may carry, and bytes in one: a request is the driver's, but bounded.
const MAX_ARGS: usize = 4096;
const MAX_ARG_BYTES: usize = 1 << 20;

/// Serves requests from stdin until it ends; returns the supervisor's exit code.
pub fn run() -> i32 {
    let mut input = io::stdin().lock();
    let mut output = io::stdout().lock();
    for n in 0u64.. {
        let args = match read_request(&mut input) {
            Ok(Some(args)) => args,
            Ok(None) => return 0,
            Err(e) => {
                eprintln!("sampler --serve: {e}");
                return 2;
            }
        };
        let folder = PathBuf::from(format!("/tmp/sample-{}-{n}", std::process::id()));
        let (status, stdout, stderr) = sample(&args, &folder);
        let sent = reply(&mut output, status, &stdout, &stderr);
        if let Err(e) = sent.and_then(|()| clear(&folder)) {
            eprintln!("sampler --serve: {e}");
            return 1;
        }
    }
    0
}

/// Reads one request: its arguments, or `None` at the end of input.
pub fn read_request(input: &mut impl BufRead) -> io::Result<Option<Vec<String>>> {
    let bad = |what: String| io::Error::new(io::ErrorKind::InvalidData, what);
    let mut line = String::new();
    if input.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let n: usize = line
        .strip_prefix("sample ")
        .and_then(|n| n.trim_end_matches('\n').parse().ok())
        .filter(|&n| (1..=MAX_ARGS).contains(&n))
        .ok_or_else(|| bad(format!("not a request: {line:?}")))?;
    let mut args = Vec::with_capacity(n);
    for _ in 0..n {
        line.clear();
        input.read_line(&mut line)?;
        let len: usize = line
            .trim_end_matches('\n')
            .parse()
            .ok()
            .filter(|&len| len <= MAX_ARG_BYTES)
            .ok_or_else(|| bad(format!("not an argument's length: {line:?}")))?;
        let mut bytes = vec![0; len];
        input.read_exact(&mut bytes)?;
        args.push(String::from_utf8(bytes).map_err(|e| bad(e.to_string()))?);
    }
    Ok(Some(args))
}

/// Writes one reply.
fn reply(out: &mut impl Write, status: i32, stdout: &[u8], stderr: &[u8]) -> io::Result<()> {
    writeln!(out, "sampled {status} {} {}", stdout.len(), stderr.len())?;
    out.write_all(stdout)?;
    out.write_all(stderr)?;
    out.flush()
}

/// Runs one sample's process in a fresh `folder`: its status, stdout and stderr.
fn sample(args: &[String], folder: &Path) -> (i32, Vec<u8>, Vec<u8>) {
    let started = std::fs::DirBuilder::new()
        .mode(0o700)
        .create(folder)
        .and_then(|()| {
            Command::new(&args[0])
                .args(&args[1..])
                .current_dir(folder)
                .env("TMPDIR", folder)
                .stdin(Stdio::null())
                .output()
        });
    match started {
        Ok(out) => {
            let status = match (out.status.code(), out.status.signal()) {
                (Some(code), _) => code,
                (None, Some(signal)) => 128 + signal,
                (None, None) => 255,
            };
            (status, out.stdout, out.stderr)
        }
        Err(e) => {
            let why = format!(
                "sampler --serve: starting {:?} in {}: {e}\n",
                args[0],
                folder.display()
            );
            (127, Vec::new(), why.into_bytes())
        }
    }
}

/// Ends whatever the sample left running and deletes its folder.
fn clear(folder: &Path) -> io::Result<()> {
    if std::process::id() == 1 {
        // PID 1 of the container: -1 is every other process in it (never this one).
        // SAFETY: kill only sends a signal.
        unsafe { libc::kill(-1, libc::SIGKILL) };
    }
    // Reap every child that has ended (the killed ones, and orphans this PID 1 inherited).
    loop {
        let mut status = 0;
        // SAFETY: waitpid writes only the status we pass.
        let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
        if pid <= 0 {
            break;
        }
    }
    match std::fs::remove_dir_all(folder) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(io::Error::new(
            e.kind(),
            format!("removing {}: {e}", folder.display()),
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes one request for `args`, as the driver does.
    fn write_request(out: &mut impl Write, args: &[String]) -> io::Result<()> {
        writeln!(out, "sample {}", args.len())?;
        for a in args {
            writeln!(out, "{}", a.len())?;
            out.write_all(a.as_bytes())?;
        }
        out.flush()
    }

    #[test]
    fn a_request_reads_back_as_written() {
        let args: Vec<String> = [
            "sampler",
            "--kind",
            "timed",
            "--",
            "sh",
            "-c",
            "echo 'a\nb' ünï",
            "",
        ]
        .map(String::from)
        .to_vec();
        let mut bytes = Vec::new();
        write_request(&mut bytes, &args).unwrap();
        write_request(&mut bytes, &args[..1]).unwrap();
        let mut input = io::Cursor::new(bytes);
        assert_eq!(read_request(&mut input).unwrap(), Some(args.clone()));
        assert_eq!(read_request(&mut input).unwrap(), Some(args[..1].to_vec()));
        assert_eq!(read_request(&mut input).unwrap(), None);
    }

    #[test]
    fn a_malformed_request_is_refused() {
        for bad in [
            "hello\n",
            "sample 0\n",
            "sample 1\nx\n",
            "sample 1\n5\nab",
            "sample 99999\n",
        ] {
            let mut input = io::Cursor::new(bad.as_bytes().to_vec());
            assert!(read_request(&mut input).is_err(), "{bad:?}");
        }
    }
}
