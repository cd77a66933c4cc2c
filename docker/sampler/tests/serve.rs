//! Runs the built sampler as a supervisor (`--serve`) and asks it for samples: each is a fresh
//! process in its own empty folder, with `TMPDIR` there, and the folder is gone once it has ended.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

/// One reply: status, stdout, stderr.
fn reply(out: &mut impl BufRead) -> (i32, String, String) {
    let mut header = String::new();
    out.read_line(&mut header).unwrap();
    let words: Vec<&str> = header.split_whitespace().collect();
    assert_eq!(words[0], "sampled", "{header:?}");
    assert_eq!(words.len(), 5, "{header:?}");
    let [status, stdout, stderr] = [1, 2, 3].map(|i| words[i].parse::<usize>().unwrap());
    let mut read = |n| {
        let mut bytes = vec![0; n];
        out.read_exact(&mut bytes).unwrap();
        String::from_utf8(bytes).unwrap()
    };
    let stdout = read(stdout);
    (status as i32, stdout, read(stderr))
}

fn request(input: &mut impl Write, args: &[&str]) {
    writeln!(input, "sample {}", args.len()).unwrap();
    for a in args {
        writeln!(input, "{}", a.len()).unwrap();
        input.write_all(a.as_bytes()).unwrap();
    }
    input.flush().unwrap();
}

#[test]
fn each_sample_is_a_fresh_process_in_a_fresh_folder() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sampler"))
        .arg("--serve")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let mut output = BufReader::new(child.stdout.take().unwrap());
    let look = "pwd; echo \"$TMPDIR\"; ls -A; touch left; echo $$ >&2";
    let mut folders = Vec::new();
    let mut pids = Vec::new();
    for _ in 0..2 {
        request(&mut input, &["/bin/sh", "-c", look]);
        let (status, stdout, stderr) = reply(&mut output);
        assert_eq!(status, 0, "{stderr}");
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(
            lines.len(),
            2,
            "an empty folder, TMPDIR the folder: {stdout:?}"
        );
        assert_eq!(lines[0], lines[1]);
        folders.push(lines[0].to_string());
        pids.push(stderr.trim().to_string());
    }
    assert_ne!(folders[0], folders[1]);
    assert_ne!(pids[0], pids[1]);
    // The sampler itself, measuring a program, answers with its one JSON line.
    let sampler = env!("CARGO_BIN_EXE_sampler");
    request(&mut input, &[sampler, "--kind", "peak", "--", "/bin/true"]);
    let (status, stdout, _) = reply(&mut output);
    assert_eq!(status, 0);
    assert!(
        stdout.starts_with("{\"schema\":1,\"kind\":\"peak\""),
        "{stdout}"
    );
    // A program that is not there, and one killed by a signal.
    request(&mut input, &["/nonexistent/program"]);
    let (status, _, stderr) = reply(&mut output);
    assert_eq!(status, 127);
    assert!(stderr.contains("/nonexistent/program"), "{stderr}");
    request(&mut input, &["/bin/sh", "-c", "kill -9 $$"]);
    assert_eq!(reply(&mut output).0, 128 + 9);
    // What a sample leaves running, its stderr still open, is ended before the reply: no wait.
    let began = std::time::Instant::now();
    request(
        &mut input,
        &["/bin/sh", "-c", "sleep 1000 & (sleep 1000 &) ; echo $!"],
    );
    let (status, stdout, _) = reply(&mut output);
    assert_eq!(status, 0);
    assert!(began.elapsed() < std::time::Duration::from_secs(30));
    let left = stdout.trim();
    assert!(
        !std::path::Path::new(&format!("/proc/{left}")).exists(),
        "process {left} ended"
    );
    // A folder the sample made unwritable is removed all the same.
    let lock = "pwd; mkdir d; touch d/f; chmod 500 d";
    request(&mut input, &["/bin/sh", "-c", lock]);
    let (status, stdout, stderr) = reply(&mut output);
    assert_eq!(status, 0, "{stderr}");
    folders.push(stdout.trim().to_string());
    drop(input);
    assert!(child.wait().unwrap().success(), "the end of input ends it");
    for folder in folders {
        assert!(!std::path::Path::new(&folder).exists(), "{folder} removed");
    }
}
