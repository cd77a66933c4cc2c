use super::*;
use std::collections::BTreeSet;

#[test]
fn the_context_holds_the_driver_sources_its_crates_and_nothing_else() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    for (file, text) in [
        ("Cargo.toml", "[package]\n"),
        ("Cargo.lock", "# lock\n"),
        ("build.rs", "fn main() {}\n"),
        ("src/main.rs", "fn main() {}\n"),
        ("results/wait-1m/study.yaml", "id: wait-1m\n"),
        ("results/other/study.yaml", "id: other\n"),
        ("docker/go/Dockerfile", "FROM x\n"),
        ("target/debug/parkbench", "built\n"),
    ] {
        let path = repo.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let cache = Cache::open(&tmp.path().join("cache")).unwrap();
    let vendor = build::vendor_dir(&cache, &repo).unwrap();
    std::fs::create_dir_all(vendor.join("anyhow")).unwrap();
    std::fs::write(vendor.join("anyhow/lib.rs"), "// a crate\n").unwrap();
    let scratch = tmp.path().join("scratch");
    let built = BTreeSet::from(["anyhow".to_string()]);
    let ctx = context_of(&repo, &scratch, &vendor, &built, "").unwrap();
    let mut tar = tar::Archive::new(std::fs::File::open(&ctx.path).unwrap());
    let mut files: Vec<String> = (tar.entries().unwrap())
        .map(|e| e.unwrap())
        .filter(|e| e.header().entry_type().is_file())
        .map(|e| e.path().unwrap().display().to_string())
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "Dockerfile",
            "crates/cargo-home/build-env",
            "crates/cargo-home/config.toml",
            "crates/src/Cargo.lock",
            "crates/src/Cargo.toml",
            "crates/src/build.rs",
            "crates/src/vendor/anyhow/lib.rs",
            "driver/rebuild",
            "driver/src/results/wait-1m/study.yaml",
            "driver/src/src/main.rs"
        ]
    );
    // The same sources elsewhere give the same context, byte for byte.
    let moved = tmp.path().join("elsewhere/repo");
    std::fs::create_dir_all(moved.parent().unwrap()).unwrap();
    std::fs::rename(&repo, &moved).unwrap();
    let again = context_of(&moved, &tmp.path().join("scratch2"), &vendor, &built, "").unwrap();
    assert_eq!(again.sha256, ctx.sha256);

    std::fs::remove_file(moved.join("build.rs")).unwrap();
    let err = context_of(&moved, &tmp.path().join("scratch3"), &vendor, &built, "").unwrap_err();
    assert!(format!("{err:#}").contains("build.rs: missing"), "{err:#}");
}

/// A copy of this repository's toolchain files (every pin, the toolchain image's recipe) and
/// driver manifest below `to`.
fn toolchain_repo(to: &Path) {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    for dir in ["toolchains", "docker/toolchain-rust"] {
        std::fs::create_dir_all(to.join(dir)).unwrap();
        for entry in std::fs::read_dir(here.join(dir)).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), to.join(dir).join(entry.file_name())).unwrap();
        }
    }
    for file in ["Cargo.toml", "Cargo.lock"] {
        std::fs::copy(here.join(file), to.join(file)).unwrap();
    }
}

