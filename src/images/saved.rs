//! The Engine's save format (an exported image file, `images/<name>.tar` in an archive), read as the
//! untrusted input it is: every member is checked in one pass (through the one tar reader,
//! [`tarball::read`]) before anything is loaded, and what is loaded is a copy, written in that same
//! pass from the checked names, kinds, modes and data (never from the file's own headers), whose
//! only tag is one the kit chose ([`quarantine`]).
//!
//! What an image file may hold, and all it may hold:
//! - `manifest.json`: one entry, `{Config, RepoTags, Layers}` (and `LayerSources`);
//! - the older layout (Engines before 25): `<64 hex>.json`, the image's configuration, whose sha256 is
//!   its name (the image ID); `<64 hex>/` with `VERSION`, `json` and `layer.tar` for each layer, where a
//!   `layer.tar` may be a symbolic link to another layer's (`../<64 hex>/layer.tar`), as the Engine
//!   writes a repeated layer; `repositories`, the tags again, left out of the loaded copy;
//! - Podman's form of the older layout: each layer as `<64 hex>.tar`, named by its own sha256 (which
//!   it must hash to), the layers' `layer.tar` links to it (`../<64 hex>.tar`);
//! - the OCI layout (Engines from 25 on): `oci-layout`, `index.json` (its image names are rewritten in
//!   the copy), and `blobs/sha256/<64 hex>`, each of which must hash to its name.
//!
//! Anything else — a second `manifest.json`, a member twice, an absolute or `..` path, a device, a
//! link anywhere but a layer or to a member that is not there, a configuration or blob that does not
//! hash to its name — refuses the file: a load would act on members the check did not see.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{BufReader, BufWriter, Read};
use std::path::Path;

use anyhow::{Context, Result, bail, ensure};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tar::EntryType;

use crate::files::tarball;

/// The most a `manifest.json` or `index.json` may hold: a few hundred bytes per image.
const INDEX_MAX: u64 = 1 << 20;

/// What a checked image file holds.
#[derive(Debug, Clone, PartialEq)]
pub struct SavedImage {
    /// The image ID: sha256 of its configuration, hex.
    pub id: String,
    /// The tags its `manifest.json` names (and would set on a plain load).
    pub tags: Vec<String>,
    /// Its layers, in order, as members (`<64 hex>/layer.tar`, or `blobs/sha256/<64 hex>`).
    pub layers: Vec<String>,
}

/// One entry of `manifest.json`, as the Engine writes it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    #[serde(rename = "Config")]
    config: String,
    #[serde(rename = "RepoTags", default)]
    repo_tags: Option<Vec<String>>,
    #[serde(rename = "Layers")]
    layers: Vec<String>,
    #[serde(
        rename = "LayerSources",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    layer_sources: Option<serde_json::Value>,
}

/// Reads every member of `file` and checks it against the format above; never writes anything.
pub fn inspect(file: &Path) -> Result<SavedImage> {
    Pass::new(file).run(None)
}

/// Checks `file` as [`inspect`] does and, in the same pass, writes to `out` a copy whose
/// `manifest.json` (and `index.json`) name `tag` alone and which has no `repositories`: loading the
/// copy sets that tag and no other. `out` is removed again when the file is refused. What is
/// returned is the file as read (its own tags), so that one pass serves both the check and the copy.
pub fn quarantine(file: &Path, tag: &str, out: &Path) -> Result<SavedImage> {
    let writer =
        BufWriter::new(File::create(out).with_context(|| format!("creating {}", out.display()))?);
    let mut copy = tar::Builder::new(writer);
    copy.follow_symlinks(false);
    let result = Pass::new(file)
        .run(Some((tag, &mut copy)))
        .and_then(|image| {
            copy.into_inner()?
                .into_inner()
                .map_err(|e| e.into_error())
                .with_context(|| format!("writing {}", out.display()))?;
            Ok(image)
        });
    if result.is_err() {
        let _ = std::fs::remove_file(out);
    }
    result
}

/// One pass over an image file: what it has seen so far.
struct Pass<'a> {
    file: &'a Path,
    seen: BTreeSet<String>,
    /// Regular files, by name.
    files: BTreeSet<String>,
    /// Links, name → target, resolved once every member is seen.
    links: BTreeMap<String, String>,
    /// Members whose name is their sha256 (configurations, blobs): name → the hash itself.
    hashed: BTreeMap<String, String>,
    manifest: Option<Vec<Entry>>,
    index: Option<serde_json::Value>,
}

type Copy<'c> = (&'c str, &'c mut tar::Builder<BufWriter<File>>);

impl<'a> Pass<'a> {
    fn new(file: &'a Path) -> Self {
        Pass {
            file,
            seen: BTreeSet::new(),
            files: BTreeSet::new(),
            links: BTreeMap::new(),
            hashed: BTreeMap::new(),
            manifest: None,
            index: None,
        }
    }

