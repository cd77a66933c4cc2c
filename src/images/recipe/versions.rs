//! A recipe's `versions:` entries: a command that prints a tool's version, and the image it runs
//! in — the final image (the short form, a list), or a parent that holds the tool (the long form).
//!
//! ```yaml
//! versions:
//!   gcc --version: [gcc, --version]               # in the final image
//!   go version: {in: GO, run: [go, version]}      # in the parent image of build arg GO
//!   elixir: {run: [elixir, --version], pattern: 'Elixir (\S+)'}   # the version read by a pattern
//! ```

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{RECIPE, Recipe};
use crate::yaml::{Doc, Invalid, ensure_at};

/// One `versions:` entry (`VersionCommand`): written as `[program, arg, …]` (run in the final
/// image) or as `{in: ARG, run: [program, arg, …], pattern: REGEX}` (run in a parent image, the
/// version read by a pattern). Unknown fields are errors with line and column.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VersionCommand {
    /// The program and its arguments; the label keys its trimmed output.
    pub run: Vec<String>,
    /// Where it runs: the build arg of a parent image (a key of the recipe's `parents`, e.g. `GO`),
    /// for a tool that the build uses but the final image does not hold (a compiler). Left out:
    /// the final image.
    #[serde(default, rename = "in")]
    pub parent: Option<String>,
    /// A regular expression whose first group is the version, for a tool that prints something
    /// else first (`elixir --version` prints an Erlang banner, then `Elixir 1.14.0 (…)`): the
    /// manifest records the version on the first line, then the whole output. Output it does not
    /// match fails the image's build, naming the entry. Left out: the trimmed output, whose first
    /// line is read for the version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
}

impl VersionCommand {
    /// A command run in the final image.
    pub fn in_final(run: &[&str]) -> Self {
        VersionCommand {
            run: run.iter().map(|w| w.to_string()).collect(),
            parent: None,
            pattern: None,
        }
    }

    /// What the manifest records of the command's `output`: the trimmed output, or with a
    /// `pattern` the version it finds (its first group) on the first line, then the trimmed
    /// output. `Err` says why the pattern found nothing.
    pub fn recorded(&self, output: &str) -> Result<String, String> {
        let output = output.trim();
        let Some(pattern) = &self.pattern else {
            return Ok(output.to_owned());
        };
        let regex = compile(pattern)?;
        match regex.captures(output).and_then(|c| c.get(1)) {
            Some(version) if !version.as_str().is_empty() => {
                Ok(format!("{}\n{output}", version.as_str()))
            }
            _ => Err(format!(
                "pattern {pattern:?} found no version (its first group) in what `{}` printed: {:?}",
                self.shown(),
                output.chars().take(300).collect::<String>()
            )),
        }
    }

    /// The command as written: `go version`.
    pub fn shown(&self) -> String {
        self.run.join(" ")
    }

    /// Checks the entry of `label` against the recipe's `parents`.
    pub(super) fn validate(
        &self,
        label: &str,
        parents: &BTreeMap<String, String>,
    ) -> Result<(), Invalid> {
        let at = format!("versions.{label}");
        ensure_at!(
            self.run.first().is_some_and(|p| !p.is_empty()),
            &at,
            "versions: {label:?} has no command; write it as [program, arg, …], or as \
             {{in: ARG, run: [program, arg, …]}} to run it in a parent image"
        );
        if let Some(pattern) = &self.pattern {
            ensure_at!(
                compile(pattern).is_ok_and(|r| r.captures_len() > 1),
                format!("{at}.pattern"),
                "versions: {label:?}: pattern {pattern:?} {}; write a regular expression whose \
                 first group is the version (`Elixir (\\S+)`)",
                match compile(pattern) {
                    Err(e) => format!("is no regular expression ({e})"),
                    Ok(_) => "has no group".to_owned(),
                }
            );
        }
        if let Some(arg) = &self.parent {
            let names: Vec<&str> = parents.keys().map(String::as_str).collect();
            ensure_at!(
                parents.contains_key(arg),
                format!("{at}.in"),
                "versions: {label:?} runs in {arg:?}, which is no build arg of this recipe's \
                 parents ({}); name one of them, or leave `in` out to run it in the final image",
                if names.is_empty() {
                    "it has none".to_string()
                } else {
                    names.join(", ")
                }
            );
        }
        Ok(())
    }
}

/// A `pattern`, compiled; the error in one line.
fn compile(pattern: &str) -> Result<regex::Regex, String> {
    regex::Regex::new(pattern).map_err(|e| e.to_string().replace('\n', " "))
}

