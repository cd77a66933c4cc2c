//! The run folder, `results/<study>/runs/<run-id>/`: the one owner of its file names, its creation
//! under a unique name, its state (`run.json`, saved atomically) and the `runs/latest` link. Readers
//! of an archive find a run's files by the same names.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::run::plan::Estimates;
use crate::study::sample::{self, BadLines, Sample};
use crate::study::{Repeats, Study};

mod read;
pub use read::{FILE_LIMIT, STUDY_LIMIT, load_limit, open_regular, read_regular, read_text};

/// The study exactly as run.
pub const STUDY: &str = crate::study::FILE;
/// One JSON sample per line, appended as measured.
pub const SAMPLES: &str = "samples.jsonl";
/// The environment record.
pub const ENV: &str = "env.json";
/// The build manifest of the images used.
pub const MANIFEST: &str = "manifest.json";
/// The study's seccomp profile as the run started with it (only when the study names one).
pub const SECCOMP: &str = "seccomp.json";
/// The run state ([`RunState`]).
pub const STATE: &str = "run.json";
/// Report files, written by `parkbench report`.
pub const SUMMARY: &str = "summary.json";
pub const VERDICTS: &str = "verdicts.json";
pub const SAMPLES_CSV: &str = "samples.csv";
pub const FIGURE: &str = "figure.svg";
pub const REPORT: &str = "report.md";
/// The report as one self-contained HTML page, every figure inline.
pub const REPORT_HTML: &str = "report.html";
/// An explain sweep's explanation of the claim it swept (`parkbench explain`), in its run folder.
pub const EXPLANATION: &str = "explanation.json";
/// The index of `parkbench explain`'s sweeps of this run's claims.
pub const EXPLANATIONS: &str = "explanations.md";
/// A rerun's comparison with the archive it reran (Markdown and figure).
pub const COMPARE_MD: &str = "compare.md";
pub const COMPARE_SVG: &str = "compare.svg";
/// The comparison as one self-contained HTML page.
pub const COMPARE_HTML: &str = "compare.html";
/// What a merged run (`parkbench merge`) was made of.
pub const MERGE_JSON: &str = "merge.json";
/// A merged run's claims judged per hardware class (only when its samples come from more than
/// one), in Markdown and as data.
pub const CLASSES_MD: &str = "classes.md";
pub const CLASSES_JSON: &str = "classes.json";
/// A run across several hosts (`run --hosts`): its hosts, what each measured and what was lost
/// ([`crate::run::fleet::record::FleetRecord`]).
pub const FLEET: &str = "fleet.json";
/// A fleet run's folder of sub-runs, one per host (`hosts/<name>/`, each a run folder); kept out of
/// its archive, whose merged samples carry everything.
pub const HOSTS: &str = "hosts";
/// The link in `runs/` to the newest run.
pub const LATEST: &str = "latest";

/// Files a run must hold.
pub const REQUIRED: [&str; 2] = [STUDY, SAMPLES];
/// Files a run may hold besides those (an archive lacking one is listed by `check`, except the
/// files of a merged run, [`MERGED`]).
pub const OPTIONAL: [&str; 13] = [
    ENV,
    STATE,
    MANIFEST,
    SAMPLES_CSV,
    SUMMARY,
    VERDICTS,
    REPORT,
    FIGURE,
    REPORT_HTML,
    MERGE_JSON,
    CLASSES_MD,
    CLASSES_JSON,
    FLEET,
];
/// The files only a merged run holds (classes only when its samples come from more than one class;
/// fleet.json only in a run across hosts).
pub const MERGED: [&str; 4] = [MERGE_JSON, CLASSES_MD, CLASSES_JSON, FLEET];

/// Largest samples.jsonl (and classes.json) read into memory (by `report`, `verify` and from
/// archives), bytes; the other run files have smaller limits ([`load_limit`]).
pub const LOAD_LIMIT: u64 = 32 << 20;

