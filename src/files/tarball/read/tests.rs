use super::*;
use crate::files::tarball::Writer;

/// A header with `name` written byte for byte into the name field, `kind` and `size`.
fn header(name: &[u8], kind: u8, size: u64) -> Header {
    let mut h = Header::new_gnu();
    h.as_gnu_mut().unwrap().name[..name.len()].copy_from_slice(name);
    h.set_entry_type(EntryType::new(kind));
    h.set_mode(0o644);
    h.set_size(size);
    h.set_cksum();
    h
}

/// Appends a header and its data, padded to the 512-byte block.
fn put(tar: &mut Vec<u8>, h: &Header, data: &[u8]) {
    tar.extend_from_slice(h.as_bytes());
    tar.extend_from_slice(data);
    tar.resize(tar.len().div_ceil(512) * 512, 0);
}

fn entry(tar: &mut Vec<u8>, name: &str, kind: u8, data: &[u8]) {
    put(tar, &header(name.as_bytes(), kind, data.len() as u64), data);
}

fn pax_record(key: &str, value: &str) -> Vec<u8> {
    let body = format!(" {key}={value}\n");
    let mut len = body.len() + 1;
    while format!("{len}{body}").len() != len {
        len += 1;
    }
    format!("{len}{body}").into_bytes()
}

fn end(mut tar: Vec<u8>) -> Vec<u8> {
    tar.extend_from_slice(&[0; 1024]);
    tar
}

/// A member as `(path, link, data)`.
type Seen = (String, Option<String>, Vec<u8>);
/// Entries to write as `(name, type flag, data)`.
type Entries<'a> = &'a [(&'a str, u8, &'a [u8])];

/// Every member, or the refusal.
fn members(tar: &[u8]) -> Result<Vec<Seen>> {
    let mut out = Vec::new();
    read(tar, |m| {
        let mut data = Vec::new();
        m.data.read_to_end(&mut data)?;
        out.push((m.path, m.link, data));
        Ok(())
    })?;
    Ok(out)
}

fn refused(tar: &[u8]) -> String {
    match members(tar) {
        Ok(got) => panic!("accepted: {got:?}"),
        Err(e) => format!("{e:#}"),
    }
}

#[test]
fn what_the_kit_writes_reads_back_as_written() {
    let long = format!("run-1/source/{}/main.rs", "d".repeat(150));
    let target = format!("{}/main.rs", "d".repeat(150));
    let mut tar = Writer::new(Vec::new());
    tar.file(&long, 3, false, &b"abc"[..]).unwrap();
    tar.symlink(&format!("run-1/source/{}", "l".repeat(120)), &target)
        .unwrap();
    let bytes = tar.into_inner().unwrap();
    let got = members(&bytes).unwrap();
    let paths: Vec<_> = got.iter().map(|(p, _, _)| p.as_str()).collect();
    let dir = format!("run-1/source/{}/", "d".repeat(150));
    let link = format!("run-1/source/{}", "l".repeat(120));
    assert_eq!(
        paths,
        ["run-1/", "run-1/source/", &dir, &long, &link],
        "long names and link targets come from their GNU extension headers"
    );
    assert_eq!(got[3].2, b"abc");
    assert_eq!(got[4].1.as_deref(), Some(target.as_str()));
}

#[test]
fn a_gnu_long_name_and_a_pax_path_that_disagree_are_refused() {
    let mut tar = Vec::new();
    entry(&mut tar, "././@LongLink", b'L', b"run-1/samples.jsonl\0");
    entry(
        &mut tar,
        "pax",
        b'x',
        &pax_record("path", "run-1/other.jsonl"),
    );
    entry(&mut tar, "run-1/samples.jsonl", b'0', b"{}\n");
    let err = refused(&end(tar));
    assert!(err.contains("a PAX header sets \"path\""), "{err}");
}

