//! One way for the tests to run a study: a small builder around the `parkbench` binary.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use super::{describe, parkbench};

/// A `parkbench` command line that runs a study, built up step by step.
///
/// The command line reads `parkbench [--repo R] SUBCOMMAND ARGS… [TARGET]`: the arguments come in
/// the order they were given, and the study, archive or other target named when the invocation was
/// made comes last. It runs from the repository unless [`Invocation::current_dir`] says otherwise.
pub struct Invocation {
    global: Vec<OsString>,
    subcommand: OsString,
    args: Vec<OsString>,
    target: Option<OsString>,
    envs: Vec<(OsString, Option<OsString>)>,
    current_dir: Option<PathBuf>,
    stdout: Option<Stdio>,
    stderr: Option<Stdio>,
}

impl Invocation {
    /// `parkbench SUBCOMMAND`, with nothing else yet: for a command that names its results folder
    /// and its study itself, or not at all.
    pub fn new(subcommand: impl AsRef<OsStr>) -> Self {
        Invocation {
            global: Vec::new(),
            subcommand: subcommand.as_ref().to_owned(),
            args: Vec::new(),
            target: None,
            envs: Vec::new(),
            current_dir: None,
            stdout: None,
            stderr: None,
        }
    }

    /// `parkbench run --results RESULTS STUDY`.
    pub fn run(results: impl AsRef<Path>, study: impl AsRef<Path>) -> Self {
        Self::new("run").results(results).target(study.as_ref())
    }

    /// `parkbench reproduce --results RESULTS STUDY`.
    pub fn reproduce(results: impl AsRef<Path>, study: impl AsRef<Path>) -> Self {
        Self::new("reproduce")
            .results(results)
            .target(study.as_ref())
    }

    /// `parkbench run --results RESULTS --resume RUN`: goes on with a run that was stopped.
    pub fn resume(results: impl AsRef<Path>, run: impl AsRef<Path>) -> Self {
        Self::new("run")
            .results(results)
            .arg("--resume")
            .arg(run.as_ref())
    }

    /// `parkbench rerun --results RESULTS ARCHIVE`.
    pub fn rerun(results: impl AsRef<Path>, archive: impl AsRef<Path>) -> Self {
        Self::new("rerun").results(results).target(archive.as_ref())
    }

    /// Adds `--results RESULTS`: where the study keeps its runs.
    pub fn results(self, results: impl AsRef<Path>) -> Self {
        self.arg("--results").arg(results.as_ref())
    }

    /// Adds `--cpus CPUS` (a list such as `0-1`, or `auto`).
    pub fn cpus(self, cpus: &str) -> Self {
        self.args(["--cpus", cpus])
    }

    /// Adds the global `--repo REPO` flag, before the subcommand.
    pub fn repo(mut self, repo: impl AsRef<Path>) -> Self {
        self.global.push("--repo".into());
        self.global.push(repo.as_ref().into());
        self
    }

    /// Adds one argument after those given so far.
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    /// Adds arguments after those given so far.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// Sets an environment variable of the command.
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.envs
            .push((key.as_ref().to_owned(), Some(value.as_ref().to_owned())));
        self
    }

    /// Takes an environment variable away from the command.
    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> Self {
        self.envs.push((key.as_ref().to_owned(), None));
        self
    }

    /// Runs the command from `dir` instead of the repository.
    pub fn current_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.current_dir = Some(dir.as_ref().to_owned());
        self
    }

    /// Where the command's standard output goes.
    pub fn stdout(mut self, to: impl Into<Stdio>) -> Self {
        self.stdout = Some(to.into());
        self
    }

    /// Where the command's standard error goes.
    pub fn stderr(mut self, to: impl Into<Stdio>) -> Self {
        self.stderr = Some(to.into());
        self
    }

    /// The command as built so far, to set what the builder does not.
    pub fn command(self) -> Command {
        let mut cmd = parkbench();
        cmd.args(&self.global)
            .arg(&self.subcommand)
            .args(&self.args)
            .args(&self.target);
        for (key, value) in &self.envs {
            match value {
                Some(value) => cmd.env(key, value),
                None => cmd.env_remove(key),
            };
        }
        if let Some(dir) = &self.current_dir {
            cmd.current_dir(dir);
        }
        if let Some(to) = self.stdout {
            cmd.stdout(to);
        }
        if let Some(to) = self.stderr {
            cmd.stderr(to);
        }
        cmd
    }

    /// Runs the command to its end and returns what it printed and how it exited.
    pub fn output(self) -> Output {
        self.command().output().expect("running parkbench")
    }

    /// Starts the command and returns it running.
    pub fn spawn(self) -> Child {
        self.command().spawn().expect("starting parkbench")
    }

    /// Runs the command to its end and fails the test, saying what it printed, unless it succeeded.
    #[track_caller]
    pub fn succeeds(self) -> Output {
        let out = self.output();
        assert!(out.status.success(), "{}", describe(&out));
        out
    }

    /// Names the study, archive or run that comes last on the command line.
    fn target(mut self, target: &Path) -> Self {
        self.target = Some(target.into());
        self
    }
}
