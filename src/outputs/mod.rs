//! The outputs: from a run folder's raw samples to statistics (`summary`), verdicts (`verdict`), the
//! report and figures (`report`), the archive (`archive`), two runs side by side (`compare`), the
//! index of studies (`index`), runs joined into one (`merge`), a claim's explanation (`explain`) and a
//! study's committed reference run (`reference`); `outcome` recomputes them all.
//!
//! May import: `run` (the run folder and its records), `images`, `study`, `files` (hashing, tar), `stats`.

pub mod archive;
pub mod compare;
pub mod explain;
pub mod figure;
pub mod html;
pub mod index;
pub mod merge;
pub mod number;
pub mod outcome;
pub mod provenance;
pub mod reference;
pub mod report;
pub mod summary;
pub mod verdict;
