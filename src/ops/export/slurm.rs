//! A Slurm batch script: a job array of one task per shard (`reproduce --shard i/N`, i =
//! `SLURM_ARRAY_TASK_ID`), each on a node of its own, and a job that waits for every task to end
//! well, then merges their archives and verifies the merged one. The repository, the study and the
//! results folder are named by absolute paths, which every node must see (docs/fleet.md).

use std::path::Path;

use anyhow::{Context, Result, bail};

use super::{Format, Job, job_name, reproduce_flags, shell_word};
use crate::ops::Paths;

/// `export slurm`.
#[derive(Debug, Clone, Default)]
pub struct Slurm {
    /// `--partition`: the partition (or comma-separated partitions) to run in; the cluster's
    /// default when `None`.
    pub partition: Option<String>,
    /// `--time`: each job's time limit in a form sbatch reads (`90`, `1:30:00`, `2-00:00:00`);
    /// the partition's default when `None`.
    pub time: Option<String>,
}

/// The folder of the results folder where each array's shards write, one folder per task.
pub const SHARDS: &str = "shards";
/// The folder of the results folder where the merge writes its run folder and archive.
pub const MERGED: &str = "merged";

impl Format for Slurm {
    fn what(&self) -> &'static str {
        "a Slurm batch script"
    }

    fn write(&self, paths: &Paths, job: &Job) -> Result<String> {
        let canon =
            |p: &Path| std::fs::canonicalize(p).with_context(|| format!("reading {}", p.display()));
        let repo = shell_word("the repository's path", &canon(&paths.repo)?)?;
        let study = shell_word("the study's path", &canon(job.file)?)?;
        // Slurm opens each task's log in the results folder before the script runs: it must exist.
        std::fs::create_dir_all(&paths.results)
            .with_context(|| format!("creating the results folder {}", paths.results.display()))?;
        let results = shell_word("the results folder", &canon(&paths.results)?)?;
        let options = self.options()?;
        Ok(script(
            job,
            &Places {
                repo,
                study,
                results,
            },
            &options,
        ))
    }
}

impl Slurm {
    /// The `#SBATCH` lines both jobs share: partition and time limit, each checked for sbatch.
    pub(super) fn options(&self) -> Result<Vec<String>> {
        let mut lines = Vec::new();
        if let Some(p) = &self.partition {
            let fine = |c: char| c.is_ascii_alphanumeric() || "_.-,".contains(c);
            if p.is_empty() || !p.chars().all(fine) {
                bail!(
                    "--partition {p:?}: a partition is letters, digits, `_`, `.` and `-` (several \
                     separated by commas)"
                );
            }
            lines.push(format!("--partition={p}"));
        }
        if let Some(t) = &self.time {
            if !slurm_time(t) {
                bail!(
                    "--time {t:?}: give minutes (`90`), `H:MM:SS`, `MM:SS`, `D-HH`, `D-HH:MM` or \
                     `D-HH:MM:SS`, as sbatch reads them"
                );
            }
            lines.push(format!("--time={t}"));
        }
        Ok(lines)
    }
}

/// One of sbatch's time forms: `M`, `M:S`, `H:M:S`, `D-H`, `D-H:M`, `D-H:M:S`, digits each.
pub(super) fn slurm_time(t: &str) -> bool {
    let number = |s: &str| !s.is_empty() && s.len() <= 6 && s.chars().all(|c| c.is_ascii_digit());
    let (days, rest) = match t.split_once('-') {
        Some((d, rest)) => (Some(d), rest),
        None => (None, t),
    };
    let parts: Vec<&str> = rest.split(':').collect();
    days.is_none_or(number) && parts.len() <= 3 && parts.iter().all(|p| number(p))
}

/// The absolute paths the nodes read, each one shell word.
pub(super) struct Places {
    pub repo: String,
    pub study: String,
    pub results: String,
}

