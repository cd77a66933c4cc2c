//! The Engine's save format (an exported image file, `images/<name>.tar` in an archive), read as the
//! untrusted input it is: every member is checked before anything is loaded, and what is loaded is a
//! copy whose only tag is one the kit chose ([`quarantine`]).
//!
//! What a file of this Engine's save format holds, and all it may hold:
//! - `manifest.json`: one entry, `{Config, RepoTags, Layers}`;
//! - `<64 hex>.json`: the image's configuration, whose sha256 is its name (the image ID);
//! - `<64 hex>/` with `VERSION`, `json` and `layer.tar` for each layer; a `layer.tar` may be a
//!   symbolic link to another layer's (`../<64 hex>/layer.tar`), as the Engine writes a repeated layer;
//! - `repositories`: the tags again, in the older form. It is left out of the loaded copy.
//!
//! Anything else — a second `manifest.json`, a member twice, an absolute or `..` path, a device, a
//! link anywhere but a layer — refuses the file: a load would act on members the check did not see.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read};
use std::path::Path;

use anyhow::{Context, Result, bail, ensure};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tar::EntryType;

/// What a checked image file holds.
#[derive(Debug, Clone, PartialEq)]
pub struct SavedImage {
    /// The image ID: sha256 of its configuration, hex.
    pub id: String,
    /// The tags its `manifest.json` names (and would set on a plain load).
    pub tags: Vec<String>,
    /// Its layers, in order, as members (`<64 hex>/layer.tar`).
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
}

/// Reads every member of `file` and checks it against the format above; never writes anything.
pub fn inspect(file: &Path) -> Result<SavedImage> {
    let shown = file.display();
    let reader = BufReader::new(File::open(file).with_context(|| format!("opening {shown}"))?);
    let mut tar = tar::Archive::new(reader);
    let mut seen = BTreeSet::new();
    let mut manifest: Option<Vec<Entry>> = None;
    let mut configs: Vec<(String, String)> = Vec::new();
    let mut files = BTreeSet::new();
    for entry in tar.entries().with_context(|| format!("reading {shown}"))? {
        let mut entry = entry.with_context(|| format!("reading {shown}"))?;
        let name = String::from_utf8(entry.path_bytes().into_owned())
            .map_err(|_| anyhow::anyhow!("{shown}: a member's name is not UTF-8"))?;
        let name = name.trim_end_matches('/').to_string();
        ensure!(
            seen.insert(name.clone()),
            "{shown}: the member {name} is there twice; a load would take the last one, which the \
             check did not see: refused, the file was altered"
        );
        let kind = entry.header().entry_type();
        member_allowed(&name, kind, &mut entry)
            .with_context(|| format!("{shown}: refused before loading"))?;
        if kind == EntryType::Directory {
            continue;
        }
        files.insert(name.clone());
        if name == "manifest.json" {
            let mut text = String::new();
            entry
                .read_to_string(&mut text)
                .with_context(|| format!("{shown}: reading manifest.json"))?;
            manifest = Some(
                serde_json::from_str(&text)
                    .with_context(|| format!("{shown}: parsing manifest.json"))?,
            );
        } else if let Some(id) = name.strip_suffix(".json") {
            let mut hasher = Sha256::new();
            std::io::copy(&mut entry, &mut hasher)
                .with_context(|| format!("{shown}: reading {name}"))?;
            configs.push((id.to_string(), hex::encode(hasher.finalize())));
        }
    }
    let Some(entries) = manifest else {
        bail!("{shown}: no manifest.json: not an image exported by the Engine")
    };
    one_image(&shown.to_string(), entries, &configs, &files)
}

