//! Package locks of root filesystem pins against a test mirror: a local apt repository made from
//! the locked `.deb`s, with libc6 rebuilt under a bumped version, so that nothing depends on
//! Debian changing. One test, in steps that share the slow parts (each mmdebstrap run):
//! the lock is made from the host's apt sources and honoured; a moved package is drift, named
//! and recorded in the manifest; `--strict-pins` refuses; the `.deb`s an archive carries rebuild
//! the root filesystem bit for bit with no apt source at all.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{describe, quoted_command, text};

/// A small root filesystem: Debian's essential packages and apt.
const PIN: &str = "name: test-rootfs\nversion: bookworm\n\
    sha256: 0000000000000000000000000000000000000000000000000000000000000000\n\
    sources:\n  - kind: mmdebstrap\n    suite: bookworm\n    variant: apt\n    \
    source_date_epoch: 1747699200\n    mirror: host\n";

struct Env {
    repo: PathBuf,
    namespace: String,
}

impl Env {
    fn run(&self, cache: &Path, sources: Option<&Path>, args: &[&str]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_parkbench"));
        cmd.arg("--repo")
            .arg(&self.repo)
            .args(args)
            .env("PARKBENCH_CACHE", cache)
            .env("PARKBENCH_NAMESPACE", &self.namespace)
            .env_remove("PARKBENCH_APT_SOURCES");
        if let Some(s) = sources {
            cmd.env("PARKBENCH_APT_SOURCES", s);
        }
        cmd.output().expect("running parkbench")
    }

    fn pin_sha256(&self) -> String {
        let pin = std::fs::read_to_string(self.repo.join("toolchains/test-rootfs.yaml")).unwrap();
        let line = pin.lines().find(|l| l.starts_with("sha256: ")).unwrap();
        line["sha256: ".len()..].to_owned()
    }
}

/// (name, version, sha256) of every locked package.
fn locked(repo: &Path) -> Vec<(String, String, String)> {
    let lock = std::fs::read_to_string(repo.join("toolchains/test-rootfs.lock")).unwrap();
    lock.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[0].to_owned(), f[1].to_owned(), f[4].to_owned())
        })
        .collect()
}

fn blob(cache: &Path, sha256: &str) -> PathBuf {
    cache.join("blobs/sha256").join(sha256)
}

fn ok(cmd: &mut Command) {
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{cmd:?}: {}", describe(&out));
}

/// The test mirror: every locked `.deb` but libc6, which is rebuilt with `+test1` appended to its
/// version; indexed by dpkg-scanpackages and apt-ftparchive. Returns the sources file.
fn test_mirror(dir: &Path, cache: &Path, packages: &[(String, String, String)]) -> PathBuf {
    let pool = dir.join("mirror");
    std::fs::create_dir_all(&pool).unwrap();
    for (name, _, sha) in packages.iter().filter(|(n, _, _)| n != "libc6") {
        std::fs::copy(blob(cache, sha), pool.join(format!("{name}.deb"))).unwrap();
    }
    let (_, version, sha) = packages.iter().find(|(n, _, _)| n == "libc6").unwrap();
    let tree = dir.join("libc6-tree");
    ok(Command::new("dpkg-deb")
        .arg("-R")
        .arg(blob(cache, sha))
        .arg(&tree));
    let control = tree.join("DEBIAN/control");
    let text = std::fs::read_to_string(&control).unwrap();
    let bumped = text.replace(
        &format!("Version: {version}\n"),
        &format!("Version: {version}+test1\n"),
    );
    assert_ne!(text, bumped, "libc6's control names its version");
    std::fs::write(&control, bumped).unwrap();
    ok(Command::new("dpkg-deb")
        .args(["--root-owner-group", "-b"])
        .arg(&tree)
        .arg(pool.join("libc6.deb")));
    let index = Command::new("dpkg-scanpackages")
        .args(["-m", ".", "/dev/null"])
        .current_dir(&pool)
        .output()
        .unwrap();
    assert!(index.status.success(), "{}", describe(&index));
    std::fs::write(pool.join("Packages"), &index.stdout).unwrap();
    let release = Command::new("apt-ftparchive")
        .args(["release", "."])
        .current_dir(&pool)
        .output()
        .unwrap();
    std::fs::write(pool.join("Release"), &release.stdout).unwrap();
    let sources = dir.join("mirror.list");
    std::fs::write(
        &sources,
        format!("deb [trusted=yes] copy://{} ./\n", pool.display()),
    )
    .unwrap();
    sources
}

