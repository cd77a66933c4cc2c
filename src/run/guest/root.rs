//! The guest's root: how a kernel's guests get a probe image's filesystem, and the files that
//! carry it, made deterministically from the image's export and cached on the host.
//!
//! A kernel boots from the **disk** when it can mount one: its configuration has virtio PCI,
//! virtio block, EROFS and overlayfs, built in or as modules its image ships under
//! [`MODULES_IN_KERNEL`]. Then the image's filesystem is an EROFS image on a read-only virtio disk
//! (`images::erofs`), and the initramfs holds only the guest's init and those modules. Otherwise
//! (or with [`ROOT_ENV`]`=initramfs`) the whole filesystem is the initramfs (`images::initramfs`).
//! Either way the tree is the same, and each file's sha256 is written beside it when it is made
//! and checked whenever a run uses it: a cached root changed since is refused.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail, ensure};
use serde::{Deserialize, Serialize};

use crate::engine::Images;
use crate::files::digest;
use crate::files::write_atomic;
use crate::images::cache::Cache;
use crate::images::{BuiltImage, erofs, initramfs};

/// Where a kernel image keeps the modules its guests load to reach the disk, loaded in name
/// order (`10-virtio_ring.ko`, …); each is listed in the image's `binaries`.
pub const MODULES_IN_KERNEL: &str = "/boot/modules/";
/// Where the guest's init finds them in its initramfs (`docker/vm/guest-init.c`).
const MODULES: &str = "/parkbench-modules";
/// Selects how guests get their root: `initramfs` boots every kernel the way it did before the
/// disk existed (whole filesystem as the initramfs), for comparing the two (`just bench-guest`).
pub const ROOT_ENV: &str = "PARKBENCH_GUEST_ROOT";
/// What a kernel needs, built in (`=y`) or as a module (`=m`), to boot from the disk.
const DISK_NEEDS: [&str; 4] = [
    "CONFIG_VIRTIO_PCI",
    "CONFIG_VIRTIO_BLK",
    "CONFIG_EROFS_FS",
    "CONFIG_OVERLAY_FS",
];

/// How a kernel's guests get the probe image's filesystem (run.json `guests[].root`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Way {
    /// The whole filesystem as the initramfs, unpacked into the guest's memory at boot.
    #[default]
    Initramfs,
    /// An EROFS image on a read-only virtio disk under a tmpfs overlay; a small initramfs with
    /// the init and the kernel's modules for it.
    Disk,
}

impl std::fmt::Display for Way {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Way::Initramfs => "initramfs",
            Way::Disk => "disk",
        })
    }
}

/// The way a kernel with `config` and `modules` (file names under [`MODULES_IN_KERNEL`]) boots; `forced`
/// is [`ROOT_ENV`]'s value.
pub fn way(config: &str, modules: &[String], forced: Option<&str>) -> Result<Way> {
    match forced {
        None | Some("") => {}
        Some("initramfs") => return Ok(Way::Initramfs),
        Some("disk") => {}
        Some(other) => bail!("{ROOT_ENV}={other:?}: say initramfs, or disk (the default)"),
    }
    let value = |name: &str| {
        config.lines().find_map(|l| {
            l.strip_prefix(name)
                .and_then(|rest| rest.strip_prefix('='))
                .map(str::trim)
        })
    };
    let values: Vec<Option<&str>> = DISK_NEEDS.iter().map(|n| value(n)).collect();
    let all_there = values.iter().all(|v| matches!(v, Some("y" | "m")));
    let as_modules = values.contains(&Some("m"));
    Ok(if all_there && (!as_modules || !modules.is_empty()) {
        Way::Disk
    } else {
        Way::Initramfs
    })
}

