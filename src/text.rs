//! Plain-text layout shared by every floor that prints to a terminal: aligned columns, text from
//! an archive or a study made safe to print ([`printable`]), words of a command a user pastes
//! ([`shell_word`]), and a file's path as printed lines name it ([`from_here`]).

use std::borrow::Cow;
use std::path::{Component, Path, PathBuf};

/// `text` with every character a terminal would act on instead of showing written as an escape:
/// C0 controls (ESC and so CSI and OSC sequences, BEL, CR, LF, TAB, backspace), DEL, C1 controls,
/// and the bidirectional overrides, embeddings, isolates and marks (which reorder what is shown).
/// `\x1b` for a byte-sized one, `\u{202e}` for the others; a backslash stays as it is. Every
/// printer of text that comes from an archive or a study (ids, notes, deviations, warnings, member
/// names, errors quoting them) goes through this.
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(acted_on) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            c if !acted_on(c) => out.push(c),
            c if (c as u32) < 0x100 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    Cow::Owned(out)
}

/// `word` as one word of a shell command, quoted where it must be, and printable.
pub fn shell_word(word: &str) -> String {
    let quoted = shlex::try_quote(word).unwrap_or(Cow::Borrowed(word));
    printable(&quoted).into_owned()
}

/// A path as one word of a shell command ([`shell_word`]).
pub fn shell_path(path: &Path) -> String {
    shell_word(&path.to_string_lossy())
}

/// `path` as the lines a command prints name it, so that they name every file one way: relative
/// to the working folder when it lies under it (`results/s/runs/r1`, never `./results/…`), else as
/// given but without its `.` parts (whole, or relative from above: `../x`).
pub fn from_here(path: &Path) -> PathBuf {
    let here = std::env::current_dir().ok();
    relative_to(path, here.as_deref())
}

/// [`from_here`] with the working folder `here` (none: `path` as given, without its `.` parts).
fn relative_to(path: &Path, here: Option<&Path>) -> PathBuf {
    let whole = match (path.is_absolute(), here) {
        (false, Some(here)) => here.join(path),
        _ => path.to_owned(),
    };
    let whole: PathBuf = (whole.components())
        .filter(|c| *c != Component::CurDir)
        .collect();
    match here.and_then(|h| whole.strip_prefix(h).ok()) {
        Some(rel) if rel.as_os_str().is_empty() => PathBuf::from("."),
        Some(rel) => rel.to_owned(),
        None if whole.as_os_str().is_empty() => PathBuf::from("."),
        None => whole,
    }
}

