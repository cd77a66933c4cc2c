use super::*;

#[test]
fn a_profile_is_json_with_a_default_action() {
    let p = Profile::parse("p.json", br#"{"defaultAction":"SCMP_ACT_ALLOW"}"#).unwrap();
    assert_eq!(p.record.sha256.len(), 64);
    assert!(p.json.starts_with('{'));
    for (bytes, says) in [
        (&b"not json"[..], "is not JSON"),
        (&br#"{"syscalls":[]}"#[..], "has no \"defaultAction\""),
        (&b"\xff"[..], "not UTF-8"),
    ] {
        let e = format!("{:#}", Profile::parse("p.json", bytes).unwrap_err());
        assert!(e.contains(says), "{e}");
    }
    let e = format!(
        "{:#}",
        Profile::load(Path::new("/nonexistent"), "x.json").unwrap_err()
    );
    assert!(e.contains("protocol.seccomp \"x.json\""), "{e}");
}

fn beyond(json: &str) -> Vec<String> {
    Profile::parse("seccomp.json", json.as_bytes())
        .unwrap()
        .beyond_default()
}

/// The profile tests/runtimes.rs runs glommio under: everything allowed but io_uring_setup.
const NO_IO_URING_ON_ALLOW: &str = r#"{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[{"names":["io_uring_setup"],"action":"SCMP_ACT_ERRNO"}]}"#;

/// The same refusal of io_uring in the shape of the Engine's default profile: deny by default,
/// allow ordinary syscalls, `clone` only without namespace flags, `clone3` refused, and mount
/// allowed only with CAP_SYS_ADMIN (which the kit's containers never get).
const NO_IO_URING_ON_DENY: &str = r#"{
  "defaultAction": "SCMP_ACT_ERRNO",
  "defaultErrnoRet": 1,
  "syscalls": [
    {"names": ["read", "write", "futex", "mmap", "epoll_wait", "exit_group"], "action": "SCMP_ACT_ALLOW"},
    {"names": ["io_uring_setup", "io_uring_enter"], "action": "SCMP_ACT_ERRNO"},
    {"names": ["clone"], "action": "SCMP_ACT_ALLOW",
     "args": [{"index": 0, "value": 2114060288, "valueTwo": 0, "op": "SCMP_CMP_MASKED_EQ"}],
     "excludes": {"caps": ["CAP_SYS_ADMIN"]}},
    {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38},
    {"names": ["mount", "umount2", "unshare", "setns"], "action": "SCMP_ACT_ALLOW",
     "includes": {"caps": ["CAP_SYS_ADMIN"]}}
  ]
}"#;

#[test]
fn allowing_everything_goes_beyond_the_default() {
    let found = beyond(r#"{"defaultAction":"SCMP_ACT_ALLOW"}"#);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("defaultAction SCMP_ACT_ALLOW"),
        "{found:?}"
    );
    for action in [
        "SCMP_ACT_LOG",
        "SCMP_ACT_TRACE",
        "SCMP_ACT_NOTIFY",
        "SCMP_ACT_WHATEVER",
    ] {
        let found = beyond(&format!(r#"{{"defaultAction":"{action}"}}"#));
        assert_eq!(found.len(), 1, "{action}: {found:?}");
    }
}

#[test]
fn allowing_a_syscall_the_default_keeps_goes_beyond_it() {
    let found = beyond(
        r#"{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["read","unshare"],"action":"SCMP_ACT_ALLOW"}]}"#,
    );
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("allows unshare (SCMP_ACT_ALLOW)"),
        "{found:?}"
    );

    // The older single `name`, a logging action, and an unknown one count too; a killing one does not.
    let found = beyond(
        r#"{"defaultAction":"SCMP_ACT_KILL_PROCESS","syscalls":[
            {"name":"mount","action":"SCMP_ACT_LOG"},
            {"names":["bpf"],"action":"SCMP_ACT_SOMETIMES"},
            {"names":["reboot","kexec_load"],"action":"SCMP_ACT_KILL"}]}"#,
    );
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].contains("mount (SCMP_ACT_LOG)") && found[1].contains("bpf"));

    // A capability the kit's containers have does not hide a rule; one they lack does.
    let with = |cap: &str| {
        beyond(&format!(
            r#"{{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{{"names":["setns"],"action":"SCMP_ACT_ALLOW","includes":{{"caps":["{cap}"]}}}}]}}"#
        ))
    };
    assert_eq!(with("CAP_CHOWN").len(), 1);
    assert!(with("CAP_SYS_ADMIN").is_empty());
}

#[test]
fn clone_is_judged_by_its_argument_filter() {
    for name in ["clone", "clone3"] {
        let found = beyond(&format!(
            r#"{{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{{"names":["{name}"],"action":"SCMP_ACT_ALLOW","args":[]}}]}}"#
        ));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("without an argument filter"), "{found:?}");
    }
    assert!(beyond(NO_IO_URING_ON_DENY).is_empty());
}

#[test]
fn the_kit_s_io_uring_profile_is_judged_by_its_default_action() {
    // The kit's own test profile refuses io_uring on top of allowing everything else, so it lets a
    // container mount, unshare or load modules: beyond the Engine's default, named by its default.
    let found = beyond(NO_IO_URING_ON_ALLOW);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("defaultAction SCMP_ACT_ALLOW"),
        "{found:?}"
    );
    // The same refusal written on the default profile's terms is accepted.
    assert_eq!(beyond(NO_IO_URING_ON_DENY), Vec::<String>::new());
}
