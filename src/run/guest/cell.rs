//! A cell's process in a VM under a guest kernel: the sampler command in the guest's CPU numbers,
//! QEMU pinned to the host's, and what the guest's console adds to the sample.

use anyhow::{Context, Result};

use super::Guests;
use super::qemu::{COMMAND_LINE_MAX, Console, cell_spec, too_long};
use crate::engine::ContainerOutcome;
use crate::run::execution::{Execution, Launch, Process, tail};
use crate::study::Placeholders;
use crate::study::kernel::Accel;
use crate::study::sample::{self, Sample};

/// A VM booted from the guest kernel `kernel`, with the probe image's initramfs as its root.
pub struct InGuest<'a> {
    pub guests: &'a Guests,
    pub kernel: &'a str,
}

impl Execution for InGuest<'_> {
    fn launch(&self, p: &Process) -> Result<Launch> {
        let (kernel, probe) = (self.kernel, p.probe);
        // In a VM the probe sees vCPUs 0.., QEMU is pinned to the host CPUs.
        let (words, host_cpus) = guest_words(&p.words);
        let (cmd, env) = p.command(&words);
        let (spec, accel) = cell_spec(
            self.guests,
            kernel,
            &probe.image,
            &cmd,
            &env,
            &host_cpus,
            probe.thp.as_deref(),
            p.timeout,
            p.labels.clone(),
        )
        .with_context(|| {
            format!(
                "kernel {kernel} or the guest root of {} was not prepared",
                probe.image
            )
        })?;
        if let Some(len) = too_long(&spec) {
            return Ok(Launch::Refused(format!(
                "the guest's kernel command line would be {len} bytes, more than the \
                 {COMMAND_LINE_MAX} the kernel keeps: shorten the probe's args or env"
            )));
        }
        if accel == Accel::Tcg && probe.kind.measure().measures_time() {
            return Ok(Launch::Refused(format!(
                "not timed under TCG: kernel {kernel} runs in QEMU's emulated CPU here (no \
                 working KVM), so times mean nothing; memory kinds are measured"
            )));
        }
        Ok(Launch::Container(spec))
    }

    fn judge(
        &self,
        s: &mut Sample,
        outcome: &ContainerOutcome,
        error: Option<String>,
    ) -> Option<String> {
        let accel = self
            .guests
            .kernels
            .get(self.kernel)
            .map_or(Accel::Tcg, |k| k.record.accel);
        guest_outcome(s, outcome, self.kernel.to_string(), accel, error)
    }
}

/// A guest cell's placeholder words in vCPU numbers (the probe's CPUs first, then its other
/// CPUs), and the host CPUs QEMU is pinned to, in the same order.
fn guest_words(words: &Placeholders) -> (Placeholders, Vec<usize>) {
    let mut host: Vec<usize> = words.cpus.clone();
    host.extend(words.other_cpus.iter().filter(|c| !words.cpus.contains(c)));
    let index = |c: &usize| host.iter().position(|h| h == c).unwrap_or(0);
    let guest = Placeholders {
        tasks: words.tasks,
        cpus: words.cpus.iter().map(index).collect(),
        other_cpus: words.other_cpus.iter().map(index).collect(),
    };
    (guest, host)
}

/// What the guest's console adds to a sample: the guest's record, an OOM kill inside the guest,
/// and, when the sampler printed nothing, the console's last lines as the reason.
fn guest_outcome(
    s: &mut Sample,
    outcome: &ContainerOutcome,
    kernel: String,
    accel: Accel,
    error: Option<String>,
) -> Option<String> {
    let console = Console::read(&outcome.stdout);
    let line = console.guest.clone();
    s.guest = Some(sample::GuestSample {
        kernel,
        release: line
            .as_ref()
            .map(|l| l.kernel_release.clone())
            .unwrap_or_default(),
        thp: line.as_ref().map(|l| l.thp.clone()).unwrap_or_default(),
        accel,
        vcpus: line.as_ref().map_or(0, |l| l.cpus),
        memory_kib: line.as_ref().map_or(0, |l| l.memory_kib),
    });
    // The sampler's stderr went to the console with everything else.
    s.stderr_tail = tail(&console.last_lines.join("\n"), 4096);
    // QEMU exits 0 when the guest powers off: the sampler's own status is what init printed.
    s.exit_code = match console.ended.as_deref().and_then(|e| e.split_once(' ')) {
        Some(("exit", code)) => code.parse().ok(),
        _ => None,
    };
    if let Some(e) = console.ended.as_deref().filter(|e| e.starts_with("signal")) {
        return Some(format!("the sampler in the guest ended by {e}"));
    }
    if console.ended.is_none() && error.is_none() {
        return Some(format!(
            "the guest's init never reported the sampler's end (a kernel panic?); the guest's \
             console: {}",
            console.tail(&outcome.stderr)
        ));
    }
    if console.oom {
        s.oom_killed = true;
        return Some(
            "out of memory in the guest (its OOM killer killed a process): raise \
             protocol.guest_memory_mib"
                .into(),
        );
    }
    match error {
        Some(e) if s.rss_bytes.is_empty() && s.peak.is_none() && s.results.is_empty() => {
            Some(format!(
                "{e}; the guest's console: {}",
                console.tail(&outcome.stderr)
            ))
        }
        other => other,
    }
}