/// A cache holding the locked `.deb`s named by `keep`, as an archive's `debs/` would bring them.
fn cache_with(
    dir: &Path,
    from: &Path,
    packages: &[(String, String, String)],
    keep: impl Fn(&str) -> bool,
) -> PathBuf {
    let blobs = dir.join("blobs/sha256");
    std::fs::create_dir_all(&blobs).unwrap();
    for (_, _, sha) in packages.iter().filter(|(n, _, _)| keep(n)) {
        std::fs::copy(blob(from, sha), blobs.join(sha)).unwrap();
    }
    dir.to_owned()
}

/// The `debs/` folder of a `parkbench archive --with-debs` of a run whose image stands on
/// test-rootfs: the repository's reference run of tasks-vs-threads, its base renamed.
fn archived_debs(env: &Env, tmp: &Path, cache: &Path, count: usize) -> PathBuf {
    let reference = common::repo().join("results/tasks-vs-threads/reference/run.tar.gz");
    let run = common::archive::unpack(&reference, &tmp.join("runs"));
    std::fs::remove_file(run.join("SHA256SUMS")).unwrap();
    let file = run.join("manifest.json");
    let json = std::fs::read_to_string(&file).unwrap();
    let renamed = json.replace("\"rootfs debian-base ", "\"rootfs test-rootfs ");
    assert_ne!(
        json, renamed,
        "the reference run's base stands on debian-base"
    );
    std::fs::write(&file, renamed).unwrap();
    let args = [
        "archive",
        run.to_str().unwrap(),
        "--with-debs",
        "--no-driver",
    ];
    let out = env.run(cache, None, &args);
    eprintln!("archive --with-debs:\n{}", describe(&out));
    assert!(out.status.success(), "{}", describe(&out));
    let said = format!("carries {count} of the {count} .debs the run installed for test-rootfs");
    assert!(text(&out.stderr).contains(&said), "{}", describe(&out));
    let archive = run.with_extension("tar.gz");
    let unpacked = common::archive::unpack(&archive, &tmp.join("unpacked"));
    let debs = unpacked.join("debs");
    assert_eq!(std::fs::read_dir(&debs).unwrap().count(), count);
    debs
}

