//! The code that ships in `src/`, read file by file: which file names which. A file's test items
//! (`#[cfg(test)]` and what it guards, and the files only a test item declares) are left out; every
//! other line counts, whole files included. A name is followed through the `use` that brings it in,
//! so an import names the file that defines what it takes, not the folder that hands it on.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One shipped file of the crate: its module path and its code with comments, strings and test items
/// blanked out.
pub struct File {
    pub path: PathBuf,
    pub module: Vec<String>,
    code: String,
}

/// The crate as files and the arrows between them: `arrows[a]` holds each file `a` names, with the
/// names by which it does.
pub struct Crate {
    pub files: Vec<File>,
    pub arrows: Vec<BTreeMap<usize, BTreeSet<String>>>,
}

/// `text` with comments and the insides of string and character literals replaced by spaces (line
/// breaks kept, so line numbers hold).
fn blank(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = c.clone();
    let mut i = 0;
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let wipe = |out: &mut Vec<char>, from: usize, to: usize| {
        for ch in &mut out[from..to.min(c.len())] {
            if *ch != '\n' {
                *ch = ' ';
            }
        }
    };
    while i < c.len() {
        let at = |k: usize| c.get(i + k).copied().unwrap_or('\0');
        if at(0) == '/' && at(1) == '/' {
            let end = (i..c.len()).find(|&k| c[k] == '\n').unwrap_or(c.len());
            wipe(&mut out, i, end);
            i = end;
        } else if at(0) == '/' && at(1) == '*' {
            let (mut depth, mut k) = (0, i);
            while k < c.len() {
                if c[k] == '/' && c.get(k + 1) == Some(&'*') {
                    depth += 1;
                    k += 2;
                } else if c[k] == '*' && c.get(k + 1) == Some(&'/') {
                    depth -= 1;
                    k += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    k += 1;
                }
            }
            wipe(&mut out, i, k);
            i = k;
        } else if (at(0) == 'r' || (at(0) == 'b' && at(1) == 'r'))
            && (i == 0 || !ident(c[i - 1]))
            && {
                let s = if at(0) == 'b' { 1 } else { 0 };
                let hashes = (i + s + 1..c.len()).take_while(|&k| c[k] == '#').count();
                c.get(i + s + 1 + hashes) == Some(&'"')
            }
        {
            let s = if at(0) == 'b' { 1 } else { 0 };
            let hashes = (i + s + 1..c.len()).take_while(|&k| c[k] == '#').count();
            let open = i + s + 1 + hashes;
            let close: String = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            let close: Vec<char> = close.chars().collect();
            let mut k = open + 1;
            while k < c.len() && c[k..].iter().take(close.len()).ne(close.iter()) {
                k += 1;
            }
            wipe(&mut out, open + 1, k);
            i = k + close.len();
        } else if at(0) == '"' {
            let mut k = i + 1;
            while k < c.len() && c[k] != '"' {
                k += if c[k] == '\\' { 2 } else { 1 };
            }
            wipe(&mut out, i + 1, k);
            i = k + 1;
        } else if at(0) == '\'' && (at(1) == '\\' || (at(2) == '\'' && at(1) != '\'')) {
            let mut k = i + 1;
            while k < c.len() && c[k] != '\'' {
                k += if c[k] == '\\' { 2 } else { 1 };
            }
            wipe(&mut out, i + 1, k);
            i = k + 1;
        } else {
            i += 1;
        }
    }
    out.into_iter().collect()
}

/// Where the item that starts at `from` (after its attributes) ends: its `;` or its closing brace.
fn item_end(code: &[char], from: usize) -> usize {
    let mut depth = 0usize;
    let mut k = from;
    while k < code.len() {
        match code[k] {
            '{' | '(' | '[' => depth += 1,
            '}' | ')' | ']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 && code[k] == '}' {
                    return k + 1;
                }
            }
            ';' if depth == 0 => return k + 1,
            _ => {}
        }
        k += 1;
    }
    code.len()
}