/// One file a guest boots from, as made and checked.
#[derive(Debug, Clone)]
pub struct RootFile {
    pub file: PathBuf,
    /// sha256 of the file, checked against the one written when it was made.
    pub sha256: String,
    /// Its size, bytes.
    pub bytes: u64,
    /// The size of the same tree as an initramfs, bytes (for an initramfs, its own size): guest
    /// memory is sized on it, so that both ways boot with the memory the initramfs always had.
    pub initramfs_bytes: u64,
}

/// A probe image's filesystem in the forms the run's kernels boot.
#[derive(Debug, Clone, Default)]
pub struct Root {
    /// As an initramfs (cpio), when a kernel boots that way.
    pub initramfs: Option<RootFile>,
    /// As an EROFS disk image, when a kernel boots from the disk.
    pub disk: Option<RootFile>,
    /// The image's environment, which a container from it would start with.
    pub env: Vec<String>,
}

impl Root {
    /// The size of its filesystem as an initramfs, bytes (guest memory is sized on it).
    pub fn initramfs_bytes(&self) -> u64 {
        [&self.initramfs, &self.disk]
            .into_iter()
            .flatten()
            .map(|f| f.initramfs_bytes)
            .max()
            .unwrap_or(0)
    }
}

/// The probe image `image`'s root in the forms of `ways`, from its export (read once, whichever
/// form is missing), cached by image ID (and by the init, for the initramfs, which holds it).
pub async fn make(
    engine: &impl Images,
    cache: &Cache,
    image: &BuiltImage,
    ways: &[Way],
    init: &[u8],
) -> Result<Root> {
    let dir = dir(cache)?;
    let key = |what: &str| digest::bytes(what.as_bytes())[..32].to_string();
    let cpio = ways.contains(&Way::Initramfs).then(|| {
        let k = format!("{} {} {}", initramfs::LAYOUT, image.id, digest::bytes(init));
        dir.join(format!("root-{}.cpio", key(&k)))
    });
    // The disk holds the tree the initramfs layout makes, and records the initramfs's size (the
    // init's included) for the guest's memory: both are in its key.
    let disk = ways.contains(&Way::Disk).then(|| {
        let k = format!(
            "erofs {} {} {} {}",
            erofs::LAYOUT,
            initramfs::LAYOUT,
            image.id,
            digest::bytes(init)
        );
        dir.join(format!("root-{}.erofs", key(&k)))
    });
    let missing = [&cpio, &disk].into_iter().flatten().any(|f| !made(f));
    if missing {
        let started = Instant::now();
        let scratch = cache.scratch()?;
        let export = scratch.path().join("export.tar");
        engine.export_filesystem(&image.tag, &export).await?;
        let extra = [initramfs::Extra {
            path: super::INIT,
            mode: 0o755,
            data: init,
        }];
        // The export is read once: the disk holds the image's tree, the initramfs that tree and
        // the init, whose size the disk records too (it sizes the guest's memory).
        let image_tree = initramfs::tree(&export, &[])
            .with_context(|| format!("reading the filesystem of image {}", image.name))?;
        let with_init = initramfs::with_extras(image_tree.clone(), &extra)?;
        if let Some(file) = cpio.as_ref().filter(|f| !made(f)) {
            let written = initramfs::write_members(&export, &with_init, file)
                .with_context(|| format!("making the initramfs of image {}", image.name))?;
            record(file, &written.sha256, written.bytes)?;
        }
        if let Some(file) = disk.as_ref().filter(|f| !made(f)) {
            let written = erofs::write_members(&export, &image_tree, file)
                .with_context(|| format!("making the disk image of image {}", image.name))?;
            record(file, &written.sha256, initramfs::size_of(&with_init))?;
        }
        eprintln!(
            "guest root of {} written in {:.1} s",
            image.name,
            started.elapsed().as_secs_f64()
        );
    }
    let env = engine
        .image(&image.tag)
        .await?
        .map(|f| f.env)
        .unwrap_or_default();
    Ok(Root {
        initramfs: cpio.as_deref().map(checked).transpose()?,
        disk: disk.as_deref().map(checked).transpose()?,
        env,
    })
}

