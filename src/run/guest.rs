//! Guests: a probe run in a VM booted from a pinned kernel instead of a container on the host's
//! kernel. The VM is QEMU in a container of the `vm` image; the guest's root is the probe image's
//! own filesystem, on a virtio disk or as the initramfs (`root`), its init
//! (`docker/vm/guest-init.c`) runs the image's sampler exactly as a container does, so the sample
//! is the same record with a `guest` part.
//!
//! Before measuring, every kernel of the run boots once with an empty root (`check`): with KVM
//! when `/dev/kvm` exists and such a boot prints within [`KVM_CHECK`], else under TCG (QEMU's
//! software CPU). The kernel's release, THP mode and the acceleration are recorded in run.json.

mod cell;
mod qemu;
mod root;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::engine::{Containers, Images};
use crate::files::digest;
use crate::images::Manifest;
use crate::images::cache::Cache;
use crate::images::recipe::{self, KERNEL_CONFIG, KERNEL_FILE, KERNEL_PREFIX};
use crate::study::Study;
use crate::study::kernel::{Accel, HOST};

pub use cell::InGuest;
pub use qemu::{COMMAND_LINE_MAX, Console, GuestLine, cell_spec, too_long};
pub use root::{MODULES_IN_KERNEL, ROOT_ENV, Root, RootFile, Way};

/// The image QEMU runs in.
pub const VM_IMAGE: &str = "vm";
/// The guest's init inside the `vm` image; it enters every initramfs as [`INIT`].
const INIT_IN_VM: &str = "/usr/local/lib/parkbench/guest-init";
/// Where the guest's init is in the initramfs (`rdinit=`).
pub const INIT: &str = "/parkbench-init";
/// How long a KVM boot may take to print before KVM is taken not to work here.
pub const KVM_CHECK: Duration = Duration::from_secs(20);
/// How long a TCG boot of the empty root may take.
const TCG_CHECK: Duration = Duration::from_secs(180);
/// The boot allowance added to a cell's timeout under TCG (booting, and unpacking a large
/// initramfs, in an emulated CPU takes seconds).
pub const BOOT_ALLOWANCE: Duration = Duration::from_secs(120);

/// One guest kernel as a run used it (run.json `guests`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GuestKernel {
    /// The kernel's name (`debian-6.1`: the image `kernel-debian-6.1`).
    pub name: String,
    /// The kernel image's tag.
    pub image: String,
    /// sha256 of the kernel (`/boot/vmlinuz` of the image), as the manifest records it.
    pub vmlinuz_sha256: String,
    /// sha256 of the kernel's configuration (`/boot/config`).
    pub config_sha256: String,
    /// `uname -r` inside the guest, from the check boot.
    pub release: String,
    /// The guest's transparent huge pages mode (`always`, `madvise`, `never`) at boot.
    pub thp: String,
    /// How the guest's CPU ran.
    pub accel: Accel,
    /// Why KVM was not used (absent device, a boot that did not print in time); empty under KVM.
    #[serde(default)]
    pub accel_note: String,
    /// Guest memory, MiB (`-m`).
    pub memory_mib: u64,
    /// The check boot's time from container start to the guest's first line, ms.
    pub boot_ms: f64,
    /// The kernel image's own deviations (its recipe's `notes`, e.g. a configuration fallback).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// How its guests got the probe image's filesystem: `disk` (an EROFS image on a read-only
    /// virtio disk under a tmpfs overlay) or `initramfs` (the whole filesystem unpacked into
    /// memory; every run before the disk existed).
    #[serde(default)]
    pub root: Way,
    /// sha256 of each probe image's root as this kernel booted it (the EROFS image or the
    /// initramfs), by image name; with `disk`, [`BOOT_INITRAMFS`] names the initramfs of the
    /// init and the kernel's modules.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub roots: BTreeMap<String, String>,
}

/// The key of a disk boot's own initramfs in [`GuestKernel::roots`].
pub const BOOT_INITRAMFS: &str = "(init and modules)";

/// Every kernel the run measures under, and its files on the host.
#[derive(Debug, Clone, Default)]
pub struct Guests {
    /// By kernel name.
    pub kernels: BTreeMap<String, Prepared>,
    /// The initramfs of each probe image, by image name.
    pub roots: BTreeMap<String, Root>,
    /// The `vm` image's tag.
    pub vm_tag: String,
}

