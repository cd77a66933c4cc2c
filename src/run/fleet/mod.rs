//! A run across many Docker Engines (a fleet): a run's lease on each host (`lease`).

pub mod lease;
