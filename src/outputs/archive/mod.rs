//! The run archive: one `.tar.gz` per run (`results/<study>/runs/<run-id>.tar.gz`) that anyone can
//! check offline. [`write`] builds it deterministically, [`check`] validates it without extracting,
//! [`read_run`] returns the small files `parkbench verify` needs; [`driver`] is the self-contained
//! `parkbench` an archive carries; [`signature`] signs an archive and checks a signature against the
//! [`signers`] a reviewer allows.

mod check;
pub mod driver;
mod folder;
mod plan;
mod run_files;
mod scan;
pub mod signature;
pub mod signers;
mod sums;
mod write;

#[cfg(test)]
mod fixture;
#[cfg(test)]
mod tools;

pub use {
    check::{check, check_unpacking},
    folder::{Integrity, check_folder, read_folder},
    run_files::{read_run, read_run_unpacking},
    scan::{CheckReport, Unpack},
    write::{ArchiveInfo, write, write_with},
};

/// What the reader should do about an archive that fails a content check.
const MODIFIED: &str =
    "the archive was modified after it was written, or is corrupt; download it again";
/// What the reader should do about an archive that fails an entry rule.
const UNSAFE: &str = "the archive is unsafe to extract; do not use it";