/// A kernel ready to boot.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub record: GuestKernel,
    /// The kernel file on the host (bind-mounted into the VM container).
    pub file: PathBuf,
    /// With the disk: the initramfs of the init and the kernel's modules.
    pub boot: Option<RootFile>,
}

/// The kernels this checkout can boot: `host` and every `docker/kernel-<name>/` recipe.
pub fn known(repo: &Path) -> Result<Vec<String>> {
    let mut names = vec![HOST.to_string()];
    for r in recipe::discover(&repo.join("docker"))? {
        if let Some(k) = r.kernel_name() {
            names.push(k.to_string());
        }
    }
    Ok(names)
}

/// Refuses a kernel this checkout does not have, naming the ones it has.
pub fn check_names(kernels: &[String], known: &[String]) -> Result<()> {
    ensure!(
        !kernels.is_empty(),
        "no kernel named: name at least one, e.g. host"
    );
    let mut seen = std::collections::BTreeSet::new();
    for k in kernels {
        ensure!(
            known.contains(k),
            "unknown kernel {k:?}: this checkout has {} (a kernel is a docker/{KERNEL_PREFIX}<name>/ folder)",
            known.join(", ")
        );
        ensure!(seen.insert(k), "kernel {k:?} is named twice");
    }
    Ok(())
}

/// The on-demand images a run under `kernels` needs: the VM image and each kernel's image.
pub fn images_for(kernels: &[String]) -> Vec<String> {
    let guests: Vec<String> = kernels
        .iter()
        .filter(|k| k.as_str() != HOST)
        .map(|k| format!("{KERNEL_PREFIX}{k}"))
        .collect();
    if guests.is_empty() {
        return guests;
    }
    std::iter::once(VM_IMAGE.to_string())
        .chain(guests)
        .collect()
}

/// Whether `name` is the VM image or a kernel image.
pub fn is_guest_image(name: &str) -> bool {
    name == VM_IMAGE
        || name
            .strip_prefix(KERNEL_PREFIX)
            .is_some_and(|k| !k.is_empty())
}

/// Guest memory, MiB: the study's `protocol.guest_memory_mib`, else twice the largest root as an
/// initramfs (an initramfs is unpacked into memory; a root on the disk gets the same memory, so
/// the two ways measure alike) plus 4 KiB per task of the largest scale plus 512 MiB for the
/// kernel and the sampler.
pub fn memory_mib(study: &Study, largest_root: u64) -> u64 {
    if let Some(m) = study.protocol.guest_memory_mib {
        return m;
    }
    let tasks = study.all_scales().into_iter().max().unwrap_or(0);
    2 * largest_root.div_ceil(1 << 20) + (tasks * 4096).div_ceil(1 << 20) + 512
}

/// Makes every kernel of `study` (its probes' `kernel`) ready: checks the kernel and init files
/// against the manifest, writes each probe image's initramfs (cached by image ID), and boots each
/// kernel once to find its acceleration and release.
pub async fn prepare(
    engine: &(impl Containers + Images),
    cache: &Cache,
    manifest: &Manifest,
    study: &Study,
    cancel: &CancellationToken,
) -> Result<Guests> {
    let names: Vec<&str> = study.kernels();
    if names.iter().all(|k| *k == HOST) {
        return Ok(Guests::default());
    }
    let vm = built(manifest, VM_IMAGE)?;
    let init = verified_file(engine, manifest, VM_IMAGE, INIT_IN_VM).await?;
    let dir = cache.root().join("guest");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut guests = Guests {
        vm_tag: vm.tag.clone(),
        ..Guests::default()
    };
    let forced = std::env::var(ROOT_ENV).ok();
    let mut kernels = Vec::new();
    for name in names.into_iter().filter(|k| *k != HOST) {
        let KernelFiles {
            mut record,
            file,
            config,
            modules,
        } = kernel(engine, manifest, &dir, name).await?;
        let names: Vec<String> = modules.iter().map(|(n, _)| n.clone()).collect();
        record.root = root::way(&config, &names, forced.as_deref())?;
        let boot = match record.root {
            Way::Disk => Some(root::boot_initramfs(cache, &init, &modules)?),
            Way::Initramfs => None,
        };
        kernels.push(Prepared { record, file, boot });
    }
    let ways: Vec<Way> = kernels.iter().map(|k| k.record.root).collect();
    for probe in study.probes.iter().filter(|p| p.kernel.is_some()) {
        if guests.roots.contains_key(&probe.image) {
            continue;
        }
        let Some(image) = manifest.get(&probe.image) else {
            continue;
        };
        let root = root::make(engine, cache, image, &ways, &init).await?;
        guests.roots.insert(probe.image.clone(), root);
    }
    let largest = guests
        .roots
        .values()
        .map(Root::initramfs_bytes)
        .max()
        .unwrap_or(0);
    let memory = memory_mib(study, largest);
    for mut k in kernels {
        k.record.memory_mib = memory;
        k.record.roots = roots_of(&k, &guests.roots);
        let name = k.record.name.clone();
        let record = check(engine, &guests.vm_tag, &k, cache, &init, cancel).await?;
        eprintln!(
            "kernel {name}: {} ({}), THP {}, booted in {:.1} s{}",
            record.release,
            record.accel,
            record.thp,
            record.boot_ms / 1000.0,
            if record.accel_note.is_empty() {
                String::new()
            } else {
                format!("; {}", record.accel_note)
            }
        );
        guests.kernels.insert(name, Prepared { record, ..k });
    }
    Ok(guests)
}

