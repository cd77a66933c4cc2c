//! A study's seccomp profile (`protocol.seccomp`): the JSON file every probe container of the run is
//! started with, instead of the Engine's default profile. It is read once when the run starts,
//! copied into the run folder (`seccomp.json`, so that a resumed run and an archive use the very
//! bytes the run started with) and named with its sha256 in the environment record and the report.
//! Without one, containers get the Engine's default profile; seccomp is never turned off.
//!
//! A profile that comes with someone else's archive is judged before a rerun uses it
//! ([`Profile::beyond_default`]): the kit cannot ship the Engine's default profile, so the rule is
//! built from what Docker documents about it — it denies every syscall it does not name, and keeps a
//! documented list of syscalls from containers without extra capabilities.

use std::path::Path;

use anyhow::{Context, Result, ensure};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Actions that stop a syscall. The Engine's default profile denies by default, so a profile whose
/// `defaultAction` is not one of these allows every syscall it does not name.
pub const DENYING: [&str; 5] = [
    "SCMP_ACT_ERRNO",
    "SCMP_ACT_KILL",
    "SCMP_ACT_KILL_PROCESS",
    "SCMP_ACT_KILL_THREAD",
    "SCMP_ACT_TRAP",
];

/// Syscalls the Engine's default profile keeps from a container without extra capabilities: the
/// significant ones Docker's seccomp documentation lists as blocked by the default profile (those
/// it allows again on recent kernels, or with arguments it filters, left out). `clone` and
/// `clone3` are judged apart: the default allows `clone` only with an argument filter (no new
/// namespaces).
pub const KEPT_FROM_CONTAINERS: [&str; 43] = [
    "_sysctl",
    "acct",
    "add_key",
    "bpf",
    "clock_adjtime",
    "clock_settime",
    "create_module",
    "delete_module",
    "finit_module",
    "get_kernel_syms",
    "init_module",
    "ioperm",
    "iopl",
    "kcmp",
    "kexec_file_load",
    "kexec_load",
    "keyctl",
    "lookup_dcookie",
    "mount",
    "move_pages",
    "name_to_handle_at",
    "nfsservctl",
    "open_by_handle_at",
    "perf_event_open",
    "pivot_root",
    "query_module",
    "quotactl",
    "reboot",
    "request_key",
    "setns",
    "settimeofday",
    "stime",
    "swapoff",
    "swapon",
    "sysfs",
    "umount",
    "umount2",
    "unshare",
    "uselib",
    "userfaultfd",
    "ustat",
    "vm86",
    "vm86old",
];

/// The capabilities the Engine gives a container by default; the kit's containers get no more. A
/// profile rule that applies only with another capability (`includes.caps`) never applies to them.
const DEFAULT_CAPS: [&str; 14] = [
    "CAP_AUDIT_WRITE",
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_FOWNER",
    "CAP_FSETID",
    "CAP_KILL",
    "CAP_MKNOD",
    "CAP_NET_BIND_SERVICE",
    "CAP_NET_RAW",
    "CAP_SETFCAP",
    "CAP_SETGID",
    "CAP_SETPCAP",
    "CAP_SETUID",
    "CAP_SYS_CHROOT",
];

/// The profile as the environment records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seccomp {
    /// The file as the study names it.
    pub file: String,
    /// sha256 of its bytes, hex.
    pub sha256: String,
}

/// A profile read and checked: its record and its JSON text, as given to the Engine.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    pub record: Seccomp,
    pub json: String,
}

impl Profile {
    /// Reads `file` (absolute, or relative to the repository) and checks that it is a seccomp
    /// profile: a JSON object with a `defaultAction`.
    pub fn load(repo: &Path, file: &str) -> Result<Profile> {
        let path = repo.join(file);
        let what = || format!("protocol.seccomp {file:?} ({})", path.display());
        let bytes = std::fs::read(&path)
            .with_context(|| format!("reading {}: name a seccomp profile (JSON) file", what()))?;
        Self::parse(file, &bytes).with_context(what)
    }

    /// Checks profile bytes named `file`.
    pub fn parse(file: &str, bytes: &[u8]) -> Result<Profile> {
        let json = String::from_utf8(bytes.to_vec()).context("the profile is not UTF-8 text")?;
        let value: serde_json::Value = serde_json::from_str(&json)
            .context("the profile is not JSON (the Engine takes the JSON form of a profile)")?;
        ensure!(
            value.get("defaultAction").is_some_and(|a| a.is_string()),
            "the profile has no \"defaultAction\": a seccomp profile is a JSON object with \
             \"defaultAction\" and, usually, \"syscalls\" (see the Engine's default profile)"
        );
        Ok(Profile {
            record: Seccomp {
                file: file.to_string(),
                sha256: crate::images::digest::bytes(bytes),
            },
            json,
        })
    }
}

impl Profile {
    /// What the profile lets a container do that the Engine's default profile does not, one line
    /// each; empty when nothing is found. A `defaultAction` that does not deny, a rule with an
    /// allowing (or unknown) action naming a syscall of [`KEPT_FROM_CONTAINERS`], and `clone` or
    /// `clone3` allowed without an argument filter each count.
    pub fn beyond_default(&self) -> Vec<String> {
        // `parse` checked that the text is JSON with a string `defaultAction`.
        let value: Value = serde_json::from_str(&self.json).unwrap_or_default();
        let mut found = Vec::new();
        let default = value["defaultAction"].as_str().unwrap_or_default();
        if !DENYING.contains(&default) {
            found.push(format!(
                "its defaultAction {default} allows every syscall it does not name (the Engine's \
                 default profile denies them)"
            ));
        }
        let rules = value["syscalls"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        for rule in rules.iter().filter(|r| allows(r) && applies(r)) {
            let action = rule["action"].as_str().unwrap_or("(no action)");
            for name in names(rule) {
                let unfiltered = rule["args"].as_array().is_none_or(Vec::is_empty);
                if KEPT_FROM_CONTAINERS.contains(&name) {
                    found.push(format!(
                        "it allows {name} ({action}), which the Engine's default profile keeps \
                         from containers"
                    ));
                } else if matches!(name, "clone" | "clone3") && unfiltered {
                    found.push(format!(
                        "it allows {name} ({action}) without an argument filter, so new namespaces \
                         (the Engine's default profile allows clone only without them)"
                    ));
                }
            }
        }
        found
    }
}

/// True when a rule's action lets the syscall through, or is not one the rule knows to deny.
fn allows(rule: &Value) -> bool {
    !rule["action"]
        .as_str()
        .is_some_and(|a| DENYING.contains(&a))
}

/// True when a rule applies to a container with the Engine's default capabilities: every capability
/// its `includes.caps` asks for is among them.
fn applies(rule: &Value) -> bool {
    let caps = rule["includes"]["caps"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    caps.iter()
        .all(|c| c.as_str().is_some_and(|c| DEFAULT_CAPS.contains(&c)))
}

/// The syscalls a rule names: `names`, or the older single `name`.
fn names(rule: &Value) -> Vec<&str> {
    let many = rule["names"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    many.iter()
        .filter_map(Value::as_str)
        .chain(rule["name"].as_str())
        .collect()
}

/// How the report names the profile of a run.
pub fn describe(record: Option<&Seccomp>) -> String {
    match record {
        None => "the Engine's default profile".into(),
        Some(s) => format!("{} (sha256 {})", s.file, s.sha256),
    }
}

#[cfg(test)]
mod tests;
