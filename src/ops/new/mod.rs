//! `parkbench new`: the scaffolds an author starts from. `new study ID` writes
//! `results/ID/study.yaml`, every section commented and valid as written, and a README stub;
//! `new probe NAME --lang L --kind K` writes `docker/NAME/`, a probe image whose program runs as it
//! is and prints what its kind measures, on the kit's pinned toolchains. Nothing is overwritten.
//!
//! The templates are files under `templates/`, one folder per language. A template line ending in
//! `@kind K,…` opens a part kept only for the kinds whose scaffold names one of those words (each
//! kind's `Measure::scaffold`), `@end` closes it; `{{name}}`, `{{kind}}` and `{{lang}}` are filled
//! in.

mod debian;
mod template;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::next_step::shell_path;
use super::{Ending, Paths};
use crate::files::digest;
use crate::images::recipe::{self, Recipe};
use crate::study::{Kind, Study};
pub use debian::probe as debian_probe;
pub use template::{LANGS, Lang, files, render};

/// The study template (`{{id}}`, `{{plan}}`, `{{probes}}`, `{{example_probe}}`).
const STUDY: &str = include_str!("templates/study.yaml");

/// The line of a scaffold's `image.yaml` that says its kind, read back by `new study --probe`.
const KIND_LINE: &str = "# kind: ";

/// `parkbench new study ID [--probe NAME]…`.
pub fn study(paths: &Paths, id: &str, probes: &[String]) -> Result<Ending> {
    check_repo(&paths.repo)?;
    let dir = paths.results.join(id);
    let file = dir.join("study.yaml");
    refuse_existing(&file)?;
    let docker = paths.repo.join("docker");
    if let Some(name) = probes.iter().find(|name| !docker.join(name).is_dir()) {
        check_probe_name(name)?;
        let names = crate::images::probe_names(&paths.repo).unwrap_or_default();
        // The command is named as the driver runs from here where the error is printed.
        bail!(
            "no probe image `{name}` in {}: `parkbench new probe {name} --lang go` makes one in Go \
             (`--help` lists the other languages, and `--debian` takes a runtime's Debian \
             packages); the probe images there are {}",
            docker.display(),
            names.join(", ")
        );
    }
    // The commands the study's files name run from the repository's root, with `--results` when
    // the study is kept in another folder than the repository's own.
    let named = shell_path(&from_repo(&paths.repo, &file));
    let results = from_repo(&paths.repo, &paths.results);
    let driver = match results == Path::new("results") {
        true => "parkbench".to_string(),
        false => format!("parkbench --results {}", shell_path(&results)),
    };
    let text = study_text(&paths.repo, id, &format!("{driver} plan {named}"), probes)?;
    // What `new` writes must load: a scaffold that does not is the kit's bug, caught here.
    Study::parse_named(&file.display().to_string(), &text)
        .context("the study parkbench new wrote does not load (please report this)")?;
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    write(&file, &text, false)?;
    let readme = dir.join("README.md");
    if !readme.exists() {
        write(&readme, &readme_text(id, &driver, &named), false)?;
    }
    println!("wrote {}", file.display());
    println!("wrote {}", readme.display());
    println!(
        "{}",
        paths.runnable(&format!(
            "next: parkbench plan {}   (checks it without building), then parkbench reproduce {} --cpus auto",
            shell_path(&file),
            shell_path(&file)
        ))
    );
    Ok(Ending::Ok)
}

/// `file` as named from the repository's root, where a study's commands run: `results/ID/study.yaml`
/// for a study among the kit's, its absolute path for one kept elsewhere (`--results`). Both are
/// resolved as the system resolves them (symbolic links, `..`), `file` through the part of it that
/// exists.
fn from_repo(repo: &Path, file: &Path) -> PathBuf {
    let (repo, file) = (resolved(repo), resolved(file));
    match file.strip_prefix(&repo) {
        Ok(inside) => inside.to_owned(),
        Err(_) => file,
    }
}