/// The small text files of one run, read from a run folder or an archive.
#[derive(Debug, Clone, PartialEq)]
pub struct RunFiles {
    /// The run id: the archive's top folder or the run directory's name.
    pub run_id: String,
    pub study_yaml: String,
    pub samples_jsonl: String,
    pub env_json: Option<String>,
    pub manifest_json: Option<String>,
    pub summary_json: Option<String>,
    pub verdicts_json: Option<String>,
    pub report_md: Option<String>,
    pub run_json: Option<String>,
    /// A merged run's `merge.json`, `classes.json` and `classes.md`.
    pub merge_json: Option<String>,
    pub classes_json: Option<String>,
    pub classes_md: Option<String>,
    /// An explain sweep's `explanation.json`: what it explains.
    pub explanation_json: Option<String>,
}

impl RunFiles {
    /// The files [`RunFiles`] holds, for readers that load them in one pass.
    pub const NAMES: [&str; 12] = [
        STUDY,
        SAMPLES,
        ENV,
        MANIFEST,
        SUMMARY,
        VERDICTS,
        REPORT,
        STATE,
        MERGE_JSON,
        CLASSES_JSON,
        CLASSES_MD,
        EXPLANATION,
    ];

    /// Builds the set from `load`, which returns a file's text or `None` when it is absent. The
    /// JSON files' items are counted against one budget before anything parses them
    /// ([`crate::study::bounded`]; samples.jsonl is counted as it is parsed).
    pub fn assemble(
        run_id: String,
        mut load: impl FnMut(&str) -> Result<Option<String>>,
    ) -> Result<RunFiles> {
        let mut required = |name: &str| -> Result<String> {
            load(name)?.with_context(|| format!("{run_id}/{name} is missing: a run must hold it"))
        };
        let study_yaml = required(STUDY)?;
        let samples_jsonl = required(SAMPLES)?;
        let mut budget = crate::study::bounded::Budget::default();
        let mut json = |name: &str| -> Result<Option<String>> {
            let text = load(name)?;
            if let Some(text) = &text {
                budget.spend(&format!("{run_id}/{name}"), text.as_bytes())?;
            }
            Ok(text)
        };
        Ok(RunFiles {
            env_json: json(ENV)?,
            manifest_json: json(MANIFEST)?,
            summary_json: json(SUMMARY)?,
            verdicts_json: json(VERDICTS)?,
            run_json: json(STATE)?,
            merge_json: json(MERGE_JSON)?,
            classes_json: json(CLASSES_JSON)?,
            explanation_json: json(EXPLANATION)?,
            report_md: load(REPORT)?,
            classes_md: load(CLASSES_MD)?,
            study_yaml,
            samples_jsonl,
            run_id,
        })
    }
}

/// Where a run is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Measuring now (or the process measuring it died).
    Running,
    /// Every cell of the matrix has a sample.
    Complete,
    /// Stopped by an interrupt or an error before every cell was measured; resumable.
    Incomplete,
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Status::Running => "running",
            Status::Complete => "complete",
            Status::Incomplete => "incomplete",
        })
    }
}

