//! `parkbench sign`: an archive's SSHSIG signature (`<archive>.sig`), made with the author's SSH key;
//! and the check of a signature that `check`, `verify` and `verify --rebuild-driver` make when given
//! `--allowed-signers`.

use std::path::{Path, PathBuf};

use anyhow::{Result, ensure};
use ssh_key::PrivateKey;

use super::Ending;
use super::next_step::{from_here, shell_path};
use crate::outputs::archive::signature::{self, NAMESPACE};
use crate::outputs::archive::signers::AllowedSigners;

/// The key an archive is signed with, read before any work so that a key that cannot sign fails
/// at once rather than after a run.
pub struct SigningKey {
    path: PathBuf,
    key: PrivateKey,
}

impl SigningKey {
    /// The private key at `named`, or the first of `~/.ssh/id_ed25519`, `id_ecdsa`, `id_rsa`; `for_archive`
    /// only shapes the `ssh-keygen` command an error proposes.
    pub fn find(named: Option<&Path>, for_archive: &Path) -> Result<Self> {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let path = signature::find_key(named, home.as_deref())?;
        let key = signature::read_key(&path, for_archive)?;
        Ok(Self { path, key })
    }

    /// Signs `archive`, writing `<archive>.sig`, and says with which key.
    pub fn sign(&self, archive: &Path) -> Result<PathBuf> {
        let done = signature::sign(archive, &self.path, &self.key)?;
        let (archive, sig) = (from_here(archive), from_here(&done.sig));
        eprintln!(
            "signed {} with {} ({}): {}",
            archive.display(),
            done.key.display(),
            done.fingerprint,
            sig.display()
        );
        println!(
            "a reviewer verifies it with: parkbench check {} --allowed-signers ALLOWED_SIGNERS \
             (or: ssh-keygen -Y verify -f ALLOWED_SIGNERS -I PRINCIPAL -n {NAMESPACE} -s {} < {})",
            shell_path(&archive),
            shell_path(&sig),
            shell_path(&archive)
        );
        Ok(done.sig)
    }
}

/// `sign`: signs `archive` with `key` (or the default key).
pub fn sign(archive: &Path, key: Option<&Path>) -> Result<Ending> {
    ensure!(
        archive.is_file(),
        "{}: no such archive: sign takes a run's archive (`<run-id>.tar.gz`)",
        archive.display()
    );
    SigningKey::find(key, archive)?.sign(archive)?;
    Ok(Ending::Ok)
}

/// What a signature is checked against: the reviewer's allowed-signers file, and the signature
/// (default: `<archive>.sig`).
#[derive(Debug, Clone, Default)]
pub struct Signing {
    pub allowed_signers: Option<PathBuf>,
    pub signature: Option<PathBuf>,
}

/// With an allowed-signers file, checks `archive`'s signature before anything reads the archive
/// and prints who signed; a missing or bad signature fails. Without one, nothing.
pub fn check_signature(archive: &Path, how: &Signing) -> Result<()> {
    let Some(file) = &how.allowed_signers else {
        return Ok(());
    };
    ensure!(
        !archive.is_dir(),
        "{}: a folder has no signature: --allowed-signers checks an archive's `<run-id>.tar.gz.sig`; \
         verify the signed archive itself",
        archive.display()
    );
    let signers = AllowedSigners::read(file)?;
    let sig = (how.signature.clone()).unwrap_or_else(|| signature::path_for(archive));
    let who = signature::verify(archive, &sig, &signers)?;
    eprintln!(
        "signature: good: {} is signed by {} ({}, allowed by {})",
        archive.display(),
        who.principals,
        who.fingerprint,
        who.at
    );
    Ok(())
}