/// `path` made absolute, its longest existing part canonical (the rest, not made yet, appended).
fn resolved(path: &Path) -> PathBuf {
    let path = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    let mut rest = Vec::new();
    let mut at = path.as_path();
    loop {
        if let Ok(real) = at.canonicalize() {
            return rest.iter().rev().fold(real, |p, part| p.join(part));
        }
        match (at.parent(), at.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                at = parent;
            }
            _ => return path,
        }
    }
}

/// The text of a new study: the template with a probe entry for each named probe image, or the
/// kit's own Go probe (article 000's) as a stand-in when none is named; `plan` is the command that
/// checks it, run from the repository's root.
pub fn study_text(repo: &Path, id: &str, plan: &str, probes: &[String]) -> Result<String> {
    if !recipe::is_image_name(id) {
        bail!(
            "{id:?} is no study id: use lowercase letters, digits, `-`, `_` and `.`, starting with a \
             letter or digit"
        );
    }
    let mut entries = String::new();
    let mut first = None;
    if probes.is_empty() {
        entries.push_str(
            "  # The kit's own Go probe of article 000, a stand-in so that this file runs as it is:\n  \
             # replace it with yours (`parkbench new study ID --probe NAME` lists them for you).\n  \
             - id: go\n    image: go\n    kind: steady\n    args: [\"--tasks\", \"{tasks}\"]\n    \
             env: {GOMAXPROCS: \"{workers}\"}\n",
        );
    }
    for name in probes {
        let kind = match scaffold_kind(&repo.join("docker").join(name))? {
            Some(kind) => kind,
            None => {
                let any = Kind::ANY_PROGRAM.name();
                entries.push_str(&format!(
                    "  # docker/{name}/image.yaml does not say what its program is measured for \
                     (a `{KIND_LINE}K` line): {any},\n  # which runs any program unmodified to its \
                     end, stands in; change `kind` if it is another (docs/study-files.md).\n"
                ));
                Kind::ANY_PROGRAM
            }
        };
        entries.push_str(&probe_entry(name, kind));
        first.get_or_insert(name.as_str());
    }
    Ok(STUDY
        .replace("{{id}}", id)
        .replace("{{plan}}", plan)
        .replace("{{example_probe}}", first.unwrap_or("go"))
        .replace("{{probes}}\n", &entries))
}

/// The kind a probe image's `image.yaml` says its program is (the `# kind: K` line `new probe`
/// writes); `None` for an image that does not say.
fn scaffold_kind(dir: &Path) -> Result<Option<Kind>> {
    let file = dir.join(crate::images::context::RECIPE);
    let recipe = Recipe::load(dir)?;
    if !recipe.probe {
        bail!(
            "{} does not say `probe: true`: name a probe image",
            file.display()
        );
    }
    let text = std::fs::read_to_string(&file)?;
    (text.lines().find_map(|l| l.strip_prefix(KIND_LINE)))
        .map(|kind| parse_kind(kind.trim()).with_context(|| format!("{}", file.display())))
        .transpose()
}

fn parse_kind(word: &str) -> Result<Kind> {
    Kind::from_name(word).with_context(|| format!("{word:?} is no kind: {}", Kind::listed()))
}

/// A probe's entry in `probes:`: its arguments and scales as the kind's scaffold gives them.
pub fn probe_entry(name: &str, kind: Kind) -> String {
    let scaffold = kind.measure().scaffold();
    let kind = kind.name();
    let mut out = format!("  - id: {name}\n    image: {name}\n    kind: {kind}\n");
    if let Some(scales) = scaffold.scales {
        out.push_str(&format!("    scales: {scales}\n"));
    }
    out.push_str(&format!("    args: {}\n", scaffold.args));
    out
}

