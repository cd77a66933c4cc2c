//! `parkbench check`: validating a run archive without extracting it (see `scan` for the rules).

use std::path::Path;

use anyhow::{Result, ensure};

use super::driver;
use super::scan::{CheckReport, Scan, Unpack, scan, scan_unpacking};

/// Checks `archive` (see the module docs), and that the driver it carries is the one its record
/// names; never writes anything.
pub fn check(archive: &Path) -> Result<CheckReport> {
    with_driver(scan(archive, &[driver::RECORD])?)
}

/// [`check`], also unpacking the members `unpack` names in the same pass. On an error the unpack
/// folder holds a partial tree: discard it.
pub fn check_unpacking(archive: &Path, unpack: Unpack) -> Result<CheckReport> {
    with_driver(scan_unpacking(archive, &[driver::RECORD], unpack)?)
}

/// The scan's report, with the driver it carries checked against its record.
fn with_driver(scan: Scan) -> Result<CheckReport> {
    let driver = driver_of(&scan)?;
    let mut report = scan.report;
    report.driver = driver;
    Ok(report)
}

/// The driver a scan (which kept [`driver::RECORD`]) found, checked against its record: every
/// reader of an archive refuses one whose driver is not what its record names.
pub(super) fn driver_of(scan: &Scan) -> Result<Option<driver::Carried>> {
    ensure!(
        !scan.too_large.contains_key(driver::RECORD),
        "{}: larger than a driver's record: {}",
        driver::RECORD,
        super::MODIFIED
    );
    let member = scan.files.get(driver::MEMBER).map(String::as_str);
    // Only a file may stand where the driver goes, with a record or without: `./parkbench`
    // would run a link's target, and a record beside a link or a folder would name what is not there.
    ensure!(
        member.is_some() || !scan.names.contains(driver::MEMBER),
        "{}/{}: not a file (a link or a folder) where an archive's driver goes; {}",
        scan.report.root,
        driver::MEMBER,
        super::UNSAFE
    );
    let record = scan.kept.get(driver::RECORD).map(Vec::as_slice);
    driver::carried(member, record)
}

#[cfg(test)]
mod tests {
    use std::fs;

    use tar::EntryType;

    use super::super::fixture::{Fixture, Raw, gzip, read_raw, snapshot, tar_bytes, write_raw};
    use super::*;

    fn error(archive: &Path) -> String {
        format!("{:#}", check(archive).unwrap_err())
    }

    /// Checks `entries` written as an archive; returns the error and asserts nothing was written.
    fn rejected(fx: &Fixture, entries: &[Raw]) -> String {
        let archive = fx.path("hand-built.tar.gz");
        write_raw(entries, &archive);
        let outside = fx.tmp.path().parent().unwrap();
        let before = (
            snapshot(fx.tmp.path()),
            outside.join("evil").exists(),
            outside.join("outside").exists(),
        );
        let err = error(&archive);
        let after = (
            snapshot(fx.tmp.path()),
            outside.join("evil").exists(),
            outside.join("outside").exists(),
        );
        assert_eq!(before, after, "check wrote something");
        assert!(!Path::new("evil").exists());
        err
    }

    #[test]
    fn a_fresh_archive_passes() {
        let fx = Fixture::new();
        let info = fx.write();
        let report = check(&info.path).unwrap();
        let files = read_raw(&info.path)
            .iter()
            .filter(|e| e.kind == EntryType::Regular)
            .count();
        assert_eq!(
            (report.root.as_str(), report.members, report.verified),
            ("run-1", info.members, files - 1)
        );
        assert!(report.missing_optional.is_empty());
        assert!(report.to_string().starts_with("run-1: OK, "), "{report}");
    }

    /// The fixture's archive with a driver (`bytes`) and its record (`json`, or none), checked.
    fn with_driver(fx: &Fixture, bytes: Option<&[u8]>, json: Option<&str>) -> Result<CheckReport> {
        check(&fx.write_with_driver(bytes, json))
    }

    use super::super::fixture::driver_record as record;

