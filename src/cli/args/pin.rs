//! The arguments of `pin`: the commands that maintain the pins of `toolchains/`.

use clap::{Args, Subcommand};

#[derive(Debug, Subcommand)]
pub enum PinCommand {
    /// Lock a root filesystem pin's packages: install them from the apt sources (the host's, or
    /// PARKBENCH_APT_SOURCES), keep every .deb in the cache, write toolchains/NAME.lock (name,
    /// version, architecture, priority, sha256 of each), build the root filesystem from it and
    /// write its sha256 into the pin. It rewrites those committed files: images and archives built
    /// from the old lock no longer match, so do it only to accept what the mirror serves now
    /// (drift: docs/images.md); to refuse drift instead, build with --strict-pins.
    Lock(PinLockArgs),
}

#[derive(Debug, Args)]
pub struct PinLockArgs {
    /// The root filesystem pin (`debian-base`): toolchains/NAME.yaml.
    pub name: String,
}