#[test]
fn pax_overrides_of_name_link_or_size_are_refused() {
    for (key, value) in [
        ("path", "run-1/b"),
        ("linkpath", "run-1/b"),
        ("size", "0"),
        ("GNU.sparse.name", "run-1/b"),
        ("hdrcharset", "BINARY"),
    ] {
        let mut tar = Vec::new();
        entry(&mut tar, "pax", b'x', &pax_record(key, value));
        entry(&mut tar, "run-1/a", b'0', &[b'x'; 600]);
        let err = refused(&end(tar));
        assert!(err.contains(&format!("sets {key:?}")), "{key}: {err}");
    }
    // Harmless keys pass: what the Engine's writer may add.
    let mut tar = Vec::new();
    let records = [pax_record("mtime", "1.5"), pax_record("uname", "root")].concat();
    entry(&mut tar, "pax", b'x', &records);
    entry(&mut tar, "run-1/a", b'0', b"x");
    assert_eq!(members(&end(tar)).unwrap()[0].0, "run-1/a");
}

#[test]
fn a_malformed_pax_record_is_refused() {
    for records in [
        &b"9 path=a\n"[..],
        b"12 mtime=1\n",
        b"x mtime=1\n",
        b"11 mtime=1\n\0",
        b"10 mtime1\n",
    ] {
        let mut tar = Vec::new();
        entry(&mut tar, "pax", b'x', records);
        entry(&mut tar, "run-1/a", b'0', b"x");
        let err = refused(&end(tar));
        assert!(
            err.contains("malformed PAX record") || err.contains("sets"),
            "{}: {err}",
            records.escape_ascii()
        );
    }
}

#[test]
fn a_long_name_that_disagrees_with_its_header_is_refused() {
    let mut tar = Vec::new();
    entry(&mut tar, "././@LongLink", b'L', b"run-1/evil\0");
    entry(&mut tar, "run-1/good", b'0', b"x");
    let err = refused(&end(tar));
    assert!(
        err.contains("run-1/evil: its GNU long name and its header name (run-1/good) disagree"),
        "{err}"
    );
}

#[test]
fn ambiguous_extension_sequences_are_refused() {
    let cases: [(Entries, &str); 7] = [
        (
            &[("K", b'K', b"run-1/target\0"), ("run-1/l", b'2', b"")],
            "whose own link field is empty",
        ),
        (
            &[
                ("L", b'L', b"run-1/a\0"),
                ("L", b'L', b"run-1/b\0"),
                ("run-1/", b'0', b"x"),
            ],
            "two GNU long names",
        ),
        (
            &[("K", b'K', b"target\0"), ("run-1/a", b'0', b"x")],
            "a long link name on a Regular entry",
        ),
        (
            &[("L", b'L', b"run-1/a\0b\0"), ("run-1/a", b'0', b"x")],
            "holds a NUL",
        ),
        (
            &[("L", b'L', b"run-1/a\0")],
            "extension header with no member",
        ),
        (
            &[
                ("g", b'g', &pax_record("mtime", "1")),
                ("run-1/a", b'0', b"x"),
            ],
            "tar entry type",
        ),
        (
            &[("run-1/d", b'5', b"hidden header"), ("run-1/a", b'0', b"x")],
            "a Directory entry with 13 bytes of data",
        ),
    ];
    for (entries, wanted) in cases {
        let mut tar = Vec::new();
        for (name, kind, data) in entries {
            entry(&mut tar, name, *kind, data);
        }
        let err = refused(&end(tar));
        assert!(err.contains(wanted), "{err:?} lacks {wanted:?}");
    }
}

#[test]
fn a_huge_extension_header_is_refused_before_it_is_read() {
    for kind in [b'L', b'K', b'x'] {
        // The header claims a gibibyte: refused on the header alone, nothing is read or kept.
        let mut tar = Vec::new();
        put(&mut tar, &header(b"././@LongLink", kind, 1 << 30), b"");
        let err = refused(&tar);
        assert!(err.contains("over the 4096-byte limit"), "{err}");
    }
}

