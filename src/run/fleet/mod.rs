//! A run across many Docker Engines (a fleet): which Engines `--hosts` names (`hosts`), what each
//! one is (`survey`), and a run's lease on each host (`lease`).

pub mod hosts;
pub mod lease;
pub mod survey;
