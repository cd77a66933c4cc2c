//! The members of a tar before it is written: what each path holds and where it comes from on disk,
//! gathered from folders walked on disk (symlinks not followed) and from single files.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail, ensure};
use walkdir::WalkDir;

use super::member;

/// How a tree is laid out; each layout is fixed by a promise made on its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Build contexts and toolchain tars: members in byte order of their whole path (image tags and
    /// toolchain pins hash these bytes, so the order never changes); any UTF-8 name; a symlink may
    /// point anywhere inside the tar (a vendored folder's link to the context's files is kept).
    Context,
    /// Run archives: a folder right before its contents, component by component; names must pass
    /// [`member::components`], since `parkbench check` refuses any other; a symlink must point
    /// inside the folder it is taken from.
    Archive,
}

/// What one member holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A folder (mode 0755).
    Dir,
    /// A regular file read from `disk` when written: `size` bytes, mode 0755 when `executable`.
    File {
        disk: PathBuf,
        size: u64,
        executable: bool,
    },
    /// A symlink (mode 0777) to a relative target that stays inside the tree.
    Link { target: String },
}

impl Entry {
    /// The entry `disk` makes, symlinks not followed; anything but a file, folder or link is an error.
    pub fn from_disk(disk: &Path) -> Result<Entry> {
        let meta =
            fs::symlink_metadata(disk).with_context(|| format!("reading {}", disk.display()))?;
        Self::from_meta(disk, &meta)
    }

    fn from_meta(disk: &Path, meta: &fs::Metadata) -> Result<Entry> {
        use std::os::unix::fs::PermissionsExt;
        let kind = meta.file_type();
        if kind.is_dir() {
            Ok(Entry::Dir)
        } else if kind.is_symlink() {
            let target = fs::read_link(disk)
                .with_context(|| format!("reading symlink {}", disk.display()))?;
            let target = target
                .to_str()
                .with_context(|| format!("{}: link target is not UTF-8", disk.display()))?;
            Ok(Entry::Link {
                target: target.to_string(),
            })
        } else if kind.is_file() {
            Ok(Entry::File {
                disk: disk.to_owned(),
                size: meta.len(),
                executable: meta.permissions().mode() & 0o111 != 0,
            })
        } else {
            bail!(
                "{} is neither a file, a folder nor a symlink",
                disk.display()
            )
        }
    }
}

/// Members keyed by their path components; the tree's root itself has no entry.
#[derive(Debug, Clone)]
pub struct Tree {
    layout: Layout,
    entries: BTreeMap<Vec<String>, Entry>,
}

impl Tree {
    pub fn new(layout: Layout) -> Self {
        Self {
            layout,
            entries: BTreeMap::new(),
        }
    }

    /// Inserts `entry` at `path` and a folder at every path above it. Two inputs landing on one
    /// path are an error naming `disk`, the second one, unless both are folders.
    pub fn insert(&mut self, path: Vec<String>, entry: Entry, disk: &Path) -> Result<()> {
        ensure!(
            !path.is_empty(),
            "{}: a member needs a name",
            disk.display()
        );
        for depth in 1..path.len() {
            match self.entries.get(&path[..depth]) {
                None => _ = self.entries.insert(path[..depth].to_vec(), Entry::Dir),
                Some(Entry::Dir) => {}
                Some(_) => bail!(clash(&path[..depth], disk)),
            }
        }
        match (self.entries.get(&path), &entry) {
            (None, _) | (Some(Entry::Dir), Entry::Dir) => _ = self.entries.insert(path, entry),
            _ => bail!(clash(&path, disk)),
        }
        Ok(())
    }

