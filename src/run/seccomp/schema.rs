//! A seccomp profile read strictly, in the Engine's own schema (Docker 20.10's
//! `profiles/seccomp/seccomp.go`, plus `defaultErrnoRet`, which later Engines read and which only
//! chooses an error number). The Engine reads JSON keys case-insensitively, the last of two equal
//! ones winning; the kit refuses every key it does not know by its exact name, every key given
//! twice, and every action or operator it does not know, so what it judges is what the Engine
//! would read. The Engine is then given [`Document::canonical`], never the file's own text.

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

/// Every action the Engine's runtime knows.
pub const ACTIONS: [&str; 9] = [
    "SCMP_ACT_KILL",
    "SCMP_ACT_KILL_PROCESS",
    "SCMP_ACT_KILL_THREAD",
    "SCMP_ACT_TRAP",
    "SCMP_ACT_ERRNO",
    "SCMP_ACT_TRACE",
    "SCMP_ACT_ALLOW",
    "SCMP_ACT_LOG",
    "SCMP_ACT_NOTIFY",
];

/// Actions that stop a syscall; every other one lets it through (or hands it to someone who may).
pub const DENYING: [&str; 5] = [
    "SCMP_ACT_ERRNO",
    "SCMP_ACT_KILL",
    "SCMP_ACT_KILL_PROCESS",
    "SCMP_ACT_KILL_THREAD",
    "SCMP_ACT_TRAP",
];

/// Every comparison an argument filter may make.
const OPERATORS: [&str; 7] = [
    "SCMP_CMP_NE",
    "SCMP_CMP_LT",
    "SCMP_CMP_LE",
    "SCMP_CMP_EQ",
    "SCMP_CMP_GE",
    "SCMP_CMP_GT",
    "SCMP_CMP_MASKED_EQ",
];

/// How many arguments a syscall has, so how many an argument filter can compare.
const ARGUMENTS: u32 = 6;

/// A profile: what a syscall no rule names gets, and the rules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Document {
    #[serde(rename = "defaultAction")]
    pub default_action: String,
    #[serde(rename = "defaultErrnoRet", skip_serializing_if = "Option::is_none")]
    pub default_errno_ret: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub architectures: Option<Vec<String>>,
    #[serde(rename = "archMap", default, skip_serializing_if = "Option::is_none")]
    pub arch_map: Option<Vec<Architecture>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syscalls: Option<Vec<Syscall>>,
}

/// One architecture the filter covers, and those it brings along.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Architecture {
    pub architecture: String,
    #[serde(rename = "subArchitectures", default)]
    pub sub_architectures: Option<Vec<String>>,
}

/// One rule: the syscalls it names, its action, its argument filter (all of them must hold,
/// unless two compare the same argument: see [`Syscall::filters`]) and when it applies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Syscall {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub names: Option<Vec<String>>,
    pub action: String,
    #[serde(rename = "errnoRet", default, skip_serializing_if = "Option::is_none")]
    pub errno_ret: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<Arg>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub includes: Option<Filter>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excludes: Option<Filter>,
}

/// A comparison of one argument.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Arg {
    pub index: u32,
    pub value: u64,
    #[serde(rename = "valueTwo", default)]
    pub value_two: u64,
    pub op: String,
}

/// When a rule applies: capabilities the container holds, its architecture, its kernel.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Filter {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caps: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arches: Option<Vec<String>>,
    #[serde(rename = "minKernel", default, skip_serializing_if = "Option::is_none")]
    pub min_kernel: Option<String>,
}

impl Document {
    /// Parses `json` strictly (see the module's doc) and checks what the Engine would refuse.
    pub fn parse(json: &str) -> Result<Document> {
        let doc: Document = serde_json::from_str(json).map_err(|e| {
            // serde quotes a key it refuses as written: printable, on one line.
            anyhow::anyhow!(
                "{}: a seccomp profile here has only the Engine's keys, each once and spelt \
                 exactly (defaultAction, defaultErrnoRet, architectures, archMap, syscalls; a rule's \
                 name or names, action, errnoRet, args, comment, includes, excludes)",
                crate::text::printable(&e.to_string())
            )
        })?;
        doc.check()?;
        Ok(doc)
    }