impl Recipe {
    /// Why the `versions:` entry `label` read nothing from its command's output (`why`, from
    /// [`VersionCommand::recorded`]), in one line that leads with the recipe's `file:line:column`.
    pub fn version_unmatched(&self, label: &str, why: &str) -> String {
        let file = self.file.clone().unwrap_or_else(|| {
            format!("docker/{}/{}", self.name, crate::images::context::RECIPE).into()
        });
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let doc = Doc::new(file.display().to_string(), &text);
        let message = format!(
            "versions: {label:?}: {why}; fix the pattern so that its first group is the version"
        );
        format!(
            "{:#}",
            doc.error(&Invalid::new(format!("versions.{label}.pattern"), message))
        )
    }

    /// Why the `versions:` entry `label` failed when run in `ran_in` (`the final image <tag>`, `the
    /// parent GO (toolchain-go)`), in one line that leads with the recipe's `file:line:column` and
    /// says what to do.
    pub fn version_failed(&self, label: &str, ran_in: &str, error: &anyhow::Error) -> String {
        let command = &self.versions[label];
        let program = command.run.first().map_or("", String::as_str);
        let said = format!("{error:#}").replace('\n', " ");
        // How the Engine says the program is not in the image (by name, or by path).
        let missing = said.contains("executable file not found")
            || said.contains("no such file or directory");
        let mut message = format!(
            "versions: {label:?}: `{}` failed in {ran_in}: {said}. ",
            command.shown()
        );
        let args: Vec<&str> = self.parents.keys().map(String::as_str).collect();
        match (&command.parent, missing) {
            (None, true) if !args.is_empty() => {
                // The build arg named like the program (`GO` for `go`) is the likely home.
                let arg = args
                    .iter()
                    .find(|a| a.len() > 1 && program.to_ascii_uppercase().starts_with(*a))
                    .copied()
                    .unwrap_or("ARG");
                message.push_str(&format!(
                    "The command runs in the final image, which has no `{program}`; run it in \
                     the parent that holds it: `{label}: {{in: {arg}, run: [{}]}}` (this \
                     recipe's parents: {})",
                    command.run.join(", "),
                    args.join(", ")
                ));
            }
            (None, _) => message.push_str(
                "The command runs in the final image: install the tool there, run it in a parent \
                 image with {in: ARG, run: […]}, or fix the command",
            ),
            (Some(arg), _) => message.push_str(&format!(
                "The command runs in the parent {arg}: name in `in` the parent that holds \
                 `{program}` (this recipe's parents: {}), leave `in` out to run it in the final \
                 image, or fix the command",
                args.join(", ")
            )),
        }
        let path = format!("versions.{label}");
        let file = self
            .file
            .clone()
            .unwrap_or_else(|| format!("docker/{}/{RECIPE}", self.name).into());
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let doc = Doc::new(file.display().to_string(), &text);
        format!("{:#}", doc.error(&Invalid::new(path, message)))
    }
}

/// The short form stays the short form when written back; `pattern` is written only when given.
impl Serialize for VersionCommand {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        if self.parent.is_none() && self.pattern.is_none() {
            return self.run.serialize(s);
        }
        let mut map = s.serialize_map(None)?;
        if let Some(parent) = &self.parent {
            map.serialize_entry("in", parent)?;
        }
        map.serialize_entry("run", &self.run)?;
        if let Some(pattern) = &self.pattern {
            map.serialize_entry("pattern", pattern)?;
        }
        map.end()
    }
}

/// A list, or a mapping with `in` and `run`.
pub(super) fn deserialize<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, VersionCommand>, D::Error> {
    let forms: BTreeMap<String, Form> = BTreeMap::deserialize(d)?;
    Ok(forms.into_iter().map(|(k, f)| (k, f.0)).collect())
}

/// One entry in either form.
struct Form(VersionCommand);

impl<'de> Deserialize<'de> for Form {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(FormVisitor)
    }
}

struct FormVisitor;

impl<'de> Visitor<'de> for FormVisitor {
    type Value = Form;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a command as [program, arg, …], or {in: ARG, run: [program, arg, …]}")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Form, A::Error> {
        let run = Vec::<String>::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
        Ok(Form(VersionCommand {
            run,
            parent: None,
            pattern: None,
        }))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Form, A::Error> {
        VersionCommand::deserialize(de::value::MapAccessDeserializer::new(map)).map(Form)
    }
}