/// Blanks every `#[cfg(test)]` item of `code` (already [`blank`]ed), and returns the names of the
/// modules those items declare by file.
fn strip_tests(code: &mut String) -> Vec<String> {
    let mut chars: Vec<char> = code.chars().collect();
    let marker: Vec<char> = "#[cfg(test)]".chars().collect();
    let mut test_modules = Vec::new();
    let mut i = 0;
    while i + marker.len() <= chars.len() {
        if chars[i..i + marker.len()] != marker[..] {
            i += 1;
            continue;
        }
        let mut k = i + marker.len();
        // Further attributes and whitespace up to the item itself.
        loop {
            while k < chars.len() && chars[k].is_whitespace() {
                k += 1;
            }
            if chars.get(k) == Some(&'#') {
                k = item_end(&chars, k + 1).max(k + 1);
                k = (k..chars.len()).find(|&j| chars[j - 1] == ']').unwrap_or(k);
            } else {
                break;
            }
        }
        let end = item_end(&chars, k);
        let item: String = chars[k..end].iter().collect();
        let words: Vec<&str> = item
            .split(|ch: char| !(ch.is_alphanumeric() || ch == '_'))
            .filter(|w| !w.is_empty())
            .collect();
        if item.trim_end().ends_with(';')
            && let Some(at) = words.iter().position(|w| *w == "mod")
            && let Some(name) = words.get(at + 1)
        {
            test_modules.push((*name).to_owned());
        }
        for ch in &mut chars[i..end] {
            if *ch != '\n' {
                *ch = ' ';
            }
        }
        i = end;
    }
    *code = chars.into_iter().collect();
    test_modules
}

/// The modules `code` declares by file (`mod name;`).
fn declared(code: &str) -> Vec<String> {
    code.split(';')
        .filter_map(|statement| {
            let words: Vec<&str> = statement.split_whitespace().collect();
            match words.as_slice() {
                [.., "mod", name] => Some((*name).to_owned()),
                _ => None,
            }
        })
        .collect()
}

