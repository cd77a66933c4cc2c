//! The docs cannot rot: every field of the study, recipe and pin schemas has a row in its table, and
//! every row names a field (both sides derived from the serde types themselves); every value of the
//! study's enums is written down; the kinds × stats table matches the kinds; `docs/development.md`
//! names every folder of `src/` and every top-level entry of the repository; every relative link
//! resolves to a file, and every `#anchor` to a heading; the README stays a first read; imports point down
//! the floors of `src/`, and no files of it import each other in a circle; `Kind::ALL` lists every
//! kind, and no file outside `src/study/kind` names one. No Engine needed.

use crate::common;
mod floors;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

use parkbench::images::pin;
use parkbench::images::recipe::{Recipe, VersionCommand};
use parkbench::study::factor::{Factor, Level};
use parkbench::study::kind::Kind;
use parkbench::study::{
    Bound, Claim, Order, Probe, Protocol, Repeats, Source, Stat, Study, Tolerance, Unit,
};

fn read(relative: &str) -> String {
    let path = common::repo().join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// The names serde lists after `expected` in an error: `` expected one of `a`, `b` `` or
/// `` expected `a` ``.
fn names_in_error(error: &str) -> Vec<String> {
    let listed = error
        .split_once("expected")
        .unwrap_or_else(|| panic!("no list of names in {error:?}"))
        .1;
    listed
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// Every field of `T`, as serde names them: a map with one field `T` does not have, under
/// `deny_unknown_fields`, fails with a list of every field it has.
fn fields<T: DeserializeOwned>() -> Vec<String> {
    let error = match serde_yaml::from_str::<T>("not_a_field_of_any_schema: 0") {
        Ok(_) => panic!("{} accepts an unknown field", std::any::type_name::<T>()),
        Err(e) => e.to_string(),
    };
    assert!(error.contains("unknown field"), "{error}");
    names_in_error(&error)
}

/// Every variant of the enum `T`, as written in files.
fn variants<T: DeserializeOwned>() -> Vec<String> {
    let error = match serde_yaml::from_str::<T>("not_a_variant_of_any_enum") {
        Ok(_) => panic!("{} accepts an unknown variant", std::any::type_name::<T>()),
        Err(e) => e.to_string(),
    };
    assert!(error.contains("unknown variant"), "{error}");
    names_in_error(&error)
}

/// The lines of `text` outside fenced code blocks.
fn prose(text: &str) -> Vec<&str> {
    let mut fenced = false;
    text.lines()
        .filter(|l| {
            if l.trim_start().starts_with("```") {
                fenced = !fenced;
                return false;
            }
            !fenced
        })
        .collect()
}

/// The lines of the section whose heading contains `marker`, up to the next heading.
fn section<'a>(text: &'a str, marker: &str) -> Vec<&'a str> {
    let lines = prose(text);
    let start = lines
        .iter()
        .position(|l| l.starts_with('#') && l.contains(marker))
        .unwrap_or_else(|| panic!("no heading with {marker}"));
    lines[start + 1..]
        .iter()
        .take_while(|l| !l.starts_with('#'))
        .copied()
        .collect()
}

/// The names in the first cell of a section's table rows (`` | `name` | … ``).
fn rows(section: &[&str]) -> BTreeSet<String> {
    section
        .iter()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once('`'))
        .map(|(name, _)| name.to_owned())
        .collect()
}

/// The table under the heading with `marker` in `doc` has one row per field of `T`, and no other.
fn table_matches<T: DeserializeOwned>(doc: &str, marker: &str) {
    let want: BTreeSet<String> = fields::<T>().into_iter().collect();
    let got = rows(&section(&read(doc), marker));
    let missing: Vec<_> = want.difference(&got).collect();
    let stale: Vec<_> = got.difference(&want).collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "{doc}, section {marker}: fields without a row {missing:?}; rows that are no field {stale:?}"
    );
}

#[test]
fn every_field_of_a_study_file_has_its_row() {
    let doc = "docs/study-files.md";
    table_matches::<Study>(doc, "(`Study`)");
    table_matches::<Source>(doc, "(`Source`)");
    table_matches::<Protocol>(doc, "(`Protocol`)");
    table_matches::<Repeats>(doc, "(`Repeats`)");
    table_matches::<parkbench::study::protocol::DropBatches>(doc, "(`DropBatches`)");
    table_matches::<parkbench::study::sample::BatchCounters>(doc, "(`BatchCounters`)");
    table_matches::<parkbench::outputs::summary::DroppedBatches>(doc, "(`DroppedBatches`)");
    table_matches::<Probe>(doc, "(`Probe`)");
    table_matches::<Claim>(doc, "(`Claim`)");
    table_matches::<Bound>(doc, "(`Bound`)");
    table_matches::<Tolerance>(doc, "(`Tolerance`)");
    table_matches::<Factor>(doc, "(`Factor`)");
    table_matches::<Level>(doc, "(`Level`)");
    table_matches::<parkbench::study::sample::Sample>(doc, "(`Sample`)");
}

