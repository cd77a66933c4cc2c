//! What a failed build says went wrong, in one line: the failing step's own error (a compiler's,
//! a package manager's), not the Engine's "returned a non-zero code".

use std::path::Path;

use crate::yaml::{Doc, Invalid};

/// A recipe's own fault found while its inputs or build context are made (a published file that
/// changed under its patch, a requirement without its hash, a vendoring tool that fails): the
/// image fails as a failed compile does, and the others build. Any other error is the kit's.
#[derive(Debug, Clone, PartialEq)]
pub struct RecipeFault {
    /// One line: the recipe's `file:line:column`, what failed and what to do.
    pub line: String,
    /// What the failing tool printed, if anything.
    pub output: Vec<String>,
}

impl std::fmt::Display for RecipeFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.line)
    }
}

impl std::error::Error for RecipeFault {}

/// A [`RecipeFault`] at the node `path` of the recipe file `recipe` (led by its line and column,
/// or naming the node when the file cannot be read again).
pub fn recipe_fault(
    recipe: Option<&Path>,
    path: &str,
    message: &str,
    output: Vec<String>,
) -> anyhow::Error {
    let text = recipe.and_then(|f| std::fs::read_to_string(f).ok());
    let located = match (recipe, text) {
        (Some(file), Some(text)) => {
            Doc::new(file.display().to_string(), &text).error(&Invalid::new(path, message))
        }
        _ => anyhow::anyhow!("{path}: {message}"),
    };
    let line = format!("{located:#}").replace('\n', " ");
    RecipeFault { line, output }.into()
}

/// The longest error line kept, in characters (a line is cut with `…` after it).
const LONGEST: usize = 240;

/// The failed build's own error line, from the lines it printed (`output`) and the Engine's error.
/// Only the failing step's output counts (after the last `Step n/m :` line). Its first line that
/// says `error` (a compiler's first error is its cause; a build tool's summary such as `make: ***`
/// or `error: could not compile` comes after), else its last line (Go's `main.go:3:2: "os"
/// imported and not used` says no `error`), else the Engine's message (a `COPY` of a missing file).
pub fn error_line(output: &[String], engine_error: &str) -> String {
    let lines: Vec<String> = (output.iter())
        .flat_map(|l| l.lines())
        .map(plain_text)
        .collect();
    let step = lines
        .iter()
        .rposition(|l| is_step(l))
        .map_or(0, |at| at + 1);
    let said: Vec<&str> = lines[step..]
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty() && !is_engine_noise(l))
        .collect();
    let found = said
        .iter()
        .find(|l| says_error(l) && !is_summary(l))
        .or_else(|| said.last());
    match found {
        Some(line) => short(line),
        None => short(engine_message(engine_error)),
    }
}

/// A step header of the Engine's classic builder: `Step 3/5 : RUN make`.
fn is_step(line: &str) -> bool {
    line.strip_prefix("Step ")
        .and_then(|rest| rest.split_once(" : "))
        .is_some_and(|(n, _)| n.contains('/') && n.split('/').all(|d| d.parse::<u32>().is_ok()))
}

/// Lines the Engine prints around a step, not the step's program.
fn is_engine_noise(line: &str) -> bool {
    line.starts_with("---> ")
        || line.starts_with("Removing intermediate container")
        || line.contains("returned a non-zero code")
        || line.contains("Docker stream error")
}

fn says_error(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    lower.contains("error") || lower.starts_with("fatal") || lower.contains(": fatal")
}

/// A build tool's closing line after the real error.
fn is_summary(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    lower.starts_with("make: ***")
        || lower.starts_with("make[")
        || lower.starts_with("error: could not compile")
        || lower.starts_with("error: aborting due to")
        || lower.contains("compilation terminated")
        || lower.ends_with("error 1")
        || lower.ends_with("error 2")
}

/// The Engine's message without the `building <tag>: ` the driver puts before it.
fn engine_message(error: &str) -> &str {
    let first = error.lines().next().unwrap_or(error).trim();
    match first.strip_prefix("building ") {
        Some(rest) => rest.split_once(": ").map_or(first, |(_, m)| m),
        None => first,
    }
}

fn short(line: &str) -> String {
    let line = line.trim();
    match line.char_indices().nth(LONGEST) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_string(),
    }
}

/// How many of a failed build's last lines its error shows.
pub const TAIL: usize = 30;

/// `line` without ANSI escape sequences (`ESC [ … letter`).
pub fn plain_text(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::error_line;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_owned).collect()
    }

    const NON_ZERO: &str =
        "building parkbench/x:0123: The command '/bin/sh -c make' returned a non-zero code: 2";

    #[test]
    fn a_c_compiler_error_is_the_line_not_makes_summary() {
        let out = lines(
            "Step 1/4 : FROM base\n ---> 1a2b\nStep 3/4 : RUN make\n ---> Running in 9f\n\
             cc -O2 -o probe main.c\nmain.c: In function 'main':\n\
             main.c:3:5: error: 'x' undeclared (first use in this function)\n\
             main.c:3:5: note: each undeclared identifier is reported only once\n\
             make: *** [Makefile:2: probe] Error 1",
        );
        assert_eq!(
            error_line(&out, NON_ZERO),
            "main.c:3:5: error: 'x' undeclared (first use in this function)"
        );
    }

    #[test]
    fn one_message_of_several_lines_counts_line_by_line() {
        let out = vec![
            "Step 6/11 : RUN gcc -o /out/probe /src/broken.c".to_string(),
            "\u{1b}[91m/src/broken.c:2:12: error: 'x' undeclared\n/src/broken.c:2:12: note: once\n"
                .to_string(),
        ];
        assert_eq!(
            error_line(&out, NON_ZERO),
            "/src/broken.c:2:12: error: 'x' undeclared"
        );
    }

    #[test]
    fn rustc_first_error_wins_over_cargos_summary() {
        let out = lines(
            "Step 5/6 : RUN cargo build --release --offline\n\
             \u{1b}[1m\u{1b}[91merror[E0425]\u{1b}[0m: cannot find value `y` in this scope\n\
              --> src/main.rs:2:13\n\
             error: could not compile `probe` (bin \"probe\") due to 1 previous error",
        );
        assert_eq!(
            error_line(&out, NON_ZERO),
            "error[E0425]: cannot find value `y` in this scope"
        );
    }

    #[test]
    fn go_says_no_error_word_so_the_steps_last_line_is_taken() {
        let out = lines(
            "Step 2/3 : RUN warning-free-step\nerrors: none so far\n\
             Step 3/3 : RUN go build -o /probe .\n ---> Running in 3c\n\
             # probe\n./main.go:4:2: \"os\" imported and not used\n\
             Removing intermediate container 3c",
        );
        assert_eq!(
            error_line(&out, NON_ZERO),
            "./main.go:4:2: \"os\" imported and not used"
        );
    }

    #[test]
    fn a_step_with_no_output_gives_the_engines_message() {
        let out = lines("Step 1/2 : FROM base\n ---> 1a2b\nStep 2/2 : COPY missing.txt /x");
        let engine = "building parkbench/x:0123: COPY failed: file not found in build context";
        assert_eq!(
            error_line(&out, engine),
            "COPY failed: file not found in build context"
        );
        assert_eq!(error_line(&[], "plain trouble"), "plain trouble");
    }
}
