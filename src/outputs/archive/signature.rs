//! An archive's signature: `<archive>.sig` beside it, in OpenSSH's SSHSIG format under the namespace
//! `parkbench`, so that an author signs with the SSH key they already publish and a reviewer checks
//! it against an allowed-signers file ([`signers`](super::signers)) — with `parkbench` or with
//! `ssh-keygen -Y sign` / `-Y verify`, which make and read the same file.
//!
//! The keys, the hashes and the signatures are `ssh-key`'s and `sha2`'s; this module streams the
//! archive through the hash (an archive with images is gigabytes) and lays out the blob SSHSIG
//! signs — the preamble, the namespace, the hash's name and the hash, with `ssh-encoding`.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};
use sha2::Digest;
use ssh_encoding::Encode;
use ssh_key::{HashAlg, LineEnding, PrivateKey, PublicKey, SshSig};

use super::signers::{AllowedSigners, Signer, fingerprint};
use crate::files::read_bounded;

/// The namespace every parkbench signature is made for (`ssh-keygen -Y sign -n parkbench`): a
/// signature made for git or for a file of another tool is not one of an archive.
pub const NAMESPACE: &str = "parkbench";

/// The hash an archive is signed over (`ssh-keygen`'s default too).
const HASH: HashAlg = HashAlg::Sha512;

/// Largest signature file read (an RSA-16384 signature is under 5 KiB).
const SIG_LIMIT: u64 = 64 << 10;

/// The keys tried, in order, when none is named: the usual ones below `~/.ssh/`.
pub const DEFAULT_KEYS: [&str; 3] = ["id_ed25519", "id_ecdsa", "id_rsa"];

/// Where the signature of `archive` goes: `<archive>.sig`, as `ssh-keygen -Y sign` writes it.
pub fn path_for(archive: &Path) -> PathBuf {
    let mut name = archive.as_os_str().to_owned();
    name.push(".sig");
    PathBuf::from(name)
}

/// What signed an archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signed {
    /// The signature file written.
    pub sig: PathBuf,
    /// The private key used.
    pub key: PathBuf,
    /// The key's algorithm and fingerprint (`ssh-ed25519 SHA256:…`), as `ssh-keygen -l` prints it.
    pub fingerprint: String,
}