/// The sha256 of each root `k` boots, by image name.
fn roots_of(k: &Prepared, roots: &BTreeMap<String, Root>) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = roots
        .iter()
        .filter_map(|(image, r)| {
            let file = match k.record.root {
                Way::Disk => r.disk.as_ref(),
                Way::Initramfs => r.initramfs.as_ref(),
            };
            file.map(|f| (image.clone(), f.sha256.clone()))
        })
        .collect();
    if let Some(boot) = &k.boot {
        out.insert(BOOT_INITRAMFS.to_string(), boot.sha256.clone());
    }
    out
}

/// The deviation a guest kernel brings, in words.
pub fn deviation(k: &GuestKernel, published: &str) -> String {
    let accel = match k.accel {
        Accel::Kvm => "KVM".to_string(),
        Accel::Tcg => format!(
            "TCG, QEMU's emulated CPU, so timed and latency samples are not measured: {}",
            k.accel_note
        ),
    };
    let notes: String = k.notes.iter().map(|n| format!("; {n}")).collect();
    format!(
        "kernel: probes under {} ran in a QEMU VM with {} MiB booted from that guest kernel \
         ({}, THP {}; {accel}), not under the published environment's kernel ({published}){notes}",
        k.name, k.memory_mib, k.release, k.thp
    )
}

/// A resumed run's kernels against those it started with: the same kernel and configuration, run
/// the same way, or an error naming what changed (a cell's processes all run under one kernel).
pub fn same_as_before(before: &[GuestKernel], now: &[GuestKernel]) -> Result<()> {
    for k in now {
        let Some(b) = before.iter().find(|b| b.name == k.name) else {
            continue;
        };
        let changed: Vec<String> = [
            ("root", &b.root.to_string(), &k.root.to_string()),
            ("vmlinuz sha256", &b.vmlinuz_sha256, &k.vmlinuz_sha256),
            ("config sha256", &b.config_sha256, &k.config_sha256),
            ("release", &b.release, &k.release),
            ("acceleration", &b.accel.to_string(), &k.accel.to_string()),
            (
                "memory MiB",
                &b.memory_mib.to_string(),
                &k.memory_mib.to_string(),
            ),
        ]
        .into_iter()
        .filter(|(_, a, b)| a != b)
        .map(|(what, a, b)| format!("{what} {a} then, {b} now"))
        .collect();
        // Only the way the root arrives changed: the same kernel resumes the old way on request.
        let hint = if b.root != k.root && changed.len() == 1 {
            format!(
                "resume with {}={} to boot it as the run started",
                root::ROOT_ENV,
                b.root
            )
        } else {
            "start a new run, or rebuild the kernel it started with".to_string()
        };
        ensure!(
            changed.is_empty(),
            "guest kernel {} is not the one the run started with ({}); its samples would mix two \
             kernels, so nothing more was measured (the samples so far are kept): {hint}",
            k.name,
            changed.join("; ")
        );
    }
    Ok(())
}