/// `n` and its noun: `one` when `n` is 1, else `many` (`1 process`, `3 processes`).
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `text` as Markdown inline text that shows as written, wherever it is rendered: [`printable`],
/// on one line, with every character that could start a link, an image, raw HTML, an autolink
/// (`https://`, `www.`, `a@b`), emphasis, code or a table cell written as a backslash escape.
/// Every Markdown writer puts text from an archive or a study through it (or [`markdown_code`]),
/// so that only links the kit itself writes are links.
pub fn markdown(text: &str) -> String {
    let text = printable(text);
    let mut out = String::with_capacity(text.len() + 8);
    for (i, c) in text.char_indices() {
        let escape = match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '!' | '&' | '~' | '#' | '@' => {
                true
            }
            ':' => text[i..].starts_with("://"),
            '.' => text[..i].to_ascii_lowercase().ends_with("www"),
            _ => false,
        };
        if escape {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `text` as a Markdown code span: [`printable`], on one line, its pipes escaped for a table cell,
/// fenced by more backticks than it holds in a row.
pub fn markdown_code(text: &str) -> String {
    let text = printable(text).replace('|', "\\|");
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// True for a character a terminal acts on, or that reorders the text around it.
fn acted_on(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{2028}' | '\u{2029}'
        )
        || ('\u{202a}'..='\u{202e}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
}

/// Rows as aligned columns: each line starts with `indent`, its cells are separated by `gap` and
/// padded to their column's width (the longest cell of the column in characters, at least
/// `min_widths[c]` when given), and trailing spaces are trimmed. Rows may have fewer cells than
/// others.
/// Every cell is printed [`printable`].
pub fn columns(rows: &[Vec<String>], indent: &str, gap: &str, min_widths: &[usize]) -> String {
    let rows: Vec<Vec<Cow<'_, str>>> = (rows.iter())
        .map(|r| r.iter().map(|c| printable(c)).collect())
        .collect();
    let count = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..count)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|v| v.chars().count())
                .chain(min_widths.get(c).copied())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(value, width)| format!("{value}{}", " ".repeat(width - value.chars().count())))
            .collect();
        out.push_str(format!("{indent}{}", cells.join(gap)).trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(r: &[&[&str]]) -> Vec<Vec<String>> {
        r.iter()
            .map(|r| r.iter().map(|c| c.to_string()).collect())
            .collect()
    }

    #[test]
    fn columns_align_by_characters_and_trim_the_line_end() {
        let t = columns(
            &rows(&[&["A", "BB", "C"], &["ααα", "", "x"], &["d"]]),
            "  ",
            " ",
            &[],
        );
        assert_eq!(t, "  A   BB C\n  ααα    x\n  d\n");
        assert_eq!(columns(&[], "  ", " ", &[]), "");
    }

    #[test]
    fn what_a_terminal_would_act_on_is_printed_escaped() {
        assert!(matches!(printable("tokio-spawn ✓ α\\"), Cow::Borrowed(_)));
        for (text, shown) in [
            ("\x1b[2J\x1b[1;1Hreproduced", "\\x1b[2J\\x1b[1;1Hreproduced"),
            ("\x1b]52;c;aGk=\x07", "\\x1b]52;c;aGk=\\x07"),
            (
                "\x1b]8;;https://x\x1b\\link",
                "\\x1b]8;;https://x\\x1b\\link",
            ),
            ("a\rb\x08c\nd\te\x7f", "a\\x0db\\x08c\\x0ad\\x09e\\x7f"),
            ("\u{9b}31m", "\\x9b31m"),
            ("abc\u{202e}fed\u{2066}", "abc\\u{202e}fed\\u{2066}"),
        ] {
            let got = printable(text);
            assert_eq!(got, shown);
            assert!(!got.chars().any(acted_on), "{got:?}");
        }
        let table = columns(&rows(&[&["\x1b[1A", "x"], &["ab", "y"]]), "", " ", &[]);
        assert_eq!(table, "\\x1b[1A x\nab      y\n");
    }

    #[test]
    fn archive_text_in_markdown_is_text() {
        assert_eq!(
            markdown("go-rss-1m (2 CPUs), 3.5 %"),
            "go-rss-1m (2 CPUs), 3.5 %"
        );
        assert_eq!(
            markdown("[x](javascript:alert(1)) <script>a|b\n"),
            "\\[x\\](javascript:alert(1)) \\<script\\>a\\|b\\\\x0a"
        );
        assert_eq!(
            markdown("see https://e.x or WWW.e.x, me@e.x"),
            "see https\\://e.x or WWW\\.e.x, me\\@e.x"
        );
        assert_eq!(markdown("\x1b[2J"), "\\\\x1b\\[2J");
        assert_eq!(markdown_code("go"), "`go`");
        assert_eq!(markdown_code("a`b|c"), "``a`b\\|c``");
        assert_eq!(markdown_code("`x"), "`` `x ``");
        // Rendered, none of it is a link, an image or HTML.
        let md = format!(
            "{} {} {}",
            markdown("[x](https://e.x) ![i](x.png) <img src=x onerror=alert(1)> https://e.x"),
            markdown_code("[y](https://e.x)"),
            markdown("*a* `b`")
        );
        let mut html = String::new();
        pulldown_cmark::html::push_html(&mut html, pulldown_cmark::Parser::new(&md));
        assert!(
            !html.contains("<a ") && !html.contains("<img") && !html.contains("<em>"),
            "{html}"
        );
        assert!(
            html.contains("&lt;img src=x onerror=alert(1)&gt;"),
            "{html}"
        );
    }

    #[test]
    fn a_minimum_width_widens_a_column_but_never_narrows_it() {
        let t = columns(
            &rows(&[&["a", "b", "c"], &["long", "b", ""]]),
            "",
            "  ",
            &[2, 3],
        );
        assert_eq!(t, "a     b    c\nlong  b\n");
    }

    #[test]
    fn a_path_is_named_from_the_working_folder_when_under_it_else_whole() {
        let here = Some(Path::new("/repo"));
        let at = |p: &str| relative_to(Path::new(p), here);
        assert_eq!(at("./results/s/runs/r1"), Path::new("results/s/runs/r1"));
        assert_eq!(
            at("/repo/results/s/r1.tar.gz"),
            Path::new("results/s/r1.tar.gz")
        );
        assert_eq!(
            at("/elsewhere/r1.tar.gz"),
            Path::new("/elsewhere/r1.tar.gz")
        );
        assert_eq!(at("/repo"), Path::new("."));
        assert_eq!(at("."), Path::new("."));
        assert_eq!(relative_to(Path::new("./a"), None), Path::new("a"));
    }
}
