//! Member paths: the relative, `/`-separated names inside a tar, and the rule for symlink targets.
//! The writers and the archive checker share these so that what one writes the other accepts.

/// Splits a member path into its components, or says why it is not a safe, canonical member path.
/// Refused: empty paths, absolute paths, backslashes, control characters (a newline would break
/// SHA256SUMS), and empty, `.` or `..` components.
pub fn components(path: &str) -> Result<Vec<&str>, &'static str> {
    if path.is_empty() {
        return Err("empty path");
    }
    if path.starts_with('/') {
        return Err("absolute path");
    }
    if path.contains('\\') {
        return Err("backslash in path");
    }
    if path.chars().any(char::is_control) {
        return Err("control character in path");
    }
    path.split('/')
        .map(|c| match c {
            "" => Err("empty path component"),
            "." => Err("`.` component in path"),
            ".." => Err("`..` component in path"),
            c => Ok(c),
        })
        .collect()
}

/// Resolves a symlink `target` against `dir`, the components of the folder holding the link.
///
/// The target must be relative: zero or more leading `..` followed by plain names (`../lib/x`).
/// Such a target can be checked without following other links, provided no member lies below a
/// symlink. Returns the components of the path it points to, `None` when it climbs above the first
/// component of `dir`, or why a target of any other shape is refused.
pub fn resolve_link(dir: &[&str], target: &str) -> Result<Option<Vec<String>>, &'static str> {
    if target.starts_with('/') {
        return Err("absolute link target");
    }
    let mut resolved: Vec<String> = dir.iter().map(|c| c.to_string()).collect();
    let mut names_started = false;
    for c in target.split('/') {
        match c {
            ".." if names_started => return Err("`..` after a name in link target"),
            ".." if resolved.pop().is_none() => return Ok(None),
            ".." => {}
            "" | "." => return Err("empty or `.` component in link target"),
            c if c.contains('\\') => return Err("backslash in link target"),
            c => {
                names_started = true;
                resolved.push(c.to_string());
            }
        }
    }
    Ok(Some(resolved))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_accept_plain_paths() {
        assert_eq!(
            components("run-1/source/a.txt"),
            Ok(vec!["run-1", "source", "a.txt"])
        );
        assert_eq!(components("..hidden"), Ok(vec!["..hidden"]));
    }

    #[test]
    fn components_refuse_unsafe_paths() {
        for bad in [
            "", "/etc/x", "a/../b", "..", "./a", "a//b", "a/", "a\\b", "a\nb",
        ] {
            assert!(components(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn links_resolve_against_their_folder() {
        let ok = |parts: &[&str]| Ok(Some(parts.iter().map(|p| p.to_string()).collect()));
        assert_eq!(resolve_link(&["r", "a"], "b"), ok(&["r", "a", "b"]));
        assert_eq!(resolve_link(&["r", "a"], "../b/c"), ok(&["r", "b", "c"]));
        assert_eq!(resolve_link(&["r", "a"], ".."), ok(&["r"]));
        assert_eq!(resolve_link(&["r", "a"], "../../x"), ok(&["x"]));
        assert_eq!(resolve_link(&["r", "a"], "../../../x"), Ok(None));
        assert_eq!(resolve_link(&[], "../x"), Ok(None));
    }

    #[test]
    fn links_of_odd_shapes_are_refused() {
        for bad in ["/etc/passwd", "a/../../b", "./a", "a//b", "", "a/"] {
            assert!(resolve_link(&["r", "a"], bad).is_err(), "{bad:?} accepted");
        }
    }
}