#[test]
fn every_field_of_a_hosts_file_has_its_row() {
    use parkbench::run::fleet::hosts::{HostSpec, HostsFile, TlsPaths};
    let doc = "docs/fleet.md";
    table_matches::<HostsFile>(doc, "(`HostsFile`)");
    table_matches::<HostSpec>(doc, "(`HostSpec`)");
    table_matches::<TlsPaths>(doc, "(`TlsPaths`)");
}

#[test]
fn every_field_of_a_recipe_and_a_pin_has_its_row() {
    let doc = "docs/images.md";
    table_matches::<Recipe>(doc, "(`Recipe`)");
    table_matches::<parkbench::images::patch::Patch>(doc, "(`Patch`)");
    table_matches::<VersionCommand>(doc, "(`VersionCommand`)");
    table_matches::<pin::Pin>(doc, "(`Pin`)");
    table_matches::<pin::Mmdebstrap>(doc, "(`Mmdebstrap`)");
    table_matches::<pin::Rustup>(doc, "(`Rustup`)");
    table_matches::<pin::Pip>(doc, "(`Pip`)");
    table_matches::<pin::Deb>(doc, "(`Deb`)");
    table_matches::<pin::Url>(doc, "(`Url`)");
}

#[test]
fn every_value_a_study_file_may_name_is_written_down() {
    let doc = read("docs/study-files.md");
    let mut values = Vec::new();
    values.extend(variants::<Kind>());
    values.extend(variants::<Order>());
    values.extend(variants::<Stat>());
    values.extend(variants::<Unit>());
    values.extend(parkbench::study::THP_MODES.map(str::to_owned));
    values.extend(parkbench::study::PLACEHOLDERS.iter().map(|p| p.to_string()));
    let percentiles = parkbench::study::kind::PERCENTILES;
    values.extend(percentiles.iter().map(|p| p.to_string()));
    assert!(values.len() > 30, "{values:?}");
    for v in values {
        assert!(
            doc.contains(&format!("`{v}`")),
            "docs/study-files.md does not name `{v}`"
        );
    }
}

/// Whether a claim about a probe of `kind` may name `stat`, as the study's checks decide: a
/// comparison needs a single-valued statistic of the kind (`lower_by_percent` compares RSS medians).
fn offers(kind: Kind, stat: Stat) -> bool {
    let own = kind.measure().stats();
    match stat {
        Stat::Ratio | Stat::Order => own
            .iter()
            .any(|s| parkbench::study::claim::SCALAR.contains(s)),
        Stat::LowerByPercent => own.contains(&Stat::RssMedian),
        s => parkbench::study::claim::check_stat(s, kind).is_ok(),
    }
}

#[test]
fn the_kinds_by_stats_table_matches_the_kinds() {
    let text = read("docs/study-files.md");
    let table: Vec<Vec<String>> = section(&text, "(kinds × stats)")
        .iter()
        .filter(|l| l.starts_with('|'))
        .map(|l| l.split('|').map(|c| c.trim().to_owned()).collect())
        .collect();
    let header = &table[0];
    let kinds = variants::<Kind>();
    for stat_name in variants::<Stat>() {
        let stat: Stat = serde_yaml::from_str(&stat_name).unwrap();
        let row = table
            .iter()
            .find(|r| r[1] == format!("`{stat_name}`"))
            .unwrap_or_else(|| panic!("no row for stat {stat_name}"));
        for kind_name in &kinds {
            let kind: Kind = serde_yaml::from_str(kind_name).unwrap();
            let col = header
                .iter()
                .position(|h| h == kind_name)
                .unwrap_or_else(|| panic!("no column for kind {kind_name}"));
            let want = if offers(kind, stat) { "yes" } else { "—" };
            assert_eq!(
                row[col], want,
                "kinds × stats: {stat_name} for a {kind_name} probe"
            );
        }
    }
}

