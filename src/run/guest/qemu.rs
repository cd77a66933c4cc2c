//! The QEMU command line of a guest, and what a guest printed on its serial console.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use super::{Accel, Guests, INIT, Way};
use crate::engine::{ContainerSpec, Mount};

/// Where the VM container sees the kernel, the initramfs and the disk.
const KERNEL_IN_VM: &str = "/guest/vmlinuz";
const ROOT_IN_VM: &str = "/guest/root.cpio";
const DISK_IN_VM: &str = "/guest/root.erofs";
/// Tasks the VM container may hold: QEMU's threads (one per vCPU, a few for I/O and its main loop);
/// the probe's own processes are the guest kernel's, not the host's.
const QEMU_PIDS_LIMIT: u64 = 1024;
/// The path a container from a probe image starts with when the image sets none (the Engine's).
const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// How a guest gets the probe image's filesystem.
#[derive(Debug, Clone, Copy)]
pub enum RootFiles<'a> {
    /// The whole filesystem as the initramfs, unpacked into the guest's memory at boot.
    Initramfs(&'a Path),
    /// A small initramfs (the init and the modules that reach the disk) and the filesystem as an
    /// EROFS image on a read-only virtio disk.
    Disk {
        initramfs: &'a Path,
        image: &'a Path,
    },
}

/// One boot of a guest.
pub struct Boot<'a> {
    pub vm_tag: &'a str,
    pub kernel: &'a Path,
    pub root: RootFiles<'a>,
    pub accel: Accel,
    pub memory_mib: u64,
    /// Host CPUs QEMU is pinned to (sched_setaffinity through taskset); the guest has as many
    /// vCPUs. Empty: one vCPU, not pinned (the check boot).
    pub host_cpus: &'a [usize],
    /// The command the guest's init runs, and its environment (`KEY=VALUE`).
    pub argv: &'a [String],
    pub env: &'a [String],
    /// A THP mode the init sets before the command.
    pub thp: Option<&'a str>,
    pub timeout: Duration,
}

impl Boot<'_> {
    /// The VM container: QEMU with the kernel and initramfs mounted read-only, the serial console
    /// on stdout, powered off (and so ended) when the guest's init ends. QEMU runs as root, with no
    /// capabilities: `/dev/kvm` is root's alone (mode 0600).
    pub fn spec(&self) -> ContainerSpec {
        let mut cmd: Vec<String> = Vec::new();
        if !self.host_cpus.is_empty() {
            cmd.extend([
                "taskset".into(),
                "-c".into(),
                crate::study::cpuset::format(self.host_cpus),
            ]);
        }
        let (accel, cpu) = match self.accel {
            Accel::Kvm => ("kvm", "host"),
            Accel::Tcg => ("tcg", "max"),
        };
        let vcpus = self.host_cpus.len().max(1);
        for word in [
            "qemu-system-x86_64",
            "-nodefaults",
            "-no-user-config",
            "-display",
            "none",
            "-serial",
            "stdio",
            "-monitor",
            "none",
            "-no-reboot",
            "-accel",
            accel,
            "-cpu",
            cpu,
            "-smp",
            &vcpus.to_string(),
            "-m",
            &format!("{}M", self.memory_mib),
            "-kernel",
            KERNEL_IN_VM,
            "-initrd",
            ROOT_IN_VM,
            "-append",
            &self.append(),
        ] {
            cmd.push(word.to_string());
        }
        let mut mounts = vec![Mount {
            host: self.kernel.to_path_buf(),
            container: KERNEL_IN_VM.into(),
        }];
        match self.root {
            RootFiles::Initramfs(file) => mounts.push(Mount {
                host: file.to_path_buf(),
                container: ROOT_IN_VM.into(),
            }),
            RootFiles::Disk { initramfs, image } => {
                mounts.push(Mount {
                    host: initramfs.to_path_buf(),
                    container: ROOT_IN_VM.into(),
                });
                mounts.push(Mount {
                    host: image.to_path_buf(),
                    container: DISK_IN_VM.into(),
                });
                let drive = format!("file={DISK_IN_VM},format=raw,if=virtio,readonly=on");
                // Before -append, which stays last.
                let at = cmd.len() - 2;
                cmd.splice(at..at, ["-drive".to_string(), drive]);
            }
        }
        ContainerSpec {
            image: self.vm_tag.to_string(),
            cmd,
            env: BTreeMap::new(),
            labels: [("parkbench.role".to_string(), "guest".to_string())].into(),
            timeout: self.timeout,
            seccomp: None,
            mounts,
            devices: match self.accel {
                Accel::Kvm => vec!["/dev/kvm".into()],
                Accel::Tcg => Vec::new(),
            },
            user: None,
            pids_limit: QEMU_PIDS_LIMIT,
        }
    }

    /// The kernel command line: serial console, quiet, power off when init ends, our init and its
    /// command as hex of NUL-ended words (the kernel splits its command line at spaces).
    fn append(&self) -> String {
        let mut line = format!("console=ttyS0 quiet panic=-1 rdinit={INIT}");
        if let RootFiles::Disk { .. } = self.root {
            line.push_str(" parkbench.root=disk");
            // Reading every file of the disk into the page cache (as the initramfs had them) is
            // cheap under KVM; under TCG it costs seconds per process, and only memory is measured
            // there: the init then reads the command's programs and their libraries alone.
            if self.accel == Accel::Kvm {
                line.push_str(" parkbench.warm=all");
            }
        }
        if !self.argv.is_empty() {
            let _ = write!(line, " parkbench.argv={}", hex_words(self.argv));
        }
        if !self.env.is_empty() {
            let _ = write!(line, " parkbench.env={}", hex_words(self.env));
        }
        if let Some(mode) = self.thp {
            let _ = write!(line, " parkbench.thp={mode}");
        }
        line
    }
}