/// `run.json`: the state of a run directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunState {
    /// Run identifier (the directory name).
    pub run_id: String,
    /// Study identifier.
    pub study: String,
    /// `running`, `complete` or `incomplete` (interrupted or stopped by an error; resumable).
    pub status: Status,
    /// CPU list the study asked for.
    pub cpus_requested: String,
    /// CPU list the probes are pinned to.
    pub cpus_pinned: String,
    /// Worker threads per runtime (= number of pinned CPUs).
    pub workers: u32,
    /// Differences from the published protocol, in words.
    pub deviations: Vec<String>,
    /// When the run started, RFC 3339 UTC.
    pub started_at: String,
    /// When the run last stopped, RFC 3339 UTC.
    pub finished_at: Option<String>,
    /// Wall time spent measuring, summed over every invocation of this run (a resume adds to it), ms.
    pub wall_ms: f64,
    /// The archive this run reran (`parkbench rerun`); absent for a run of a study file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerun_of: Option<RerunOf>,
    /// Processes per probe and scale in force for this run, as in a study's `protocol.repeats`: the
    /// study's own, or what `run --repeats` made of it. A resume and the report follow it, so they
    /// keep the rule the run started with. Absent in runs from before it was recorded (then the
    /// study's own applies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeats: Option<Repeats>,
    /// Validity warnings: host conditions seen before and while measuring that may touch the
    /// numbers (swap, hugepages, governor, memory pressure, busy pinned CPUs, steal). They explain
    /// samples and never invalidate one; absent when none was seen.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<crate::run::warning::Warning>,
    /// The kernels in force (`--kernel` or the study's `protocol.kernels`); empty in runs made
    /// before kernels existed, which ran on the host's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kernels: Vec<String>,
    /// Every guest kernel as the last invocation booted it: release, config, THP, acceleration,
    /// memory.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub guests: Vec<crate::run::guest::GuestKernel>,
    /// The slice of the matrix this run measured (`run --shard i/N`) and the full matrix's
    /// identity; absent for a run of the whole matrix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<crate::run::shard::ShardRecord>,
    /// The probes and scales of a partial run (`run --only … --scales …`), never a reference;
    /// absent for a run of the whole matrix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<crate::run::slice::Slice>,
}

impl RunState {
    /// The study as this run measures it: with the processes per probe and scale in force.
    pub fn in_force(&self, mut study: Study) -> anyhow::Result<Study> {
        if let Some(r) = self.repeats {
            study.protocol.repeats = r;
        }
        let study = study.under_kernels(&self.kernels)?;
        let study = match &self.shard {
            Some(s) => crate::run::shard::restrict(study, s.shard()?),
            None => study,
        };
        Ok(match &self.partial {
            Some(slice) => slice.restrict(study),
            None => study,
        })
    }
}

/// A run folder on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunDir {
    path: PathBuf,
}

impl RunDir {
    /// A new, uniquely named run folder under `results/<study>/runs/`, named after the UTC time.
    pub fn create(results: &Path, study: &str) -> Result<RunDir> {
        RunDir::create_in(&results.join(study).join("runs"))
    }

    /// A new, uniquely named run folder directly in `runs` (made if need be), named after the UTC
    /// time.
    pub fn create_in(runs: &Path) -> Result<RunDir> {
        std::fs::create_dir_all(runs).with_context(|| format!("creating {}", runs.display()))?;
        let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ").to_string();
        for n in 0.. {
            let id = match n {
                0 => stamp.clone(),
                n => format!("{stamp}-{n}"),
            };
            let path = runs.join(&id);
            // create_dir fails if another run took the name first, so two runs never share a folder.
            match std::fs::create_dir(&path) {
                Ok(()) => return Ok(RunDir { path }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e).with_context(|| format!("creating {}", path.display())),
            }
        }
        unreachable!("some run id is free")
    }

    /// An existing run folder (a link such as `runs/latest` is followed to the run it names).
    pub fn open(path: &Path) -> Result<RunDir> {
        let path = std::fs::canonicalize(path)
            .with_context(|| format!("reading run directory {}", path.display()))?;
        if !path.is_dir() {
            bail!("{} is not a run directory", path.display());
        }
        Ok(RunDir { path })
    }

    /// The folder as given, without checking it (for reading whatever files it holds).
    pub fn at(path: &Path) -> RunDir {
        RunDir {
            path: path.to_owned(),
        }
    }

    /// Every sample of `samples.jsonl`, with its malformed lines beside them.
    pub fn samples(&self) -> Result<(Vec<Sample>, BadLines)> {
        sample::read_all(&self.file(SAMPLES))
    }

