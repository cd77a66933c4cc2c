//! `sampler --serve`: the sampler as the small supervisor of a container kept up for the processes
//! of one cell (a study's `isolation: process`). Each request is one sample: a fresh process (the
//! sampler command line it names, which then starts the program as it always does), in its own
//! empty working folder, with `TMPDIR` pointing there and nothing else added to the container's
//! environment. Once that process has exited, everything it left is removed before the reply: the
//! supervisor (a child subreaper, so that every orphan of the sample becomes its child) kills every
//! process it finds descended from itself and reaps them, until none is left, then deletes the
//! folder.
//!
//! ## Protocol (stdin and stdout)
//!
//! ```text
//! request:  sample <n>\n  then n arguments, each  <byte length>\n<bytes>   (argv[0] first)
//! reply:    sampled <status> <stdout length> <stderr length> <oom kills>\n<stdout bytes><stderr bytes>
//! ```
//!
//! `status` is the exit code of the sampler it started, or 128 + the signal that killed it (as a
//! shell says it); 127 when it could not be started (its stderr then says why). Of its stderr the
//! last [`STDERR_TAIL`] bytes are kept. `oom kills` is how many processes the kernel's OOM killer
//! ended in the container's memory cgroup during the sample (`oom_kill` of `memory.events` or
//! `memory.oom_control`), `-` when the cgroup does not say. A folder that cannot be removed is said
//! at the end of the stderr. End of stdin ends the supervisor with exit 0; a malformed request ends
//! it with exit 2; a reply it cannot write, or a process a sample left that it cannot end (it
//! then answers status 255 and says so), with exit 1; each with a line on its own stderr.

use std::io::{self, BufRead, Read, Write};
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;

/// Most arguments a request may carry, and bytes in one: a request is the driver's, but bounded.
const MAX_ARGS: usize = 4096;
const MAX_ARG_BYTES: usize = 1 << 20;

/// Serves requests from stdin until it ends; returns the supervisor's exit code.
pub fn run() -> i32 {
    // SAFETY: prctl with these arguments only sets a flag of this process.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
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
        let oom_before = oom_kills();
        let Some((status, stdout, mut stderr)) = sample(&args, &folder) else {
            // Something it left could not be ended: this container is not fit for another.
            let why = "sampler --serve: a process the sample left could not be ended";
            let _ = reply(&mut output, 255, (&[], format!("{why}\n").as_bytes()), "-");
            eprintln!("{why}");
            return 1;
        };
        if let Err(e) = remove(&folder) {
            stderr.extend_from_slice(format!("\nsampler --serve: {e}\n").as_bytes());
        }
        let oom = match (oom_before, oom_kills()) {
            (Some(before), Some(after)) => after.saturating_sub(before).to_string(),
            _ => "-".to_string(),
        };
        if let Err(e) = reply(&mut output, status, (&stdout, &stderr), &oom) {
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
fn reply(out: &mut impl Write, status: i32, (o, e): (&[u8], &[u8]), oom: &str) -> io::Result<()> {
    writeln!(out, "sampled {status} {} {} {oom}", o.len(), e.len())?;
    out.write_all(o)?;
    out.write_all(e)?;
    out.flush()
}

/// Bytes of a sample's stderr kept, its last ones (the driver keeps 4 KiB of them).
pub const STDERR_TAIL: usize = 64 * 1024;

/// Runs one sample's process in a fresh `folder`, and once it has exited ends everything it left:
/// its status, stdout and the tail of its stderr; `None` when something it left could not be
/// ended (its output may then never end).
fn sample(args: &[String], folder: &Path) -> Option<(i32, Vec<u8>, Vec<u8>)> {
    let started = std::fs::DirBuilder::new()
        .mode(0o700)
        .create(folder)
        .and_then(|()| {
            Command::new(&args[0])
                .args(&args[1..])
                .current_dir(folder)
                .env("TMPDIR", folder)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
        });
    let mut child = match started {
        Ok(child) => child,
        Err(e) => {
            let why = format!(
                "sampler --serve: starting {:?} in {}: {e}\n",
                args[0],
                folder.display()
            );
            return Some((127, Vec::new(), why.into_bytes()));
        }
    };
    let stdout = read_all(child.stdout.take(), usize::MAX);
    let stderr = read_all(child.stderr.take(), STDERR_TAIL);
    let status = match child.wait() {
        Ok(s) => match (s.code(), s.signal()) {
            (Some(code), _) => code,
            (None, Some(signal)) => 128 + signal,
            (None, None) => 255,
        },
        Err(_) => 255,
    };
    // What the sample left may hold its pipes open: it goes before they are read to their end.
    if !end_descendants() {
        return None;
    }
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    Some((status, stdout, stderr))
}

/// Reads `pipe` to its end on a thread of its own, keeping its last `keep` bytes.
fn read_all(pipe: Option<impl Read + Send + 'static>, keep: usize) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut kept = Vec::new();
        let Some(mut pipe) = pipe else { return kept };
        let mut buf = [0u8; 64 * 1024];
        while let Ok(n) = pipe.read(&mut buf) {
            if n == 0 {
                break;
            }
            kept.extend_from_slice(&buf[..n]);
            if kept.len() > 2 * keep.min(usize::MAX / 2) {
                kept.drain(..kept.len() - keep);
            }
        }
        if kept.len() > keep {
            kept.drain(..kept.len() - keep);
        }
        kept
    })
}