/// The files of the crate that ship, from `src/lib.rs` down through each `mod name;` that is no
/// test item.
pub fn read(src: &Path) -> Crate {
    let mut files = Vec::new();
    let mut queue = vec![(src.join("lib.rs"), Vec::<String>::new())];
    while let Some((path, module)) = queue.pop() {
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        let mut code = blank(&text);
        let tests = strip_tests(&mut code);
        let base = if path.ends_with("lib.rs") || path.ends_with("mod.rs") {
            path.parent().unwrap().to_owned()
        } else {
            path.with_extension("")
        };
        for name in declared(&code) {
            if tests.contains(&name) {
                continue;
            }
            let file = base.join(format!("{name}.rs"));
            let file = if file.is_file() {
                file
            } else {
                base.join(&name).join("mod.rs")
            };
            let mut child = module.clone();
            child.push(name);
            queue.push((file, child));
        }
        files.push(File { path, module, code });
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    let arrows = arrows(&files);
    Crate { files, arrows }
}

/// A `use` tree flattened: each path it brings in, with the name it binds (`None` for a glob).
fn use_paths(tree: &str) -> Vec<(Vec<String>, Option<String>)> {
    fn walk(
        s: &[char],
        i: &mut usize,
        prefix: &[String],
        out: &mut Vec<(Vec<String>, Option<String>)>,
    ) {
        let mut path = prefix.to_vec();
        loop {
            while *i < s.len() && (s[*i].is_whitespace() || s[*i] == ':') {
                *i += 1;
            }
            if *i >= s.len() {
                break;
            }
            match s[*i] {
                '{' => {
                    *i += 1;
                    loop {
                        walk(s, i, &path, out);
                        while *i < s.len() && s[*i].is_whitespace() {
                            *i += 1;
                        }
                        match s.get(*i) {
                            Some(',') => *i += 1,
                            Some('}') => {
                                *i += 1;
                                return;
                            }
                            _ => return,
                        }
                    }
                }
                '*' => {
                    *i += 1;
                    out.push((path, None));
                    return;
                }
                ',' | '}' => {
                    if path.len() > prefix.len() {
                        let name = path.last().cloned();
                        out.push((path, name));
                    }
                    return;
                }
                _ => {
                    let start = *i;
                    while *i < s.len() && (s[*i].is_alphanumeric() || s[*i] == '_') {
                        *i += 1;
                    }
                    if start == *i {
                        *i += 1;
                        continue;
                    }
                    let word: String = s[start..*i].iter().collect();
                    if word == "as" {
                        while *i < s.len() && s[*i].is_whitespace() {
                            *i += 1;
                        }
                        let start = *i;
                        while *i < s.len() && (s[*i].is_alphanumeric() || s[*i] == '_') {
                            *i += 1;
                        }
                        let alias: String = s[start..*i].iter().collect();
                        out.push((path, Some(alias)));
                        return;
                    }
                    if word == "self" {
                        let name = path.last().cloned();
                        out.push((path, name));
                        return;
                    }
                    path.push(word);
                }
            }
        }
        if path.len() > prefix.len() {
            let name = path.last().cloned();
            out.push((path, name));
        }
    }
    let s: Vec<char> = tree.chars().collect();
    let mut out = Vec::new();
    walk(&s, &mut 0, &[], &mut out);
    out
}

/// The `use` declarations of a file: each bound name with the path it stands for, then globs.
struct Uses {
    names: BTreeMap<String, Vec<String>>,
    globs: Vec<Vec<String>>,
    /// Each path a use brings in, whether it is a glob, and the byte range the use spans (which the
    /// scan of paths in code skips).
    spans: Vec<(usize, usize, Vec<String>, bool)>,
}

fn uses(code: &str) -> Uses {
    let mut names = BTreeMap::new();
    let mut globs = Vec::new();
    let mut spans = Vec::new();
    let bytes = code.as_bytes();
    let mut from = 0;
    while let Some(at) = code[from..].find("use ") {
        let start = from + at;
        from = start + 4;
        if start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_') {
            continue;
        }
        let Some(len) = code[start..].find(';') else {
            break;
        };
        let tree = &code[start + 4..start + len];
        for (path, bound) in use_paths(tree) {
            let glob = bound.is_none();
            match bound {
                Some(name) => {
                    names.insert(name, path.clone());
                }
                None => globs.push(path.clone()),
            }
            spans.push((start, start + len, path, glob));
        }
        from = start + len;
    }
    Uses {
        names,
        globs,
        spans,
    }
}

/// The paths written in code outside `use` declarations: `a::b::c`, each with its byte offset.
fn code_paths(code: &str, skip: &[(usize, usize, Vec<String>, bool)]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let c: Vec<(usize, char)> = code.char_indices().collect();
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let mut k = 0;
    while k < c.len() {
        let (offset, ch) = c[k];
        if !ident(ch) || (k > 0 && (ident(c[k - 1].1) || c[k - 1].1 == ':')) {
            k += 1;
            continue;
        }
        if skip.iter().any(|(a, b, _, _)| (*a..*b).contains(&offset)) {
            k += 1;
            continue;
        }
        let mut path = Vec::new();
        let mut j = k;
        loop {
            let start = j;
            while j < c.len() && ident(c[j].1) {
                j += 1;
            }
            path.push(c[start..j].iter().map(|(_, ch)| ch).collect::<String>());
            if j + 2 < c.len() && c[j].1 == ':' && c[j + 1].1 == ':' && ident(c[j + 2].1) {
                j += 2;
            } else {
                break;
            }
        }
        if path.len() > 1 {
            out.push(path);
        }
        k = j.max(k + 1);
    }
    out
}