/// `parkbench new probe NAME --lang L --kind K`.
pub fn probe(paths: &Paths, name: &str, lang: Lang, kind: Kind) -> Result<Ending> {
    check_probe_name(name)?;
    let dir = paths.repo.join("docker").join(name);
    refuse_existing(&dir)?;
    check_repo(&paths.repo)?;
    let files = files(lang, name, kind)?;
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    for (path, text, executable) in &files {
        let file = dir.join(path);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent)?;
        }
        write(&file, text, *executable)?;
    }
    if lang == Lang::Binary {
        let sum = digest::file(&dir.join("probe"))?;
        write(&dir.join("SHA256SUMS"), &format!("{sum}  probe\n"), false)?;
    }
    // What `new` writes must load as a recipe.
    Recipe::load(&dir)
        .context("the image.yaml parkbench new wrote does not load (please report this)")?;
    println!(
        "wrote {}/ ({} probe in {})",
        dir.display(),
        kind.name(),
        lang.word()
    );
    println!("its entry in a study's probes (`parkbench new study ID --probe {name}` writes it):");
    print!("{}", probe_entry(name, kind));
    Ok(Ending::Ok)
}

/// A new probe's name is a plain image name: no `.` (a folder `a.b` is a variant of `a`).
fn check_probe_name(name: &str) -> Result<()> {
    if !recipe::is_image_name(name) || name.contains('.') {
        bail!(
            "{name:?} is no probe name: use lowercase letters, digits, `-` and `_`, starting with \
             a letter or digit (a `.` names a variant of another image)"
        );
    }
    Ok(())
}

/// `new` writes into the repository: its `docker/` and `results/` beside the kit's own.
fn check_repo(repo: &Path) -> Result<()> {
    if !repo.join("docker").is_dir() {
        bail!(
            "{} has no docker/ folder: run parkbench new from the repository root or pass --repo DIR",
            repo.display()
        );
    }
    Ok(())
}

fn refuse_existing(path: &Path) -> Result<()> {
    if path.exists() {
        bail!(
            "{} already exists: parkbench new never overwrites; choose another name or remove it",
            path.display()
        );
    }
    Ok(())
}

fn write(path: &PathBuf, text: &str, executable: bool) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    if executable {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
            .with_context(|| format!("making {} executable", path.display()))?;
    }
    Ok(())
}

fn readme_text(id: &str, driver: &str, file: &str) -> String {
    format!(
        "# {id}\n\nFor a reviewer of this study: what it measures and why, what it chose where the \
         article is silent, its deviations from the published setup, and its findings.\n\n\
         ## What is measured\n\nTODO: the article, its programs, and what each probe runs.\n\n\
         ## Choices and deviations\n\nTODO: what this study chose where the article is silent.\n\n\
         ## Reproduce\n\nFrom the repository's root:\n\n```sh\n{driver} plan {file}\n{driver} reproduce \
         {file} --cpus auto\n```\n"
    )
}

/// The placeholder texts the study template leaves in fields an author must write, by field path:
/// `plan` warns about each one still there. The title's placeholder follows the study id.
pub const PLACEHOLDERS: [(&str, &str); 3] = [
    ("title", ": what is measured, against what"),
    (
        "source.article",
        "the article's title, or the question this study asks",
    ),
    (
        "source.environment",
        "the published environment: CPU model, OS, kernel X.Y",
    ),
];

/// The fields of `study` that still hold the template's placeholder text.
pub fn placeholders_left(study: &crate::study::Study) -> Vec<&'static str> {
    placeholders_in(&|field: &str| match field {
        "title" => study.title.clone(),
        "source.article" => study.source.article.clone(),
        _ => study.source.environment.clone(),
    })
}

/// The fields whose value (by path, from `value`) still holds the template's placeholder.
fn placeholders_in(value: &dyn Fn(&str) -> String) -> Vec<&'static str> {
    (PLACEHOLDERS.iter())
        .filter(|(field, text)| value(field).ends_with(text))
        .map(|(field, _)| *field)
        .collect()
}

#[cfg(test)]
mod tests;
