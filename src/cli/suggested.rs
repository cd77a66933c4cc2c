//! Every command the kit names to its user (closing lines, errors that say what to run next) is a
//! command line this driver accepts: read from the source of every message, parsed as `main` would.

use std::path::{Path, PathBuf};

use clap::Parser;
use clap::error::ErrorKind;

use super::args::Cli;

/// The subcommands a message may name.
fn subcommands() -> Vec<String> {
    use clap::CommandFactory;
    Cli::command()
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .collect()
}

/// The shipped source files under `dir` (a folder's `tests.rs` and `tests/` are test code).
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() && name != "tests" && name != "templates" {
            sources(&path, out);
        } else if name.ends_with(".rs") && !name.ends_with("tests.rs") {
            out.push(path);
        }
    }
}

/// The shipped part of a source file, its string continuations (`\` at a line's end) joined.
fn shipped(text: &str) -> String {
    let code = text.split("\n#[cfg(test)]").next().unwrap_or(text);
    let mut out = String::new();
    let mut continued = false;
    for line in code.lines() {
        let line = if continued { line.trim_start() } else { line };
        if !continued && line.trim_start().starts_with("//") {
            continue;
        }
        match line.strip_suffix('\\') {
            Some(head) => {
                out.push_str(head);
                continued = true;
            }
            None => {
                out.push_str(line);
                out.push('\n');
                continued = false;
            }
        }
    }
    out
}

/// Every `parkbench SUBCOMMAND …` in `text`, up to where the message goes on in words.
fn named_commands(text: &str, subcommands: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices("parkbench ") {
        let rest = &text[at + "parkbench ".len()..];
        let word: String = rest
            .chars()
            .take_while(|c| c.is_ascii_lowercase())
            .collect();
        if !subcommands.contains(&word) {
            continue;
        }
        let end = ["`", "\"", "\n", "\\n", ",", ";", " (", ")"]
            .iter()
            .filter_map(|t| rest.find(t))
            .min()
            .unwrap_or(rest.len());
        out.push(format!("parkbench {}", rest[..end].trim()));
    }
    out
}

/// The command's words with every placeholder (`{…}`, `<…>`, capitals such as `ID` or `RUN_DIR`,
/// the shard `i/N`) a value and optional parts (`[…]`) left out, up to the first word of prose (a
/// lowercase word that is no subcommand and follows no flag: `parkbench new never overwrites`).
fn filled(command: &str) -> Vec<String> {
    use clap::CommandFactory;
    let cli = Cli::command();
    let mut words: Vec<String> = Vec::new();
    let mut depth = 0;
    for word in command.split_whitespace() {
        depth += word.matches('[').count();
        let optional = depth > 0;
        depth -= word.matches(']').count().min(depth);
        if optional || word.contains('…') {
            continue;
        }
        let placeholder = word.contains('{')
            || word.starts_with('<')
            || word.starts_with("i/")
            || (word.len() > 1
                && word
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c == '_' || c == '/'));
        if placeholder {
            words.push(if word.starts_with("i/") { "1/1" } else { "x" }.to_string());
            continue;
        }
        let prose = word.chars().all(|c| c.is_ascii_lowercase())
            && words.len() >= 2
            && !words.last().is_some_and(|w| w.starts_with('-'))
            && !is_subcommand(&cli, &words[1..], word);
        if prose {
            break;
        }
        words.push(word.to_string());
    }
    words
}

/// Whether `words` (`parkbench` first) are a command's name and nothing else: subcommands alone.
fn named_alone(words: &[String]) -> bool {
    use clap::CommandFactory;
    let cli = Cli::command();
    (1..words.len()).all(|i| is_subcommand(&cli, &words[1..i], &words[i]))
}

/// Whether `word` is a subcommand of the command the words `path` name.
fn is_subcommand(cli: &clap::Command, path: &[String], word: &str) -> bool {
    let mut at = cli;
    for name in path {
        match at.find_subcommand(name) {
            Some(sub) => at = sub,
            None => return false,
        }
    }
    at.find_subcommand(word).is_some()
}

#[test]
fn every_command_a_message_names_is_one_the_driver_accepts() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let subcommands = subcommands();
    let (mut seen, mut wrong) = (0, Vec::new());
    for file in &files {
        let text = shipped(&std::fs::read_to_string(file).unwrap());
        for command in named_commands(&text, &subcommands) {
            seen += 1;
            let words = filled(&command);
            match Cli::try_parse_from(&words) {
                Ok(_) => {}
                // A command named alone (`parkbench merge`, `parkbench new probe`), as the thing
                // to use, not a line to run: every word a subcommand, no argument given.
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::MissingRequiredArgument
                            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
                    ) && named_alone(&words) => {}
                Err(e) => wrong.push(format!(
                    "{}: `{command}` (as {words:?}): {}",
                    file.strip_prefix(&src).unwrap().display(),
                    e.render().to_string().lines().next().unwrap_or("")
                )),
            }
        }
    }
    assert!(
        seen >= 20,
        "only {seen} commands found: the reader is broken"
    );
    assert!(
        wrong.is_empty(),
        "{} of {seen}:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
fn a_message_s_command_is_read_up_to_its_words() {
    let subs = ["run".to_string(), "explain".to_string()];
    let text = "finish it first with `parkbench run --resume {}`, then explain it\n\
                why: parkbench explain {} --claim {claim} (see docs/explain.md)\nparkbench it";
    assert_eq!(
        named_commands(text, &subs),
        [
            "parkbench run --resume {}",
            "parkbench explain {} --claim {claim}"
        ]
    );
    assert_eq!(
        filled("parkbench run [STUDY] --resume RUN_DIR"),
        ["parkbench", "run", "--resume", "x"]
    );
    assert_eq!(
        filled("parkbench new never overwrites"),
        ["parkbench", "new"]
    );
    assert_eq!(
        filled("parkbench new study ID --probe go"),
        ["parkbench", "new", "study", "x", "--probe", "go"]
    );
}