struct Resolver<'a> {
    modules: BTreeMap<Vec<String>, usize>,
    uses: Vec<Uses>,
    files: &'a [File],
}

impl Resolver<'_> {
    /// The file that defines what `path`, written in file `from`, names, and whether the path names
    /// an item of it (not the module itself); `None` outside the crate.
    fn resolve(&self, from: usize, path: &[String], depth: usize) -> Option<(usize, bool)> {
        if depth > 8 || path.is_empty() {
            return None;
        }
        let here = &self.files[from].module;
        let mut module: Vec<String>;
        let mut rest = path;
        match path[0].as_str() {
            "crate" => {
                module = Vec::new();
                rest = &path[1..];
            }
            "self" => {
                module = here.clone();
                rest = &path[1..];
            }
            "super" => {
                module = here.clone();
                while rest.first().is_some_and(|s| s == "super") {
                    module.pop();
                    rest = &rest[1..];
                }
            }
            first => {
                let mut child = here.clone();
                child.push(first.to_owned());
                if self.modules.contains_key(&child) {
                    module = here.clone();
                } else if let Some(bound) = self.uses[from].names.get(first) {
                    if bound.len() == 1 && bound[0] == first {
                        return None;
                    }
                    let mut whole = bound.clone();
                    whole.extend_from_slice(&path[1..]);
                    return self.resolve(from, &whole, depth + 1);
                } else {
                    return None;
                }
            }
        }
        while let Some(next) = rest.first() {
            let mut deeper = module.clone();
            deeper.push(next.clone());
            if !self.modules.contains_key(&deeper) {
                break;
            }
            module = deeper;
            rest = &rest[1..];
        }
        let file = self.modules[&module];
        if let Some(name) = rest.first()
            && let Some(bound) = self.uses[file].names.get(name)
            && file != from
        {
            let mut whole = bound.clone();
            whole.extend_from_slice(&rest[1..]);
            if let Some(found) = self.resolve(file, &whole, depth + 1) {
                return Some(found);
            }
        }
        if let Some(name) = rest.first()
            && file != from
            && !defines(&self.files[file].code, name)
        {
            for glob in &self.uses[file].globs {
                let mut whole = glob.clone();
                whole.extend_from_slice(rest);
                if let Some(found) = self.resolve(file, &whole, depth + 1) {
                    return Some(found);
                }
            }
        }
        Some((file, !rest.is_empty()))
    }
}

/// Whether `code` defines an item called `name` itself.
fn defines(code: &str, name: &str) -> bool {
    [
        "fn",
        "struct",
        "enum",
        "const",
        "static",
        "trait",
        "type",
        "union",
        "macro_rules!",
    ]
    .iter()
    .any(|kw| {
        code.match_indices(&format!("{kw} {name}")).any(|(at, _)| {
            code[at + kw.len() + 1 + name.len()..]
                .chars()
                .next()
                .is_none_or(|ch| !(ch.is_alphanumeric() || ch == '_'))
        })
    })
}

fn arrows(files: &[File]) -> Vec<BTreeMap<usize, BTreeSet<String>>> {
    let resolver = Resolver {
        modules: files
            .iter()
            .enumerate()
            .map(|(i, f)| (f.module.clone(), i))
            .collect(),
        uses: files.iter().map(|f| uses(&f.code)).collect(),
        files,
    };
    let mut out = vec![BTreeMap::new(); files.len()];
    for (from, file) in files.iter().enumerate() {
        let uses = &resolver.uses[from];
        let mut paths: Vec<(Vec<String>, bool)> = uses
            .spans
            .iter()
            .map(|(_, _, p, glob)| (p.clone(), *glob))
            .collect();
        paths.extend(
            code_paths(&file.code, &uses.spans)
                .into_iter()
                .map(|p| (p, false)),
        );
        for (path, glob) in paths {
            // A `use` of a module is no arrow by itself: the paths through it are.
            if let Some((to, item)) = resolver.resolve(from, &path, 0)
                && to != from
                && (item || glob)
            {
                let name = path.last().unwrap().clone();
                out[from]
                    .entry(to)
                    .or_insert_with(BTreeSet::new)
                    .insert(name);
            }
        }
    }
    out
}