    /// Adds `source` at `at`: a file, or a folder walked recursively with everything below it but
    /// what `skip(name, is_dir)` leaves out (the walk does not enter a skipped folder). Links must
    /// stay inside `source` ([`Layout::Archive`]) or inside the tree ([`Layout::Context`]).
    pub fn add(
        &mut self,
        source: &Path,
        at: &[String],
        skip: &dyn Fn(&str, bool) -> bool,
    ) -> Result<()> {
        for (rel, disk) in walk(source, skip)? {
            let rel = self.components(&rel, &disk)?;
            let meta = if rel.is_empty() {
                fs::metadata(&disk)
            } else {
                fs::symlink_metadata(&disk)
            }
            .with_context(|| format!("reading {}", disk.display()))?;
            let entry = Entry::from_meta(&disk, &meta)?;
            let path: Vec<String> = at.iter().chain(&rel).cloned().collect();
            if let Entry::Link { target } = &entry {
                let inside = match self.layout {
                    Layout::Context => &path,
                    Layout::Archive => &rel,
                };
                check_link(inside, target).with_context(|| format!("{}", disk.display()))?;
            }
            if !path.is_empty() {
                self.insert(path, entry, &disk)?;
            }
        }
        Ok(())
    }

    /// Splits a path found on disk into components, by the rule of this tree's layout.
    fn components(&self, rel: &str, disk: &Path) -> Result<Vec<String>> {
        if rel.is_empty() {
            return Ok(Vec::new());
        }
        let parts = match self.layout {
            Layout::Context => rel.split('/').collect(),
            Layout::Archive => member::components(rel).map_err(|why| {
                anyhow::anyhow!("{}: {why}: rename it to archive it", disk.display())
            })?,
        };
        Ok(parts.into_iter().map(String::from).collect())
    }

    /// Removes the member at `path` and every member below it; returns whether there was one.
    pub fn remove(&mut self, path: &[String]) -> bool {
        let before = self.entries.len();
        self.entries.retain(|p, _| !p.starts_with(path));
        self.entries.len() != before
    }

