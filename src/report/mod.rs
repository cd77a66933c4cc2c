//! Reports of a run.

#[cfg(test)]
pub mod fixture;