#[test]
fn an_archives_own_toolchain_files_are_named_and_never_built_from() {
    let tmp = tempfile::tempdir().unwrap();
    let (ours, theirs) = (tmp.path().join("ours"), tmp.path().join("theirs"));
    toolchain_repo(&ours);
    toolchain_repo(&theirs);
    let files = toolchain_files(&ours).unwrap();
    for file in [
        "docker/toolchain-rust/Dockerfile",
        "toolchains/rust.yaml",
        "toolchains/debian-base.yaml",
        "toolchains/debian-base.lock",
    ] {
        assert!(files.iter().any(|f| f == file), "{file}: {files:?}");
    }
    assert!(!files.iter().any(|f| f.contains("go")), "{files:?}");
    assert_eq!(
        toolchain_differences(&ours, &theirs).unwrap(),
        [] as [&str; 0]
    );

    // A forged toolchain recipe and pin in the archive are named...
    let dockerfile = theirs.join("docker/toolchain-rust/Dockerfile");
    let mut text = std::fs::read_to_string(&dockerfile).unwrap();
    text.push_str("RUN cp /forged /opt/rust/bin/cargo\n");
    std::fs::write(&dockerfile, text).unwrap();
    let pin = theirs.join("toolchains/rust.yaml");
    let text = std::fs::read_to_string(&pin).unwrap();
    std::fs::write(&pin, text.replacen("sha256: ", "sha256: 0", 1)).unwrap();
    assert_eq!(
        toolchain_differences(&ours, &theirs).unwrap(),
        ["docker/toolchain-rust/Dockerfile", "toolchains/rust.yaml"]
    );
    // ...and are not what the toolchain image is made of: that is ours, unchanged.
    assert_eq!(toolchain_files(&ours).unwrap(), files);
    for file in &files {
        let read = |root: &Path| std::fs::read(root.join(file)).unwrap();
        let here = Path::new(env!("CARGO_MANIFEST_DIR"));
        assert_eq!(read(&ours), read(here), "{file}");
    }
    // Nor does the driver's build context hold any of them.
    std::fs::create_dir_all(theirs.join("src")).unwrap();
    std::fs::create_dir_all(theirs.join("results/wait-1m")).unwrap();
    std::fs::write(theirs.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(theirs.join("build.rs"), "fn main() {}\n").unwrap();
    std::fs::write(theirs.join("results/wait-1m/study.yaml"), "id: x\n").unwrap();
    let ctx = sources_context(&theirs, &tmp.path().join("scratch")).unwrap();
    let mut tar = tar::Archive::new(std::fs::File::open(&ctx.path).unwrap());
    for entry in tar.entries().unwrap() {
        let path = entry.unwrap().path().unwrap().display().to_string();
        assert!(
            !path.starts_with("docker") && !path.starts_with("toolchains"),
            "{path}"
        );
    }
}

#[test]
fn driver_sources_that_could_fetch_or_substitute_crates_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let ours = tmp.path().join("ours");
    toolchain_repo(&ours);
    let lock = ours.join("Cargo.lock");
    check_sources(&ours, &lock).unwrap();
    let refused = |name: &str, edit: &dyn Fn(&Path), says: &str| {
        let theirs = tmp.path().join(name);
        toolchain_repo(&theirs);
        edit(&theirs);
        let err = check_sources(&theirs, &lock).unwrap_err();
        assert!(format!("{err:#}").contains(says), "{name}: {err:#}");
    };
    let append = |file: &'static str, text: &'static str| {
        move |root: &Path| {
            let mut old = std::fs::read_to_string(root.join(file)).unwrap();
            old.push_str(text);
            std::fs::write(root.join(file), old).unwrap();
        }
    };
    let replace = |file: &'static str, from: &'static str, to: &'static str| {
        move |root: &Path| {
            let old = std::fs::read_to_string(root.join(file)).unwrap();
            assert!(old.contains(from), "{from}");
            std::fs::write(root.join(file), old.replacen(from, to, 1)).unwrap();
        }
    };
    refused(
        "config",
        &|root| {
            std::fs::create_dir_all(root.join(".cargo")).unwrap();
            std::fs::write(root.join(".cargo/config.toml"), "").unwrap();
        },
        ".cargo: refused",
    );
    refused(
        "toolchain",
        &|root| std::fs::write(root.join("rust-toolchain.toml"), "").unwrap(),
        "rust-toolchain.toml: refused",
    );
    refused(
        "git",
        &append(
            "Cargo.toml",
            "\n[dependencies.evil]\ngit = \"https://example.invalid/evil\"\n",
        ),
        "evil has `git`",
    );
    refused(
        "path",
        &append(
            "Cargo.toml",
            "\n[build-dependencies]\nevil = { path = \"src/evil\" }\n",
        ),
        "evil has `path`",
    );
    refused(
        "patch",
        &append(
            "Cargo.toml",
            "\n[patch.crates-io]\nanyhow = { path = \"x\" }\n",
        ),
        "[patch] table",
    );
    refused(
        "locked-git",
        &replace(
            "Cargo.lock",
            "source = \"registry+",
            "source = \"git+https://example.invalid/evil#0\"\nx = \"registry+",
        ),
        "comes from git+",
    );
    refused(
        "locked-path",
        &replace("Cargo.lock", "source = \"registry+", "x = \"registry+"),
        "a path dependency",
    );
    refused(
        "workspace",
        &replace(
            "Cargo.toml",
            "[package]\n",
            "[package]\nworkspace = \"..\"\n",
        ),
        "a workspace elsewhere",
    );
    refused(
        "unchecked",
        &replace("Cargo.lock", "checksum = ", "x = "),
        "has no checksum",
    );
}

#[test]
fn every_build_step_reads_the_build_environment_and_none_sets_it() {
    // Each step commits (a walk of the whole tree on fuse-overlayfs): the environment is a file.
    let steps: Vec<&str> = (DOCKERFILE.lines())
        .filter(|l| !l.starts_with('#') && !l.starts_with(' ') && !l.trim().is_empty())
        .collect();
    assert!(!steps.iter().any(|s| s.starts_with("ENV")), "{steps:?}");
    let runs: Vec<&&str> = steps.iter().filter(|s| s.starts_with("RUN")).collect();
    assert_eq!(runs.len(), 2, "{steps:?}");
    assert!(
        (runs.iter()).all(|r| r.starts_with("RUN . /cargo-home/build-env && ")),
        "{runs:?}"
    );
    for set in [
        "CARGO_HOME=/cargo-home ",
        "CARGO_TARGET_DIR=/target ",
        "PARKBENCH_BUILT_IN=pinned ",
        "RUSTFLAGS=\"-C target-feature=+crt-static --remap-path-prefix=/src=. ",
    ] {
        assert!(BUILD_ENV.contains(set), "{set} in {BUILD_ENV}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vendoring_ahead_leaves_a_failure_to_the_build_and_vendored_crates_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::write(repo.join("Cargo.toml"), "[package]\n").unwrap();
    std::fs::write(repo.join("Cargo.lock"), "not a lock\n").unwrap();
    let cache = Cache::open(&tmp.path().join("cache")).unwrap();
    let vendor = build::vendor_dir(&cache, &repo).unwrap();
    // cargo vendor fails: nothing is said or kept (the build's own vendoring meets it again).
    vendor_ahead(&cache, &repo).await;
    assert!(!vendor.exists());
    assert_eq!(
        std::fs::read_dir(cache.root().join("tmp")).unwrap().count(),
        0
    );
    // Vendored already: left as it is.
    std::fs::create_dir_all(&vendor).unwrap();
    std::fs::write(vendor.join("mark"), "").unwrap();
    vendor_ahead(&cache, &repo).await;
    assert_eq!(std::fs::read_dir(&vendor).unwrap().count(), 1);
}