fn built<'m>(manifest: &'m Manifest, name: &str) -> Result<&'m crate::images::BuiltImage> {
    manifest
        .get(name)
        .with_context(|| format!("image {name} was not built: run `parkbench build --only {name}`"))
}

/// The bytes of `path` in the image `name`, checked against the sha256 the manifest records.
async fn verified_file(
    engine: &impl Images,
    manifest: &Manifest,
    name: &str,
    path: &str,
) -> Result<Vec<u8>> {
    let image = built(manifest, name)?;
    let want = image.binaries.get(path).with_context(|| {
        format!("the manifest records no sha256 of {path} in image {name}: list it in its binaries")
    })?;
    let bytes = engine.read_file(&image.tag, path).await?;
    let got = digest::bytes(&bytes);
    ensure!(
        &got == want,
        "{path} in image {} has sha256 {got}, but the manifest records {want}; rebuild it \
         (`parkbench build --only {name}`)",
        image.tag
    );
    Ok(bytes)
}

/// A kernel's files, checked against the manifest.
struct KernelFiles {
    /// Its record, without the boot's findings.
    record: GuestKernel,
    /// The kernel on the host.
    file: PathBuf,
    config: String,
    /// Its modules for the disk (file name, bytes), in load order.
    modules: Vec<(String, Vec<u8>)>,
}

/// The kernel `name`'s files, the kernel written into `dir`.
async fn kernel(
    engine: &impl Images,
    manifest: &Manifest,
    dir: &Path,
    name: &str,
) -> Result<KernelFiles> {
    let image_name = format!("{KERNEL_PREFIX}{name}");
    let image = built(manifest, &image_name)?;
    let vmlinuz = verified_file(engine, manifest, &image_name, KERNEL_FILE).await?;
    let config = verified_file(engine, manifest, &image_name, KERNEL_CONFIG).await?;
    let mut modules = Vec::new();
    // The manifest's map is sorted by path: the modules come in load order.
    for path in image.binaries.keys() {
        if let Some(file) = path.strip_prefix(MODULES_IN_KERNEL) {
            let bytes = verified_file(engine, manifest, &image_name, path).await?;
            modules.push((file.to_string(), bytes));
        }
    }
    let sha = digest::bytes(&vmlinuz);
    let file = dir.join(format!("vmlinuz-{sha}"));
    if !file.exists() {
        crate::files::write_atomic(&file, &vmlinuz)?;
    }
    let record = GuestKernel {
        name: name.to_string(),
        image: image.tag.clone(),
        vmlinuz_sha256: sha,
        config_sha256: digest::bytes(&config),
        release: String::new(),
        thp: String::new(),
        accel: Accel::Tcg,
        accel_note: String::new(),
        memory_mib: 0,
        boot_ms: 0.0,
        notes: image.notes.clone(),
        root: Way::Initramfs,
        roots: BTreeMap::new(),
    };
    Ok(KernelFiles {
        record,
        file,
        config: String::from_utf8_lossy(&config).into_owned(),
        modules,
    })
}

