//! What can be checked of a recipe without building it: its Dockerfile's `FROM` lines against the
//! recipe's `parents` (a `FROM ${X}` whose `X` no parent gives fails the build; a parent no `FROM`
//! uses is a mistake), and where each program the recipe names (`binaries`, `versions`) comes from:
//! the Dockerfile or the folder names it, or it must come from a parent image, which only the
//! build can tell.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::recipe::Recipe;

/// A problem that would fail the build, at `file:line:column`.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// `file:line:column: what, and what to do`.
    pub message: String,
}

/// Where a program the recipe names comes from, as far as the sources tell.
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    /// The path in the image, or the command's program.
    pub path: String,
    /// What names it: `Dockerfile`, `the folder`, or `None`: it must come from `final_image`.
    pub named_by: Option<&'static str>,
    /// The image the Dockerfile's last stage starts from (`FROM ${BASE}` → its parent), where a
    /// program no source names must already be.
    pub final_image: Option<String>,
}

/// The Dockerfile the image is built from: the folder's own, or the one of the folder it is a
/// variant of.
pub fn dockerfile(docker: &Path, recipe: &Recipe) -> PathBuf {
    let own = docker.join(&recipe.name).join("Dockerfile");
    if own.is_file() {
        own
    } else {
        recipe.base_folder(docker).join("Dockerfile")
    }
}

/// The Dockerfile's `FROM` lines checked against the recipe's parents.
pub fn check_dockerfile(docker: &Path, recipe: &Recipe) -> Result<Vec<Problem>> {
    let file = dockerfile(docker, recipe);
    let Ok(text) = std::fs::read_to_string(&file) else {
        return Ok(vec![Problem {
            message: format!(
                "{}: missing: every image folder needs a Dockerfile (docs/images.md)",
                file.display()
            ),
        }]);
    };
    let mut problems = Vec::new();
    let mut stages: Vec<String> = Vec::new();
    let mut used: Vec<String> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if !words
            .first()
            .is_some_and(|w| w.eq_ignore_ascii_case("FROM"))
        {
            continue;
        }
        let Some(from) = words.iter().skip(1).find(|w| !w.starts_with("--")) else {
            continue;
        };
        if let Some(arg) = build_arg(from) {
            used.push(arg.to_string());
            if !recipe.parents.contains_key(arg) {
                let column = line.find(from).unwrap_or(0) + 1;
                problems.push(Problem {
                    message: format!(
                        "{}:{}:{column}: FROM {from}: no parent gives the build arg {arg}; add \
                         `{arg}: <image>` to parents: in {}",
                        file.display(),
                        i + 1,
                        recipe
                            .file
                            .as_deref()
                            .map_or("image.yaml".into(), |f| f.display().to_string())
                    ),
                });
            }
        } else if !stages.iter().any(|s| s == from) {
            let column = line.find(from).unwrap_or(0) + 1;
            problems.push(Problem {
                message: format!(
                    "{}:{}:{column}: FROM {from}: builds have no network, so every FROM names a \
                     parent image as a build arg (`FROM ${{BASE}}`) or an earlier stage",
                    file.display(),
                    i + 1
                ),
            });
        }
        if let Some(pos) = words.iter().position(|w| w.eq_ignore_ascii_case("AS")) {
            stages.extend(words.get(pos + 1).map(|s| s.to_string()));
        }
    }
    for arg in recipe.parents.keys() {
        if !used.contains(arg) && !text.contains(&format!("${{{arg}}}")) {
            problems.push(Problem {
                message: format!(
                    "{}: parents.{arg} is never used: no FROM ${{{arg}}} in {}; remove it or use it",
                    recipe.file.as_deref().map_or("image.yaml".into(), |f| f.display().to_string()),
                    file.display()
                ),
            });
        }
    }
    Ok(problems)
}

/// `${X}` or `$X` → `X`.
fn build_arg(word: &str) -> Option<&str> {
    let rest = word.strip_prefix('$')?;
    Some(
        rest.strip_prefix('{')
            .and_then(|r| r.strip_suffix('}'))
            .unwrap_or(rest),
    )
}

