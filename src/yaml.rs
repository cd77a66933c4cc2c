//! YAML loading with exact error locations, for the study, recipe and pin files. A leaf: imports
//! nothing of parkbench.
//!
//! serde (serde_yaml) turns the text into values; its errors already carry a line and column. A check
//! made after that (an unknown probe in a claim, a bad tolerance) names the node it is about by its
//! path from the root (`claims[3].tolerance.relative`, an [`Invalid`]), and [`Doc`] finds where that
//! node is written with a span-aware parser (saphyr-parser) read beside serde. Every error then reads
//! `results/async-costs/study.yaml:183:27: <what is wrong and what to do>`.

use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::fmt;

use anyhow::Result;
use saphyr_parser::{Event, Parser, ScanError, Span, StrInput};
use serde::de::DeserializeOwned;

/// Where a node is written: line and column, both counted from 1 (columns in characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Mark {
    pub line: usize,
    pub column: usize,
}

impl fmt::Display for Mark {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// A problem with one node of a document, named by its path from the root: `probes[2].id`,
/// `claims[5].tolerance.relative`, `sources[0]`; the empty path is the document as a whole (a thing
/// the file does not write, such as its folder's name). Displays as its message alone.
#[derive(Debug, Clone, PartialEq)]
pub struct Invalid {
    /// The node's path: keys joined by `.`, list items as `[i]`.
    pub path: String,
    /// What is wrong and what to do.
    pub message: String,
}

impl Invalid {
    /// A problem with the node at `path`.
    pub fn new(path: impl Into<String>, message: impl fmt::Display) -> Self {
        Invalid {
            path: path.into(),
            message: message.to_string(),
        }
    }

    /// The same problem with its path seen from `parent`: `tolerance` under `claims[3]` is
    /// `claims[3].tolerance`, `[0].id` under `factors` is `factors[0].id`.
    pub fn under(mut self, parent: &str) -> Self {
        self.path = join(parent, &self.path);
        self
    }
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Invalid {}

/// Names the node an error of a plain check is about: `cpuset::parse(&p.cpus).at("protocol.cpus")`.
pub trait At<T> {
    /// The error as an [`Invalid`] about the node at `path`, its message the whole error chain.
    fn at(self, path: impl Into<String>) -> std::result::Result<T, Invalid>;
}

impl<T> At<T> for Result<T> {
    fn at(self, path: impl Into<String>) -> std::result::Result<T, Invalid> {
        self.map_err(|e| Invalid::new(path, format!("{e:#}")))
    }
}

/// `ensure!` for a node: returns an [`Invalid`] about `path` unless `cond` holds.
macro_rules! ensure_at {
    ($cond:expr, $path:expr, $($msg:tt)+) => {
        if !$cond {
            return Err($crate::yaml::Invalid::new($path, format!($($msg)+)));
        }
    };
}

/// `bail!` for a node: returns an [`Invalid`] about `path`.
macro_rules! bail_at {
    ($path:expr, $($msg:tt)+) => {
        return Err($crate::yaml::Invalid::new($path, format!($($msg)+)))
    };
}

pub(crate) use {bail_at, ensure_at};

/// `child` under `parent`: joined by `.`, or directly for a list item (`[0]`).
pub fn join(parent: &str, child: &str) -> String {
    match (parent, child) {
        ("", c) => c.to_string(),
        (p, "") => p.to_string(),
        (p, c) if c.starts_with('[') => format!("{p}{c}"),
        (p, c) => format!("{p}.{c}"),
    }
}

/// One YAML text and the name errors give it (its file's path). The positions of its nodes are
/// read only when an error needs one.
pub struct Doc<'a> {
    name: String,
    text: &'a str,
    marks: OnceCell<BTreeMap<String, Mark>>,
}

impl<'a> Doc<'a> {
    /// The text `text`, named `name` in errors.
    pub fn new(name: impl Into<String>, text: &'a str) -> Self {
        Doc {
            name: name.into(),
            text,
            marks: OnceCell::new(),
        }
    }

    /// Deserializes the text into `T`, then runs `check` on it: a syntax error, an unknown field, a
    /// bad value or a failed check names the file, line and column of its node.
    pub fn parse<T: DeserializeOwned>(
        &self,
        check: impl FnOnce(&mut T) -> std::result::Result<(), Invalid>,
    ) -> Result<T> {
        let mut value = self.deserialize()?;
        check(&mut value).map_err(|e| self.error(&e))?;
        Ok(value)
    }

