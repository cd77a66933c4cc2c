//! Signed archives, with OpenSSH's own tool on the other side: a signature `parkbench sign` makes is
//! verified by `ssh-keygen -Y verify`, one `ssh-keygen -Y sign` makes is verified by `parkbench check`
//! and `verify`, for each kind of key; a changed archive, a missing signature and a key the reviewer
//! does not list fail. No Engine needed: the archive is a committed reference run.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::*;

fn ssh_keygen(args: &[&str], dir: &Path) -> Output {
    Command::new("ssh-keygen")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("running ssh-keygen (OpenSSH's client tools must be installed)")
}

/// A key of `kind` made by ssh-keygen, without a passphrase unless one is given; returns its path.
fn keygen(dir: &Path, name: &str, kind: &str, passphrase: &str) -> PathBuf {
    let out = ssh_keygen(
        &["-q", "-t", kind, "-N", passphrase, "-C", name, "-f", name],
        dir,
    );
    assert!(out.status.success(), "{}", describe(&out));
    dir.join(name)
}

fn public(key: &Path) -> String {
    std::fs::read_to_string(key.with_extension("pub"))
        .unwrap()
        .trim()
        .to_string()
}

/// An archive to sign: a committed reference run, copied.
fn archive(dir: &Path, name: &str) -> PathBuf {
    let to = dir.join(name);
    std::fs::copy(repo().join("results/wait-1m/reference/run.tar.gz"), &to).unwrap();
    to
}

/// `ssh-keygen -Y verify` of `archive` against its `.sig`, as `principal`.
fn openssh_verifies(dir: &Path, allowed: &Path, principal: &str, archive: &Path) -> Output {
    let sig = format!("{}.sig", archive.display());
    Command::new("ssh-keygen")
        .args([
            "-Y",
            "verify",
            "-n",
            "parkbench",
            "-I",
            principal,
            "-s",
            &sig,
            "-f",
        ])
        .arg(allowed)
        .current_dir(dir)
        .stdin(std::fs::File::open(archive).unwrap())
        .output()
        .unwrap()
}

fn checked(command: &str, archive: &Path, allowed: &Path) -> Output {
    parkbench()
        .args([command, archive.to_str().unwrap(), "--allowed-signers"])
        .arg(allowed)
        .output()
        .unwrap()
}

#[test]
fn signatures_cross_between_parkbench_and_ssh_keygen_for_each_kind_of_key() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let allowed = dir.join("allowed_signers");
    let kinds = ["ed25519", "ecdsa", "rsa"];
    let mut lines = String::new();
    for kind in kinds {
        let key = keygen(dir, &format!("id_{kind}"), kind, "");
        lines += &format!(
            "{kind}@example.com namespaces=\"parkbench\" {}\n",
            public(&key)
        );
    }
    std::fs::write(&allowed, lines).unwrap();

    for kind in kinds {
        let key = dir.join(format!("id_{kind}"));
        let principal = format!("{kind}@example.com");

        // Made by parkbench, verified by ssh-keygen (and by parkbench).
        let ours = archive(dir, &format!("ours-{kind}.tar.gz"));
        let out = parkbench()
            .arg("sign")
            .arg(&ours)
            .arg("--key")
            .arg(&key)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", describe(&out));
        assert!(
            text(&out.stderr).contains(&key.display().to_string()),
            "{}",
            describe(&out)
        );
        // Published beside the archive, the signature is readable by all.
        let sig = std::path::PathBuf::from(format!("{}.sig", ours.display()));
        let mode = std::os::unix::fs::PermissionsExt::mode(&sig.metadata().unwrap().permissions());
        assert_eq!(mode & 0o777, 0o644, "{}", sig.display());
        let out = openssh_verifies(dir, &allowed, &principal, &ours);
        assert!(
            out.status.success(),
            "ssh-keygen on parkbench's {kind}: {}",
            describe(&out)
        );
        assert!(
            text(&out.stdout).contains("Good \"parkbench\" signature"),
            "{}",
            describe(&out)
        );

        // Made by ssh-keygen, verified by parkbench's check and verify.
        let theirs = archive(dir, &format!("theirs-{kind}.tar.gz"));
        let out = ssh_keygen(
            &[
                "-Y",
                "sign",
                "-n",
                "parkbench",
                "-f",
                key.to_str().unwrap(),
                theirs.to_str().unwrap(),
            ],
            dir,
        );
        assert!(out.status.success(), "{}", describe(&out));
        for command in ["check", "verify"] {
            let out = checked(command, &theirs, &allowed);
            assert!(
                out.status.success(),
                "{command} of ssh-keygen's {kind}: {}",
                describe(&out)
            );
            let said = text(&out.stderr);
            assert!(
                said.contains("signature: good") && said.contains(&principal),
                "{}",
                describe(&out)
            );
        }
    }
}

