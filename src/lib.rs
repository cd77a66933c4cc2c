//! parkbench: rerun published runtime benchmarks in pinned containers, with evidence attached.
//!
//! The source is the pipeline, one folder per stage, each importing only the floors below it:
//!
//! | floor | folder | produces |
//! | --- | --- | --- |
//! | 1 | `files`, `stats`, `yaml`, `text` | sha256, tar, atomic writes; median, CV, percentiles, bootstrap; YAML loading with exact error locations; aligned text columns |
//! | 2 | `study` | the schema: a study, its probes, claims, kinds, factors, and the sample record |
//! | 2 | `engine` | the one door to the Docker Engine, and its fake for unit tests |
//! | 3 | `images` | pins → artifacts → build contexts → pinned images and their manifest |
//! | 4 | `run` | a run folder of raw samples, its environment and warnings, on the host or in a guest kernel |
//! | 5 | `outputs` | statistics, verdicts, report, archive, compare, index, explanations |
//! | 6 | `ops` | what a command does, one pipeline per file: reproduce, run, rerun, explain, verify… |
//! | 7 | `cli` | argument plumbing and exit codes |

pub mod cli;
pub mod engine;
pub mod files;
pub mod images;
pub mod ops;
pub mod outputs;
pub mod run;
pub mod stats;
pub mod study;
pub mod text;
pub mod yaml;
