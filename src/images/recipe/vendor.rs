//! A recipe's `vendor:` line: the package managers whose dependencies are vendored, and what each
//! needs in the image folder and lays into the build context.

use std::fmt;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// A package manager whose dependencies a recipe vendors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tool {
    /// `cargo vendor --locked` into `vendor/`; the folder needs a `Cargo.lock`.
    Cargo,
    /// `pip download --require-hashes` into `wheelhouse/`; the folder needs a `requirements.txt`.
    Pip,
    /// `go mod vendor` with the pinned Go into `vendor/`; the folder needs a `go.mod`.
    Go,
    /// `npm ci` into a cache, `npm-vendor/`; the folder needs a `package-lock.json`.
    Npm,
}

impl Tool {
    /// Every tool, as `vendor:` names them.
    pub const ALL: [Tool; 4] = [Tool::Cargo, Tool::Pip, Tool::Go, Tool::Npm];

    /// The name `vendor:` writes.
    pub fn name(self) -> &'static str {
        match self {
            Tool::Cargo => "cargo",
            Tool::Pip => "pip",
            Tool::Go => "go",
            Tool::Npm => "npm",
        }
    }

    /// The file of the folder the tool vendors from.
    pub fn lockfile(self) -> &'static str {
        match self {
            Tool::Cargo => "Cargo.lock",
            Tool::Pip => "requirements.txt",
            Tool::Go => "go.mod",
            Tool::Npm => "package-lock.json",
        }
    }

    /// Where the vendored tree goes in the build context.
    pub fn context_path(self) -> &'static str {
        match self {
            Tool::Cargo | Tool::Go => "vendor",
            Tool::Pip => "wheelhouse",
            Tool::Npm => "npm-vendor",
        }
    }

    /// What to do when the lockfile is missing.
    pub fn lockfile_hint(self) -> &'static str {
        match self {
            Tool::Cargo => "run `cargo generate-lockfile` there and commit it",
            Tool::Pip => {
                "write it with every requirement pinned (`name==version`) and its `--hash=sha256:…` \
                 (`pip-compile --generate-hashes` or `pip hash` give them)"
            }
            Tool::Go => "run `go mod init` there, and `go mod tidy` to list the dependencies",
            Tool::Npm => "run `npm install --package-lock-only` there and commit it",
        }
    }
}

impl fmt::Display for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A recipe's `vendor:`: the tools whose dependencies are vendored, in order. `true` is `[cargo]`
/// (the form before other tools), `false` or nothing is none; one name or a list of names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Vendor(pub Vec<Tool>);

impl Vendor {
    /// Whether `tool` is vendored.
    pub fn has(&self, tool: Tool) -> bool {
        self.0.contains(&tool)
    }

    /// Whether nothing is vendored.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Serialize for Vendor {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|t| t.name()))
    }
}

impl<'de> Deserialize<'de> for Vendor {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(VendorVisitor)
    }
}

struct VendorVisitor;

const EXPECTED: &str = "`cargo`, `pip`, `go`, `npm`, a list of them, or true (cargo) / false";

fn tool<E: de::Error>(name: &str) -> Result<Tool, E> {
    Tool::ALL
        .into_iter()
        .find(|t| t.name() == name)
        .ok_or_else(|| E::custom(format!("unknown tool {name:?}; write {EXPECTED}")))
}

impl<'de> Visitor<'de> for VendorVisitor {
    type Value = Vendor;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(EXPECTED)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Vendor, E> {
        Ok(Vendor(if v { vec![Tool::Cargo] } else { vec![] }))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Vendor, E> {
        Ok(Vendor(vec![tool(v)?]))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Vendor, E> {
        Ok(Vendor::default())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vendor, A::Error> {
        let mut tools = Vec::new();
        while let Some(name) = seq.next_element::<String>()? {
            let t = tool(&name)?;
            if tools.contains(&t) {
                return Err(de::Error::custom(format!("{name} is named twice")));
            }
            tools.push(t);
        }
        if tools.contains(&Tool::Cargo) && tools.contains(&Tool::Go) {
            return Err(de::Error::custom(
                "cargo and go both vendor into vendor/; build them in two images",
            ));
        }
        Ok(Vendor(tools))
    }
}