fn hex_words(words: &[String]) -> String {
    let mut out = String::new();
    for w in words {
        for b in w.bytes().chain(std::iter::once(0)) {
            let _ = write!(out, "{b:02x}");
        }
    }
    out
}

/// A probe cell's VM: the sampler command (`cmd`, in guest CPU numbers), the image's environment
/// with the probe's on top, QEMU pinned to `host_cpus`. `None` when the probe's image or kernel
/// was not prepared.
#[allow(clippy::too_many_arguments)]
pub fn cell_spec(
    guests: &Guests,
    kernel: &str,
    image: &str,
    cmd: &[String],
    env: &BTreeMap<String, String>,
    host_cpus: &[usize],
    thp: Option<&str>,
    timeout: Duration,
    labels: BTreeMap<String, String>,
) -> Option<(ContainerSpec, Accel)> {
    let k = guests.kernels.get(kernel)?;
    let root = guests.roots.get(image)?;
    let mut vars: BTreeMap<String, String> = root
        .env
        .iter()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    vars.entry("PATH".into())
        .or_insert_with(|| DEFAULT_PATH.into());
    vars.entry("HOME".into()).or_insert_with(|| "/root".into());
    vars.extend(env.iter().map(|(k, v)| (k.clone(), v.clone())));
    let env: Vec<String> = vars.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let accel = k.record.accel;
    let root = match (&k.boot, k.record.root) {
        (Some(boot), Way::Disk) => RootFiles::Disk {
            initramfs: &boot.file,
            image: &root.disk.as_ref()?.file,
        },
        _ => RootFiles::Initramfs(&root.initramfs.as_ref()?.file),
    };
    let boot = Boot {
        vm_tag: &guests.vm_tag,
        kernel: &k.file,
        root,
        accel,
        memory_mib: k.record.memory_mib,
        host_cpus,
        argv: cmd,
        env: &env,
        thp,
        timeout: timeout
            + match accel {
                Accel::Kvm => Duration::from_secs(30),
                Accel::Tcg => super::BOOT_ALLOWANCE,
            },
    };
    let mut spec = boot.spec();
    spec.labels.extend(labels);
    Some((spec, accel))
}

/// x86's kernel command line holds at most this many bytes; the kernel cuts a longer one.
pub const COMMAND_LINE_MAX: usize = 2047;

/// The length of a VM spec's kernel command line, when it is too long to reach the guest whole.
pub fn too_long(spec: &ContainerSpec) -> Option<usize> {
    let append = spec.cmd.iter().skip_while(|w| *w != "-append").nth(1)?;
    (append.len() > COMMAND_LINE_MAX).then_some(append.len())
}

/// The guest's line: `parkbench-guest {...}`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct GuestLine {
    pub kernel_release: String,
    pub thp: String,
    pub cpus: u64,
    pub memory_kib: u64,
}

/// What a guest printed on its console.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Console {
    /// The init's guest line, if the guest got that far.
    pub guest: Option<GuestLine>,
    /// The guest kernel's OOM killer killed a process (its console message).
    pub oom: bool,
    /// The command's exit status as init saw it (`exit N` or `signal N`).
    pub ended: Option<String>,
    /// The console's last lines.
    pub last_lines: Vec<String>,
}

impl Console {
    /// Reads the console output (the VM container's stdout).
    pub fn read(stdout: &str) -> Console {
        let mut c = Console::default();
        for line in stdout.lines() {
            let line = line.trim_end_matches('\r');
            if let Some(json) = line.strip_prefix("parkbench-guest ") {
                c.guest = serde_json::from_str(json).ok();
            } else if let Some(code) = line.strip_prefix("parkbench-guest-exit ") {
                c.ended = Some(format!("exit {code}"));
            } else if let Some(sig) = line.strip_prefix("parkbench-guest-signal ") {
                c.ended = Some(format!("signal {sig}"));
            }
            c.oom |= line.contains("Out of memory: Killed process");
        }
        let lines: Vec<&str> = stdout.lines().filter(|l| !l.trim().is_empty()).collect();
        c.last_lines = lines[lines.len().saturating_sub(8)..]
            .iter()
            .map(|l| l.trim_end_matches('\r').chars().take(200).collect())
            .collect();
        c
    }

