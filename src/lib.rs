//! parkbench: rerun published runtime benchmarks in pinned containers, with evidence attached.
//!
//! The pipeline, one module per stage: pins → base rootfs and images (`pin`, `artifact`, `image`) →
//! runs and raw samples (`run`, `sample`, `env`, `warning`) → statistics and report (`summary`, `report`) →
//! verdicts (`verdict`) → archive (`archive`); a differing claim's sweep of `factor`s (`explain`). Only `engine` talks to the Docker Engine.

pub mod archive;
pub mod args;
pub mod artifact;
pub mod bench;
pub mod bootstrap;
pub mod cache;
pub mod claim;
pub mod cli;
pub mod compare;
pub mod context;
pub mod cpuset;
pub mod digest;
pub mod doctor;
pub mod engine;
pub mod env;
pub mod explain;
pub mod factor;
pub mod guest;
pub mod image;
pub mod index;
pub mod initramfs;
pub mod kind;
pub mod outcome;
pub mod pin;
pub mod plan;
pub mod repeats;
pub mod report;
pub mod rerun;
pub mod run;
pub mod run_dir;
pub mod sample;
pub mod seccomp;
pub mod study;
pub mod summary;
pub mod tarball;
pub mod verdict;
pub mod warning;
pub mod yaml;