    #[test]
    fn the_driver_is_checked_against_its_record_and_named() {
        let fx = Fixture::new();
        let sha = crate::files::digest::bytes(b"a driver");
        let good =
            with_driver(&fx, Some(b"a driver"), Some(&record(&sha, "rustc 1.95.0"))).unwrap();
        let carried = good.driver.unwrap();
        assert_eq!(carried.sha256, sha);
        let line = carried.to_string();
        assert!(line.contains(&format!("sha256 {sha}")), "{line}");
        assert!(line.contains("--rebuild-driver ARCHIVE`"), "{line}");
        let named = carried.line(Some(std::path::Path::new("runs/a b.tar.zst")));
        assert!(
            named.contains("--rebuild-driver 'runs/a b.tar.zst'`"),
            "{named}"
        );
        let rebuilding = carried.rebuilding_line();
        assert!(
            rebuilding.starts_with(&format!("driver: parkbench sha256 {sha}"))
                && rebuilding.ends_with("rebuilding it from the archive's sources)")
                && !rebuilding.contains("parkbench verify"),
            "{rebuilding}"
        );
        assert_eq!(check(&fx.write().path).unwrap().driver, None);

        // A record alone (`--no-driver`) names the driver the rebuild is compared with.
        let named = with_driver(&fx, None, Some(&record(&sha, "rustc 1.95.0")))
            .unwrap()
            .driver
            .unwrap();
        assert_eq!((named.sha256.as_str(), named.inside), (sha.as_str(), false));
        let line = named.to_string();
        assert!(
            line.contains(&format!("not inside; parkbench.json names sha256 {sha}"))
                && line.contains("--rebuild-driver ARCHIVE` rebuilds it and compares"),
            "{line}"
        );

        let other = crate::files::digest::bytes(b"another driver");
        let cases = [
            (
                with_driver(
                    &fx,
                    Some(b"a driver"),
                    Some(&record(&other, "rustc 1.95.0")),
                ),
                "is not the one its record describes",
            ),
            (
                with_driver(&fx, Some(b"a driver"), None),
                "a driver without its record",
            ),
            (
                with_driver(&fx, None, Some(&record("../../evil", "rustc 1.95.0"))),
                "is not a SHA-256 in lowercase hex",
            ),
            (
                with_driver(
                    &fx,
                    None,
                    Some(&record(&sha.to_uppercase(), "rustc 1.95.0")),
                ),
                "is not a SHA-256 in lowercase hex",
            ),
            (
                with_driver(&fx, None, Some(&record(&sha, "rustc\\u001b[2J"))),
                "printable ASCII",
            ),
            (
                with_driver(&fx, Some(b"a driver"), Some("{}")),
                "not a driver record",
            ),
            (
                with_driver(
                    &fx,
                    Some(b"a driver"),
                    Some(&record(&sha, "rustc\\u001b[2J")),
                ),
                "printable ASCII",
            ),
        ];
        for (checked, wanted) in cases {
            let err = format!("{:#}", checked.unwrap_err());
            assert!(err.contains(wanted), "{err:?} lacks {wanted:?}");
        }
    }

    #[test]
    fn a_link_or_a_folder_where_the_driver_goes_is_refused_beside_a_record() {
        let fx = Fixture::new();
        let sha = crate::files::digest::bytes(b"a driver");
        with_driver(&fx, None, Some(&record(&sha, "rustc 1.95.0"))).unwrap();
        let named = read_raw(&fx.path("with-driver.tar.gz"));
        let crafted = fx.path("crafted.tar.gz");
        for extra in [
            Raw::link("run-1/parkbench", EntryType::Symlink, "summary.json"),
            Raw::link("run-1/parkbench/", EntryType::Directory, ""),
        ] {
            write_raw(&[named.clone(), vec![extra]].concat(), &crafted);
            let err = error(&crafted);
            assert!(err.contains("parkbench: not a file"), "{err}");
        }
    }

    #[test]
    fn missing_optional_files_are_listed() {
        let fx = Fixture::new();
        fs::remove_file(fx.run_dir.join("report.md")).unwrap();
        fs::remove_file(fx.run_dir.join("env.json")).unwrap();
        let report = check(&fx.write().path).unwrap();
        assert_eq!(report.missing_optional, ["env.json", "report.md"]);
        assert!(
            report
                .to_string()
                .ends_with("missing optional: env.json, report.md"),
            "{report}"
        );
    }