impl File {
    /// The file's shipped code: comments, strings and test items blanked, line breaks kept.
    pub fn code(&self) -> &str {
        &self.code
    }
}

impl Crate {
    /// Whether file `a` is one of the parts of the module file `b` (`b` is `x.rs` or `x/mod.rs`, `a`
    /// is under `x/`): a part may take the folder's shared types from its face.
    fn inside(&self, a: usize, b: usize) -> bool {
        let (a, b) = (&self.files[a].module, &self.files[b].module);
        a.len() > b.len() && a.starts_with(b)
    }

    /// The circles of files: each strongly connected set of two files or more, with the arrows
    /// between its files (`a -> b: names`). An arrow from a part of a folder to the folder's own
    /// face (`super::`) is the folder's inside, not a circle between files.
    pub fn circles(&self) -> Vec<Vec<String>> {
        let arrows: Vec<BTreeMap<usize, BTreeSet<String>>> = self
            .arrows
            .iter()
            .enumerate()
            .map(|(a, to)| {
                to.iter()
                    .filter(|(b, _)| !self.inside(a, **b))
                    .map(|(b, names)| (*b, names.clone()))
                    .collect()
            })
            .collect();
        let n = self.files.len();
        let mut index = vec![usize::MAX; n];
        let mut low = vec![0; n];
        let mut on_stack = vec![false; n];
        let mut stack = Vec::new();
        let mut next = 0;
        let mut sets = Vec::new();
        #[allow(clippy::too_many_arguments)]
        fn visit(
            v: usize,
            arrows: &[BTreeMap<usize, BTreeSet<String>>],
            index: &mut [usize],
            low: &mut [usize],
            on_stack: &mut [bool],
            stack: &mut Vec<usize>,
            next: &mut usize,
            sets: &mut Vec<Vec<usize>>,
        ) {
            index[v] = *next;
            low[v] = *next;
            *next += 1;
            stack.push(v);
            on_stack[v] = true;
            for &w in arrows[v].keys() {
                if index[w] == usize::MAX {
                    visit(w, arrows, index, low, on_stack, stack, next, sets);
                    low[v] = low[v].min(low[w]);
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
            }
            if low[v] == index[v] {
                let mut set = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    set.push(w);
                    if w == v {
                        break;
                    }
                }
                if set.len() > 1 {
                    set.sort();
                    sets.push(set);
                }
            }
        }
        for v in 0..n {
            if index[v] == usize::MAX {
                visit(
                    v,
                    &arrows,
                    &mut index,
                    &mut low,
                    &mut on_stack,
                    &mut stack,
                    &mut next,
                    &mut sets,
                );
            }
        }
        sets.sort();
        sets.iter()
            .map(|set| {
                let mut lines = Vec::new();
                for &a in set {
                    for (b, names) in &arrows[a] {
                        if set.contains(b) {
                            let names: Vec<&str> = names.iter().map(String::as_str).collect();
                            lines.push(format!(
                                "{} -> {}: {}",
                                self.shown(a),
                                self.shown(*b),
                                names.join(", ")
                            ));
                        }
                    }
                }
                lines
            })
            .collect()
    }

    /// A file's path from the repository's root.
    pub fn shown(&self, file: usize) -> String {
        let path = &self.files[file].path;
        let at = path
            .components()
            .position(|c| c.as_os_str() == "src")
            .unwrap_or(0);
        path.components()
            .skip(at)
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/")
    }

    /// The stage a file is on: the first component of its module path (`lib.rs`: none).
    pub fn stage(&self, file: usize) -> Option<&str> {
        self.files[file].module.first().map(String::as_str)
    }
}