/// The batch script.
pub(super) fn script(job: &Job, at: &Places, options: &[String]) -> String {
    let (id, shards, name) = (&job.study.id, job.shards, job_name(&job.study.id));
    let Places {
        repo,
        study,
        results,
    } = at;
    let flags = reproduce_flags(job);
    let directives: String = options.iter().map(|o| format!("#SBATCH {o}\n")).collect();
    let merge_options: String = options.iter().map(|o| format!(" {o}")).collect();
    let limits = match options.is_empty() {
        true => "the cluster's default partition and its default time limit (`--partition`, \
                 `--time` set them)"
            .to_string(),
        false => options.join(" "),
    };
    format!(
        r#"#!/bin/bash
# parkbench: study {id} in {shards} shards, a Slurm job array of one task per shard, then a merge.
# Submit it with `sbatch` from any folder. Every node reads these absolute paths, so they must be
# on a filesystem every node sees:
#   repository      {repo}
#   study           {study}
#   results folder  {results}
# `parkbench` must be on every node's PATH, beside a Docker Engine it reaches (DOCKER_HOST,
# or the default socket).
# --array=1-{shards}: task i measures shard i/{shards} (`reproduce --shard i/N` counts from 1, as the
#   array's task ids do here), in a results folder of its own, <results folder>/{SHARDS}/<array job
#   id>/<i>/ (its run folder and archive under {id}/runs/), so that no two tasks write one folder.
#   Each runs `reproduce --shard i/{shards} {flags}`: `--cpus auto` runs on the first of the
#   study's CPUs the node has, and the report says so when it has fewer.
# --exclusive: a task owns its node, so no other job shares its CPUs while it measures; tasks on
#   one node run one after another. The probes are containers the node's Engine starts, outside
#   Slurm's accounting: only --exclusive keeps other jobs off their CPUs.
# --nodes=1 --ntasks=1: the driver is one process; it starts every probe through the Engine.
# Limits: {limits}; the merge job has the same.
# Merge: task 1 submits, before it measures, one job that starts when every task ended well
#   (--dependency=afterok), runs `parkbench merge` of the shards' archives into <results
#   folder>/{MERGED}/ (the merged run folder and its archive), then `parkbench verify` of that
#   archive. A task that fails (a probe failed: exit 3) cancels it (--kill-on-invalid-dep=yes);
#   the shards' archives stay, to merge by hand. A task that Slurm requeues does not submit it again.
# Logs: <results folder>/{name}-<array job id>_<i>.out, and {name}-merge-<job id>.out.
#SBATCH --job-name={name}
#SBATCH --array=1-{shards}
#SBATCH --exclusive
#SBATCH --nodes=1
#SBATCH --ntasks=1
#SBATCH --output={results}/{name}-%A_%a.out
{directives}set -euo pipefail
: "${{SLURM_ARRAY_TASK_ID:?submit this script with sbatch, which runs it as a job array}}"
shards={results}/{SHARDS}/$SLURM_ARRAY_JOB_ID
if [ "$SLURM_ARRAY_TASK_ID" = 1 ] && [ "${{SLURM_RESTART_COUNT:-0}}" = 0 ]; then
  merge=$(sbatch --parsable --job-name={name}-merge --nodes=1 --ntasks=1{merge_options} \
    --dependency="afterok:$SLURM_ARRAY_JOB_ID" --kill-on-invalid-dep=yes \
    --output={results}/{name}-merge-%j.out --export="ALL,PARKBENCH_SHARDS=$shards" <<'MERGE'
#!/bin/bash
set -euo pipefail
merged=$(parkbench --repo {repo} merge "$PARKBENCH_SHARDS"/*/{id}/runs/*.tar.gz --out {results}/{MERGED})
echo "$merged"
parkbench --repo {repo} verify "$(echo "$merged" | sed -n 's/^archive: //p')"
MERGE
)
  echo "merge job $merge waits for every task of job array $SLURM_ARRAY_JOB_ID"
fi
exec parkbench --repo {repo} --results "$shards/$SLURM_ARRAY_TASK_ID" reproduce {study} \
  --shard "$SLURM_ARRAY_TASK_ID/{shards}" {flags}
"#
    )
}