    fn check(&self) -> Result<()> {
        known("defaultAction", &self.default_action, &ACTIONS)?;
        if self.architectures.as_ref().is_some_and(|a| !a.is_empty())
            && self.arch_map.as_ref().is_some_and(|a| !a.is_empty())
        {
            bail!("the profile names both architectures and archMap; the Engine takes one of them");
        }
        for (i, rule) in self.rules().iter().enumerate() {
            let at = || format!("syscalls[{i}]");
            known("action", &rule.action, &ACTIONS).with_context(at)?;
            if rule.name.as_ref().is_some_and(|n| !n.is_empty())
                && rule.names.as_ref().is_some_and(|n| !n.is_empty())
            {
                bail!("{}: a rule has name or names, not both", at());
            }
            for arg in rule.args.iter().flatten() {
                known("op", &arg.op, &OPERATORS).with_context(at)?;
                if arg.index >= ARGUMENTS {
                    bail!(
                        "{}: an argument filter compares argument index {}; a syscall has \
                         arguments 0 to {}",
                        at(),
                        arg.index,
                        ARGUMENTS - 1
                    );
                }
            }
            for filter in [&rule.includes, &rule.excludes].into_iter().flatten() {
                if let Some(k) = &filter.min_kernel {
                    kernel(k).with_context(at)?;
                }
            }
        }
        Ok(())
    }

    /// The rules, none when the profile has none.
    pub fn rules(&self) -> &[Syscall] {
        self.syscalls.as_deref().unwrap_or_default()
    }

    /// The JSON the Engine is given: this document written out again, key by exact key, each once.
    pub fn canonical(&self) -> String {
        serde_json::to_string(self).expect("a seccomp document serialises")
    }
}

impl Syscall {
    /// The syscalls the rule names: `names`, or the older single `name`.
    pub fn syscalls(&self) -> Vec<&str> {
        let many = self.names.iter().flatten().map(String::as_str);
        many.chain(self.name.as_deref().filter(|n| !n.is_empty()))
            .collect()
    }

    /// Its argument filter; empty when the rule has none.
    pub fn filter(&self) -> &[Arg] {
        self.args.as_deref().unwrap_or_default()
    }

    /// The argument filters the runtime adds for this rule, each one holding for the syscall to
    /// match it: the whole filter, or, when two comparisons are on the same argument, one filter
    /// per comparison (runc's `matchCall` then adds one rule per comparison, so they are ORed).
    /// None when the rule has no filter.
    pub fn filters(&self) -> Vec<&[Arg]> {
        let args = self.filter();
        let repeated = args
            .iter()
            .enumerate()
            .any(|(i, a)| args[..i].iter().any(|b| b.index == a.index));
        if repeated {
            args.chunks(1).collect()
        } else {
            vec![args]
        }
    }

    /// True when its action lets the syscall through.
    pub fn allows(&self) -> bool {
        !DENYING.contains(&self.action.as_str())
    }
}

fn known(key: &str, value: &str, among: &[&str]) -> Result<()> {
    if !among.contains(&value) {
        bail!(
            "{key} {value:?} is not one the Engine knows ({})",
            among.join(", ")
        );
    }
    Ok(())
}

/// A `minKernel` value, `<kernel>.<major>` (`4.8`), as the Engine reads it.
pub fn kernel(text: &str) -> Result<(u8, u8)> {
    let parsed = text
        .split_once('.')
        .and_then(|(k, m)| Some((k.parse::<u8>().ok()?, m.parse::<u8>().ok()?)))
        .filter(|v| *v != (0, 0));
    parsed.with_context(|| format!("minKernel {text:?} is not <kernel>.<major> (4.8)"))
}