/// The initramfs of a boot from the disk: the init and the kernel's `modules` (name, bytes) in
/// [`MODULES`]. Without modules it is the init alone: also the check boot's initramfs when the
/// whole filesystem is the initramfs.
pub fn boot_initramfs(
    cache: &Cache,
    init: &[u8],
    modules: &[(String, Vec<u8>)],
) -> Result<RootFile> {
    let mut key = format!("{} {}", initramfs::LAYOUT, digest::bytes(init));
    for (name, bytes) in modules {
        key.push_str(&format!(" {name} {}", digest::bytes(bytes)));
    }
    let file = dir(cache)?.join(format!(
        "boot-{}.cpio",
        &digest::bytes(key.as_bytes())[..32]
    ));
    if !made(&file) {
        let scratch = cache.scratch()?;
        let tar = scratch.path().join("boot.tar");
        let mut builder =
            tar::Builder::new(std::fs::File::create(&tar).context("creating a boot tar")?);
        if !modules.is_empty() {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(tar::EntryType::Directory);
            h.set_mode(0o755);
            h.set_uid(0);
            h.set_gid(0);
            h.set_mtime(0);
            h.set_size(0);
            builder
                .append_data(&mut h, &MODULES[1..], std::io::empty())
                .context("writing a boot tar")?;
        }
        builder.into_inner().context("writing a boot tar")?;
        let paths: Vec<String> = modules
            .iter()
            .map(|(name, _)| format!("{MODULES}/{name}"))
            .collect();
        let mut extras = vec![initramfs::Extra {
            path: super::INIT,
            mode: 0o755,
            data: init,
        }];
        for ((_, bytes), path) in modules.iter().zip(&paths) {
            extras.push(initramfs::Extra {
                path,
                mode: 0o644,
                data: bytes,
            });
        }
        let written = initramfs::write(&tar, &extras, &file)?;
        record(&file, &written.sha256, written.bytes)?;
    }
    checked(&file)
}

/// An EROFS image of the empty tree (mount points only), for the check boot from the disk.
pub fn empty_disk(cache: &Cache) -> Result<RootFile> {
    let file = dir(cache)?.join(format!(
        "empty-{}-{}.erofs",
        erofs::LAYOUT,
        initramfs::LAYOUT
    ));
    if !made(&file) {
        let scratch = cache.scratch()?;
        let tar = scratch.path().join("empty.tar");
        tar::Builder::new(std::fs::File::create(&tar).context("creating an empty tar")?)
            .into_inner()
            .context("writing an empty tar")?;
        let tree = initramfs::tree(&tar, &[])?;
        let written = erofs::write_members(&tar, &tree, &file)?;
        record(&file, &written.sha256, initramfs::size_of(&tree))?;
    }
    checked(&file)
}

/// The cache's folder of guest files, made when missing.
fn dir(cache: &Cache) -> Result<PathBuf> {
    let dir = cache.root().join("guest");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

/// Whether `file` was made whole: the sha256 beside it is written last.
fn made(file: &Path) -> bool {
    file.exists() && sidecar(file).exists()
}

fn sidecar(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".sha256");
    PathBuf::from(name)
}

/// Writes beside `file` the sha256 it had when it was made and the size of its tree as an
/// initramfs.
fn record(file: &Path, sha256: &str, initramfs_bytes: u64) -> Result<()> {
    let text = format!("{sha256}\n{initramfs_bytes}\n");
    write_atomic(&sidecar(file), text.as_bytes())
}