#[test]
fn locks_are_honoured_drift_is_recorded_and_debs_rebuild_offline() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(repo.join("docker")).unwrap();
    std::fs::create_dir_all(repo.join("toolchains")).unwrap();
    std::fs::write(repo.join("toolchains/test-rootfs.yaml"), PIN).unwrap();
    let env = Env {
        repo: repo.clone(),
        namespace: format!("parkbench-test-pin-lock-{}", std::process::id()),
    };

    // The lock, from the host's apt sources: every .deb into cache A, the pin's sha256 written.
    let cache_a = tmp.path().join("cache-a");
    let out = env.run(&cache_a, None, &["pin", "lock", "test-rootfs"]);
    assert!(out.status.success(), "{}", describe(&out));
    let packages = locked(&repo);
    assert!(
        packages.iter().any(|(n, _, _)| n == "libc6"),
        "{packages:?}"
    );
    let pinned = env.pin_sha256();
    assert_ne!(
        pinned,
        "0".repeat(64),
        "pin lock writes the tar's sha256 into the pin"
    );
    eprintln!("pin lock:\n{}", describe(&out));
    assert!(text(&out.stdout).contains(&pinned), "{}", describe(&out));
    for (name, _, sha) in &packages {
        assert!(
            blob(&cache_a, sha).is_file(),
            "{name}'s .deb is kept in the cache"
        );
    }

    // --strict-pins: libc6's locked version is neither cached nor served by the test mirror.
    let mirror = test_mirror(tmp.path(), &cache_a, &packages);
    let libc6 = packages.iter().find(|(n, _, _)| n == "libc6").unwrap();
    let moved = format!("libc6 {} → {}+test1", libc6.1, libc6.1);
    let cache_c = cache_with(&tmp.path().join("cache-c"), &cache_a, &packages, |n| {
        n != "libc6"
    });
    let build = ["build", "--only", "test-rootfs"];
    let out = env.run(
        &cache_c,
        Some(&mirror),
        &[&build[..], &["--strict-pins"]].concat(),
    );
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let err = text(&out.stderr);
    eprintln!("--strict-pins:\n{err}");
    assert!(
        err.contains(&moved)
            && err.contains(&format!("1 of {}", packages.len()))
            && err.contains("--with-debs"),
        "{err}"
    );
    // The command that accepts the served set, as this test ran it above.
    let accept = quoted_command(
        &err,
        " pin lock test-rootfs",
        &std::env::current_dir().unwrap(),
    );
    let repo_flag = [
        "--repo",
        env.repo.to_str().unwrap(),
        "pin",
        "lock",
        "test-rootfs",
    ];
    assert_eq!(accept[1..], repo_flag, "{err}");

    // Without it: built with the served libc6, the drift named and in the manifest.
    let manifest = tmp.path().join("manifest.json");
    let m = manifest.to_str().unwrap();
    let out = env.run(
        &cache_c,
        Some(&mirror),
        &[&build[..], &["--manifest", m]].concat(),
    );
    assert!(out.status.success(), "{}", describe(&out));
    eprintln!("drift:\n{}", text(&out.stderr));
    assert!(text(&out.stderr).contains(&moved), "{}", describe(&out));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    let drift = &json["drift"][0];
    assert_eq!(drift["pin"], "test-rootfs", "{json:#}");
    assert_eq!(drift["moved"][0]["package"], "libc6", "{json:#}");
    assert_eq!(drift["moved"][0]["served"], format!("{}+test1", libc6.1));
    let stand_in = drift["moved"][0]["sha256"].as_str().unwrap_or_default();
    assert!(
        blob(&cache_c, stand_in).is_file(),
        "the stand-in is recorded: {json:#}"
    );
    let drifted = drift["sha256"].as_str().unwrap().to_owned();
    assert_ne!(drifted, pinned, "the drifted tar is not the pinned one");
    assert!(
        json["images"][0]["notes"][0]
            .as_str()
            .unwrap()
            .contains(&moved),
        "{json:#}"
    );

    // The .debs a `--with-debs` archive carries, no apt source at all: the pinned tar, bit for bit.
    let debs = archived_debs(&env, tmp.path(), &cache_a, packages.len());
    let cache_d = tmp.path().join("cache-d");
    // Only the .debs this checkout's lock names by sha256 are taken from an archive.
    let trusted = packages.iter().map(|(_, _, sha)| sha.clone()).collect();
    let imported = parkbench::images::artifact::import_debs(
        &parkbench::images::cache::Cache::open(&cache_d).unwrap(),
        &debs,
        "a test archive",
        &trusted,
    )
    .unwrap();
    assert_eq!(imported.added, packages.len());
    assert!(imported.refused.is_empty(), "{:?}", imported.refused);
    let none = tmp.path().join("no-sources.list");
    std::fs::write(&none, "# no apt sources\n").unwrap();
    let out = env.run(
        &cache_d,
        Some(&none),
        &[&build[..], &["--strict-pins", "--manifest", m]].concat(),
    );
    assert!(out.status.success(), "{}", describe(&out));
    eprintln!("offline:\n{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("from its lock"),
        "{}",
        describe(&out)
    );
    assert!(
        blob(&cache_d, &pinned).is_file(),
        "the pinned tar is in the cache: same sha256"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    assert!(json.get("drift").is_none(), "{json:#}");
    assert_eq!(
        json["images"][0]["layers"][0],
        format!("sha256:{pinned}"),
        "{json:#}"
    );

    // Only the tags this test made go (a clean would also prune other builds' untagged images).
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let engine = parkbench::engine::Engine::connect().await.unwrap();
        for tag in engine.image_tags(&env.namespace).await.unwrap() {
            engine.remove_tag(&tag).await.unwrap();
        }
    });
}
