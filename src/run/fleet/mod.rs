//! A run across many Docker Engines (a fleet, `run --hosts`): which Engines `--hosts` names
//! (`hosts`), what each one is (`survey`), a run's lease on each host (`lease`), which host
//! measures which cells ([`assign`]), one host's sub-run ([`host_run`]), and the record of the
//! hosts and of what a host that stopped answering left ([`record`]).

pub mod assign;
pub mod host_run;
pub mod hosts;
pub mod lease;
pub mod record;
pub mod survey;