/// `file` with its sha256, refused when it differs from the one written when it was made.
pub fn checked(file: &Path) -> Result<RootFile> {
    let side = sidecar(file);
    let text = std::fs::read_to_string(&side).with_context(|| {
        format!(
            "reading {} (the sha256 of {} when made)",
            side.display(),
            file.display()
        )
    })?;
    let mut lines = text.lines();
    let want = lines.next().unwrap_or_default();
    let initramfs_bytes = lines.next().and_then(|n| n.parse().ok());
    let initramfs_bytes = initramfs_bytes
        .with_context(|| format!("{}: no initramfs size on its second line", side.display()))?;
    let sha256 = digest::file(file)?;
    ensure!(
        sha256 == want,
        "the guest root {} has sha256 {sha256}, but {want} when it was made: it was changed \
         since, so it is not booted; remove it and its .sha256 to have it made again",
        file.display(),
    );
    let bytes = std::fs::metadata(file)
        .with_context(|| format!("reading {}", file.display()))?
        .len();
    Ok(RootFile {
        file: file.to_path_buf(),
        sha256,
        bytes,
        initramfs_bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEBIAN: &str = "CONFIG_VIRTIO_PCI=m\nCONFIG_VIRTIO_BLK=m\n# CONFIG_X is not set\n\
                          CONFIG_EROFS_FS=m\nCONFIG_EROFS_FS_ZIP=y\nCONFIG_OVERLAY_FS=m\n";

    #[test]
    fn a_kernel_boots_from_the_disk_only_when_it_can_mount_it() {
        let modules = vec![format!("{MODULES_IN_KERNEL}10-virtio_ring.ko")];
        assert_eq!(way(DEBIAN, &modules, None).unwrap(), Way::Disk);
        assert_eq!(
            way(DEBIAN, &[], None).unwrap(),
            Way::Initramfs,
            "modules the image does not ship"
        );
        let built_in = DEBIAN.replace("=m", "=y");
        assert_eq!(way(&built_in, &[], None).unwrap(), Way::Disk);
        let no_erofs = built_in.replace("CONFIG_EROFS_FS=y\n", "# CONFIG_EROFS_FS is not set\n");
        assert_eq!(way(&no_erofs, &[], None).unwrap(), Way::Initramfs);
        let forced = way(DEBIAN, &modules, Some("initramfs")).unwrap();
        assert_eq!(forced, Way::Initramfs);
        let err = way(DEBIAN, &modules, Some("9p")).unwrap_err().to_string();
        assert!(err.contains(ROOT_ENV) && err.contains("\"9p\""), "{err}");
    }

    #[test]
    fn the_boot_initramfs_is_the_same_bytes_for_the_same_modules_and_another_for_others() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = Cache::open(tmp.path()).unwrap();
        let modules = vec![("10-a.ko".to_string(), b"module a".to_vec())];
        let a = boot_initramfs(&cache, b"init", &modules).unwrap();
        std::fs::remove_file(&a.file).unwrap();
        let again = boot_initramfs(&cache, b"init", &modules).unwrap();
        assert_eq!((&a.sha256, a.bytes), (&again.sha256, again.bytes));
        let other = vec![("10-a.ko".to_string(), b"module A".to_vec())];
        let b = boot_initramfs(&cache, b"init", &other).unwrap();
        assert_ne!(a.sha256, b.sha256);
        assert_ne!(a.file, b.file);
    }

    #[test]
    fn a_root_changed_after_it_was_made_is_refused_with_both_hashes() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = Cache::open(tmp.path()).unwrap();
        let disk = empty_disk(&cache).unwrap();
        assert_eq!(disk.sha256, digest::file(&disk.file).unwrap());
        let mut bytes = std::fs::read(&disk.file).unwrap();
        bytes[2000] ^= 1;
        std::fs::write(&disk.file, &bytes).unwrap();
        let err = format!("{:#}", checked(&disk.file).unwrap_err());
        assert!(
            err.contains(&disk.sha256) && err.contains("it was changed since"),
            "{err}"
        );
        assert!(err.contains(&digest::bytes(&bytes)), "{err}");
        let err = format!("{:#}", empty_disk(&cache).unwrap_err());
        assert!(
            err.contains("it was changed since"),
            "a cached one too: {err}"
        );
    }
}
