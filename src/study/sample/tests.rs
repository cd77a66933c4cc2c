use super::*;
use crate::study::bounded;

#[test]
fn the_last_stderr_lines_skip_blanks_and_are_cut() {
    let fixture = include_str!("../../../tests/fixtures/samples.jsonl");
    let (mut samples, _) = parse_lines(fixture.as_bytes()).unwrap();
    let s = &mut samples[0];
    s.stderr_tail = format!("one\ntwo\n\nthree\n{}é\n   \n", "x".repeat(300));
    let lines = s.stderr_last_lines();
    assert_eq!(lines.len(), STDERR_LINES);
    assert_eq!(lines[..2], ["two", "three"]);
    assert_eq!(lines[2], format!("{}…", "x".repeat(STDERR_LINE_CHARS)));
    s.stderr_tail = "boom\nsampler: probe exited with code 1\n".into();
    assert_eq!(
        s.stderr_last_lines(),
        ["boom"],
        "the program's words, not the reason again"
    );
    s.stderr_tail = "sampler: cannot start the probe\n".into();
    assert_eq!(s.stderr_last_lines(), ["sampler: cannot start the probe"]);
    s.stderr_tail = String::new();
    assert!(s.stderr_last_lines().is_empty() && s.stderr_line().is_none());
}

#[test]
fn an_error_printed_before_its_backtrace_is_among_what_the_process_said() {
    let fixture = include_str!("../../../tests/fixtures/samples.jsonl");
    let (mut samples, _) = parse_lines(fixture.as_bytes()).unwrap();
    let s = &mut samples[0];
    // Ruby's ThreadError, then its backtrace: more lines than the report shows.
    s.stderr_tail = "main.rb:4:in `initialize': can't create Thread: Resource temporarily \
                     unavailable (ThreadError)\n\tfrom main.rb:4:in `new'\n\tfrom main.rb:4:in \
                     `block in <main>'\n\tfrom main.rb:4:in `initialize'\n\tfrom main.rb:4:in `new'\n\
                     \tfrom main.rb:4:in `<main>'\nsampler: probe exited with code 1\n"
        .into();
    assert!(
        !s.stderr_last_lines()
            .iter()
            .any(|l| l.contains("can't create Thread"))
    );
    assert!(s.said().iter().any(|l| l.contains("can't create Thread")));
}

#[test]
fn malformed_lines_are_named_not_dropped() {
    let text = "{\"not\": \"a sample\"}\n\n";
    let (good, bad) = parse_lines(text.as_bytes()).unwrap();
    assert!(good.is_empty());
    assert_eq!(bad.len(), 1);
    assert_eq!(bad.first().unwrap().line, 1);
}

#[test]
fn malformed_lines_are_counted_and_only_the_first_few_kept() {
    let text = "{}\n".repeat(200_000);
    let (good, bad) = parse_lines(text.as_bytes()).unwrap();
    assert!(good.is_empty());
    assert_eq!((bad.len(), bad.shown().len()), (200_000, bounded::SHOWN));
    assert_eq!(bad.not_shown(), 200_000 - bounded::SHOWN);
}

#[test]
fn too_many_lines_items_or_bytes_are_refused_before_parsing() {
    let lines = "\n".repeat(bounded::LINES_MAX) + "{}\n";
    let err = parse_lines(lines.as_bytes()).unwrap_err();
    assert!(
        format!("{err}").contains("more than 1000000 lines"),
        "{err}"
    );

    // Tiny maps in `results`: each would become a map; counted before any is made.
    let maps = "{},".repeat(bounded::LINE_MAX / 4);
    let line = format!("{{\"results\":[{maps}{{}}]}}\n");
    let err = parse_lines(line.repeat(5).as_bytes()).unwrap_err();
    assert!(
        format!("{err}").contains("more than 4000000 JSON items"),
        "{err}"
    );

    let long = format!("{}\n", " ".repeat(bounded::LINE_MAX) + "{}");
    let (_, bad) = parse_lines(long.as_bytes()).unwrap();
    assert!(bad.first().unwrap().error.contains("over the"), "{bad:?}");
}

#[test]
fn the_bootstrap_seed_comes_from_the_sample() {
    let s = fixture::samples()[0].clone();
    assert_eq!(s.bootstrap_seed(), s.clone().bootstrap_seed());
    let mut t = s.clone();
    t.repeat += 1;
    assert_ne!(s.bootstrap_seed(), t.bootstrap_seed());
}

#[test]
fn an_unavailable_toolchain_and_a_failed_build_are_told_apart() {
    let mut s = fixture::samples()[0].clone();
    s.valid = false;
    s.error = Some(format!("{UNAVAILABLE}no source for go"));
    assert!(s.is_unavailable() && s.is_toolchain_unavailable() && !s.is_build_failed());
    s.error = Some(format!("{BUILD_FAILED}step 3 exited 1"));
    assert!(s.is_unavailable() && s.is_build_failed() && !s.is_toolchain_unavailable());
    s.error = Some("exit code 137".into());
    assert!(!s.is_unavailable() && !s.is_build_failed() && !s.is_toolchain_unavailable());
    s.valid = true;
    s.error = Some(format!(
        "{BUILD_FAILED}a valid sample never failed its build"
    ));
    assert!(!s.is_build_failed());
}
