//! Whether a profile lets a container do more than the Engine's default profile, judged against a
//! pinned copy of that profile (`engine-default.json`, its source and sha256 in
//! `engine-default.md`) by allow-list: every syscall the profile lets through must be one the
//! default lets through too, under an argument filter at least as strict as one of the default's
//! (the default's comparisons all among the profile's, which adds only conditions). A filter with
//! two comparisons on the same argument is read as the runtime reads it: one filter per
//! comparison, any of which lets the syscall through, each judged alone. A profile is
//! judged for the containers the kit starts (no capability) and for a container with the Engine's
//! default capabilities, on `amd64` (the kit's only architecture), on a kernel recent enough for
//! every `minKernel` the default names; a rule of the profile that applies only from a kernel on,
//! or up to one, is taken to apply on every kernel.

use std::sync::OnceLock;

use super::schema::{Arg, DENYING, Document, Filter, Syscall};

/// The pinned copy of the Engine's default profile (Docker 20.10).
pub const ENGINE_DEFAULT: &str = include_str!("engine-default.json");

/// sha256 of [`ENGINE_DEFAULT`], as `engine-default.md` records it.
pub const ENGINE_DEFAULT_SHA256: &str =
    "e5e91f884647e7332b3f89280777752f563df4f1372a186f14ddb7bf2f55cf61";

/// The architecture a rule is judged for, as the Engine names it.
const ARCH: &str = "amd64";

/// The capabilities the Engine gives a container by default.
const DEFAULT_CAPS: [&str; 14] = [
    "CAP_AUDIT_WRITE",
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_FOWNER",
    "CAP_FSETID",
    "CAP_KILL",
    "CAP_MKNOD",
    "CAP_NET_BIND_SERVICE",
    "CAP_NET_RAW",
    "CAP_SETFCAP",
    "CAP_SETGID",
    "CAP_SETPCAP",
    "CAP_SETUID",
    "CAP_SYS_CHROOT",
];

/// The containers a profile is judged for: the kit's, with no capability, and the Engine's default.
const CONTAINERS: [&[&str]; 2] = [&[], &DEFAULT_CAPS];

/// Which profile a rule belongs to: a `minKernel` is read to the judged profile's disadvantage.
#[derive(Clone, Copy, PartialEq)]
enum Side {
    Judged,
    Default,
}

/// The Engine's default profile, parsed once.
pub fn engine_default() -> &'static Document {
    static DEFAULT: OnceLock<Document> = OnceLock::new();
    DEFAULT
        .get_or_init(|| Document::parse(ENGINE_DEFAULT).expect("the pinned default profile parses"))
}

/// What `doc` lets a container do that the Engine's default profile does not, one line each;
/// empty when nothing.
pub fn beyond_default(doc: &Document) -> Vec<String> {
    let default = engine_default();
    let mut found = Vec::new();
    if !DENYING.contains(&doc.default_action.as_str()) {
        found.push(format!(
            "its defaultAction {} allows every syscall it does not name (the Engine's default \
             profile denies them)",
            doc.default_action
        ));
    }
    for caps in CONTAINERS {
        let rules = doc.rules().iter();
        for rule in rules.filter(|r| r.allows() && applies(r, caps, Side::Judged)) {
            for name in rule.syscalls() {
                for args in rule.filters() {
                    if granted(default, name, args, caps) {
                        continue;
                    }
                    let line = looser(default, name, rule, args);
                    if !found.contains(&line) {
                        found.push(line);
                    }
                }
            }
        }
    }
    found
}

/// True when some rule of the default lets `name` through for a container with `caps`, under a
/// filter whose every comparison is among `args`. `args` is one filter the runtime adds (see
/// [`Syscall::filters`]), the default's rules are read the same way.
fn granted(default: &Document, name: &str, args: &[Arg], caps: &[&str]) -> bool {
    default.rules().iter().any(|r| {
        r.allows()
            && r.syscalls().contains(&name)
            && applies(r, caps, Side::Default)
            && r.filters()
                .iter()
                .any(|f| f.iter().all(|a| args.contains(a)))
    })
}

/// True when `rule` applies to a container with `caps` on [`ARCH`].
fn applies(rule: &Syscall, caps: &[&str], side: Side) -> bool {
    let none = Filter::default();
    let includes = rule.includes.as_ref().unwrap_or(&none);
    let excludes = rule.excludes.as_ref().unwrap_or(&none);
    let arches = |f: &Filter| f.arches.clone().unwrap_or_default();
    let held = |f: &Filter| f.caps.clone().unwrap_or_default();
    let included = arches(includes).is_empty() || arches(includes).iter().any(|a| a == ARCH);
    let excluded = arches(excludes).iter().any(|a| a == ARCH)
        || held(excludes).iter().any(|c| caps.contains(&c.as_str()));
    let has_caps = held(includes).iter().all(|c| caps.contains(&c.as_str()));
    // The default's rule that stops applying from a kernel on is not counted on.
    let kernel = side == Side::Judged || excludes.min_kernel.is_none();
    included && !excluded && has_caps && kernel
}

/// The line naming a rule that lets `name` through beyond the default, under the filter `args`.
fn looser(default: &Document, name: &str, rule: &Syscall, args: &[Arg]) -> String {
    let theirs = match args {
        [] => String::new(),
        args => format!(" when {}", describe(args)),
    };
    let allowing: Vec<&Syscall> = default
        .rules()
        .iter()
        .filter(|r| r.allows() && r.syscalls().contains(&name))
        .collect();
    let filters: Vec<String> = allowing
        .iter()
        .filter(|r| !r.filter().is_empty() && applies(r, &[], Side::Default))
        .map(|r| describe(r.filter()))
        .collect();
    let caps: Vec<String> = allowing
        .iter()
        .filter_map(|r| r.includes.as_ref()?.caps.clone())
        .flatten()
        .collect();
    let default_says = if !filters.is_empty() {
        format!("allows it only when {}", filters.join(" or "))
    } else if !caps.is_empty() {
        format!(
            "allows it only to a container with {} (the kit's containers have no capability)",
            caps.join(" or ")
        )
    } else {
        "does not allow it".to_string()
    };
    // The name is the archive's text: printable, so that it cannot forge a line of the refusal.
    format!(
        "it allows {}{theirs} ({}), where the Engine's default profile {default_says}",
        crate::text::printable(name),
        rule.action
    )
}

/// An argument filter as a reader writes it: `arg0 & 0x7e020000 == 0`, `arg0 != 0x28`.
fn describe(args: &[Arg]) -> String {
    let one = |a: &Arg| {
        let (i, v) = (a.index, a.value);
        match a.op.as_str() {
            "SCMP_CMP_MASKED_EQ" => format!("arg{i} & {v:#x} == {:#x}", a.value_two),
            op => {
                let sign = match op {
                    "SCMP_CMP_NE" => "!=",
                    "SCMP_CMP_LT" => "<",
                    "SCMP_CMP_LE" => "<=",
                    "SCMP_CMP_GE" => ">=",
                    "SCMP_CMP_GT" => ">",
                    _ => "==",
                };
                format!("arg{i} {sign} {v:#x}")
            }
        }
    };
    args.iter().map(one).collect::<Vec<_>>().join(" and ")
}
