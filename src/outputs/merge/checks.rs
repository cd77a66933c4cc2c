//! The checks of a merge across all its runs: one binary per image and path over every run, every
//! sample's image listed by its own run's manifest, and no run named twice.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Result, bail};

use super::Parsed;
use crate::images::Manifest;

/// Every image's binaries agree over all runs: one map image → path → sha256, built from every
/// manifest, refusing the first conflict (the image, the path, both hashes and both runs). Returns
/// the union of the manifests: each image as its first listing names it.
pub(super) fn same_binaries(parsed: &[Parsed]) -> Result<Manifest> {
    let mut union = Manifest {
        images: Vec::new(),
        unavailable: Vec::new(),
        failed: Vec::new(),
        drift: Vec::new(),
    };
    // image → (the run that first listed it, path → sha256)
    let mut seen: BTreeMap<&str, (&str, &BTreeMap<String, String>)> = BTreeMap::new();
    for p in parsed {
        let name = p.input.name.as_str();
        for d in &p.manifest.drift {
            if !union.drift.contains(d) {
                union.drift.push(d.clone());
            }
        }
        for image in &p.manifest.images {
            let Some((first, binaries)) = seen.get(image.name.as_str()).copied() else {
                seen.insert(&image.name, (name, &image.binaries));
                union.images.push(image.clone());
                continue;
            };
            let paths: BTreeSet<&String> = binaries.keys().chain(image.binaries.keys()).collect();
            for path in paths {
                let (ha, hb) = (binaries.get(path), image.binaries.get(path));
                if ha != hb {
                    let said = |h: Option<&String>| h.cloned().unwrap_or_else(|| "(absent)".into());
                    bail!(
                        "the runs measured different binaries: image {} {path}: sha256 {} in \
                         {first}, {} in {name}; merge only runs of the same binaries (`parkbench \
                         rerun` an archive to run its binaries elsewhere)",
                        image.name,
                        said(ha),
                        said(hb),
                    );
                }
            }
        }
    }
    for p in parsed {
        for u in &p.manifest.unavailable {
            if !seen.contains_key(u.name.as_str()) && !union.unavailable.contains(u) {
                union.unavailable.push(u.clone());
            }
        }
        for f in &p.manifest.failed {
            if !seen.contains_key(f.name.as_str()) && !union.failed.contains(f) {
                union.failed.push(f.clone());
            }
        }
    }
    Ok(union)
}

/// Every sample that ran an image ran one its own run's manifest lists (by image id or tag): a
/// sample of an image the manifest lacks has binaries nothing can compare.
pub(super) fn images_listed(p: &Parsed) -> Result<()> {
    let name = &p.input.name;
    for s in p.samples.iter().filter(|s| !s.image_id.is_empty()) {
        let listed = p
            .manifest
            .images
            .iter()
            .any(|i| i.id == s.image_id || i.tag == s.image_tag);
        if !listed {
            bail!(
                "{name}: its samples of {}@{} ran image {} ({}), which its manifest.json does not \
                 list: their binaries cannot be compared with the other runs'; do not merge it",
                s.probe,
                s.tasks,
                s.image_tag,
                s.image_id
            );
        }
    }
    Ok(())
}

/// A sample's identity: the run that recorded it, the Engine that ran it, its cell and repeat. No
/// time is part of it: two copies of one run whose timestamps were moved are still one run.
type SampleId = (String, Option<String>, String, u64, u32);

fn sample_ids(p: &Parsed) -> BTreeSet<SampleId> {
    p.samples
        .iter()
        .map(|s| {
            let (run, host) = (s.run_id.clone(), s.host.clone());
            (run, host, s.probe.clone(), s.tasks, s.repeat)
        })
        .collect()
}

/// No run is named twice and none is empty. Two inputs that share any sample (its run id, host,
/// cell and repeat) hold one run's samples twice, whatever their run.json and their timestamps
/// say; shards of one matrix share no cell, so shards started in the same second on two machines
/// (one run id) are still told apart.
pub(super) fn each_run_once(parsed: &[Parsed]) -> Result<()> {
    for p in parsed {
        if p.samples.is_empty() {
            bail!(
                "{}: run {} measured nothing (samples.jsonl holds no sample): there is nothing of it \
                 to merge; leave it out",
                p.input.name,
                p.state.run_id
            );
        }
    }
    // Each sample's identity, with the earlier run that holds it: one pass over the samples, not
    // every pair of runs (a merge of a thousand machines is half a million pairs). The runs before
    // the one at hand share nothing, or the merge has stopped: each identity has one holder.
    let mut holder: BTreeMap<SampleId, usize> = BTreeMap::new();
    for (i, b) in parsed.iter().enumerate() {
        let ids = sample_ids(b);
        // Per earlier run, the samples this one shares with it, in order.
        let mut shared: BTreeMap<usize, Vec<&SampleId>> = BTreeMap::new();
        for id in &ids {
            if let Some(&j) = holder.get(id) {
                shared.entry(j).or_default().push(id);
            }
        }
        if let Some((&j, both)) = shared.iter().next() {
            let (run, host, probe, tasks, repeat) = both[0];
            let host = host
                .as_deref()
                .map(|h| format!(" on {h}"))
                .unwrap_or_default();
            bail!(
                "{} and {} are the same run named twice, or copies of one run (their times may \
                 differ): both hold sample {probe}@{tasks} repeat {repeat} of run {run}{host} \
                 ({} shared sample(s)); its samples would be counted twice: name each run \
                 once",
                parsed[j].input.name,
                b.input.name,
                both.len(),
            );
        }
        holder.extend(ids.into_iter().map(|id| (id, i)));
    }
    Ok(())
}