/// The one image `manifest.json` names, checked against the members the file holds: its
/// configuration (hashing to its name) and every layer.
fn one_image(
    shown: &str,
    mut entries: Vec<Entry>,
    configs: &[(String, String)],
    files: &BTreeSet<String>,
) -> Result<SavedImage> {
    ensure!(
        entries.len() == 1,
        "{shown}: manifest.json has {} entries; an archive's image file holds exactly one image",
        entries.len()
    );
    let entry = entries.remove(0);
    let id = entry
        .config
        .strip_suffix(".json")
        .filter(|id| is_hex64(id))
        .with_context(|| {
            format!(
                "{shown}: manifest.json names the configuration {:?}",
                entry.config
            )
        })?;
    match configs.iter().find(|(name, _)| name == id) {
        Some((_, sha)) if sha == id => {}
        Some((_, sha)) => bail!(
            "{shown}: the configuration {id}.json has sha256 {sha}, not its name: the file was altered"
        ),
        None => bail!(
            "{shown}: manifest.json names {}, which the file does not hold",
            entry.config
        ),
    }
    for layer in &entry.layers {
        ensure!(
            files.contains(layer),
            "{shown}: manifest.json names the layer {layer}, which the file does not hold"
        );
    }
    Ok(SavedImage {
        id: id.to_string(),
        tags: entry.repo_tags.unwrap_or_default(),
        layers: entry.layers,
    })
}

/// Writes a copy of the checked `file` to `out` whose `manifest.json` names `tag` alone and which has
/// no `repositories`: loading the copy sets that tag and no other.
pub fn quarantine(file: &Path, tag: &str, out: &Path) -> Result<SavedImage> {
    let mut image = inspect(file)?;
    let shown = file.display();
    let reader = BufReader::new(File::open(file).with_context(|| format!("opening {shown}"))?);
    let writer =
        BufWriter::new(File::create(out).with_context(|| format!("creating {}", out.display()))?);
    let mut input = tar::Archive::new(reader);
    let mut copy = tar::Builder::new(writer);
    copy.follow_symlinks(false);
    for entry in input
        .entries()
        .with_context(|| format!("reading {shown}"))?
    {
        let mut entry = entry.with_context(|| format!("reading {shown}"))?;
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        match name.as_str() {
            "repositories" => continue,
            "manifest.json" => {
                let mut text = String::new();
                entry.read_to_string(&mut text)?;
                let mut entries: Vec<Entry> = serde_json::from_str(&text)?;
                entries[0].repo_tags = Some(vec![tag.to_string()]);
                let data = serde_json::to_vec(&entries)?;
                let mut header = entry.header().clone();
                header.set_size(data.len() as u64);
                header.set_cksum();
                copy.append(&header, data.as_slice())?;
            }
            _ => {
                let header = entry.header().clone();
                copy.append(&header, &mut entry)?;
            }
        }
    }
    copy.into_inner()?
        .into_inner()
        .map_err(|e| e.into_error())
        .with_context(|| format!("writing {}", out.display()))?;
    image.tags = vec![tag.to_string()];
    Ok(image)
}

/// Whether one member may be in an image file (see the module docs).
fn member_allowed(name: &str, kind: EntryType, entry: &mut tar::Entry<impl Read>) -> Result<()> {
    let parts: Vec<&str> = name.split('/').collect();
    let layer_dir = |p: &[&str]| p.len() == 1 && is_hex64(p[0]);
    let allowed = match (kind, parts.as_slice()) {
        (EntryType::Directory, p) => layer_dir(p),
        (EntryType::Regular, ["manifest.json" | "repositories"]) => true,
        (EntryType::Regular, [config]) => config.strip_suffix(".json").is_some_and(is_hex64),
        (EntryType::Regular, [dir, "VERSION" | "json" | "layer.tar"]) => is_hex64(dir),
        (EntryType::Symlink, [dir, "layer.tar"]) if is_hex64(dir) => {
            let target = entry.link_name()?.map(|t| t.to_string_lossy().into_owned());
            let ok = target.as_deref().is_some_and(|t| {
                matches!(t.split('/').collect::<Vec<_>>().as_slice(),
                    ["..", other, "layer.tar"] if is_hex64(other))
            });
            ensure!(
                ok,
                "the link {name} points at {target:?}, not at another layer's layer.tar"
            );
            true
        }
        _ => false,
    };
    ensure!(
        allowed,
        "the member {name:?} ({kind:?}) is not part of an image file of the Engine's save format"
    );
    Ok(())
}

fn is_hex64(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests;
