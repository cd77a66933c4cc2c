//! A stand-in for builds on the host (`cargo test`, an editor). The library these programs share is
//! kept once, in `docker/probe-lib/lib.rs`; the image's recipe (`shared:` in image.yaml) lays that
//! file into the build context here, in place of this one, so no image is built from this file.

#[path = "../../probe-lib/lib.rs"]
mod shared;
pub use shared::*;