#[test]
fn data_after_the_end_marker_is_refused() {
    let mut tar = Vec::new();
    entry(&mut tar, "run-1/a", b'0', b"x");
    let mut tar = end(tar);
    entry(&mut tar, "manifest.json", b'0', b"[]");
    let err = refused(&tar);
    assert!(
        err.contains("data after the end of the tar archive"),
        "{err}"
    );
    // Zeros alone (a writer's padding to its record size) are the end.
    let mut padded = Vec::new();
    entry(&mut padded, "run-1/a", b'0', b"x");
    let padded = [end(padded), vec![0; 9216]].concat();
    assert_eq!(members(&padded).unwrap().len(), 1);
}

#[test]
fn odd_size_fields_and_name_prefixes_are_refused() {
    let mut odd = header(b"run-1/a", b'0', 1);
    odd.as_old_mut().size = *b"+0000000001\0";
    odd.set_cksum();
    let mut tar = Vec::new();
    put(&mut tar, &odd, b"x");
    assert!(refused(&end(tar)).contains("is not plain octal"));

    // A GNU header with bytes where a ustar header keeps its prefix: Python prepends them.
    let mut prefixed = header(b"a", b'0', 1);
    prefixed.as_mut_bytes()[345..350].copy_from_slice(b"run-1");
    prefixed.set_cksum();
    let mut tar = Vec::new();
    put(&mut tar, &prefixed, b"x");
    assert!(refused(&end(tar)).contains("name prefix field of a non-ustar header"));

    // A ustar header's prefix is part of its name, as every reader takes it.
    let mut ustar = Header::new_ustar();
    ustar
        .set_path(format!("run-1/{}/a", "p".repeat(120)))
        .unwrap();
    ustar.set_size(1);
    ustar.set_mode(0o644);
    ustar.set_cksum();
    let mut tar = Vec::new();
    put(&mut tar, &ustar, b"x");
    assert_eq!(
        members(&end(tar)).unwrap()[0].0,
        format!("run-1/{}/a", "p".repeat(120))
    );
}

#[test]
fn too_many_members_are_refused() {
    let mut tar = Vec::new();
    let block = header(b"run-1/d/", b'5', 0);
    for _ in 0..=MEMBERS_MAX {
        put(&mut tar, &block, b"");
    }
    let err = refused(&end(tar));
    assert!(
        err.contains(&format!("more than {MEMBERS_MAX} members")),
        "{err}"
    );
}

#[test]
fn base_256_sizes_other_readers_read_otherwise_are_refused() {
    // The reviewer's case: a sign byte and bytes the `tar` crate skips, whose low eight bytes say
    // 1024 where GNU tar reads a negative size and takes the data for headers.
    let mut split = header(b"run-1/a", b'0', 0);
    split.as_old_mut().size = [0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 4, 0];
    split.set_cksum();
    let mut tar = Vec::new();
    put(&mut tar, &split, &[0; 1024]);
    assert!(refused(&end(tar)).contains("base-256"));

    // Over 64 bits, and negative, in the low bytes alone.
    for size in [
        [0x80, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1],
        [0x80, 0, 0, 0, 0x80, 0, 0, 0, 0, 0, 0, 1],
    ] {
        let mut odd = header(b"run-1/a", b'0', 0);
        odd.as_old_mut().size = size;
        odd.set_cksum();
        let mut tar = Vec::new();
        put(&mut tar, &odd, b"x");
        assert!(refused(&end(tar)).contains("base-256"), "{size:?}");
    }

    // The form the `tar` crate and GNU tar write is read as it says.
    let mut plain = header(b"run-1/a", b'0', 0);
    plain.as_old_mut().size = [0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
    plain.set_cksum();
    let mut tar = Vec::new();
    put(&mut tar, &plain, b"x");
    assert_eq!(members(&end(tar)).unwrap()[0].2, b"x");
}
