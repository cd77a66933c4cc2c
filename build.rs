//! Records how this driver is built, for the record an archive keeps beside the driver it carries
//! (`parkbench.json`): the compiler's version, the target, the optimisation level, the flags and
//! whether it is built in the pinned toolchain image.

use std::process::Command;

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = Command::new(&rustc)
        .arg("-V")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let flags = var("CARGO_ENCODED_RUSTFLAGS").replace('\u{1f}', " ");
    println!("cargo:rustc-env=PARKBENCH_RUSTC={version}");
    println!("cargo:rustc-env=PARKBENCH_TARGET={}", var("TARGET"));
    println!("cargo:rustc-env=PARKBENCH_OPT_LEVEL={}", var("OPT_LEVEL"));
    println!("cargo:rustc-env=PARKBENCH_RUSTFLAGS={flags}");
    // `pinned` from the build in the pinned toolchain image (`just driver`), `host` otherwise.
    let built_in = std::env::var("PARKBENCH_BUILT_IN").unwrap_or_else(|_| "host".into());
    println!("cargo:rustc-env=PARKBENCH_BUILT_IN={built_in}");
    println!("cargo:rerun-if-env-changed=PARKBENCH_BUILT_IN");
    println!("cargo:rerun-if-changed=build.rs");
}
