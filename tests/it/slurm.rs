//! `export slurm` on a real Slurm: a single-node cluster started here from Debian's packages
//! (munged as user munge with a fresh key, slurmctld and slurmd with a minimal slurm.conf of this
//! machine, all in a temporary folder), the default study exported in 2 shards and submitted with
//! sbatch. The array's tasks measure on the local Engine, the merge job merges and verifies, and
//! the merged run judges the same claims as one plain run of the study. The daemons are stopped
//! on every path, a panic included.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// Processes per cell in both runs: the default study's cells, once each, to keep the test short.
const REPEATS: &str = "1";
/// How long the cluster may take to run both shards and the merge.
const JOBS_WITHIN: Duration = Duration::from_secs(30 * 60);

/// A single-node Slurm and its munged, each daemon a child process in the foreground. Dropping
/// it interrupts every job (SIGINT, as Ctrl-C: parkbench removes its containers), cancels what is
/// left, then stops the daemons (SIGTERM, then SIGKILL after 10 s).
struct Cluster {
    dir: tempfile::TempDir,
    conf: PathBuf,
    daemons: Vec<(&'static str, Child)>,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let started = Instant::now();
        // Pending jobs have nothing to clean up; running ones get SIGINT and remove their
        // containers; whatever is left after a minute is cancelled outright.
        let steps: [(&[&str], u64); 3] = [
            (&["--state=PENDING"], 10),
            (&["--full", "--signal=INT"], 60),
            (&[], 20),
        ];
        for (how, within) in steps {
            let _ = self
                .command("scancel")
                .args(how)
                .arg("--user=root")
                .output();
            let quiet = Instant::now() + Duration::from_secs(within);
            while Instant::now() < quiet && !self.queue().is_empty() {
                std::thread::sleep(Duration::from_millis(500));
            }
        }
        for (_, child) in self.daemons.iter_mut().rev() {
            stop(child);
        }
        eprintln!(
            "the cluster stopped in {:.1} s",
            started.elapsed().as_secs_f64()
        );
    }
}

fn stop(child: &mut Child) {
    let pid = child.id() as libc::pid_t;
    // SAFETY: signals a child this test started and has not reaped.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// A TCP port nothing listens on now.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

fn tool(name: &str) -> PathBuf {
    ["/usr/sbin", "/usr/bin"]
        .iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.exists())
        .unwrap_or_else(|| {
            panic!("{name} is missing: install Debian's slurm-wlm and munge (.ci/run does)")
        })
}

fn id_of(user: &str, flag: &str) -> u32 {
    let out = Command::new("id").args([flag, user]).output().unwrap();
    assert!(out.status.success(), "no user {user}: {}", describe(&out));
    text(&out.stdout).trim().parse().unwrap()
}

impl Cluster {
    fn start() -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        // munged must reach its socket's folder through this one, as user munge.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let conf = dir.path().join("slurm.conf");
        let mut cluster = Cluster {
            dir,
            conf,
            daemons: Vec::new(),
        };
        let socket = cluster.munge();
        cluster.write_conf(&socket);
        for (name, args) in [
            ("slurmctld", vec!["-D"]),
            ("slurmd", vec!["-D", "-N", &cluster.node()]),
        ] {
            let log = std::fs::File::create(cluster.path(&format!("{name}.out"))).unwrap();
            let child = Command::new(tool(name))
                .args(args)
                .env("SLURM_CONF", &cluster.conf)
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .spawn()
                .unwrap();
            cluster.daemons.push((name, child));
        }
        cluster.wait_idle();
        cluster
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// This machine's short host name, the node's name.
    fn node(&self) -> String {
        let name = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
        name.trim().split('.').next().unwrap().to_string()
    }

