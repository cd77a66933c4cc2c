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

    /// The template files: path in the new folder, template text, executable.
    fn templates(self) -> &'static [(&'static str, &'static str, bool)] {
        macro_rules! t {
            ($lang:literal, $file:literal, $to:literal, $x:literal) => {
                (
                    $to,
                    include_str!(concat!("templates/", $lang, "/", $file)),
                    $x,
                )
            };
        }
        match self {
            Lang::Rust => &[
                t!("rust", "image.yaml", "image.yaml", false),
                t!("rust", "Dockerfile", "Dockerfile", false),
                t!("rust", "Cargo.toml", "Cargo.toml", false),
                t!("rust", "Cargo.lock", "Cargo.lock", false),
                t!("rust", "gitignore", ".gitignore", false),
                t!("rust", "main.rs", "src/main.rs", false),
            ],
            Lang::Go => &[
                t!("go", "image.yaml", "image.yaml", false),
                t!("go", "Dockerfile", "Dockerfile", false),
                t!("go", "go.mod", "go.mod", false),
                t!("go", "main.go", "main.go", false),
            ],
            Lang::C => &[
                t!("c", "image.yaml", "image.yaml", false),
                t!("c", "Dockerfile", "Dockerfile", false),
                t!("c", "main.c", "main.c", false),
            ],
            Lang::Python => &[
                t!("python", "image.yaml", "image.yaml", false),
                t!("python", "Dockerfile", "Dockerfile", false),
                t!("python", "probe", "probe", true),
                t!("python", "main.py", "main.py", false),
            ],
            Lang::Node => &[
                t!("node", "image.yaml", "image.yaml", false),
                t!("node", "Dockerfile", "Dockerfile", false),
                t!("node", "probe", "probe", true),
                t!("node", "main.js", "main.js", false),
            ],
            Lang::Java => &[
                t!("java", "image.yaml", "image.yaml", false),
                t!("java", "Dockerfile", "Dockerfile", false),
                t!("java", "probe", "probe", true),
                t!("java", "Probe.java", "Probe.java", false),
            ],
            Lang::Binary => &[
                t!("binary", "image.yaml", "image.yaml", false),
                t!("binary", "Dockerfile", "Dockerfile", false),
                t!("binary", "probe", "probe", true),
            ],
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
