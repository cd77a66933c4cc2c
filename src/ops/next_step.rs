//! A command the user is told to run next, named so that it runs as printed: `parkbench` when that
//! name on `PATH` is this very driver, else the driver's own path (`target/driver/parkbench` when
//! `just` built it and it is not on `PATH` yet), on the repository and results folder it was given.

use std::path::{Path, PathBuf};

pub use crate::text::{from_here, shell_path, shell_word};

use crate::study::NoStudyFile;

impl super::Paths {
    /// `line` with each `parkbench` that starts a command (at the line's start, or after a space,
    /// a colon or a backtick) written as this driver is run from here, with `--repo` and
    /// `--results` when these paths are not the ones it finds by itself (from the environment, or
    /// the working folder).
    pub fn runnable(&self, line: &str) -> String {
        named(line, &self.invocation(), &[' ', ':', '`', '\n'])
    }

    /// An error's text with each command quoted in it (`` `parkbench …` ``) written as
    /// [`runnable`](Self::runnable) writes it, so that it runs as pasted; a `parkbench` anywhere
    /// else in it (this parkbench, a path) is left as it is.
    pub fn runnable_quoted(&self, text: &str) -> String {
        named(text, &self.invocation(), &['`'])
    }

    /// A command's error as its user reads it: each command quoted in it written as
    /// [`runnable_quoted`](Self::runnable_quoted) writes it, and a relative study path missing
    /// from the working folder but present in the repository named as the repository's.
    pub fn said(&self, error: &anyhow::Error) -> String {
        let mut text = format!("{error:#}");
        let missing = error.chain().find_map(|c| c.downcast_ref::<NoStudyFile>());
        if let Some((missing, there)) = missing.and_then(|m| Some((m, self.in_repo(&m.path)?))) {
            let here = std::env::current_dir().unwrap_or_default();
            text = text.replace(
                &missing.to_string(),
                &format!(
                    "there is no study file {} in the working folder {}: a study's path is read \
                     from there, not from the repository (--repo, PARKBENCH_REPO); did you mean {}?",
                    missing.path.display(),
                    here.display(),
                    shell_path(&from_here(&there))
                ),
            );
        }
        self.runnable_quoted(&text)
    }

    /// `path`, relative and not in the working folder, as the repository holds it.
    fn in_repo(&self, path: &Path) -> Option<PathBuf> {
        let there = self.repo.join(path);
        (path.is_relative() && !path.exists() && there.is_file()).then_some(there)
    }

    /// This driver as run from here, with `--repo` and `--results` where they are needed.
    fn invocation(&self) -> String {
        let mut driver = driver();
        let found = |var: &str, or: PathBuf| std::env::var_os(var).map_or(or, PathBuf::from);
        let results = found("PARKBENCH_RESULTS", self.repo.join("results"));
        let repo = ("--repo", &self.repo, found("PARKBENCH_REPO", ".".into()));
        for (flag, path, default) in [repo, ("--results", &self.results, results)] {
            if *path != default {
                driver += &format!(" {flag} {}", shell_path(path));
            }
        }
        driver
    }
}

/// How to name this driver in a command line.
fn driver() -> String {
    // A driver rebuilt while it runs is named by the path it ran from, which now holds the new one.
    let exe = std::env::current_exe().map(|p| {
        use std::os::unix::ffi::OsStrExt;
        match p.as_os_str().as_bytes().strip_suffix(b" (deleted)") {
            Some(path) => PathBuf::from(std::ffi::OsStr::from_bytes(path)),
            None => p,
        }
    });
    let Ok(me) = exe.and_then(|p| p.canonicalize()) else {
        return "parkbench".into();
    };
    if on_path("parkbench").is_some_and(|p| p == me) {
        return "parkbench".into();
    }
    let here = std::env::current_dir().ok();
    match here.as_deref().and_then(|h| me.strip_prefix(h).ok()) {
        Some(rel) => rel.display().to_string(),
        None => me.display().to_string(),
    }
}

/// The file `name` runs as from `PATH`, resolved.
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
        .and_then(|p| p.canonicalize().ok())
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `line` with each `parkbench ` written as `driver ` where the character before it is one of
/// `after` (`'\n'` standing for the line's start too).
fn named(line: &str, driver: &str, after: &[char]) -> String {
    const WORD: &str = "parkbench ";
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find(WORD) {
        out.push_str(&rest[..at]);
        let starts = out.chars().last().map_or('\n', |c| c);
        out.push_str(if after.contains(&starts) {
            driver
        } else {
            "parkbench"
        });
        out.push(' ');
        rest = &rest[at + WORD.len()..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_is_named_as_the_driver_runs_and_a_path_is_left_alone() {
        let line = "check it with: parkbench check /tmp/parkbench x.tar.gz\nparkbench verify `parkbench report r`";
        assert_eq!(
            named(line, "target/driver/parkbench", &[' ', ':', '`', '\n']),
            "check it with: target/driver/parkbench check /tmp/parkbench x.tar.gz\n\
             target/driver/parkbench verify `target/driver/parkbench report r`"
        );
        assert_eq!(named("a/parkbench b", "d", &[' ', '\n']), "a/parkbench b");
    }

    #[test]
    fn a_study_path_missing_here_but_in_the_repository_is_named_as_the_repository_s() {
        let repo = tempfile::tempdir().unwrap();
        let file = "results/not-here-but-there/study.yaml";
        std::fs::create_dir_all(repo.path().join("results/not-here-but-there")).unwrap();
        std::fs::write(repo.path().join(file), crate::study::DEFAULT_STUDY).unwrap();
        let paths = crate::ops::Paths {
            repo: repo.path().into(),
            results: repo.path().join("results"),
        };
        let err = crate::study::Study::load(Path::new(file)).unwrap_err();
        let said = paths.said(&err.context("in the study"));
        let there = repo.path().join(file);
        let here = std::env::current_dir().unwrap();
        assert_eq!(
            said,
            format!(
                "in the study: there is no study file {file} in the working folder {}: a study's \
                 path is read from there, not from the repository (--repo, PARKBENCH_REPO); did \
                 you mean {}?",
                here.display(),
                there.display()
            )
        );
        let elsewhere = crate::ops::Paths {
            repo: PathBuf::from("."),
            results: PathBuf::from("results"),
        };
        assert!(
            !elsewhere
                .said(&crate::study::Study::load(Path::new(file)).unwrap_err())
                .contains("--repo")
        );
    }

    #[test]
    fn in_an_error_only_a_quoted_command_is_named_as_the_driver_runs() {
        let error = "parkbench is not self-contained: run `parkbench doctor`, then parkbench build";
        assert_eq!(
            named(error, "d --repo r", &['`']),
            "parkbench is not self-contained: run `d --repo r doctor`, then parkbench build"
        );
    }
}