    #[test]
    fn a_flipped_byte_in_any_member_is_caught() {
        let fx = Fixture::new();
        let entries = read_raw(&fx.write().path);
        let tampered = fx.path("tampered.tar.gz");
        let mut tried = 0;
        for (i, entry) in entries
            .iter()
            .enumerate()
            .filter(|(_, e)| !e.data.is_empty())
        {
            let name = entry.name();
            for at in [0, entry.data.len() / 2, entry.data.len() - 1] {
                let mut copy = entries.clone();
                copy[i].data[at] ^= 0x20;
                write_raw(&copy, &tampered);
                let err = error(&tampered);
                let wanted = if name.ends_with("SHA256SUMS") {
                    name.clone()
                } else {
                    format!("{name}: sha256 mismatch")
                };
                assert!(err.contains(&wanted), "byte {at} of {name}: {err}");
                tried += 1;
            }
        }
        assert!(tried >= 3 * 15, "only {tried} tamperings");
    }

    #[test]
    fn unsafe_entries_are_rejected_without_writing_anything() {
        let fx = Fixture::new();
        let fresh = read_raw(&fx.write().path);
        let with = |extra: Raw| [fresh.clone(), vec![extra]].concat();
        let cases = [
            (
                with(Raw::file("../evil", b"x")),
                "../evil: `..` component in path",
            ),
            (
                with(Raw::file("run-1/../../evil", b"x")),
                "run-1/../../evil: `..` component",
            ),
            (with(Raw::file("/etc/x", b"x")), "/etc/x: absolute path"),
            (
                with(Raw::link("run-1/l", EntryType::Symlink, "../../outside")),
                "run-1/l: symlink to \"../../outside\" points outside run-1/",
            ),
            (
                with(Raw::link("run-1/l", EntryType::Symlink, "/etc/passwd")),
                "run-1/l: symlink to \"/etc/passwd\" refused (absolute link target)",
            ),
            (
                with(Raw::link("run-1/h", EntryType::Link, "outside")),
                "run-1/h: hard link to \"outside\"",
            ),
            (
                with(Raw::link("run-1/h", EntryType::Link, "run-1/../x")),
                "run-1/h: hard link to \"run-1/../x\"",
            ),
            (
                with(Raw::file("other/evil", b"x")),
                "other/evil: outside the top folder run-1/",
            ),
            (
                with(Raw::file("evil", b"x")),
                "evil: outside the top folder run-1/",
            ),
            (
                [vec![Raw::file("run-1", b"x")], fresh.clone()].concat(),
                "run-1: the top-level entry must be a folder",
            ),
            (
                with(Raw {
                    kind: EntryType::Fifo,
                    ..Raw::file("run-1/pipe", b"")
                }),
                "run-1/pipe: device or fifo",
            ),
            (
                with(Raw {
                    kind: EntryType::Char,
                    ..Raw::file("run-1/null", b"")
                }),
                "run-1/null: device or fifo",
            ),
            (
                with(Raw::file("run-1/samples.jsonl", b"{}\n")),
                "run-1/samples.jsonl: appears twice",
            ),
            (
                with(Raw::file("run-1/extra.txt", b"x")),
                "run-1/extra.txt: not listed in SHA256SUMS",
            ),
        ];
        for (entries, wanted) in cases {
            let err = rejected(&fx, &entries);
            assert!(err.contains(wanted), "{err:?} lacks {wanted:?}");
        }
    }

    /// The archive's entries renamed `./…`, after a `./` entry, as `tar -C dir .` writes them.
    fn dot_prefixed(entries: &[Raw]) -> Vec<Raw> {
        let mut dot = Raw::file("./", b"");
        dot.kind = EntryType::Directory;
        dot.mode = 0o755;
        let renamed = entries.iter().map(|e| {
            let mut e = e.clone();
            e.name = [b"./".as_slice(), &e.name].concat();
            e
        });
        std::iter::once(dot).chain(renamed).collect()
    }

    #[test]
    fn dot_prefixed_member_names_are_accepted() {
        let fx = Fixture::new();
        let info = fx.write();
        let repacked = dot_prefixed(&read_raw(&info.path));
        let report = rejected_or(&fx, &repacked).unwrap();
        assert_eq!(
            (report.root.as_str(), report.members),
            ("run-1", info.members)
        );

        // A `./` hard-link target resolves too: the link fails only for being absent from SHA256SUMS.
        let link = Raw::link(
            "./run-1/again.jsonl",
            EntryType::Link,
            "./run-1/samples.jsonl",
        );
        let err = format!(
            "{:#}",
            rejected_or(&fx, &[repacked, vec![link]].concat()).unwrap_err()
        );
        assert!(
            err.contains("run-1/again.jsonl: not listed in SHA256SUMS"),
            "{err}"
        );
    }

