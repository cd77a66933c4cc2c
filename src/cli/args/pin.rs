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
    /// Record the sha256 of what a pin produces: a new pin's first hash (its placeholder replaced),
    /// as `cargo update` writes a lockfile. A root filesystem without a package lock is locked as by
    /// `pin lock`; one with a lock is built from it; any other pin is produced by its first source
    /// that gives bytes. It prints the sha256 it wrote into toolchains/NAME.yaml.
    Update(PinUpdateArgs),
}

#[derive(Debug, Args)]
pub struct PinLockArgs {
    /// The root filesystem pin (`debian-base`): toolchains/NAME.yaml.
    pub name: String,
}

#[derive(Debug, Args)]
pub struct PinUpdateArgs {
    /// The pin (`debian-elixir`): toolchains/NAME.yaml.
    pub name: String,
}