    /// The expected time of each cell, from this run's samples so far; empty when it has none.
    pub fn estimates(&self) -> Estimates {
        let Ok((samples, _)) = self.samples() else {
            return Estimates::default();
        };
        let source = std::fs::canonicalize(&self.path)
            .ok()
            .and_then(|p| Some(p.file_name()?.to_string_lossy().into_owned()));
        Estimates::from_samples(&samples, source)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The run id: the folder's name.
    pub fn id(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// The path of one of the run's files (one of this module's names).
    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// The run's archive, `<run-id>.tar.gz` beside the folder.
    pub fn archive_path(&self) -> PathBuf {
        self.path.with_extension("tar.gz")
    }

    /// Writes one of the run's files whole or not at all.
    pub fn write(&self, name: &str, bytes: &[u8]) -> Result<()> {
        crate::files::write_atomic(&self.file(name), bytes)
    }

    /// Writes a value as pretty JSON to one of the run's files.
    pub fn write_json(&self, name: &str, value: &impl Serialize) -> Result<()> {
        let json =
            serde_json::to_string_pretty(value).with_context(|| format!("serialising {name}"))?;
        self.write(name, json.as_bytes())
    }

    /// Reads one of the run's text files.
    pub fn read(&self, name: &str) -> Result<String> {
        crate::files::read_text(&self.file(name))
    }

    /// The run's small text files; absent optional files are `None`. Each is read only when it is
    /// a regular file (never through a link) within its [`load_limit`].
    pub fn read_files(&self) -> Result<RunFiles> {
        RunFiles::assemble(self.id(), |name| read_text(&self.path, name))
            .with_context(|| format!("reading run directory {}", self.path.display()))
    }

    /// Saves `run.json` atomically.
    pub fn save_state(&self, state: &RunState) -> Result<()> {
        self.write_json(STATE, state)
    }

    /// Loads `run.json`.
    pub fn load_state(&self) -> Result<RunState> {
        let path = self.file(STATE);
        let text = std::fs::read_to_string(&path).with_context(|| {
            format!(
                "reading {}; is {} a run directory?",
                path.display(),
                self.path.display()
            )
        })?;
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
    }

    /// Points `runs/latest` at this run (replacing the link atomically).
    pub fn link_latest(&self) -> Result<()> {
        let runs = self.path.parent().context("run directory has no parent")?;
        let name = self.path.file_name().context("run directory has no name")?;
        let link = runs.join(LATEST);
        let tmp = runs.join(format!(".{LATEST}-{}", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        std::os::unix::fs::symlink(name, &tmp)
            .with_context(|| format!("creating {}", tmp.display()))?;
        std::fs::rename(&tmp, &link).with_context(|| format!("updating {}", link.display()))
    }
}

/// The command that finishes an interrupted run: `parkbench run --resume DIR`, or for a rerun of an
/// archive `parkbench rerun ARCHIVE --resume DIR`.
pub fn resume_command(dir: &Path, state: &RunState) -> String {
    match &state.rerun_of {
        Some(of) => format!("parkbench rerun {} --resume {}", of.archive, dir.display()),
        None => format!("parkbench run --resume {}", dir.display()),
    }
}

/// `run.json`'s `rerun_of`: the archive a run reran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RerunOf {
    /// The archive's file name, as given on the command line (its folder left out).
    pub archive: String,
    /// sha256 of the archive file, hex.
    pub sha256: String,
    /// The run id of the archived run (the archive's top folder).
    pub run_id: String,
    /// How the probe images came here: `loaded` from the archive, or `rebuilt` from its sources.
    pub images: Origin,
    /// Binaries that differ from the archive's manifest (only with `--accept-different-binaries`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub different_binaries: Vec<BinaryDifference>,
}

/// Where a rerun's probe images came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// Loaded through the Engine from the archive's `images/<name>.tar`.
    Loaded,
    /// Built here from the archive's `source/` and its pins.
    Rebuilt,
}

/// One binary whose sha256 here is not the archive's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BinaryDifference {
    /// The image's short name.
    pub image: String,
    /// The binary's absolute path inside the image.
    pub path: String,
    /// sha256 in the archive's manifest, hex.
    pub archive: String,
    /// sha256 here, hex; `None` when the image here has no such binary.
    pub here: Option<String>,
}

impl std::fmt::Display for BinaryDifference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let here = self.here.as_deref().unwrap_or("(absent)");
        write!(
            f,
            "image {} {}: archive sha256 {}, here {here}",
            self.image, self.path, self.archive
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(status: Status) -> RunState {
        RunState {
            run_id: "r".into(),
            study: "s".into(),
            status,
            cpus_requested: "0-3".into(),
            cpus_pinned: "0-1".into(),
            workers: 2,
            deviations: vec![],
            started_at: "2026-01-01T00:00:00Z".into(),
            finished_at: None,
            wall_ms: 0.0,
            rerun_of: None,
            repeats: None,
            warnings: vec![],
            kernels: vec![],
            guests: vec![],
            shard: None,
            partial: None,
        }
    }

    #[test]
    fn runs_get_unique_folders_and_latest_follows() {
        let tmp = tempfile::tempdir().unwrap();
        let a = RunDir::create(tmp.path(), "demo").unwrap();
        let b = RunDir::create(tmp.path(), "demo").unwrap();
        assert_ne!(a, b);
        assert_eq!(a.path().parent(), b.path().parent());
        a.link_latest().unwrap();
        b.link_latest().unwrap();
        let latest = tmp.path().join("demo/runs").join(LATEST);
        assert_eq!(RunDir::open(&latest).unwrap().id(), b.id());
        assert_eq!(b.archive_path(), b.path().with_extension("tar.gz"));
    }

    #[test]
    fn state_round_trips_with_the_status_strings() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = RunDir::create(tmp.path(), "demo").unwrap();
        for status in [Status::Running, Status::Complete, Status::Incomplete] {
            dir.save_state(&state(status)).unwrap();
            assert_eq!(dir.load_state().unwrap(), state(status));
            let json = dir.read(STATE).unwrap();
            assert!(
                json.contains(&format!("\"status\": \"{status}\"")),
                "{json}"
            );
        }
        let err = format!("{:#}", RunDir::at(tmp.path()).load_state().unwrap_err());
        assert!(
            err.contains("is") && err.contains("a run directory?"),
            "{err}"
        );
    }

