//! parkbench: rerun published runtime benchmarks in pinned containers, with evidence attached.
//!
//! The pipeline, one module per stage: pins → base rootfs and images (`pin`, `artifact`, `image`) →
//! runs and raw samples (`run`, `sample`, `env`) → statistics and report (`summary`, `report`) →
//! verdicts (`verdict`) → archive (`archive`). Only `engine` talks to the Docker Engine.

mod archive;
mod artifact;
mod cache;
mod context;
mod cpuset;
mod doctor;
mod engine;
mod env;
mod image;
mod pin;
mod report;
mod run;
mod sample;
mod study;
mod summary;
mod verdict;

fn main() {
    println!("parkbench");
}