    /// The console's last lines (or QEMU's stderr when the console is empty), on one line.
    pub fn tail(&self, stderr: &str) -> String {
        if self.last_lines.is_empty() {
            let err = stderr.trim();
            return if err.is_empty() {
                "empty".into()
            } else {
                format!(
                    "empty; QEMU said: {}",
                    err.chars().take(400).collect::<String>()
                )
            };
        }
        self.last_lines.join(" | ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_hex_of_nul_ended_strings() {
        assert_eq!(
            hex_words(&["ab".into(), "".into(), "c".into()]),
            "61620000".to_owned() + "6300"
        );
    }

    #[test]
    fn the_command_line_carries_the_command_and_no_spaces_inside_it() {
        let boot = Boot {
            vm_tag: "vm:1",
            kernel: Path::new("/k"),
            root: RootFiles::Initramfs(Path::new("/r")),
            accel: Accel::Tcg,
            memory_mib: 512,
            host_cpus: &[2, 3],
            argv: &[
                "/usr/local/bin/sampler".into(),
                "--tasks".into(),
                "a b".into(),
            ],
            env: &["A=1".into()],
            thp: Some("never"),
            timeout: Duration::from_secs(1),
        };
        let spec = boot.spec();
        assert_eq!(&spec.cmd[..3], ["taskset", "-c", "2-3"]);
        let smp = spec.cmd.iter().position(|w| w == "-smp").unwrap();
        assert_eq!(spec.cmd[smp + 1], "2");
        let append = spec.cmd.last().unwrap();
        assert!(append.contains("rdinit=/parkbench-init"), "{append}");
        assert!(append.contains(" parkbench.thp=never"), "{append}");
        assert_eq!(
            append
                .split(' ')
                .filter(|w| w.starts_with("parkbench.argv="))
                .count(),
            1
        );
        assert!(spec.devices.is_empty(), "TCG needs no /dev/kvm");
        assert_eq!((spec.user, spec.pids_limit), (None, QEMU_PIDS_LIMIT));
        assert_eq!(spec.mounts.len(), 2);
        assert!(!append.contains("parkbench.root"), "{append}");
    }

    #[test]
    fn a_disk_root_is_a_read_only_virtio_drive_read_whole_into_memory_only_under_kvm() {
        let mut boot = Boot {
            vm_tag: "vm:1",
            kernel: Path::new("/k"),
            root: RootFiles::Disk {
                initramfs: Path::new("/boot.cpio"),
                image: Path::new("/root.erofs"),
            },
            accel: Accel::Tcg,
            memory_mib: 512,
            host_cpus: &[0],
            argv: &["/usr/local/bin/sampler".into()],
            env: &[],
            thp: None,
            timeout: Duration::from_secs(1),
        };
        let spec = boot.spec();
        let drive = spec.cmd.iter().position(|w| w == "-drive").unwrap();
        assert_eq!(
            spec.cmd[drive + 1],
            format!("file={DISK_IN_VM},format=raw,if=virtio,readonly=on")
        );
        assert_eq!(
            spec.cmd[spec.cmd.len() - 2],
            "-append",
            "the command line stays last"
        );
        let hosts: Vec<&Path> = spec.mounts.iter().map(|m| m.host.as_path()).collect();
        assert_eq!(
            hosts,
            [
                Path::new("/k"),
                Path::new("/boot.cpio"),
                Path::new("/root.erofs")
            ]
        );
        let append = spec.cmd.last().unwrap();
        assert!(append.contains(" parkbench.root=disk"), "{append}");
        assert!(!append.contains("parkbench.warm"), "{append}");
        boot.accel = Accel::Kvm;
        let append = boot.spec().cmd.last().unwrap().clone();
        assert!(append.contains(" parkbench.warm=all"), "{append}");
    }

    #[test]
    fn the_console_gives_the_guest_line_the_exit_and_an_oom_kill() {
        let out = "\r\n[    1.2] Out of memory: Killed process 42 (probe)\r\n\
                   parkbench-guest {\"kernel_release\":\"6.1.0-57-amd64\",\"thp\":\"always\",\"cpus\":2,\"memory_kib\":1000}\r\n\
                   {\"x\":1}\r\nparkbench-guest-signal 9\r\n";
        let c = Console::read(out);
        let g = c.guest.clone().unwrap();
        assert_eq!(
            (g.kernel_release.as_str(), g.thp.as_str(), g.cpus),
            ("6.1.0-57-amd64", "always", 2)
        );
        assert!(c.oom);
        assert_eq!(c.ended.as_deref(), Some("signal 9"));
        assert_eq!(c.last_lines.last().unwrap(), "parkbench-guest-signal 9");
        assert_eq!(Console::read("").tail("no kvm"), "empty; QEMU said: no kvm");
    }
}