/// The first path component of every file Git tracks (a new entry counts once it is added).
fn top_level_entries(repo: &Path) -> BTreeSet<String> {
    let listed = std::process::Command::new("git")
        .args(["ls-files", "--cached"])
        .current_dir(repo)
        .output()
        .expect("running git ls-files");
    assert!(listed.status.success(), "git ls-files failed");
    String::from_utf8(listed.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.split('/').next())
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_development_page_names_every_folder_of_src_and_of_the_repository() {
    let repo = common::repo();
    let doc = read("docs/development.md");
    for entry in std::fs::read_dir(repo.join("src")).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            let name = path.file_name().unwrap().to_str().unwrap();
            assert!(
                doc.contains(&format!("`src/{name}/`")),
                "docs/development.md does not name src/{name}/"
            );
        }
    }
    for name in top_level_entries(&repo) {
        let shown = if repo.join(&name).is_dir() {
            format!("`{name}/`")
        } else {
            format!("`{name}`")
        };
        assert!(
            doc.contains(&shown),
            "docs/development.md does not name the top-level entry {shown}"
        );
    }
}

/// A heading's anchor as GitHub makes it: lowercase, punctuation dropped, spaces as `-`.
fn slug(heading: &str) -> String {
    heading
        .trim_start_matches('#')
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every anchor of a Markdown file (a repeated heading gets `-1`, `-2`…).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for heading in prose(text).iter().filter(|l| l.starts_with('#')) {
        let base = slug(heading);
        let mut anchor = base.clone();
        let mut n = 0;
        while !out.insert(anchor.clone()) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
    }
    out
}

/// The targets of the Markdown links of `text`, outside code blocks and code spans.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in prose(text) {
        let plain: String = line.split('`').step_by(2).collect::<Vec<_>>().join("");
        for after in plain.split("](").skip(1) {
            if let Some((target, _)) = after.split_once(')') {
                out.push(target.to_owned());
            }
        }
    }
    out
}

/// The README, every page under `docs/`, and every README under `results/` and `docker/`.
fn linked_docs(repo: &Path) -> Vec<PathBuf> {
    let mut files = vec![repo.join("README.md"), repo.join("docker/README.md")];
    for entry in std::fs::read_dir(repo.join("docs")).unwrap() {
        files.push(entry.unwrap().path());
    }
    for entry in std::fs::read_dir(repo.join("results")).unwrap() {
        let readme = entry.unwrap().path().join("README.md");
        if readme.is_file() {
            files.push(readme);
        }
    }
    files.retain(|f| f.extension().is_some_and(|e| e == "md"));
    files
}

#[test]
fn every_relative_link_resolves() {
    let repo = common::repo().canonicalize().unwrap();
    let docs = linked_docs(&repo);
    assert!(docs.len() >= 8, "{docs:?}");
    let mut seen = 0;
    for file in docs {
        let text = std::fs::read_to_string(&file).unwrap();
        for link in links(&text) {
            if link.contains("://") || link.starts_with("mailto:") {
                continue;
            }
            seen += 1;
            let (path, anchor) = link.split_once('#').unwrap_or((&link, ""));
            let target = if path.is_empty() {
                file.clone()
            } else {
                file.parent().unwrap().join(path)
            };
            let shown = format!(
                "{} links to {link}",
                file.strip_prefix(&repo).unwrap().display()
            );
            let target = target
                .canonicalize()
                .unwrap_or_else(|_| panic!("{shown}, which does not exist"));
            assert!(target.starts_with(&repo), "{shown}, outside the repository");
            if !anchor.is_empty() {
                let text = std::fs::read_to_string(&target).unwrap();
                assert!(
                    anchors(&text).contains(anchor),
                    "{shown}: no heading there has the anchor #{anchor}"
                );
            }
        }
    }
    assert!(seen > 20, "only {seen} relative links found");
}

#[test]
fn the_readme_stays_a_first_read() {
    let text = read("README.md");
    let lines = text.lines().count();
    assert!(
        lines <= 220,
        "README.md has {lines} lines; move references to docs/"
    );
    for (i, line) in text.lines().enumerate() {
        let width = line.chars().count();
        assert!(
            width <= 120,
            "README.md:{}: {width} characters; fold it at 120",
            i + 1
        );
    }
}