#[test]
fn a_changed_archive_a_missing_signature_and_an_unknown_key_fail() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let alice = keygen(dir, "alice", "ed25519", "");
    let mallory = keygen(dir, "mallory", "ed25519", "");
    let allowed = dir.join("allowed_signers");
    std::fs::write(&allowed, format!("alice@example.com {}\n", public(&alice))).unwrap();

    // A byte changed after signing: both tools refuse it.
    let changed = archive(dir, "changed.tar.gz");
    let out = parkbench()
        .arg("sign")
        .arg(&changed)
        .arg("--key")
        .arg(&alice)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let mut bytes = std::fs::read(&changed).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 1;
    std::fs::write(&changed, bytes).unwrap();
    let out = openssh_verifies(dir, &allowed, "alice@example.com", &changed);
    assert!(
        !out.status.success(),
        "ssh-keygen took it: {}",
        describe(&out)
    );
    for command in ["check", "verify"] {
        let out = checked(command, &changed, &allowed);
        assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
        assert!(
            text(&out.stderr).contains("BAD SIGNATURE"),
            "{}",
            describe(&out)
        );
    }

    // No signature beside it.
    let unsigned = archive(dir, "unsigned.tar.gz");
    let out = checked("check", &unsigned, &allowed);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(
        text(&out.stderr).contains("unsigned.tar.gz.sig: missing"),
        "{}",
        describe(&out)
    );
    // Without --allowed-signers, no signature is asked for.
    let out = parkbench().arg("check").arg(&unsigned).output().unwrap();
    assert!(out.status.success(), "{}", describe(&out));

    // Signed by a key the reviewer does not list.
    let forged = archive(dir, "forged.tar.gz");
    let out = parkbench()
        .arg("sign")
        .arg(&forged)
        .arg("--key")
        .arg(&mallory)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    let out = checked("check", &forged, &allowed);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(
        text(&out.stderr).contains("does not allow"),
        "{}",
        describe(&out)
    );
    let out = openssh_verifies(dir, &allowed, "alice@example.com", &forged);
    assert!(
        !out.status.success(),
        "ssh-keygen took it: {}",
        describe(&out)
    );

    // A signature named apart from the archive.
    let elsewhere = dir.join("elsewhere.sig");
    std::fs::rename(dir.join("forged.tar.gz.sig"), &elsewhere).unwrap();
    let out = parkbench()
        .args(["check", forged.to_str().unwrap(), "--allowed-signers"])
        .arg(&allowed)
        .arg("--signature")
        .arg(&elsewhere)
        .output()
        .unwrap();
    assert!(
        text(&out.stderr).contains("elsewhere.sig: a valid signature"),
        "{}",
        describe(&out)
    );
}

#[test]
fn keys_parkbench_cannot_use_are_refused_with_the_ssh_keygen_command_instead() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let locked = keygen(dir, "locked", "ed25519", "a passphrase");
    let target = archive(dir, "run.tar.gz");
    let out = parkbench()
        .arg("sign")
        .arg(&target)
        .arg("--key")
        .arg(&locked)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let said = text(&out.stderr);
    assert!(
        said.contains("passphrase") && said.contains("ssh-keygen -Y sign -n parkbench"),
        "{said}"
    );
    assert!(!dir.join("run.tar.gz.sig").exists());

    // `reproduce --sign` reads the key before it runs anything.
    let out = Invocation::new("reproduce")
        .arg("--sign")
        .arg(&locked)
        .env("DOCKER_HOST", "unix:///nonexistent.sock")
        .output();
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(
        text(&out.stderr).contains("passphrase"),
        "{}",
        describe(&out)
    );

    // With no key named, the usual ones are tried and the one used is named.
    let home = dir.join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    let out = parkbench()
        .arg("sign")
        .arg(&target)
        .env("HOME", &home)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    assert!(
        text(&out.stderr).contains("no SSH key found"),
        "{}",
        describe(&out)
    );
    keygen(&home.join(".ssh"), "id_ecdsa", "ecdsa", "");
    let out = parkbench()
        .arg("sign")
        .arg(&target)
        .env("HOME", &home)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        text(&out.stderr).contains(".ssh/id_ecdsa"),
        "{}",
        describe(&out)
    );
    assert!(dir.join("run.tar.gz.sig").is_file());
}
