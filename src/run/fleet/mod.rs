//! Runs across several Docker Engines (`run --hosts`): which host measures which cells
//! ([`assign`]), the record of the hosts and what a host that stopped answering left
//! ([`record`]), and one host's sub-run ([`host_run`]).

pub mod assign;
pub mod host_run;
pub mod record;
pub mod standin;