    fn run(mut self, mut copy: Option<Copy<'_>>) -> Result<SavedImage> {
        let shown = self.file.display().to_string();
        let reader =
            BufReader::new(File::open(self.file).with_context(|| format!("opening {shown}"))?);
        tarball::read(reader, |member| {
            self.member(member, copy.as_mut().map(|(_, c)| &mut **c))
        })
        .with_context(|| format!("{shown}: refused before loading"))?;
        let image = self.image(&shown)?;
        if let Some((tag, copy)) = copy {
            self.write_indexes(tag, copy)?;
        }
        Ok(image)
    }

    /// Checks one member and, for a copy, writes it (the indexes are written last, rewritten): from
    /// the checked name, kind, mode and data, never from the file's own header.
    fn member(
        &mut self,
        entry: tarball::Member<'_>,
        copy: Option<&mut tar::Builder<BufWriter<File>>>,
    ) -> Result<()> {
        let name = entry.path.trim_end_matches('/').to_string();
        ensure!(
            self.seen.insert(name.clone()),
            "the member {name} is there twice; a load would take the last one, which a check \
             might not see: the file was altered"
        );
        let kind = entry.kind;
        if let Some(target) = member_allowed(&name, kind, entry.link.as_deref())? {
            self.links.insert(name.clone(), target);
        }
        if kind == EntryType::Regular {
            self.files.insert(name.clone());
        }
        match (name.as_str(), kind) {
            ("manifest.json", _) => {
                self.manifest = Some(serde_json::from_str(&small(entry, &name)?)?)
            }
            ("index.json", _) => self.index = Some(serde_json::from_str(&small(entry, &name)?)?),
            ("repositories", _) => {}
            (_, EntryType::Regular) => {
                let mut hashing = Hashing::new(entry.data);
                match copy {
                    Some(c) => {
                        let mut header = tarball::header(kind, entry.mode & 0o777, entry.size);
                        c.append_data(&mut header, &name, &mut hashing)
                            .with_context(|| format!("writing the copy's {name}"))?;
                    }
                    None => {
                        std::io::copy(&mut hashing, &mut std::io::sink())?;
                    }
                }
                let sha = hex::encode(hashing.hasher.finalize());
                if let Some(want) = self_named(&name) {
                    ensure!(
                        sha == want,
                        "{name} has sha256 {sha}, not its name: the file was altered"
                    );
                    self.hashed.insert(name, sha);
                }
            }
            (_, EntryType::Directory) => {
                if let Some(c) = copy {
                    let mut header = tarball::header(kind, 0o755, 0);
                    c.append_data(&mut header, format!("{name}/"), std::io::empty())
                        .with_context(|| format!("writing the copy's {name}/"))?;
                }
            }
            (_, _) => {
                if let (Some(c), Some(target)) = (copy, entry.link.as_deref()) {
                    let mut header = tarball::header(kind, 0o777, 0);
                    c.append_link(&mut header, &name, target)
                        .with_context(|| format!("writing the copy's {name}"))?;
                }
            }
        }
        Ok(())
    }

    /// The one image `manifest.json` names, checked against the members the file holds: its
    /// configuration and every layer, and every link's target.
    fn image(&mut self, shown: &str) -> Result<SavedImage> {
        for (link, target) in &self.links {
            // The form is checked already: `../<64 hex>/layer.tar` or `../<64 hex>.tar`, beside
            // the link's own folder.
            let resolved = target.trim_start_matches("../");
            ensure!(
                self.files.contains(resolved),
                "{shown}: the link {link} points at {target}, which is no file of it: the file \
                 was altered"
            );
        }
        let Some(mut entries) = self.manifest.take() else {
            bail!("{shown}: no manifest.json: not an image exported by the Engine")
        };
        ensure!(
            entries.len() == 1,
            "{shown}: manifest.json has {} entries; an archive's image file holds exactly one image",
            entries.len()
        );
        let entry = entries.remove(0);
        // A configuration, never a layer: `<64 hex>.json` or an OCI blob.
        let configuration = Some(&entry.config).filter(|c| !c.ends_with(".tar"));
        let id = configuration.and_then(|c| self_named(c)).with_context(|| {
            format!(
                "{shown}: manifest.json names the configuration {:?}",
                entry.config
            )
        })?;
        ensure!(
            self.hashed.contains_key(&entry.config),
            "{shown}: manifest.json names {}, which the file does not hold",
            entry.config
        );
        for layer in &entry.layers {
            ensure!(
                self.files.contains(layer) || self.links.contains_key(layer),
                "{shown}: manifest.json names the layer {layer}, which the file does not hold"
            );
        }
        let image = SavedImage {
            id: id.to_string(),
            tags: entry.repo_tags.clone().unwrap_or_default(),
            layers: entry.layers.clone(),
        };
        self.manifest = Some(vec![entry]);
        Ok(image)
    }

