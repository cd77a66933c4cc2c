//! The run stage: a study's plan of cells → processes in containers (or in a VM under a guest kernel)
//! → a run folder of raw samples, the environment and validity warnings, written as they happen.
//!
//! May import: `images`, `engine`, `study`, `stats`, `yaml`.

pub mod bench;
pub mod cpu_lock;
pub mod doctor;
pub mod env;
pub mod execution;
pub mod fleet;
pub mod guest;
pub mod hardware;
pub mod lifecycle;
pub mod needs;
pub mod plan;
pub mod process;
pub mod run_dir;
pub mod seccomp;
pub mod shard;
pub mod slice;
pub mod warning;