    /// Deserializes the text into `T`; an error names the file, line and column serde stopped at.
    pub fn deserialize<T: DeserializeOwned>(&self) -> Result<T> {
        serde_yaml::from_str(self.text).map_err(|e| {
            let mark = e.location().map(|l| Mark {
                line: l.line(),
                column: l.column(),
            });
            let message = e.to_string();
            // serde_yaml appends the place to its message; the error leads with it instead.
            let message = match mark {
                Some(m) => message
                    .strip_suffix(&format!(" at line {} column {}", m.line, m.column))
                    .unwrap_or(&message)
                    .to_string(),
                None => message,
            };
            let message = match did_you_mean(&message) {
                Some(known) => format!("{message}: did you mean `{known}`?"),
                None => message,
            };
            self.located(mark, &message)
        })
    }

    /// `invalid` as an error that leads with `file:line:column` of its node (see [`Doc::mark`]), or
    /// with the file alone for the document as a whole.
    pub fn error(&self, invalid: &Invalid) -> anyhow::Error {
        match self.mark(&invalid.path) {
            Some(mark) => self.located(Some(mark), &invalid.message),
            None if invalid.path.is_empty() => self.located(None, &invalid.message),
            // The text does not parse for positions (it did for serde): name the node by its path.
            None => self.located(None, &format!("{}: {}", invalid.path, invalid.message)),
        }
    }

    /// Where the node at `path` is written: its value's first character, or its key's when the
    /// value starts on a later line (a block list or mapping) or is empty; a node not written (a field left to
    /// its default) is found at its nearest written parent. `None` for the empty path (the document
    /// as a whole), and when the text does not parse.
    pub fn mark(&self, path: &str) -> Option<Mark> {
        let marks = self
            .marks
            .get_or_init(|| index(self.text).unwrap_or_default());
        let mut path = path;
        while !path.is_empty() {
            if let Some(m) = marks.get(path) {
                return Some(*m);
            }
            path = &path[..path.rfind(['.', '[']).unwrap_or(0)];
        }
        None
    }

    fn located(&self, mark: Option<Mark>, message: &str) -> anyhow::Error {
        match mark {
            Some(m) => anyhow::anyhow!("{}:{m}: {message}", self.name),
            None => anyhow::anyhow!("{}: {message}", self.name),
        }
    }
}

/// For serde's `unknown field `x`, expected …` or `unknown variant `x`, expected …`: the expected
/// name closest to `x`, when it is close enough to be a slip (at most a third of its letters
/// differ, and at least one may).
fn did_you_mean(message: &str) -> Option<&str> {
    let rest = ["unknown field `", "unknown variant `"]
        .iter()
        .find_map(|p| message.find(p).map(|i| &message[i + p.len()..]))?;
    let (unknown, rest) = rest.split_once('`')?;
    let expected = rest.split_once("expected")?.1;
    let names = expected.split('`').skip(1).step_by(2);
    let (distance, known) = names
        .map(|n| (strsim::damerau_levenshtein(unknown, n), n))
        .min_by_key(|(d, _)| *d)?;
    (distance > 0 && distance <= (unknown.chars().count() / 3).max(1)).then_some(known)
}

/// The position of every node of the text's first document, by path.
fn index(text: &str) -> std::result::Result<BTreeMap<String, Mark>, ScanError> {
    let mut walk = Walk {
        parser: Parser::new_from_str(text),
        marks: BTreeMap::new(),
    };
    loop {
        let (event, span) = walk.next()?;
        match event {
            Event::StreamStart | Event::DocumentStart(_) => continue,
            Event::StreamEnd | Event::DocumentEnd => break,
            _ => {
                walk.node(Some(String::new()), None, (event, span))?;
                break;
            }
        }
    }
    Ok(walk.marks)
}

/// A walk over the parser's events that records where each node starts.
struct Walk<'a> {
    parser: Parser<'a, StrInput<'a>>,
    marks: BTreeMap<String, Mark>,
}

impl<'a> Walk<'a> {
    fn next(&mut self) -> std::result::Result<(Event<'a>, Span), ScanError> {
        match self.parser.next_event() {
            Some(event) => event,
            None => Ok((Event::StreamEnd, Span::default())),
        }
    }