    /// Writes the copy's `manifest.json` naming `tag` alone, and its `index.json` (if any) whose image
    /// names are `tag` too.
    fn write_indexes(&mut self, tag: &str, copy: &mut tar::Builder<BufWriter<File>>) -> Result<()> {
        let mut entries = self.manifest.take().unwrap_or_default();
        for e in &mut entries {
            e.repo_tags = Some(vec![tag.to_string()]);
        }
        append(copy, "manifest.json", &serde_json::to_vec(&entries)?)?;
        if let Some(mut index) = self.index.take() {
            let reference = tag.rsplit_once(':').map_or(tag, |(_, r)| r);
            for m in index["manifests"].as_array_mut().into_iter().flatten() {
                if let Some(a) = m.get_mut("annotations").and_then(|a| a.as_object_mut()) {
                    a.retain(|k, _| {
                        k != "io.containerd.image.name" && k != "org.opencontainers.image.ref.name"
                    });
                    a.insert("io.containerd.image.name".into(), tag.into());
                    a.insert("org.opencontainers.image.ref.name".into(), reference.into());
                }
            }
            append(copy, "index.json", &serde_json::to_vec(&index)?)?;
        }
        Ok(())
    }
}

/// A member small enough to read whole (an index), as text.
fn small(entry: tarball::Member<'_>, name: &str) -> Result<String> {
    ensure!(
        entry.kind == EntryType::Regular && entry.size <= INDEX_MAX,
        "{name} is larger than {INDEX_MAX} bytes: not an index of one image"
    );
    let mut text = String::new();
    entry.data.take(INDEX_MAX).read_to_string(&mut text)?;
    Ok(text)
}

fn append(copy: &mut tar::Builder<BufWriter<File>>, name: &str, data: &[u8]) -> Result<()> {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(EntryType::Regular);
    header.set_mode(0o644);
    header.set_size(data.len() as u64);
    copy.append_data(&mut header, name, data)
        .with_context(|| format!("writing the copy's {name}"))
}

/// A reader that hashes what passes through it.
struct Hashing<R> {
    inner: R,
    hasher: Sha256,
}

impl<R: Read> Hashing<R> {
    fn new(inner: R) -> Self {
        Hashing {
            inner,
            hasher: Sha256::new(),
        }
    }
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

/// The hash a member's name says it has: `<64 hex>.json` (a configuration), `<64 hex>.tar` (a layer,
/// as Podman names it) or `blobs/sha256/<64 hex>`.
fn self_named(name: &str) -> Option<&str> {
    name.strip_suffix(".json")
        .or_else(|| name.strip_suffix(".tar"))
        .filter(|h| is_hex64(h))
        .or_else(|| name.strip_prefix("blobs/sha256/").filter(|h| is_hex64(h)))
}

/// Whether one member may be in an image file (see the module docs); a link's target when it is
/// one (checked against the members once all are seen).
fn member_allowed(name: &str, kind: EntryType, link: Option<&str>) -> Result<Option<String>> {
    let parts: Vec<&str> = name.split('/').collect();
    let allowed = match (kind, parts.as_slice()) {
        (EntryType::Directory, [dir]) => is_hex64(dir) || *dir == "blobs",
        (EntryType::Directory, ["blobs", "sha256"]) => true,
        (EntryType::Regular, ["manifest.json" | "repositories" | "index.json" | "oci-layout"]) => {
            true
        }
        (EntryType::Regular, [file]) => self_named(file).is_some(),
        (EntryType::Regular, [dir, "VERSION" | "json" | "layer.tar"]) => is_hex64(dir),
        (EntryType::Regular, ["blobs", "sha256", blob]) => is_hex64(blob),
        (EntryType::Symlink, [dir, "layer.tar"]) if is_hex64(dir) => {
            let target = link.map(str::to_string);
            let ok = target.as_deref().is_some_and(|t| {
                matches!(t.split('/').collect::<Vec<_>>().as_slice(),
                    ["..", other, "layer.tar"] if is_hex64(other))
                    || matches!(t.split('/').collect::<Vec<_>>().as_slice(),
                    ["..", layer] if layer.strip_suffix(".tar").is_some_and(is_hex64))
            });
            ensure!(
                ok,
                "the link {name} points at {target:?}, not at another layer's layer.tar or a \
                 layer file"
            );
            return Ok(target);
        }
        _ => false,
    };
    ensure!(
        allowed,
        "the member {name:?} ({kind:?}) is not part of an image file of the Engine's save format"
    );
    Ok(None)
}

fn is_hex64(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests;
