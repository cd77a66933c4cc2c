//! `outcome` claims: how every process of a probe at a scale ended (failed, killed, completed),
//! from the summary's cell and its invalid samples.

use crate::outputs::summary::Summary;
use crate::study::claim::{Ended, Expected, Outcome, expects};
use crate::study::{Claim, sample};

/// The processes that ended as the claim expects, and how many ran, with a note in words (`3 of 3
/// processes fail: exit code 1 ⏎ SystemLimitError`); or why nothing can be judged.
pub(super) fn judge(claim: &Claim, summary: &Summary) -> Result<(usize, usize, String), String> {
    let Expected::Outcome(want) = claim.expected else {
        return Err("an outcome claim expects `fails`, `killed` or `completes`".into());
    };
    let probe = claim.probe.as_str();
    let tasks = claim.tasks.ok_or("claim names no task count")?;
    let cell = (summary.cell(probe, tasks))
        .ok_or_else(|| format!("{probe} at {tasks} tasks is not in the study"))?;
    let failed: Vec<_> = (summary.invalid_samples.iter())
        .filter(|i| i.probe == probe && i.tasks == tasks && !sample::never_ran(&i.error))
        .collect();
    let ran = cell.valid + failed.len();
    if ran == 0 {
        let why = (summary.invalid_samples.iter())
            .find(|i| i.probe == probe && i.tasks == tasks)
            .map(|i| format!(" ({})", i.error))
            .unwrap_or_default();
        return Err(format!("no process of {probe} at {tasks} tasks ran{why}"));
    }
    let valid = Ended {
        valid: true,
        killed: false,
        said: &[],
    };
    let mut matched = if expects(claim, valid) { cell.valid } else { 0 };
    let mut first_failure = None;
    for i in &failed {
        let said: Vec<String> = std::iter::once(i.error.clone())
            .chain(i.stderr.iter().cloned())
            .collect();
        let ended = Ended {
            valid: false,
            killed: i.killed,
            said: &said,
        };
        matched += usize::from(expects(claim, ended));
        first_failure.get_or_insert_with(|| said.join(" ⏎ "));
    }
    let verb = match want {
        Outcome::Fails => "failed",
        Outcome::Killed => "were killed",
        Outcome::Completes => "completed",
    };
    let mut note = format!("{matched} of {ran} processes {verb}");
    if let Some(p) = &claim.pattern {
        note.push_str(&format!(" matching /{p}/"));
    }
    if let Some(f) = first_failure {
        note.push_str(&format!("; {} failed, first: {f}", failed.len()));
    }
    Ok((matched, ran, note))
}
