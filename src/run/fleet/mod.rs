//! Runs across several Docker Engines (`run --hosts`): which host measures which cells
//! ([`assign`]), the record of the hosts and what a host that stopped answering left
//! ([`record`]), one host's sub-run ([`host_run`]), and a run's lease on each host (`lease`).

pub mod assign;
pub mod host_run;
pub mod lease;
pub mod record;
pub mod standin;