    /// Starts munged as user munge with a fresh key; returns its socket.
    fn munge(&mut self) -> PathBuf {
        let (uid, gid) = (id_of("munge", "-u"), id_of("munge", "-g"));
        let home = self.path("munge");
        std::fs::create_dir(&home).unwrap();
        std::os::unix::fs::chown(&home, Some(uid), Some(gid)).unwrap();
        let as_munge = |program: &str| {
            let mut cmd = Command::new(tool(program));
            cmd.uid(uid).gid(gid).current_dir(&home);
            cmd
        };
        let key = home.join("munge.key");
        let out = as_munge("mungekey")
            .arg("--create")
            .arg("--keyfile")
            .arg(&key)
            .output()
            .unwrap();
        assert!(out.status.success(), "mungekey: {}", describe(&out));
        let socket = home.join("munge.socket");
        let child = as_munge("munged")
            .arg("--foreground")
            .arg(format!("--key-file={}", key.display()))
            .arg(format!("--socket={}", socket.display()))
            .arg(format!("--pid-file={}", home.join("munged.pid").display()))
            .arg(format!(
                "--seed-file={}",
                home.join("munged.seed").display()
            ))
            .arg(format!("--log-file={}", home.join("munged.log").display()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.daemons.push(("munged", child));
        let deadline = Instant::now() + Duration::from_secs(20);
        while !socket.exists() {
            assert!(Instant::now() < deadline, "munged did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
        socket
    }

    /// slurm.conf: one node, this machine as `slurmd -C` describes it, no cgroups, no accounting.
    fn write_conf(&self, socket: &Path) {
        let out = Command::new(tool("slurmd")).arg("-C").output().unwrap();
        assert!(out.status.success(), "slurmd -C: {}", describe(&out));
        let node_line = text(&out.stdout);
        let hardware = node_line
            .lines()
            .next()
            .unwrap()
            .split_whitespace()
            .filter(|w| !w.starts_with("NodeName=") && !w.starts_with("UpTime="))
            .collect::<Vec<_>>()
            .join(" ");
        let (node, dir) = (self.node(), self.dir.path().display());
        for sub in ["state", "spool"] {
            std::fs::create_dir(self.path(sub)).unwrap();
        }
        let conf = format!(
            "ClusterName=parkbench-test
SlurmctldHost={node}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={socket}
SlurmctldPort={ctld}
SlurmdPort={slurmd}
StateSaveLocation={dir}/state
SlurmdSpoolDir={dir}/spool
SlurmctldPidFile={dir}/slurmctld.pid
SlurmdPidFile={dir}/slurmd.pid
SlurmctldLogFile={dir}/slurmctld.log
SlurmdLogFile={dir}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
MinJobAge=3600
NodeName={node} NodeAddr=127.0.0.1 {hardware} State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
",
            socket = socket.display(),
            ctld = free_port(),
            slurmd = free_port(),
        );
        std::fs::write(&self.conf, conf).unwrap();
    }

    /// A Slurm client command of this cluster.
    fn command(&self, name: &str) -> Command {
        let mut cmd = Command::new(tool(name));
        cmd.env("SLURM_CONF", &self.conf);
        cmd
    }

    /// Waits until the node takes jobs.
    fn wait_idle(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let out = self
                .command("sinfo")
                .args(["--noheader", "--format=%t"])
                .output()
                .unwrap();
            if out.status.success() && text(&out.stdout).trim() == "idle" {
                return;
            }
            let exited = self
                .daemons
                .iter_mut()
                .find_map(|(name, child)| Some((*name, child.try_wait().ok()??)));
            if let Some((name, status)) = exited {
                panic!("{name} exited ({status}): {}", self.logs());
            }
            assert!(
                Instant::now() < deadline,
                "the node is not idle after 60 s: {}\n{}",
                describe(&out),
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    fn logs(&self) -> String {
        ["slurmctld.log", "slurmd.log", "slurmctld.out", "slurmd.out"]
            .iter()
            .map(|f| {
                let text = std::fs::read_to_string(self.path(f)).unwrap_or_default();
                let tail: Vec<&str> = text.lines().rev().take(20).collect();
                format!(
                    "== {f}\n{}",
                    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The jobs still in the queue.
    fn queue(&self) -> String {
        let out = self
            .command("squeue")
            .args(["--noheader", "--format=%i %T"])
            .output();
        out.map(|o| text(&o.stdout).trim().to_string())
            .unwrap_or_default()
    }

    /// A job's `scontrol show job` fields as `Key=value` words.
    fn job(&self, id: &str) -> String {
        let out = self
            .command("scontrol")
            .args(["show", "job", id])
            .output()
            .unwrap();
        text(&out.stdout)
    }
}

/// The value of `key=` in `scontrol show job`'s words.
fn field<'a>(job: &'a str, key: &str) -> Option<&'a str> {
    job.split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
}

/// A run's verdicts, one per claim in the study's order.
fn verdicts(run: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(run.join("verdicts.json")).unwrap();
    let file: serde_json::Value = serde_json::from_str(&text).unwrap();
    file["verdicts"].as_array().unwrap().clone()
}

/// A measured value, or the middle of a measured range.
fn value(verdict: &serde_json::Value) -> Option<f64> {
    let m = &verdict["measured"];
    m.as_f64()
        .or_else(|| Some((m[0].as_f64()? + m[1].as_f64()?) / 2.0))
}

/// Why two runs' findings on one claim may differ: both measured it, their values lie within 2 %
/// of each other, and an accepted bound lies between them (the claim sits at its bound, and the
/// noise between two runs decides the side). `None` when the difference is unexplained.
fn at_the_bound(a: &serde_json::Value, b: &serde_json::Value) -> Option<String> {
    let (x, y) = (value(a)?, value(b)?);
    let close = (x - y).abs() <= 0.02 * x.abs().max(y.abs());
    let between = a["accepted"]
        .as_array()?
        .iter()
        .filter_map(|bound| bound.as_f64())
        .find(|bound| (x - bound) * (y - bound) <= 0.0)?;
    close.then(|| format!("{x} and {y} lie on both sides of the bound {between}"))
}

fn run_ok(out: &Output, what: &str) {
    assert!(out.status.success(), "{what}: {}", describe(out));
}

#[test]
fn the_default_study_in_two_shards_on_slurm_judges_as_one_plain_run() {
    let started = Instant::now();
    let cluster = Cluster::start();
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("slurm");
    let study = repo().join("results/wait-1m/study.yaml");
    let script = tmp.path().join("job.sh");
    let out = parkbench()
        .arg("--results")
        .arg(&results)
        .args(["export", "slurm", "--shards", "2", "--repeats", REPEATS])
        .arg(&study)
        .arg("--out")
        .arg(&script)
        .output()
        .unwrap();
    run_ok(&out, "export slurm");

    // The jobs find this build's driver first on their PATH (sbatch passes the environment on).
    let bin = Path::new(env!("CARGO_BIN_EXE_parkbench")).parent().unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let out = cluster
        .command("sbatch")
        .arg("--parsable")
        .arg(&script)
        .env("PATH", &path)
        .current_dir(tmp.path())
        .output()
        .unwrap();
    run_ok(&out, "sbatch");
    let array = text(&out.stdout).trim().to_string();
    eprintln!("job array {array} submitted");

    let task_log = |i: u32| results.join(format!("parkbench-wait-1m-{array}_{i}.out"));
    let deadline = Instant::now() + JOBS_WITHIN;
    let merge = loop {
        let log = std::fs::read_to_string(task_log(1)).unwrap_or_default();
        if let Some(line) = log.lines().find(|l| l.starts_with("merge job ")) {
            break line.split_whitespace().nth(2).unwrap().to_string();
        }
        assert!(
            Instant::now() < deadline,
            "task 1 did not submit the merge job: {log}\nqueue: {}\n{}",
            cluster.queue(),
            cluster.logs()
        );
        std::thread::sleep(Duration::from_secs(1));
    };
    eprintln!("merge job {merge} waits for job array {array}");
    let merge_job = loop {
        let job = cluster.job(&merge);
        let state = field(&job, "JobState").unwrap_or_default();
        if !["PENDING", "RUNNING", "CONFIGURING", "COMPLETING", ""].contains(&state) {
            break job;
        }
        assert!(
            Instant::now() < deadline,
            "the merge job did not end within {JOBS_WITHIN:?}: {job}\nqueue: {}",
            cluster.queue()
        );
        std::thread::sleep(Duration::from_secs(2));
    };
    let through_slurm = started.elapsed();
    let merge_log =
        std::fs::read_to_string(results.join(format!("parkbench-wait-1m-merge-{merge}.out")))
            .unwrap_or_default();
    let tasks: Vec<String> = (1..=2)
        .map(|i| std::fs::read_to_string(task_log(i)).unwrap_or_default())
        .collect();
    assert_eq!(
        (field(&merge_job, "JobState"), field(&merge_job, "ExitCode")),
        (Some("COMPLETED"), Some("0:0")),
        "{merge_job}\nmerge log:\n{merge_log}\ntask logs:\n{}",
        tasks.join("\n----\n")
    );
    let mut spans = Vec::new();
    for i in 1..=2 {
        let task = cluster.job(&format!("{array}_{i}"));
        assert_eq!(field(&task, "ExitCode"), Some("0:0"), "task {i}: {task}");
        let at = |key| field(&task, key).unwrap_or_default().to_string();
        spans.push((at("StartTime"), at("EndTime")));
    }
    // --exclusive: the node has CPUs for both one-CPU tasks, yet they ran one after the other.
    spans.sort();
    assert!(spans[0].1 <= spans[1].0, "the tasks overlapped: {spans:?}");
    // Each task measured its own shard in its own folder, on the node's CPUs alone.
    for i in 1..=2u64 {
        let run = only_run(&results.join(format!("shards/{array}/{i}")), "wait-1m");
        let state: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap();
        assert_eq!(state["shard"]["index"].as_u64(), Some(i), "{state}");
        assert_eq!(state["shard"]["count"].as_u64(), Some(2), "{state}");
    }
    // The merge wrote one run folder and its archive, and verified the archive.
    let mut written: Vec<PathBuf> = std::fs::read_dir(results.join("merged"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    written.sort();
    assert_eq!(written.len(), 2, "{written:?}");
    let merged = written[0].clone();
    assert_eq!(written[1], merged.with_extension("tar.gz"), "{written:?}");
    assert!(
        // Named from the job's working folder, as every path a command prints.
        merge_log.lines().any(|l| l.starts_with("archive: ")
            && l.contains(&*written[1].file_name().unwrap().to_string_lossy())),
        "{merge_log}"
    );
    assert!(
        merge_log
            .contains("verdicts recomputed from the raw samples match the stored verdicts.json"),
        "{merge_log}"
    );
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(merged.join("merge.json")).unwrap()).unwrap();
    assert_eq!(
        record["missing_shards"].as_array().map(Vec::len),
        Some(0),
        "{record}"
    );
    let slurm_verdicts = verdicts(&merged);

    // One plain run of the same study, here.
    let plain = tmp.path().join("plain");
    let out = Invocation::run(&plain, &study)
        .cpus("auto")
        .args(["--repeats", REPEATS])
        .output();
    run_ok(&out, "plain run");
    let run = only_run(&plain, "wait-1m");
    run_ok(
        &parkbench().arg("report").arg(&run).output().unwrap(),
        "report",
    );
    let plain_verdicts = verdicts(&run);
    eprintln!(
        "through Slurm in {:.0} s (cluster start, 2 shards, merge, verify); the plain run after it: \
         {:.0} s in all",
        through_slurm.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    let claims = |v: &[serde_json::Value]| -> Vec<String> {
        v.iter().map(|v| v["claim"].to_string()).collect()
    };
    assert!(!slurm_verdicts.is_empty());
    assert_eq!(claims(&slurm_verdicts), claims(&plain_verdicts));
    for (merged, plain) in slurm_verdicts.iter().zip(&plain_verdicts) {
        let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
        let (claim, a, b) = (
            text(&merged["claim"]),
            text(&merged["status"]),
            text(&plain["status"]),
        );
        let why = match a == b {
            true => String::new(),
            false => match at_the_bound(merged, plain) {
                Some(why) => format!(" ({why})"),
                None => panic!("{claim}: merged {merged}\nplain {plain}"),
            },
        };
        eprintln!("{claim}: merged {a}, plain {b}{why}");
    }
    drop(cluster);
}
