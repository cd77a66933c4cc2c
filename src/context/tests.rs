//! Unit tests of deterministic context tars.

use super::*;
use std::os::unix::fs::PermissionsExt;

fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::create_dir_all(p.join("src/deep")).unwrap();
    std::fs::create_dir_all(p.join("target/debug")).unwrap();
    std::fs::create_dir_all(p.join(".git")).unwrap();
    std::fs::write(p.join("Dockerfile"), "FROM scratch\n").unwrap();
    std::fs::write(p.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(p.join("run.sh"), "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(p.join("run.sh"), std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(p.join("target/debug/big"), "x").unwrap();
    std::fs::write(p.join(".git/HEAD"), "ref").unwrap();
    std::os::unix::fs::symlink("../main.rs", p.join("src/deep/link")).unwrap();
    dir
}

fn members(tar_path: &Path) -> Vec<(String, u32, u64, u64)> {
    let mut archive = tar::Archive::new(File::open(tar_path).unwrap());
    let entries = archive.entries().unwrap();
    entries
        .map(|e| {
            let e = e.unwrap();
            let h = e.header();
            (
                e.path().unwrap().to_string_lossy().into_owned(),
                h.mode().unwrap(),
                h.mtime().unwrap(),
                h.uid().unwrap(),
            )
        })
        .collect()
}

#[test]
fn same_tree_gives_same_bytes() {
    let src = tree();
    let out = tempfile::tempdir().unwrap();
    let extra = vec![("blobs/rust.tar".to_owned(), src.path().join("Dockerfile"))];
    let a = write(src.path(), &extra, &[], &out.path().join("a.tar")).unwrap();
    let b = write(src.path(), &extra, &[], &out.path().join("b.tar")).unwrap();
    assert_eq!(a.sha256, b.sha256);
    assert_eq!(
        std::fs::read(&a.path).unwrap(),
        std::fs::read(&b.path).unwrap()
    );
    assert_eq!(a.sha256, crate::cache::hash_file(&a.path).unwrap());

    let file = File::options()
        .write(true)
        .open(src.path().join("src/main.rs"))
        .unwrap();
    file.set_modified(std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(12345))
        .unwrap();
    let c = write(src.path(), &extra, &[], &out.path().join("c.tar")).unwrap();
    assert_eq!(
        a.sha256, c.sha256,
        "an mtime change must not change the bytes"
    );

    std::fs::write(src.path().join("src/main.rs"), "fn main() { }\n").unwrap();
    let d = write(src.path(), &extra, &[], &out.path().join("d.tar")).unwrap();
    assert_ne!(a.sha256, d.sha256, "a content change must change the hash");
}

#[test]
fn members_are_sorted_normalised_and_filtered() {
    let src = tree();
    let out = tempfile::tempdir().unwrap();
    let extra = vec![("vendor".to_owned(), src.path().join("src"))];
    let ctx = write(src.path(), &extra, &[], &out.path().join("ctx.tar")).unwrap();
    let got = members(&ctx.path);
    let names: Vec<&str> = got.iter().map(|m| m.0.as_str()).collect();
    assert_eq!(
        names,
        [
            "Dockerfile",
            "run.sh",
            "src/",
            "src/deep/",
            "src/deep/link",
            "src/main.rs",
            "vendor/",
            "vendor/deep/",
            "vendor/deep/link",
            "vendor/main.rs",
        ]
    );
    for (name, mode, mtime, uid) in &got {
        let want = if name.ends_with('/') || name == "run.sh" {
            0o755
        } else if name.ends_with("link") {
            0o777
        } else {
            0o644
        };
        assert_eq!((*mode, *mtime, *uid), (want, 0, 0), "{name}");
    }
    assert_eq!(
        std::fs::read_dir(out.path()).unwrap().count(),
        1,
        "no temporary file is left beside the output"
    );
}

#[test]
fn skipped_top_level_entries_are_left_out() {
    let src = tree();
    let out = tempfile::tempdir().unwrap();
    std::fs::write(src.path().join("image.yaml"), "probe: true\n").unwrap();
    std::fs::write(src.path().join("src/image.yaml"), "kept\n").unwrap();
    let plain = write(src.path(), &[], &[], &out.path().join("a.tar")).unwrap();
    let ctx = write(src.path(), &[], &["image.yaml"], &out.path().join("b.tar")).unwrap();
    let names: Vec<String> = members(&ctx.path).into_iter().map(|m| m.0).collect();
    assert!(!names.contains(&"image.yaml".to_string()), "{names:?}");
    assert!(names.contains(&"src/image.yaml".to_string()), "{names:?}");
    assert_ne!(plain.sha256, ctx.sha256);
}

#[test]
fn links_outside_the_context_are_rejected() {
    let src = tree();
    std::os::unix::fs::symlink("../../etc/passwd", src.path().join("src/escape")).unwrap();
    let out = tempfile::tempdir().unwrap();
    let err = format!(
        "{:#}",
        write(src.path(), &[], &[], &out.path().join("x.tar")).unwrap_err()
    );
    assert!(err.contains("points outside"), "{err}");
    assert!(check_link("a/b", "/etc").is_err());
    assert!(check_link("a/b", "../c").is_ok());
    assert!(check_link("a/b", "../../c").is_err());
}

#[test]
fn duplicate_paths_are_rejected() {
    let src = tree();
    let out = tempfile::tempdir().unwrap();
    let extra = vec![("Dockerfile".to_owned(), src.path().join("run.sh"))];
    let err = format!(
        "{:#}",
        write(src.path(), &extra, &[], &out.path().join("x.tar")).unwrap_err()
    );
    assert!(err.contains("appears twice"), "{err}");
}

#[test]
fn short_data_is_an_error_not_padding() {
    let mut tar = TarWriter::new(Vec::new());
    let err = format!("{:#}", tar.file("a", 10, false, &b"abc"[..]).unwrap_err());
    assert!(err.contains("7 bytes short"), "{err}");
}

#[test]
fn long_paths_survive() {
    let long = format!("go/{}/file", "d".repeat(150));
    let mut tar = TarWriter::new(Vec::new());
    tar.file(&long, 1, true, &b"x"[..]).unwrap();
    let bytes = tar.into_inner().unwrap();
    let mut archive = tar::Archive::new(&bytes[..]);
    let names: Vec<String> = archive
        .entries()
        .unwrap()
        .map(|e| e.unwrap().path().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "go/",
            format!("go/{}/", "d".repeat(150)).as_str(),
            long.as_str()
        ]
    );
}
