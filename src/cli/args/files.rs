//! The arguments of the commands that read run folders and archives, and of `clean`.

use std::path::PathBuf;

use clap::Args;

use crate::ops::clean;

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The run directory (`results/<study>/runs/<run-id>`).
    pub run_dir: PathBuf,
}

#[derive(Debug, Args)]
pub struct ArchiveArgs {
    /// The run directory.
    pub run_dir: PathBuf,
    /// Also add the probe images (and, for a run under a guest kernel, its VM and kernel images),
    /// exported through the Engine, for bit-exact reruns elsewhere that compile nothing.
    #[arg(long)]
    pub with_images: bool,
    /// Also add the locked .debs of the root filesystems the run's images stand on (from the
    /// cache), so that a rerun rebuilds them bit for bit with no package mirror. Implied by
    /// `--with-images`.
    #[arg(long)]
    pub with_debs: bool,
    /// Leave out the self-contained driver (`<run-id>/parkbench`) the archive otherwise carries,
    /// keeping its record (`parkbench.json`), which names it by its sha256: `verify
    /// --rebuild-driver` rebuilds it from the archive's sources and compares.
    #[arg(long)]
    pub no_driver: bool,
}

impl ArchiveArgs {
    pub fn contents(&self) -> crate::ops::archive::Contents {
        crate::ops::archive::Contents {
            sources: true,
            images: self.with_images,
            driver: if self.no_driver {
                crate::ops::archive::Driver::Named
            } else {
                crate::ops::archive::Driver::Inside
            },
            debs: self.with_debs,
        }
    }
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The archive (`<run-id>.tar.gz`).
    pub archive: PathBuf,
    #[command(flatten)]
    pub signing: SigningArgs,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// An archive (`<run-id>.tar.gz`) or a run directory.
    pub path: PathBuf,
    /// Exit with code 4 when a claim, as recomputed, is not reproduced, or when the study differs
    /// from the checkout's results/<study>/study.yaml (a claim's published value or what it
    /// judges, a probe, the protocol).
    #[arg(long)]
    pub strict: bool,
    #[command(flatten)]
    pub signing: SigningArgs,
    /// Instead of the verdicts: rebuild the archive's driver from its `source/` in the pinned Rust
    /// toolchain image (needs an Engine) and say whether it is the same file as its `parkbench`.
    #[arg(long)]
    pub rebuild_driver: bool,
}

#[derive(Debug, Args)]
pub struct DriverArgs {
    /// Where to write the driver.
    #[arg(long, default_value = "target/driver/parkbench")]
    pub out: PathBuf,
    /// Compile everything again, whatever this machine built before.
    #[arg(long)]
    pub no_cache: bool,
    /// When it cannot be built in the pinned image (no Engine, or the image cannot be built here
    /// yet), copy this self-contained driver instead, saying why; its archives say it is a host build.
    #[arg(long)]
    pub or_host: bool,
}

/// The signature `check` and `verify` require when given an allowed-signers file.
#[derive(Debug, Args)]
pub struct SigningArgs {
    /// Require the archive's signature (`<archive>.sig`, SSHSIG, namespace `parkbench`) by a key this
    /// allowed-signers file lists (git's and `ssh-keygen -Y verify`'s format), and print who signed.
    #[arg(long, value_name = "FILE")]
    pub allowed_signers: Option<PathBuf>,
    /// The signature, when it is not beside the archive as `<archive>.sig`.
    #[arg(long, value_name = "SIG", requires = "allowed_signers")]
    pub signature: Option<PathBuf>,
}

impl From<SigningArgs> for crate::ops::sign::Signing {
    fn from(a: SigningArgs) -> Self {
        crate::ops::sign::Signing {
            allowed_signers: a.allowed_signers,
            signature: a.signature,
        }
    }
}

#[derive(Debug, Args)]
pub struct SignArgs {
    /// The archive (`<run-id>.tar.gz`); the signature goes beside it as `<run-id>.tar.gz.sig`.
    pub archive: PathBuf,
    /// The private key (OpenSSH format, no passphrase); default: the first of ~/.ssh/id_ed25519,
    /// ~/.ssh/id_ecdsa, ~/.ssh/id_rsa.
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The reference run: an archive (`<run-id>.tar.gz`) or a run directory.
    pub a: PathBuf,
    /// The run compared with it: an archive or a run directory.
    pub b: PathBuf,
    /// Also write `compare.md`, `compare.svg` and `compare.html` into this folder.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Exit with code 4 when any cell's B ÷ A differs from 1 by more than this many percent.
    #[arg(long, value_name = "PCT")]
    pub fail_above: Option<f64>,
}

#[derive(Debug, Args)]
pub struct CleanArgs {
    /// Remove every image tagged under the parkbench namespace.
    #[arg(long)]
    pub images: bool,
    /// Remove the artifact cache (pinned artifacts, vendored crates).
    #[arg(long)]
    pub cache: bool,
    /// Remove runs' leases on the hosts (a stale one left by a run that died): those of `--run`,
    /// or every one with `--all`; with neither, they are listed and none removed.
    #[arg(long)]
    pub leases: bool,
    /// The hosts whose leases to remove, named as `run --hosts` names them (`local`, a URL, a
    /// hosts-file name, a Docker context); default: this machine's Engine.
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "HOST,…",
        requires = "leases"
    )]
    pub hosts: Vec<String>,
    /// The study whose folder's hosts.yaml names hosts (besides ~/.config/parkbench/hosts.yaml).
    #[arg(long, value_name = "STUDY_FILE", requires = "hosts")]
    pub study: Option<PathBuf>,
    /// Accept `tcp://` hosts without TLS: nothing authenticates them or encrypts their traffic.
    #[arg(long, requires = "hosts")]
    pub allow_plain_tcp: bool,
    /// Remove only the leases of this run (one that is gone): its run id.
    #[arg(long, value_name = "ID", requires = "leases", conflicts_with = "all")]
    pub run: Option<String>,
    /// Remove every run's lease, live ones included.
    #[arg(long, requires = "leases")]
    pub all: bool,
}

impl From<CleanArgs> for clean::Options {
    fn from(a: CleanArgs) -> Self {
        clean::Options {
            images: a.images,
            cache: a.cache,
            leases: a.leases,
            hosts: a.hosts,
            study: a.study,
            allow_plain_tcp: a.allow_plain_tcp,
            run: a.run,
            all_runs: a.all,
        }
    }
}