/// The private key named, or the first of [`DEFAULT_KEYS`] below `home/.ssh/` that exists.
pub fn find_key(named: Option<&Path>, home: Option<&Path>) -> Result<PathBuf> {
    if let Some(key) = named {
        return Ok(key.to_owned());
    }
    let Some(ssh) = home.map(|h| h.join(".ssh")) else {
        bail!("no key named and no home folder to look in: name the private key with --key FILE");
    };
    DEFAULT_KEYS
        .iter()
        .map(|k| ssh.join(k))
        .find(|k| k.is_file())
        .with_context(|| {
            format!(
                "no SSH key found: none of {} exists; name the private key with --key FILE, or make \
                 one with `ssh-keygen -t ed25519` (and publish its .pub file)",
                DEFAULT_KEYS
                    .iter()
                    .map(|k| ssh.join(k).display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
}

/// Reads the private key at `path`; an encrypted key or a public key is a clear error naming the
/// `ssh-keygen` command that signs with it instead (it asks for the passphrase, or uses ssh-agent).
pub fn read_key(path: &Path, archive: &Path) -> Result<PrivateKey> {
    let text = read_bounded(path, SIG_LIMIT * 4, "the private key")?;
    let instead = format!(
        "`ssh-keygen -Y sign -n {NAMESPACE} -f {} {}` writes the same {}",
        path.display(),
        archive.display(),
        path_for(archive).display()
    );
    if PublicKey::from_openssh(text.trim()).is_ok() {
        bail!(
            "{} is a public key: sign with the private one (--key without .pub); keys held only by \
             ssh-agent are not read by parkbench: {instead}",
            path.display()
        );
    }
    let key = PrivateKey::from_openssh(&text).with_context(|| {
        format!(
            "{} is not an OpenSSH private key (`-----BEGIN OPENSSH PRIVATE KEY-----`); convert an \
             older PEM key with `ssh-keygen -p -f {}`, or sign with ssh-keygen: {instead}",
            path.display(),
            path.display()
        )
    })?;
    ensure!(
        !key.is_encrypted(),
        "{} is protected by a passphrase, which parkbench does not ask for: {instead} (asking for \
         the passphrase, or using ssh-agent)",
        path.display()
    );
    Ok(key)
}

/// Signs `archive` with `key`, writing `<archive>.sig` (through a part file).
pub fn sign(archive: &Path, key_path: &Path, key: &PrivateKey) -> Result<Signed> {
    let hash = hash_file(archive, HASH)?;
    let blob = signed_blob(NAMESPACE, HASH, &hash)?;
    let signature =
        sign_blob(key, &blob).with_context(|| format!("signing with {}", key_path.display()))?;
    let sig = SshSig::new(
        key.public_key().key_data().clone(),
        NAMESPACE,
        HASH,
        signature,
    )
    .context("making the signature")?;
    let pem = sig
        .to_pem(LineEnding::LF)
        .context("encoding the signature")?;
    let out = path_for(archive);
    crate::files::write_atomic(&out, pem.as_bytes())?;
    // A signature is published beside its archive: readable by all, as ssh-keygen writes it.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o644))
        .with_context(|| format!("making {} readable", out.display()))?;
    Ok(Signed {
        sig: out,
        key: key_path.to_owned(),
        fingerprint: fingerprint(key.public_key().key_data()),
    })
}

/// Checks that `sig_path` is a valid signature of `archive` under [`NAMESPACE`] by a key that
/// `signers` allows for it; returns who signed. Every failure says what failed and what to do.
pub fn verify(archive: &Path, sig_path: &Path, signers: &AllowedSigners) -> Result<Signer> {
    ensure!(
        sig_path.exists(),
        "{}: missing: --allowed-signers asks for a signature and there is none; ask the archive's \
         author for it (`parkbench sign {}` writes it), or check without --allowed-signers",
        sig_path.display(),
        archive.display()
    );
    let text = read_bounded(sig_path, SIG_LIMIT, "the signature")?;
    let sig = SshSig::from_pem(text.trim()).map_err(|e| {
        anyhow::anyhow!(
            "{}: not an SSH signature ({e}): it must start with `-----BEGIN SSH SIGNATURE-----`, \
             as `parkbench sign` and `ssh-keygen -Y sign` write it",
            sig_path.display()
        )
    })?;
    ensure!(
        sig.namespace() == NAMESPACE,
        "{}: a signature for the namespace {:?}, not {NAMESPACE:?}: it was made for something \
         else than a parkbench archive (`ssh-keygen -Y sign -n {NAMESPACE}` makes one)",
        sig_path.display(),
        sig.namespace()
    );
    let key = sig.public_key();
    let hash = hash_file(archive, sig.hash_alg())?;
    let blob = signed_blob(NAMESPACE, sig.hash_alg(), &hash)?;
    ensure!(
        sig.reserved().is_empty(),
        "{}: the signature's reserved field is not empty: not a signature this format defines",
        sig_path.display()
    );
    signature::Verifier::verify(key, &blob, sig.signature()).map_err(|_| {
        anyhow::anyhow!(
            "{}: BAD SIGNATURE: it does not match {} (signed by {}): the archive or the signature \
             was changed after signing; download both again from where the author published them",
            sig_path.display(),
            archive.display(),
            fingerprint(key)
        )
    })?;
    signers.allowing(key, NAMESPACE).with_context(|| {
        format!(
            "{}: a valid signature by {}, a key {} does not allow to sign parkbench archives; add \
             the author's public key to it (`PRINCIPAL namespaces=\"{NAMESPACE}\" KEY`) only if \
             you know it is theirs",
            sig_path.display(),
            fingerprint(key),
            signers.path.display()
        )
    })
}

/// `key`'s signature of `blob`. An RSA key signs through the `rsa` crate itself, with both of its
/// primes: ssh-key 0.6 hands the `rsa` crate the first prime twice, which it refuses.
fn sign_blob(key: &PrivateKey, blob: &[u8]) -> Result<ssh_key::Signature> {
    let Some(pair) = key.key_data().rsa() else {
        return Ok(signature::Signer::try_sign(key, blob)?);
    };
    let int = |m: &ssh_key::Mpint| rsa::BigUint::try_from(m).context("an RSA key's number");
    let private = rsa::RsaPrivateKey::from_components(
        int(&pair.public.n)?,
        int(&pair.public.e)?,
        int(&pair.private.d)?,
        vec![int(&pair.private.p)?, int(&pair.private.q)?],
    )
    .context("an RSA key whose numbers do not agree")?;
    let signer = rsa::pkcs1v15::SigningKey::<sha2::Sha512>::new(private);
    let signed = signature::Signer::try_sign(&signer, blob)?;
    let data = signature::SignatureEncoding::to_vec(&signed);
    let algorithm = ssh_key::Algorithm::Rsa {
        hash: Some(HashAlg::Sha512),
    };
    Ok(ssh_key::Signature::new(algorithm, data)?)
}

/// The blob an SSHSIG signature signs: the preamble `SSHSIG`, then as SSH strings the namespace,
/// the reserved field (empty), the hash's name and the message's hash (PROTOCOL.sshsig).
fn signed_blob(namespace: &str, hash_alg: HashAlg, hash: &[u8]) -> Result<Vec<u8>> {
    let mut blob = b"SSHSIG".to_vec();
    namespace.encode(&mut blob)?;
    b"".as_slice().encode(&mut blob)?;
    hash_alg.as_str().encode(&mut blob)?;
    hash.encode(&mut blob)?;
    Ok(blob)
}

/// The hash of the file at `path`, streamed.
fn hash_file(path: &Path, alg: HashAlg) -> Result<Vec<u8>> {
    let mut file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let read = |e| anyhow::anyhow!("reading {}: {e}", path.display());
    match alg {
        HashAlg::Sha256 => stream::<sha2::Sha256>(&mut file).map_err(read),
        HashAlg::Sha512 => stream::<sha2::Sha512>(&mut file).map_err(read),
        other => bail!("a signature over {other}, a hash SSHSIG does not define"),
    }
}

fn stream<D: Digest>(input: &mut impl Read) -> std::io::Result<Vec<u8>> {
    let mut hasher = D::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match input.read(&mut buf) {
            Ok(0) => return Ok(hasher.finalize().to_vec()),
            Ok(n) => hasher.update(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests;
