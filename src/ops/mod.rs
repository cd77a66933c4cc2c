//! What the commands do, each a pipeline that reads top to bottom: rerun an archive.
//!
//! May import every stage below: `outputs`, `run`, `images`, `engine`, `study`, `stats`.

pub mod rerun;
