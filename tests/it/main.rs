//! The integration tests, one binary: each file is the tests of one part of the kit, driving the real
//! `parkbench` binary (most of them against the real Engine); `common` holds what they share.
//! `cargo test --test it NAME:: -- --test-threads 1` runs one file's tests (the filter matches anywhere in a
//! name: `run::` also runs `rerun::`). `just test` runs them two at a time, with `PARKBENCH_WAIT_FOR_CPUS=1`
//! so that two runs on the same CPUs take turns instead of one being refused (two builds of one image take
//! turns too); then, one at a time, the Justfile's `alone`: `hostile::` and `placing::` compare every tag
//! and container of the Engine before and after, which another test's builds and runs change;
//! `isolation::` compares a probe's times in two isolations, and
//! `archive::reproduce_makes_a_reference_run…` makes a reference run, which wants a quiet machine: another
//! test's compiles would disturb both. Tests that count containers count those of their own study; those
//! whose runs lease this machine's Engine (runs across hosts naming `local`) take turns
//! (`common::leasing_local`).

mod common;

mod archive;
mod archive_text;
mod authoring;
mod browser;
mod build;
mod build_stages;
mod compare;
mod costs;
mod docs;
mod driver;
mod engines;
mod errors;
mod explain;
mod failed_build;
mod fleet;
mod guest;
mod hardening;
mod hostile;
mod hosts;
mod isolation;
mod kernel_archive;
mod kubernetes_schema;
mod partial;
mod peak;
mod pin_lock;
mod pin_update;
mod placing;
mod podman;
mod provenance;
mod readme;
mod rebuild_driver;
mod reference;
mod rerun;
mod run;
mod runtimes;
mod scale;
mod shard;
mod signing;
mod slurm;
mod tar_bytes;
mod vendoring;
