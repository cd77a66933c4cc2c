//! The build stage: pins → verified artifacts (cached by sha256) → deterministic build contexts →
//! pinned images and their manifest (every binary's sha256). Also the deterministic tar and cpio
//! writers and the streaming sha256 that later stages reuse.
//!
//! May import: `study`, `engine`, `yaml`, `stats`.

pub mod artifact;
pub mod cache;
pub mod context;
pub mod digest;
pub mod image;
pub mod initramfs;
pub mod pin;
pub mod tarball;
