//! The probe templates, one folder per language under `templates/`, and how a template becomes a
//! file: the parts for other kinds dropped, the words filled in.

use anyhow::{Result, bail};

use crate::study::Kind;

/// The languages `new probe --lang` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    Rust,
    Go,
    C,
    Python,
    Node,
    Java,
    /// A prebuilt program the author supplies, pinned by its sha256.
    Binary,
}

/// Every language, in the order `--help` lists them.
pub const LANGS: [Lang; 7] = [
    Lang::Rust,
    Lang::Go,
    Lang::C,
    Lang::Python,
    Lang::Node,
    Lang::Java,
    Lang::Binary,
];

impl Lang {
    /// The word `--lang` takes.
    pub fn word(self) -> &'static str {
        match self {
            Lang::Rust => "rust",
            Lang::Go => "go",
            Lang::C => "c",
            Lang::Python => "python",
            Lang::Node => "node",
            Lang::Java => "java",
            Lang::Binary => "binary",
        }
    }

    /// The template files: path in the new folder, template text, executable. Every language has
    /// an `image.yaml` and a `Dockerfile`; then its own files, `from => to`, `true` when executable.
    fn templates(self) -> &'static [(&'static str, &'static str, bool)] {
        macro_rules! files {
            ($lang:literal $(, $from:literal => $to:literal $x:literal)*) => {
                &[
                    files!(@ $lang, "image.yaml", "image.yaml", false),
                    files!(@ $lang, "Dockerfile", "Dockerfile", false),
                    $(files!(@ $lang, $from, $to, $x),)*
                ]
            };
            (@ $lang:literal, $from:literal, $to:literal, $x:literal) => {
                ($to, include_str!(concat!("templates/", $lang, "/", $from)), $x)
            };
        }
        match self {
            Lang::Rust => files!("rust",
                "Cargo.toml" => "Cargo.toml" false,
                "Cargo.lock" => "Cargo.lock" false,
                "gitignore" => ".gitignore" false,
                "main.rs" => "src/main.rs" false),
            Lang::Go => files!("go", "go.mod" => "go.mod" false, "main.go" => "main.go" false),
            Lang::C => files!("c", "main.c" => "main.c" false),
            Lang::Python => files!("python", "probe" => "probe" true, "main.py" => "main.py" false),
            Lang::Node => files!("node", "probe" => "probe" true, "main.js" => "main.js" false),
            Lang::Java => {
                files!("java", "probe" => "probe" true, "Probe.java" => "Probe.java" false)
            }
            Lang::Binary => files!("binary", "probe" => "probe" true),
        }
    }
}

impl std::str::FromStr for Lang {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Self> {
        match LANGS.iter().find(|l| l.word() == s) {
            Some(l) => Ok(*l),
            None => {
                let words: Vec<&str> = LANGS.iter().map(|l| l.word()).collect();
                bail!("no language {s:?}: take one of {}", words.join(", "))
            }
        }
    }
}

/// The files of a new probe `name` in `lang` measured as `kind`: path, text, executable. The
/// kind's scaffold says which `@kind` parts write its program.
pub fn files(lang: Lang, name: &str, kind: Kind) -> Result<Vec<(String, String, bool)>> {
    let program = kind.measure().scaffold().program;
    lang.templates()
        .iter()
        .map(|(path, text, x)| {
            let text = render(text, program)
                .map_err(|e| anyhow::anyhow!("template {}/{path}: {e}", lang.word()))?
                .replace("{{name}}", name)
                .replace("{{kind}}", kind.name())
                .replace("{{lang}}", lang.word());
            Ok((path.to_string(), text, *x))
        })
        .collect()
}

/// Keeps the lines of `template` outside any `@kind` part and inside the parts that name `kind`;
/// the marker lines themselves go. A part left open or an `@end` without a part is an error.
pub fn render(template: &str, kind: &str) -> Result<String> {
    let mut out = String::new();
    let mut part: Option<bool> = None;
    for line in template.lines() {
        let trimmed = line.trim();
        if let Some((_, kinds)) = trimmed.split_once("@kind ") {
            if part.is_some() {
                bail!("`{trimmed}` inside another @kind part");
            }
            part = Some(kinds.split(',').any(|k| k.trim() == kind));
        } else if trimmed.ends_with("@end") {
            if part.take().is_none() {
                bail!("@end without @kind");
            }
        } else if part != Some(false) {
            out.push_str(line);
            out.push('\n');
        }
    }
    if part.is_some() {
        bail!("a @kind part is not closed with @end");
    }
    Ok(out)
}