/// Boots the kernel `k` with an empty root, the way its cells boot (so a disk it cannot mount
/// stops the run here): under KVM when it works, else TCG; fills in what the guest printed.
async fn check(
    engine: &impl Containers,
    vm_tag: &str,
    k: &Prepared,
    cache: &Cache,
    init: &[u8],
    cancel: &CancellationToken,
) -> Result<GuestKernel> {
    let mut record = k.record.clone();
    let (init_only, empty_disk);
    let root = match &k.boot {
        Some(boot) => {
            empty_disk = root::empty_disk(cache)?;
            qemu::RootFiles::Disk {
                initramfs: &boot.file,
                image: &empty_disk.file,
            }
        }
        None => {
            init_only = root::boot_initramfs(cache, init, &[])?;
            qemu::RootFiles::Initramfs(&init_only.file)
        }
    };
    let kvm = Path::new("/dev/kvm");
    let mut tries = Vec::new();
    if kvm.exists() {
        tries.push((Accel::Kvm, KVM_CHECK));
    } else {
        record.accel_note = "no /dev/kvm on this host".into();
    }
    tries.push((Accel::Tcg, TCG_CHECK));
    for (accel, timeout) in tries {
        let boot = qemu::Boot {
            vm_tag,
            kernel: &k.file,
            root,
            accel,
            // The cells' memory: the kernel turns THP off below 512 MiB, so less would misreport it.
            memory_mib: record.memory_mib,
            host_cpus: &[],
            argv: &[],
            env: &[],
            thp: None,
            timeout,
        };
        let started = Instant::now();
        let outcome = match engine.run(&boot.spec(), cancel).await {
            Ok(outcome) => outcome,
            // The Engine may refuse the KVM device (a remote or rootless daemon): then TCG.
            Err(e) if accel == Accel::Kvm => {
                record.accel_note = format!("the Engine could not start a KVM guest: {e:#}");
                continue;
            }
            Err(e) => return Err(e),
        };
        let console = Console::read(&outcome.stdout);
        if let Some(line) = console.guest {
            record.accel = accel;
            record.release = line.kernel_release;
            record.thp = line.thp;
            record.boot_ms = started.elapsed().as_secs_f64() * 1000.0;
            return Ok(record);
        }
        if outcome.interrupted {
            bail!("interrupted while booting kernel {}", record.name);
        }
        let why = format!(
            "a {accel} boot of kernel {} {} (console: {})",
            record.name,
            if outcome.timed_out {
                format!("printed nothing within {} s", timeout.as_secs())
            } else {
                format!(
                    "ended without the guest's line (exit {})",
                    outcome
                        .exit_code
                        .map_or("unknown".into(), |c| c.to_string())
                )
            },
            console.tail(&outcome.stderr)
        );
        if accel == Accel::Tcg {
            if record.root == root::Way::Disk {
                bail!(
                    "{why}; the kernel could not boot with the image's filesystem on a virtio disk: \
                     try `{}=initramfs` (the whole filesystem as the initramfs) to tell the disk from \
                     the kernel",
                    root::ROOT_ENV
                );
            }
            bail!("{why}; the kernel cannot run here");
        }
        record.accel_note = why.replace('\n', " ");
    }
    unreachable!("the TCG try returns or fails")
}

#[cfg(test)]
mod prepare_tests;

#[cfg(test)]
mod tests {
    use super::*;

    fn record(name: &str) -> GuestKernel {
        GuestKernel {
            name: name.into(),
            image: format!("parkbench/kernel-{name}:0123456789abcdef"),
            vmlinuz_sha256: "a".repeat(64),
            config_sha256: "b".repeat(64),
            release: "6.1.0-57-amd64".into(),
            thp: "always".into(),
            accel: Accel::Tcg,
            accel_note: "no /dev/kvm".into(),
            memory_mib: 2048,
            boot_ms: 9000.0,
            notes: Vec::new(),
            root: Way::Disk,
            roots: BTreeMap::new(),
        }
    }

    #[test]
    fn a_resume_under_another_build_of_a_kernel_is_refused_and_says_what_changed() {
        let before = [record("debian-6.1")];
        // A first run, a resume under the same kernel, a kernel the run did not have before.
        same_as_before(&[], &before).unwrap();
        same_as_before(&before, &before).unwrap();
        same_as_before(&before, &[record("wsl-like")]).unwrap();
        let mut other = record("debian-6.1");
        other.vmlinuz_sha256 = "c".repeat(64);
        other.accel = Accel::Kvm;
        let err = format!("{:#}", same_as_before(&before, &[other]).unwrap_err());
        assert!(err.contains("guest kernel debian-6.1"), "{err}");
        assert!(
            err.contains(&format!("vmlinuz sha256 {} then", "a".repeat(64))),
            "{err}"
        );
        assert!(err.contains("acceleration tcg then, kvm now"), "{err}");
        assert!(err.contains("the samples so far are kept"), "{err}");
    }

    #[test]
    fn the_deviation_names_the_kernel_its_mode_and_the_kernel_image_notes() {
        let mut k = record("wsl-like");
        let plain = deviation(&k, "WSL2 Linux 6.6.87.2");
        assert!(plain.contains("under wsl-like"), "{plain}");
        assert!(plain.contains("THP always; TCG"), "{plain}");
        assert!(plain.ends_with("(WSL2 Linux 6.6.87.2)"), "{plain}");
        k.notes = vec!["a fallback configuration".into()];
        let noted = deviation(&k, "WSL2 Linux 6.6.87.2");
        assert!(
            noted.ends_with("(WSL2 Linux 6.6.87.2); a fallback configuration"),
            "{noted}"
        );
    }
}
