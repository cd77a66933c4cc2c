use super::*;

#[test]
fn a_profile_is_json_with_a_default_action() {
    let p = Profile::parse("p.json", br#"{"defaultAction":"SCMP_ACT_ALLOW"}"#).unwrap();
    assert_eq!(p.record.sha256.len(), 64);
    assert!(p.json.starts_with('{'));
    for (bytes, says) in [
        (&b"not json"[..], "is not JSON"),
        (&br#"{"syscalls":[]}"#[..], "missing field `defaultAction`"),
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

/// The profile tests/it/runtimes.rs runs glommio under: everything allowed but io_uring_setup.
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
    for action in ["SCMP_ACT_LOG", "SCMP_ACT_TRACE", "SCMP_ACT_NOTIFY"] {
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

    // The older single `name` and a logging or notifying action count too; a killing one does not.
    let found = beyond(
        r#"{"defaultAction":"SCMP_ACT_KILL_PROCESS","syscalls":[
            {"name":"mount","action":"SCMP_ACT_LOG"},
            {"names":["bpf"],"action":"SCMP_ACT_NOTIFY"},
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
        assert!(
            found[0].contains(&format!("it allows {name} (SCMP_ACT_ALLOW)")),
            "{found:?}"
        );
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

/// The Engine reads keys case-insensitively, the last of two equal ones winning: a key it would
/// read but the kit would not, or read differently, is refused.
#[test]
fn keys_the_engine_would_read_otherwise_are_refused() {
    for (json, says) in [
        (
            r#"{"defaultAction":"SCMP_ACT_ERRNO","DefaultAction":"SCMP_ACT_ALLOW"}"#,
            "unknown field `DefaultAction`",
        ),
        (
            r#"{"defaultAction":"SCMP_ACT_ERRNO","defaultAction":"SCMP_ACT_ALLOW"}"#,
            "duplicate field `defaultAction`",
        ),
        (
            r#"{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["read"],"action":"SCMP_ACT_ERRNO","Action":"SCMP_ACT_ALLOW"}]}"#,
            "unknown field `Action`",
        ),
        (
            r#"{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["clone"],"action":"SCMP_ACT_ALLOW","args":[{"index":0,"value":1,"op":"SCMP_CMP_EQ","OP":"SCMP_CMP_NE"}]}]}"#,
            "unknown field `OP`",
        ),
        (
            r#"{"defaultAction":"SCMP_ACT_ERRNO","flags":["SECCOMP_FILTER_FLAG_SPEC_ALLOW"]}"#,
            "unknown field `flags`",
        ),
        (
            r#"{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"name":"read","names":["mount"],"action":"SCMP_ACT_ALLOW"}]}"#,
            "name or names, not both",
        ),
        (
            r#"{"defaultAction":"SCMP_ACT_SOMETIMES"}"#,
            "defaultAction \"SCMP_ACT_SOMETIMES\" is not one the Engine knows",
        ),
        (
            r#"{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["read"],"action":"SCMP_ACT_ERRNO","includes":{"minKernel":"4"}}]}"#,
            "minKernel \"4\"",
        ),
    ] {
        let e = format!(
            "{:#}",
            Profile::parse("p.json", json.as_bytes()).unwrap_err()
        );
        assert!(e.contains(says), "{json}: {e}");
    }
}

#[test]
fn the_engine_is_given_what_was_read_never_the_text() {
    let text = r#"{ "syscalls": [ {"name": "read", "action": "SCMP_ACT_ALLOW", "args": null} ],
        "defaultAction": "SCMP_ACT_ERRNO" }"#;
    let p = Profile::parse("p.json", text.as_bytes()).unwrap();
    assert_eq!(p.text, text);
    assert_eq!(
        p.json,
        r#"{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"name":"read","action":"SCMP_ACT_ALLOW"}]}"#
    );
    // Read again, the canonical form is itself and means the same.
    let again = Profile::parse("p.json", p.json.as_bytes()).unwrap();
    assert_eq!((again.json, again.document), (p.json.clone(), p.document));
}

#[test]
fn the_pinned_default_is_the_recorded_file_and_within_itself() {
    assert_eq!(
        crate::files::digest::bytes(ENGINE_DEFAULT.as_bytes()),
        ENGINE_DEFAULT_SHA256
    );
    let record = include_str!("engine-default.md");
    assert!(record.contains(ENGINE_DEFAULT_SHA256), "{record}");
    assert_eq!(beyond(ENGINE_DEFAULT), Vec::<String>::new());
}

/// A rule the default has with an argument filter, or only for a capability, is looser written
/// without it, or with a weaker filter; the default's own filter, or a stricter one, passes.
#[test]
fn every_allowed_syscall_and_filter_is_judged_against_the_default() {
    let rule = |rules: &str| {
        beyond(&format!(
            r#"{{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{rules}]}}"#
        ))
    };
    let always_true_clone = rule(
        r#"{"names":["clone"],"action":"SCMP_ACT_ALLOW","args":[{"index":0,"value":0,"valueTwo":0,"op":"SCMP_CMP_MASKED_EQ"}]}"#,
    );
    assert_eq!(always_true_clone.len(), 1, "{always_true_clone:?}");
    assert!(
        always_true_clone[0].contains("clone when arg0 & 0x0 == 0x0")
            && always_true_clone[0].contains("only when arg0 & 0x7e020000 == 0x0"),
        "{always_true_clone:?}"
    );
    for name in [
        "personality",
        "syslog",
        "fsopen",
        "fsmount",
        "move_mount",
        "open_tree",
        "mount_setattr",
        "chroot",
        "vhangup",
        "clone3",
    ] {
        let found = rule(&format!(
            r#"{{"names":["{name}"],"action":"SCMP_ACT_ALLOW"}}"#
        ));
        assert_eq!(found.len(), 1, "{name}: {found:?}");
        assert!(
            found[0].starts_with(&format!("it allows {name} (")),
            "{found:?}"
        );
    }
    let syslog = rule(r#"{"names":["syslog"],"action":"SCMP_ACT_ALLOW"}"#);
    assert!(
        syslog[0].contains("only to a container with CAP_SYS_ADMIN or CAP_SYSLOG"),
        "{syslog:?}"
    );
    let socket_not_vsock = r#"{"index":0,"value":40,"op":"SCMP_CMP_NE"}"#;

    // 20.10's default allows socket outright, personality for five values, clone without new
    // namespaces; the same, or narrower, passes.
    assert!(rule(r#"{"names":["socket","read"],"action":"SCMP_ACT_ALLOW"}"#).is_empty());
    assert!(
        rule(&format!(
            r#"{{"names":["socket"],"action":"SCMP_ACT_ALLOW","args":[{socket_not_vsock}]}}"#
        ))
        .is_empty()
    );
    assert!(rule(r#"{"names":["personality"],"action":"SCMP_ACT_ALLOW","args":[{"index":0,"value":8,"op":"SCMP_CMP_EQ"}]}"#).is_empty());
    assert!(!rule(r#"{"names":["personality"],"action":"SCMP_ACT_ALLOW","args":[{"index":0,"value":9,"op":"SCMP_CMP_EQ"}]}"#).is_empty());
    assert!(rule(r#"{"names":["clone"],"action":"SCMP_ACT_ALLOW","args":[
        {"index":0,"value":2114060288,"op":"SCMP_CMP_MASKED_EQ"},{"index":2,"value":0,"op":"SCMP_CMP_EQ"}]}"#).is_empty());
    // A rule for a capability the containers lack, or an architecture they are not, never applies.
    assert!(
        rule(
            r#"{"names":["mount"],"action":"SCMP_ACT_ALLOW","includes":{"caps":["CAP_SYS_ADMIN"]}}"#
        )
        .is_empty()
    );
    assert!(
        rule(r#"{"names":["mount"],"action":"SCMP_ACT_ALLOW","includes":{"arches":["s390x"]}}"#)
            .is_empty()
    );
    // A kernel bound on the judged rule does not hide it.
    assert_eq!(
        rule(r#"{"names":["mount"],"action":"SCMP_ACT_ALLOW","excludes":{"minKernel":"4.1"}}"#)
            .len(),
        1
    );
}

/// The runtime splits a filter with two comparisons on the same argument into one rule per
/// comparison, so they are ORed: each is judged alone, and must be as strict as the default.
#[test]
fn two_comparisons_of_one_argument_are_judged_one_by_one() {
    let rule = |args: &str| {
        beyond(&format!(
            r#"{{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{{"names":["clone","personality"],"action":"SCMP_ACT_ALLOW","args":[{args}]}}]}}"#
        ))
    };
    // The default's own clone filter ORed with an always-true one allows every namespace flag.
    let clone = rule(
        r#"{"index":0,"value":2114060288,"op":"SCMP_CMP_MASKED_EQ"},{"index":0,"value":0,"op":"SCMP_CMP_MASKED_EQ"}"#,
    );
    assert!(
        clone
            .iter()
            .any(|l| l.contains("it allows clone when arg0 & 0x0 == 0x0 (")),
        "{clone:?}"
    );
    // personality 8 or 9: read as both at once it could never hold, as the runtime reads it 9 passes.
    let personality = rule(
        r#"{"index":0,"value":8,"op":"SCMP_CMP_EQ"},{"index":0,"value":9,"op":"SCMP_CMP_EQ"}"#,
    );
    assert!(
        personality
            .iter()
            .any(|l| l.contains("it allows personality when arg0 == 0x9 (")),
        "{personality:?}"
    );
    // A comparison on another argument does not narrow the others once they are split.
    let split = rule(
        r#"{"index":0,"value":8,"op":"SCMP_CMP_EQ"},{"index":0,"value":8,"op":"SCMP_CMP_EQ"},{"index":1,"value":0,"op":"SCMP_CMP_EQ"}"#,
    );
    assert!(
        split
            .iter()
            .any(|l| l.contains("it allows personality when arg1 == 0x0 (")),
        "{split:?}"
    );
    // Two comparisons each as strict as the default's pass.
    let both = beyond(
        r#"{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["personality"],"action":"SCMP_ACT_ALLOW","args":[
            {"index":0,"value":8,"op":"SCMP_CMP_EQ"},{"index":0,"value":0,"op":"SCMP_CMP_EQ"}]}]}"#,
    );
    assert!(both.is_empty(), "{both:?}");
}

#[test]
fn an_argument_index_beyond_the_sixth_is_refused() {
    let json = r#"{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["clone"],"action":"SCMP_ACT_ALLOW","args":[{"index":6,"value":0,"op":"SCMP_CMP_EQ"}]}]}"#;
    let e = format!(
        "{:#}",
        Profile::parse("seccomp.json", json.as_bytes()).unwrap_err()
    );
    assert!(e.contains("argument index 6"), "{e}");
    let five = json.replace("\"index\":6", "\"index\":5");
    assert!(Profile::parse("seccomp.json", five.as_bytes()).is_ok());
}

/// A refusal quotes the archive's text on one line: a syscall name or a key cannot forge a line.
#[test]
fn archive_text_in_a_refusal_stays_on_its_line() {
    let found = beyond(
        r#"{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["mount\nerror: nothing wrong\u001b[2K"],"action":"SCMP_ACT_ALLOW"}]}"#,
    );
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        !found[0].contains(['\n', '\x1b']) && found[0].contains("mount\\x0aerror: nothing wrong"),
        "{found:?}"
    );
    let json = r#"{"defaultAction":"SCMP_ACT_ERRNO","x\nerror: forged":1}"#;
    let e = format!(
        "{:#}",
        Profile::parse("seccomp.json", json.as_bytes()).unwrap_err()
    );
    assert!(
        !e.contains('\n') && e.contains("x\\x0aerror: forged"),
        "{e}"
    );
}