    /// Whether a member is at `path`.
    pub fn contains(&self, path: &[String]) -> bool {
        self.entries.contains_key(path)
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every member with its path joined by `/`, in the order of the tree's layout.
    pub fn members(&self) -> Vec<(String, &Entry)> {
        let mut out: Vec<(String, &Entry)> = self
            .entries
            .iter()
            .map(|(path, entry)| (path.join("/"), entry))
            .collect();
        if self.layout == Layout::Context {
            out.sort_by(|a, b| a.0.cmp(&b.0));
        }
        out
    }
}

fn clash(path: &[String], disk: &Path) -> String {
    format!(
        "{} would come from two inputs (the second is {}): it appears twice; rename or leave out one",
        path.join("/"),
        disk.display()
    )
}

/// Refuses a link target that is not relative or climbs above the tree holding the link; `path` is
/// the link's own path inside that tree.
pub fn check_link(path: &[String], target: &str) -> Result<()> {
    let dir: Vec<&str> = path[..path.len().saturating_sub(1)]
        .iter()
        .map(String::as_str)
        .collect();
    let why = match member::resolve_link(&dir, target) {
        Ok(Some(_)) => return Ok(()),
        Ok(None) => "it points outside the folder it is taken from",
        Err(why) => why,
    };
    bail!(
        "symlink to {target:?} refused ({why}): only relative links that stay inside the folder are \
         kept; replace it with a copy of the file"
    )
}

/// Every path below `source` relative to it (the root first, as ""), with its path on disk; the
/// walk follows `source` if it is a link but no link below it, and leaves out what `skip` names.
pub fn walk(source: &Path, skip: &dyn Fn(&str, bool) -> bool) -> Result<Vec<(String, PathBuf)>> {
    let walker = WalkDir::new(source)
        .follow_root_links(true)
        .follow_links(false)
        .into_iter()
        .filter_entry(|e| {
            e.depth() == 0 || !skip(&e.file_name().to_string_lossy(), e.file_type().is_dir())
        });
    let mut out = Vec::new();
    for entry in walker {
        let entry = entry.with_context(|| format!("reading {}", source.display()))?;
        let rel = entry
            .path()
            .strip_prefix(source)
            .expect("walkdir yields paths below its root");
        let Some(rel) = rel.to_str() else {
            bail!(
                "{}: file name is not UTF-8: rename it",
                entry.path().display()
            );
        };
        out.push((rel.to_string(), entry.path().to_owned()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(tree: &Tree) -> Vec<String> {
        tree.members().into_iter().map(|(p, _)| p).collect()
    }

    fn parts(p: &str) -> Vec<String> {
        p.split('/').map(String::from).collect()
    }

    #[test]
    fn layouts_order_members_differently() {
        let disk = Path::new("x");
        let mut context = Tree::new(Layout::Context);
        let mut archive = Tree::new(Layout::Archive);
        for tree in [&mut context, &mut archive] {
            for p in ["a-b/x", "a/y", "a.c"] {
                tree.insert(parts(p), Entry::Dir, disk).unwrap();
            }
        }
        assert_eq!(names(&context), ["a", "a-b", "a-b/x", "a.c", "a/y"]);
        assert_eq!(names(&archive), ["a", "a/y", "a-b", "a-b/x", "a.c"]);
    }

    #[test]
    fn two_inputs_on_one_path_clash_unless_both_are_folders() {
        let mut tree = Tree::new(Layout::Archive);
        let file = || Entry::Link { target: "t".into() };
        tree.insert(parts("a/b"), file(), Path::new("first"))
            .unwrap();
        tree.insert(parts("a"), Entry::Dir, Path::new("dir"))
            .unwrap();
        let err = tree
            .insert(parts("a/b"), file(), Path::new("second"))
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("a/b would come from two inputs (the second is second)")
        );
        let err = tree
            .insert(parts("a/b/c"), file(), Path::new("third"))
            .unwrap_err();
        assert!(
            err.to_string().contains("a/b would come from two inputs"),
            "{err}"
        );
        assert_eq!(tree.len(), 2);
    }

    #[test]
    fn a_context_link_may_leave_its_folder_but_not_the_tree() {
        let tmp = tempfile::tempdir().unwrap();
        let vendored = tmp.path().join("vendored");
        fs::create_dir_all(&vendored).unwrap();
        std::os::unix::fs::symlink("../Dockerfile", vendored.join("link")).unwrap();
        let none = |_: &str, _: bool| false;
        let mut context = Tree::new(Layout::Context);
        context.add(&vendored, &parts("vendored"), &none).unwrap();
        assert!(context.contains(&parts("vendored/link")));
        let err = format!(
            "{:#}",
            Tree::new(Layout::Context)
                .add(&vendored, &[], &none)
                .unwrap_err()
        );
        assert!(err.contains("points outside"), "{err}");
        let mut archive = Tree::new(Layout::Archive);
        let err = format!(
            "{:#}",
            archive
                .add(&vendored, &parts("vendored"), &none)
                .unwrap_err()
        );
        assert!(err.contains("points outside"), "{err}");
    }

    #[test]
    fn removing_a_member_removes_what_is_below_it() {
        let mut tree = Tree::new(Layout::Context);
        for p in ["a/b/c", "a-b", "ab"] {
            tree.insert(parts(p), Entry::Dir, Path::new("x")).unwrap();
        }
        assert!(tree.remove(&parts("a")));
        assert!(!tree.remove(&parts("a")));
        assert_eq!(names(&tree), ["a-b", "ab"]);
    }

    #[test]
    fn links_must_stay_inside() {
        assert!(check_link(&parts("a/b"), "/etc").is_err());
        assert!(check_link(&parts("a/b"), "../c").is_ok());
        assert!(check_link(&parts("a/b"), "../../c").is_err());
        let err = format!("{:#}", check_link(&parts("a"), "../up").unwrap_err());
        assert!(err.contains("points outside"), "{err}");
    }
}