/// Kills every process descended from this one and reaps them, until none is left: with this
/// process a child subreaper, whatever a sample started (daemons, their children) is found as its
/// child once its own parent has gone. False when some are still there after a thousand rounds (a
/// process that cannot die, or forks faster than it is killed).
fn end_descendants() -> bool {
    let me = std::process::id();
    for _ in 0..1000 {
        let children = children_of(me);
        if children.is_empty() {
            return true;
        }
        for pid in children {
            // SAFETY: kill only sends a signal.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
        // Reap them (and any child that ended meanwhile); their children are ours next.
        loop {
            let mut status = 0;
            // SAFETY: waitpid writes only the status we pass.
            let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
            if pid <= 0 {
                break;
            }
        }
        thread::sleep(std::time::Duration::from_millis(1));
    }
    children_of(me).is_empty()
}

/// The processes whose parent is `pid`, from `/proc/<pid>/stat` (its fourth field).
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&p| {
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
            // The name in parentheses may hold spaces: the fields follow its last `)`.
            let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
            after
                .split_whitespace()
                .nth(1)
                .and_then(|pp| pp.parse().ok())
                == Some(pid)
        })
        .collect()
}

/// Processes the kernel's OOM killer ended in this container's memory cgroup so far (cgroup v2
/// `memory.events`, v1 `memory.oom_control`), `None` when neither says.
fn oom_kills() -> Option<u64> {
    [
        "/sys/fs/cgroup/memory.events",
        "/sys/fs/cgroup/memory/memory.oom_control",
    ]
    .iter()
    .filter_map(|f| std::fs::read_to_string(f).ok())
    .find_map(|text| {
        text.lines()
            .find_map(|l| l.strip_prefix("oom_kill "))
            .and_then(|n| n.trim().parse().ok())
    })
}

/// Deletes a sample's folder; a folder its process made unwritable is made writable first.
fn remove(folder: &Path) -> io::Result<()> {
    let gone = |r: io::Result<()>| match r {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        r => r,
    };
    if gone(std::fs::remove_dir_all(folder)).is_ok() {
        return Ok(());
    }
    writable(folder);
    gone(std::fs::remove_dir_all(folder))
        .map_err(|e| io::Error::new(e.kind(), format!("removing {}: {e}", folder.display())))
}

/// Makes `dir` and every folder under it writable by its owner (not following links).
fn writable(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            writable(&entry.path());
        }
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
