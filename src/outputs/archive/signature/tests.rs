use ssh_key::private::Ed25519Keypair;

use super::*;

struct Fx {
    tmp: tempfile::TempDir,
    archive: PathBuf,
}

fn fx() -> Fx {
    let tmp = tempfile::tempdir().unwrap();
    let archive = tmp.path().join("run-1.tar.gz");
    std::fs::write(&archive, b"an archive's bytes").unwrap();
    Fx { tmp, archive }
}

fn key(seed: u8) -> PrivateKey {
    PrivateKey::from(Ed25519Keypair::from_seed(&[seed; 32]))
}

/// An allowed-signers file listing `key` for `principal`, with `options`.
fn allowed(fx: &Fx, lines: &[(&str, &str, &PrivateKey)]) -> AllowedSigners {
    let path = fx.tmp.path().join("allowed_signers");
    let text: String = lines
        .iter()
        .map(|(who, options, key)| {
            format!(
                "{who} {options} {}\n",
                key.public_key().to_openssh().unwrap()
            )
        })
        .collect();
    std::fs::write(&path, text).unwrap();
    AllowedSigners::read(&path).unwrap()
}

fn signed(fx: &Fx, key: &PrivateKey) -> PathBuf {
    sign(&fx.archive, Path::new("id_ed25519"), key).unwrap().sig
}

#[test]
fn a_signature_verifies_and_names_the_signer() {
    let fx = fx();
    let alice = key(1);
    let done = sign(&fx.archive, Path::new("id_ed25519"), &alice).unwrap();
    assert_eq!(done.sig, fx.tmp.path().join("run-1.tar.gz.sig"));
    assert_eq!(done.fingerprint, fingerprint(alice.public_key().key_data()));
    let pem = std::fs::read_to_string(&done.sig).unwrap();
    assert!(pem.starts_with("-----BEGIN SSH SIGNATURE-----\n"), "{pem}");
    let who = verify(
        &fx.archive,
        &done.sig,
        &allowed(&fx, &[("alice@example.com", "", &alice)]),
    )
    .unwrap();
    assert_eq!(who.principals, "alice@example.com");
    assert_eq!(who.fingerprint, done.fingerprint);
}

#[test]
fn a_changed_archive_is_a_bad_signature() {
    let fx = fx();
    let alice = key(1);
    let sig = signed(&fx, &alice);
    std::fs::write(&fx.archive, b"an archive's bytez").unwrap();
    let err = verify(&fx.archive, &sig, &allowed(&fx, &[("alice", "", &alice)])).unwrap_err();
    assert!(format!("{err:#}").contains("BAD SIGNATURE"), "{err:#}");
}

#[test]
fn a_key_the_reviewer_does_not_allow_is_refused() {
    let fx = fx();
    let (alice, mallory) = (key(1), key(2));
    let sig = signed(&fx, &mallory);
    let err = verify(&fx.archive, &sig, &allowed(&fx, &[("alice", "", &alice)])).unwrap_err();
    let err = format!("{err:#}");
    assert!(
        err.contains("a valid signature by ssh-ed25519 SHA256:"),
        "{err}"
    );
    assert!(err.contains("does not allow"), "{err}");
    // Allowed only for git's signatures.
    let git_only = allowed(&fx, &[("mallory", "namespaces=\"git\"", &mallory)]);
    assert!(verify(&fx.archive, &sig, &git_only).is_err());
}

#[test]
fn a_missing_or_foreign_signature_says_what_to_do() {
    let fx = fx();
    let alice = key(1);
    let signers = allowed(&fx, &[("alice", "", &alice)]);
    let sig = path_for(&fx.archive);
    let err = format!("{:#}", verify(&fx.archive, &sig, &signers).unwrap_err());
    assert!(
        err.contains("missing") && err.contains("parkbench sign"),
        "{err}"
    );

    std::fs::write(&sig, "not a signature").unwrap();
    let err = format!("{:#}", verify(&fx.archive, &sig, &signers).unwrap_err());
    assert!(err.contains("not an SSH signature"), "{err}");

    // A signature for git's namespace over the same bytes.
    let bytes = std::fs::read(&fx.archive).unwrap();
    let git = alice.sign("git", HashAlg::Sha512, &bytes).unwrap();
    std::fs::write(&sig, git.to_pem(LineEnding::LF).unwrap()).unwrap();
    let err = format!("{:#}", verify(&fx.archive, &sig, &signers).unwrap_err());
    assert!(
        err.contains("namespace \"git\", not \"parkbench\""),
        "{err}"
    );

    std::fs::write(&sig, vec![b'A'; SIG_LIMIT as usize + 1]).unwrap();
    let err = format!("{:#}", verify(&fx.archive, &sig, &signers).unwrap_err());
    assert!(err.contains("over 65536 bytes"), "{err}");
}

#[test]
fn the_streamed_blob_is_the_one_ssh_key_signs() {
    // ssh-key's own signature over the whole message verifies against the streamed hash, both hashes.
    let fx = fx();
    let alice = key(1);
    let signers = allowed(&fx, &[("alice", "", &alice)]);
    let bytes = std::fs::read(&fx.archive).unwrap();
    for alg in [HashAlg::Sha256, HashAlg::Sha512] {
        let sig = alice.sign(NAMESPACE, alg, &bytes).unwrap();
        let path = path_for(&fx.archive);
        std::fs::write(&path, sig.to_pem(LineEnding::LF).unwrap()).unwrap();
        verify(&fx.archive, &path, &signers).unwrap();
    }
    // And the kit's verifies with ssh-key's verifier.
    let sig = SshSig::from_pem(std::fs::read(signed(&fx, &alice)).unwrap()).unwrap();
    alice.public_key().verify(NAMESPACE, &bytes, &sig).unwrap();
}

#[test]
fn keys_are_found_and_read_with_clear_errors() {
    let fx = fx();
    let home = fx.tmp.path().join("home");
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    let err = format!("{:#}", find_key(None, Some(&home)).unwrap_err());
    assert!(
        err.contains("no SSH key found") && err.contains("--key"),
        "{err}"
    );
    let alice = key(1);
    let rsa = home.join(".ssh/id_rsa");
    let ed = home.join(".ssh/id_ed25519");
    std::fs::write(&rsa, "x").unwrap();
    assert_eq!(find_key(None, Some(&home)).unwrap(), rsa);
    std::fs::write(&ed, alice.to_openssh(LineEnding::LF).unwrap()).unwrap();
    assert_eq!(find_key(None, Some(&home)).unwrap(), ed);
    assert_eq!(find_key(Some(&rsa), Some(&home)).unwrap(), rsa);

    assert_eq!(read_key(&ed, &fx.archive).unwrap(), alice);
    let err = format!("{:#}", read_key(&rsa, &fx.archive).unwrap_err());
    assert!(
        err.contains("not an OpenSSH private key") && err.contains("ssh-keygen -Y sign"),
        "{err}"
    );
    let public = home.join(".ssh/id_ed25519.pub");
    std::fs::write(&public, alice.public_key().to_openssh().unwrap()).unwrap();
    let err = format!("{:#}", read_key(&public, &fx.archive).unwrap_err());
    assert!(err.contains("is a public key"), "{err}");
}
