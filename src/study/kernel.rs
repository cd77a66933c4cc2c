//! Kernel names in a study: the host's own kernel, or a guest kernel a VM boots, and how a guest's CPU
//! runs. The study laid out per kernel is `layout`; the guest machinery itself is `run::guest`.

use serde::{Deserialize, Serialize};

/// The kernel name of a run on the host's own kernel (in a container, no VM).
pub const HOST: &str = "host";
/// How the guest's CPU runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Accel {
    /// The host's KVM: the guest's CPU is the host's, timed samples count.
    Kvm,
    /// QEMU's software emulation: memory kinds count, timed and latency samples are invalid.
    Tcg,
}

impl std::fmt::Display for Accel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Accel::Kvm => "kvm",
            Accel::Tcg => "tcg",
        })
    }
}