    /// Records the node that starts with `first` at `path` (`None`: not addressable, such as a
    /// mapping used as a key), and its children; `key` is where its key is written.
    fn node(
        &mut self,
        path: Option<String>,
        key: Option<Mark>,
        (first, span): (Event<'a>, Span),
    ) -> std::result::Result<(), ScanError> {
        let at = mark(&span);
        if let Some(p) = path.as_ref().filter(|p| !p.is_empty()) {
            let m = key
                .filter(|k| k.line < at.line || span.is_empty())
                .unwrap_or(at);
            self.marks.insert(p.clone(), m);
        }
        match first {
            Event::SequenceStart(..) => {
                for i in 0.. {
                    let item = self.next()?;
                    if matches!(item.0, Event::SequenceEnd | Event::StreamEnd) {
                        break;
                    }
                    let child = path.as_deref().map(|p| join(p, &format!("[{i}]")));
                    self.node(child, None, item)?;
                }
            }
            Event::MappingStart(..) => loop {
                let (k, kspan) = self.next()?;
                if matches!(k, Event::MappingEnd | Event::StreamEnd) {
                    break;
                }
                let child = match (&k, &path) {
                    (Event::Scalar(name, ..), Some(p)) => Some(join(p, name)),
                    _ => None,
                };
                if !matches!(k, Event::Scalar(..)) {
                    self.node(None, None, (k, kspan))?;
                }
                let value = self.next()?;
                self.node(child, Some(mark(&kspan)), value)?;
            },
            _ => {}
        }
        Ok(())
    }
}

fn mark(span: &Span) -> Mark {
    Mark {
        line: span.start.line(),
        column: span.start.col() + 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
id: t
probes:
  - id: a
    args: [x, '{y}']
  - {id: b, env: {K: v}}
tolerance:
  relative: 0.1
empty:
";

    fn at(path: &str) -> Option<(usize, usize)> {
        Doc::new("f.yaml", TEXT)
            .mark(path)
            .map(|m| (m.line, m.column))
    }

    #[test]
    fn a_path_names_where_its_node_is_written() {
        assert_eq!(at("id"), Some((1, 5)));
        assert_eq!(
            at("probes[0]"),
            Some((3, 5)),
            "a block mapping: its first key"
        );
        assert_eq!(at("probes[0].id"), Some((3, 9)));
        assert_eq!(at("probes[0].args[1]"), Some((4, 15)));
        assert_eq!(at("probes[1]"), Some((5, 5)), "a flow mapping: its brace");
        assert_eq!(at("probes[1].env.K"), Some((5, 22)));
        assert_eq!(at("probes"), Some((2, 1)), "a block list: its key");
        assert_eq!(at("tolerance"), Some((6, 1)));
        assert_eq!(at("tolerance.relative"), Some((7, 13)));
        assert_eq!(at("empty"), Some((8, 1)), "an empty value: its key");
    }

    #[test]
    fn a_node_not_written_is_found_at_its_nearest_written_parent() {
        assert_eq!(at("probes[1].tolerance.absolute"), at("probes[1]"));
        assert_eq!(at("probes[7]"), at("probes"));
        assert_eq!(at("nothing"), None);
        assert_eq!(at(""), None);
    }

    #[test]
    fn a_name_close_to_a_known_one_is_suggested() {
        let said = |m| did_you_mean(m);
        assert_eq!(
            said("unknown variant `stedy`, expected one of `steady`, `peak`, `timed`"),
            Some("steady")
        );
        assert_eq!(
            said("probes[0]: unknown field `imgae`, expected one of `id`, `image`, `args`"),
            Some("image")
        );
        assert_eq!(
            said("unknown field `colour`, expected one of `id`, `version`"),
            None
        );
        assert_eq!(
            said("unknown field `x`, expected `id`"),
            None,
            "nothing close"
        );
        assert_eq!(said("invalid type: string, expected a number"), None);
        let e = Doc::new(
            "f.yaml",
            "id: a
ide: b
",
        )
        .deserialize::<Two>()
        .unwrap_err();
        assert!(e.to_string().ends_with("did you mean `id`?"), "{e}");
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Two {
        id: String,
        name: Option<String>,
    }

    #[test]
    fn errors_lead_with_file_line_and_column() {
        let doc = Doc::new("f.yaml", TEXT);
        let e = doc.error(&Invalid::new("probes[0].args[1]", "not a placeholder"));
        assert_eq!(e.to_string(), "f.yaml:4:15: not a placeholder");
        let e = doc.error(&Invalid::new("", "the folder's name"));
        assert_eq!(e.to_string(), "f.yaml: the folder's name");
        #[derive(Debug, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Only {
            #[allow(dead_code)]
            id: String,
        }
        let e = Doc::new("f.yaml", "id: a\nide: b\n")
            .deserialize::<Only>()
            .unwrap_err();
        assert!(
            e.to_string().starts_with("f.yaml:2:1: unknown field `ide`"),
            "{e}"
        );
    }

    #[test]
    fn a_relative_path_joins_its_parent() {
        let e = Invalid::new("tolerance", "x").under("claims[3]");
        assert_eq!(e.path, "claims[3].tolerance");
        assert_eq!(
            Invalid::new("[0].id", "x").under("factors").path,
            "factors[0].id"
        );
        assert_eq!(Invalid::new("", "x").under("probes[1]").path, "probes[1]");
        let plain: Result<()> = Err(anyhow::anyhow!("inner"));
        let e = plain.at("protocol.cpus").unwrap_err();
        assert_eq!(
            (e.path.as_str(), e.message.as_str()),
            ("protocol.cpus", "inner")
        );
    }
}