/// Every program the recipe names (`binaries`, and the program of each `versions` command) with
/// what names it in the image's sources. A `versions` command runs in the final image, so only the
/// Dockerfile's last stage counts for it (a compiler used in a build stage is not there).
pub fn programs(docker: &Path, recipe: &Recipe) -> Result<Vec<Program>> {
    let file = dockerfile(docker, recipe);
    let text = crate::files::read_text(&file)?;
    let is_from = |l: &&str| {
        l.split_whitespace()
            .next()
            .is_some_and(|w| w.eq_ignore_ascii_case("FROM"))
    };
    let last_from = text.lines().rfind(is_from).unwrap_or("");
    let final_stage = text.rsplit(last_from).next().unwrap_or(&text);
    let final_image = last_from
        .split_whitespace()
        .nth(1)
        .and_then(build_arg)
        .and_then(|arg| recipe.parents.get(arg).cloned());
    let folders = [docker.join(&recipe.name), recipe.base_folder(docker)];
    let mut names: Vec<(String, &str)> = recipe
        .binaries
        .iter()
        .map(|b| (b.clone(), text.as_str()))
        .collect();
    // A command run in a parent image (`in:`) is that parent's to hold; only the final image's are checked.
    let in_final = recipe.versions.values().filter(|c| c.parent.is_none());
    for command in in_final.filter_map(|c| c.run.first()) {
        if !names.iter().any(|(n, _)| n == command) {
            names.push((command.clone(), final_stage));
        }
    }
    Ok(names
        .into_iter()
        .map(|(path, text)| {
            let base = path.rsplit('/').next().unwrap_or(&path).to_string();
            let named_by = if mentions(text, &base) {
                Some("Dockerfile")
            } else if folders.iter().any(|f| has_file(f, &base))
                || recipe.shared.contains_key(&base)
            {
                Some("the folder")
            } else {
                None
            };
            Program {
                path,
                named_by,
                final_image: final_image.clone(),
            }
        })
        .collect())
}

/// `word` appears in `text` with no letter, digit, `_` or `-` on either side.
fn mentions(text: &str, word: &str) -> bool {
    let part = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    text.match_indices(word).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + word.len()..].chars().next();
        !before.is_some_and(part) && !after.is_some_and(part)
    })
}

/// A file named `name` anywhere below `dir` (build output and Git metadata left out).
fn has_file(dir: &Path, name: &str) -> bool {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_entry(|e| !matches!(e.file_name().to_str(), Some("target" | ".git" | "vendor")))
        .filter_map(|e| e.ok())
        .any(|e| e.file_type().is_file() && e.file_name() == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recipe(dir: &Path, yaml: &str, dockerfile: &str) -> Recipe {
        let folder = dir.join("p");
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join("image.yaml"), yaml).unwrap();
        std::fs::write(folder.join("Dockerfile"), dockerfile).unwrap();
        std::fs::write(folder.join("main.py"), "").unwrap();
        Recipe::load(&folder).unwrap()
    }

    #[test]
    fn from_lines_are_checked_against_parents() {
        let tmp = tempfile::tempdir().unwrap();
        let r = recipe(
            tmp.path(),
            "parents: {BASE: base, GO: toolchain-go}\n",
            "ARG BASE\nFROM ${SAMPLER} AS sampler\nFROM debian:12\nFROM sampler\nFROM ${BASE}\n",
        );
        let problems = check_dockerfile(tmp.path(), &r).unwrap();
        let text: Vec<&str> = problems.iter().map(|p| p.message.as_str()).collect();
        assert_eq!(problems.len(), 3, "{text:#?}");
        assert!(
            text[0].contains("Dockerfile:2:6: FROM ${SAMPLER}"),
            "{}",
            text[0]
        );
        assert!(
            text[1].contains("Dockerfile:3:6: FROM debian:12"),
            "{}",
            text[1]
        );
        assert!(text[2].contains("parents.GO is never used"), "{}", text[2]);
    }

    #[test]
    fn programs_say_what_names_them() {
        let tmp = tempfile::tempdir().unwrap();
        let r = recipe(
            tmp.path(),
            "binaries: [/usr/local/bin/probe, /usr/local/lib/main.py, /usr/bin/perl]\n\
             versions: {v: [python3.13, --version]}\nparents: {BASE: debian-trixie}\n",
            "FROM ${BASE} AS build\nRUN python3.13 -m x\nFROM ${BASE}\nCOPY probe /usr/local/bin/probe\n",
        );
        let found: Vec<(String, Option<&str>)> = programs(tmp.path(), &r)
            .unwrap()
            .into_iter()
            .map(|p| (p.path, p.named_by))
            .collect();
        assert_eq!(found[0].1, Some("Dockerfile"));
        assert_eq!(found[1].1, Some("the folder"));
        assert_eq!(found[2].1, None);
        assert_eq!(
            found[3],
            ("python3.13".into(), None),
            "a build stage's tool is not in the image"
        );
        assert_eq!(found.len(), 4);
        let final_image = programs(tmp.path(), &r).unwrap()[3].final_image.clone();
        assert_eq!(final_image.as_deref(), Some("debian-trixie"));
        assert!(!mentions("probe-lib", "probe") && mentions("cp /probe .", "probe"));
    }
}