    fn rejected_or(fx: &Fixture, entries: &[Raw]) -> Result<CheckReport> {
        let archive = fx.path("repacked.tar.gz");
        write_raw(entries, &archive);
        check(&archive)
    }

    #[test]
    fn dot_prefixes_do_not_hide_unsafe_entries() {
        let fx = Fixture::new();
        let fresh = dot_prefixed(&read_raw(&fx.write().path));
        let with = |extra: Raw| [fresh.clone(), vec![extra]].concat();
        let cases = [
            (with(Raw::file("./../evil", b"x")), "`..` component in path"),
            (with(Raw::file(".//etc/x", b"x")), "absolute path"),
            (
                with(Raw::file("./run-1/./x", b"x")),
                "`.` component in path",
            ),
            (
                with(Raw::file("./", b"x")),
                "./: a Regular entry whose name ends in `/`",
            ),
            (
                with(Raw::link("./run-1/l", EntryType::Symlink, "../../outside")),
                "run-1/l: symlink to \"../../outside\" points outside run-1/",
            ),
            (
                with(Raw::link("./run-1/h", EntryType::Link, "./outside")),
                "run-1/h: hard link to \"./outside\"",
            ),
            (
                with(Raw::file("./run-1/samples.jsonl", b"{}\n")),
                "run-1/samples.jsonl: appears twice",
            ),
            (
                with(Raw::file("run-1/samples.jsonl", b"{}\n")),
                "run-1/samples.jsonl: appears twice",
            ),
        ];
        for (entries, wanted) in cases {
            let err = rejected(&fx, &entries);
            assert!(err.contains(wanted), "{err:?} lacks {wanted:?}");
        }
    }

    #[test]
    fn members_below_a_symlink_are_rejected() {
        let fx = Fixture::new();
        let mut entries = read_raw(&fx.write().path);
        entries.insert(1, Raw::link("run-1/d", EntryType::Symlink, "source"));
        entries.insert(2, Raw::file("run-1/d/evil", b"x"));
        assert!(rejected(&fx, &entries).contains("run-1/d/evil: lies below the symlink run-1/d"));
    }

    #[test]
    fn broken_streams_are_rejected() {
        let fx = Fixture::new();
        let good = fs::read(&fx.write().path).unwrap();
        let tar = tar_bytes(&read_raw(&fx.out));
        let bad = fx.path("bad.tar.gz");
        let cases = [
            (
                good[..good.len() / 2].to_vec(),
                "truncated or not a gzip archive",
            ),
            (
                good[..good.len() - 4].to_vec(),
                "truncated or not a gzip archive",
            ),
            (
                b"hello, not gzip".to_vec(),
                "does not start with the gzip signature",
            ),
            (vec![], "does not start with the gzip signature"),
            (tar.clone(), "an uncompressed tar, not gzip"),
            (b"\xfd7zXZ\x00rest".to_vec(), "an xz file, not gzip"),
            (
                b"\x28\xb5\x2f\xfdrest".to_vec(),
                "a Zstandard file, not gzip",
            ),
            (b"BZh91AY&SY".to_vec(), "a bzip2 file, not gzip"),
            (b"PK\x03\x04rest".to_vec(), "a zip file, not gzip"),
            (
                [good.clone(), b"junk".to_vec()].concat(),
                "bytes after the end of the gzip stream",
            ),
            (
                gzip(&[tar, b"hidden".to_vec()].concat()),
                "data after the end of the tar archive",
            ),
            (gzip(b""), "the archive is empty"),
        ];
        for (bytes, wanted) in cases {
            fs::write(&bad, bytes).unwrap();
            let err = error(&bad);
            assert!(err.contains(wanted), "{err:?} lacks {wanted:?}");
        }
    }

    #[test]
    fn a_flipped_byte_in_the_compressed_file_is_caught() {
        let fx = Fixture::new();
        let good = fs::read(&fx.write().path).unwrap();
        let bad = fx.path("bad.tar.gz");
        let body = (10..good.len() - 24).step_by(good.len() / 16);
        for at in body.chain([good.len() - 8, good.len() - 1]) {
            let mut bytes = good.clone();
            bytes[at] ^= 0x20;
            fs::write(&bad, bytes).unwrap();
            assert!(check(&bad).is_err(), "flipping byte {at} went unnoticed");
        }
    }
}