/// The floors of `src/` (docs/development.md, src/lib.rs): what each stage may import of the others.
/// Every shipped line of every file counts; test items (`#[cfg(test)]` and the files only they
/// declare) may reach up for cross-checks.
#[test]
fn imports_only_point_down_the_floors() {
    let allowed: &[(&str, &[&str])] = &[
        ("files", &[]),
        ("stats", &[]),
        ("yaml", &[]),
        ("text", &[]),
        ("study", &["files", "stats", "yaml", "text"]),
        ("engine", &["files"]),
        (
            "images",
            &["study", "engine", "files", "yaml", "stats", "text"],
        ),
        (
            "run",
            &[
                "images", "engine", "study", "files", "stats", "yaml", "text",
            ],
        ),
        (
            "outputs",
            &[
                "run", "images", "engine", "study", "files", "stats", "yaml", "text",
            ],
        ),
        (
            "ops",
            &[
                "outputs", "run", "images", "engine", "study", "files", "stats", "yaml", "text",
            ],
        ),
        (
            "cli",
            &[
                "ops", "outputs", "run", "images", "engine", "study", "files", "stats", "yaml",
                "text",
            ],
        ),
    ];
    let krate = floors::read(&common::repo().join("src"));
    assert!(
        krate.files.len() > 150,
        "only {} files read",
        krate.files.len()
    );
    let mut wrong = Vec::new();
    for (from, arrows) in krate.arrows.iter().enumerate() {
        let Some(stage) = krate.stage(from) else {
            continue; // lib.rs
        };
        let may = allowed
            .iter()
            .find(|(s, _)| *s == stage)
            .unwrap_or_else(|| {
                panic!("src/{stage} is on no floor: add it to this test and the docs")
            })
            .1;
        for (to, names) in arrows {
            let used = krate.stage(*to).unwrap_or_default();
            if used != stage && !may.contains(&used) {
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                wrong.push(format!(
                    "{} -> {}: {stage} imports {used} ({})",
                    krate.shown(from),
                    krate.shown(*to),
                    names.join(", ")
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports that point up the floors:\n{}",
        wrong.join("\n")
    );
}

/// No two files of `src/` import each other, straight or round a circle: each file stands on the
/// ones it imports.
#[test]
fn no_circle_of_files() {
    let krate = floors::read(&common::repo().join("src"));
    let circles = krate.circles();
    assert!(
        circles.is_empty(),
        "circles of files in src/: {} (move what both need to the lower one, or below both):\n{}",
        circles.len(),
        circles
            .iter()
            .enumerate()
            .map(|(i, c)| format!("circle {}:\n  {}", i + 1, c.join("\n  ")))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// `Kind::ALL`, the one list of kinds, holds every kind study files may name, once.
#[test]
fn the_list_of_kinds_is_every_kind() {
    let listed: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
    assert_eq!(listed, variants::<Kind>());
    for kind in Kind::ALL {
        assert_eq!(Kind::from_name(kind.name()), Some(kind));
        let written = serde_yaml::to_string(&kind).unwrap();
        assert_eq!(
            written.trim(),
            kind.name(),
            "{kind:?}: its name is not serde's"
        );
    }
}

/// A kind of measurement in one place: no shipped file outside `src/study/kind.rs` and
/// `src/study/kind/` names a kind's variant (`Kind::Timed`); the others ask the kind's `Measure`
/// (its name, figure, scaffold…). Test items are exempt (`#[cfg(test)]` and the files only they
/// declare, such as every `tests.rs`): they make samples of a given kind.
#[test]
fn no_file_names_a_kind_outside_its_module() {
    let krate = floors::read(&common::repo().join("src"));
    let variants: Vec<String> = Kind::ALL.iter().map(|k| format!("Kind::{k:?}")).collect();
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let (mut inside, mut outside) = (0, Vec::new());
    for (i, file) in krate.files.iter().enumerate() {
        let own = file
            .module
            .starts_with(&["study".to_owned(), "kind".to_owned()]);
        for (n, line) in file.code().lines().enumerate() {
            for v in &variants {
                let named = line.match_indices(v.as_str()).filter(|(at, _)| {
                    !line[..*at].ends_with(ident) && !line[at + v.len()..].starts_with(ident)
                });
                for _ in named {
                    match own {
                        true => inside += 1,
                        false => outside.push(format!("{}:{}: {v}", krate.shown(i), n + 1)),
                    }
                }
            }
        }
    }
    assert!(
        inside >= variants.len(),
        "only {inside} variants named in src/study/kind"
    );
    assert!(
        outside.is_empty(),
        "a kind's variant named outside src/study/kind: ask its `Measure` (src/study/kind.rs) \
         instead:\n{}",
        outside.join("\n")
    );
}

#[test]
fn the_outcome_and_wall_time_example_loads_with_the_study_it_names() {
    let doc = read("docs/study-files.md");
    let from = doc.find("### Outcomes and wall time").expect("the section");
    let block = doc[from..].split("```yaml\n").nth(1).unwrap();
    let block = block.split("```").next().unwrap();
    let claims = block.strip_prefix("claims:\n").expect("a list of claims");
    let study = read("results/sleep-peak-2024/study.yaml");
    let with = format!("{}\n{claims}", study.trim_end());
    let loaded = Study::parse(&with).unwrap_or_else(|e| panic!("{e:#}"));
    let stats: Vec<Stat> = loaded.claims.iter().rev().take(2).map(|c| c.stat).collect();
    assert_eq!(stats, [Stat::Outcome, Stat::WallMedian]);
}
