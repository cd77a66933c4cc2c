//! A study on many Docker Engines: which Engines `--hosts` names (`hosts`), and what each one is
//! (`survey`).

pub mod hosts;
pub mod survey;