    #[test]
    fn the_repeats_in_force_are_kept_and_old_states_still_load() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = RunDir::create(tmp.path(), "demo").unwrap();
        let mut s = state(Status::Complete);
        let old = serde_json::to_string(&s).unwrap();
        assert!(!old.contains("repeats"), "{old}");
        assert_eq!(serde_json::from_str::<RunState>(&old).unwrap(), s);
        let study = Study::default_study();
        let own = s.in_force(study.clone()).unwrap();
        assert_eq!(
            own,
            study.clone().under_kernels(&[]).unwrap(),
            "the study's own"
        );
        assert_eq!(own.protocol.repeats, study.protocol.repeats);
        s.repeats = Some(Repeats {
            min: 3,
            max: 10,
            target_cv: Some(0.005),
        });
        dir.save_state(&s).unwrap();
        assert_eq!(dir.load_state().unwrap(), s);
        let json = dir.read(STATE).unwrap();
        assert!(json.contains("\"target_cv\": 0.005"), "{json}");
        assert_eq!(
            s.in_force(study).unwrap().protocol.repeats,
            s.repeats.unwrap()
        );
    }

    #[test]
    fn warnings_are_kept_and_an_older_state_without_them_loads() {
        use crate::run::warning::{Touches, Warning};
        let tmp = tempfile::tempdir().unwrap();
        let dir = RunDir::create(tmp.path(), "demo").unwrap();
        dir.save_state(&state(Status::Complete)).unwrap();
        assert!(
            !dir.read(STATE).unwrap().contains("warnings"),
            "none: not written"
        );
        let mut warned = state(Status::Complete);
        warned.warnings.push(Warning {
            what: "swap in use: 1 MiB of 2 MiB".into(),
            touches: Touches::All,
        });
        dir.save_state(&warned).unwrap();
        assert_eq!(dir.load_state().unwrap(), warned);
        assert!(dir.read(STATE).unwrap().contains("\"touches\": \"all\""));
    }
}
