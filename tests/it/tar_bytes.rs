//! The bytes of a build context, a toolchain tar and a run archive are part of what parkbench
//! promises: image tags hash the context, pins hash the toolchain tars, reviewers publish the
//! archive's sha256. This test builds one fixture tree and compares each output with the sha256 the
//! writers gave for it when the format was fixed; a change to any header, order or skip rule shows
//! here. No Engine needed.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use parkbench::files::digest;
use parkbench::files::tarball::{Layout, Tree, Writer};
use parkbench::images::context;
use parkbench::outputs::archive;

/// Build context of the fixture's `probe/` folder plus a vendored folder and a blob.
const CONTEXT_SHA256: &str = "1771a0508f5492c0a21a99bc3404ac7b13c3e78dbccd61429962381ac6b003e5";
/// The `probe/` folder as a toolchain tar under `tool/` (the writer the toolchain pins use).
const MEMBERS_SHA256: &str = "3beeeb75ea24854da022c546d2a08b1520f8412eb4de12c07fec3fa769f6b4cb";
/// The run archive of `results/demo/runs/run-7` with the fixture's sources and one extra member.
const ARCHIVE_SHA256: &str = "52ee1c231e5fa8f68d4b3f185a8005f17c99b36c07a73afb7c134c61bed1d6b5";

fn put(path: &Path, text: &str, mode: u32) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

/// A tree with everything the writers treat specially: executables, empty and nested folders, an
/// inside symlink, a path over 100 bytes, names that sort differently by string and by component,
/// and the folders and files each writer skips.
fn fixture(root: &Path) {
    let long = format!("probe/{}/deep.txt", ["a-long-folder-name"; 7].join("/"));
    let files: &[(&str, &str, u32)] = &[
        ("probe/Dockerfile", "FROM scratch\nCOPY . /\n", 0o644),
        ("probe/run.sh", "#!/bin/sh\nexec probe \"$@\"\n", 0o750),
        (
            "probe/src/main.rs",
            "fn main() { println!(\"hi\"); }\n",
            0o600,
        ),
        (
            "probe/src-extra/x.rs",
            "// sorts between src and src/\n",
            0o644,
        ),
        (
            "probe/src.rs",
            "// sorts after src-extra, before src/\n",
            0o644,
        ),
        ("probe/target/release/probe", "build output", 0o755),
        ("probe/.git/HEAD", "ref: refs/heads/main\n", 0o644),
        ("probe/vendor/dep/lib.rs", "// a vendored dep\n", 0o644),
        ("probe/notes.tmp", "half-written", 0o644),
        (&long, "deep\n", 0o644),
        ("blob.bin", "\u{0}\u{1}\u{2} binary-ish blob", 0o644),
        ("run-files/study.yaml", "id: demo\ntitle: Demo\n", 0o644),
        (
            "run-files/samples.jsonl",
            "{\"probe\":\"go\",\"valid\":true}\n",
            0o644,
        ),
        ("run-files/env.json", "{\"kernel\":\"6.1\"}\n", 0o600),
        ("run-files/run.json", "{\"status\":\"complete\"}\n", 0o644),
        ("run-files/partial.tmp", "skipped", 0o644),
        ("run-files/sub/inner.txt", "inner\n", 0o755),
    ];
    for (path, text, mode) in files {
        put(&root.join(path), text, *mode);
    }
    fs::create_dir_all(root.join("probe/empty")).unwrap();
    std::os::unix::fs::symlink("../Dockerfile", root.join("probe/src/Dockerfile.link")).unwrap();
}

fn sha256(path: &Path) -> String {
    digest::file(path).unwrap()
}

#[test]
fn context_toolchain_tar_and_archive_bytes_are_unchanged() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("tree");
    fixture(&root);
    let out = tmp.path().join("out");
    fs::create_dir_all(&out).unwrap();

    let extra: Vec<(String, PathBuf)> = vec![
        ("vendored".into(), root.join("probe/src")),
        ("blobs/tool.tar".into(), root.join("blob.bin")),
    ];
    let ctx = context::write(&root.join("probe"), &extra, &[], &out.join("context.tar")).unwrap();
    assert_eq!(ctx.sha256, sha256(&ctx.path));

    let mut tree = Tree::new(Layout::Context);
    tree.add(&root.join("probe"), &["tool".into()], &|_, _| false)
        .unwrap();
    let mut tar = Writer::new(Vec::new());
    tar.tree(&tree, None).unwrap();
    let members_sha = digest::bytes(&tar.into_inner().unwrap());

    let run = tmp.path().join("results/demo/runs/run-7");
    fs::create_dir_all(run.parent().unwrap()).unwrap();
    fs::rename(root.join("run-files"), &run).unwrap();
    let sources = vec![
        ("docker/probe".to_string(), root.join("probe")),
        (
            "docker/probe/vendor/dep/lib.rs".to_string(),
            root.join("probe/vendor/dep/lib.rs"),
        ),
    ];
    let extras = vec![("images/blob.tar".to_string(), root.join("blob.bin"))];
    let info = archive::write_with(&run, &sources, &extras, &out.join("run-7.tar.gz")).unwrap();
    assert_eq!(info.sha256, sha256(&info.path));

    assert_eq!(
        (
            ctx.sha256.as_str(),
            members_sha.as_str(),
            info.sha256.as_str()
        ),
        (CONTEXT_SHA256, MEMBERS_SHA256, ARCHIVE_SHA256),
        "a writer's bytes changed: image tags, toolchain pins and published archive hashes depend on them"
    );
}
