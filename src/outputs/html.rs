//! The HTML pages (`report.html`, `compare.html`, `explanation.html`, `results/index.html`): one
//! self-contained file each — inline CSS, inline SVG, one small inline script that sorts tables —
//! that asks for nothing over the network (its Content-Security-Policy forbids any load). Markdown
//! the kit wrote is rendered with raw HTML turned into text, images replaced by the inline figure
//! they name or by their words, and links kept only when relative or http(s): everything in a study
//! or an archive is hostile input and must show as text.

use std::fmt::Write as _;

use pulldown_cmark::{CowStr, Event, LinkType, Options, Parser, Tag, TagEnd};

pub use crate::outputs::figure::draw::escape;

/// Forbids every load: no network, no file, no frame; only the page's own style and script run.
const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; \
                   img-src data:; base-uri 'none'; form-action 'none'";

const STYLE: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',\
'PingFang SC','Hiragino Sans GB','Microsoft YaHei','Noto Sans CJK SC','Source Han Sans SC','WenQuanYi Micro Hei','Noto Sans SC',\
sans-serif;\
max-width:1200px;margin:1.5em auto;padding:0 1em;color:#1a1a1a;line-height:1.45}\
table{border-collapse:collapse;margin:.6em 0;font-size:.92em}\
th,td{border:1px solid #d0d0d0;padding:.25em .5em;vertical-align:top}\
th{background:#f2f2f2;text-align:left}\
table.sortable th{cursor:pointer;user-select:none}\
table.sortable th[aria-sort=ascending]::after{content:' ▲'}\
table.sortable th[aria-sort=descending]::after{content:' ▼'}\
td.num{text-align:right;font-variant-numeric:tabular-nums}\
.reproduced{color:#1b6e20}.differs{color:#a32020}.inconclusive,.not-measured{color:#7a5b00}\
figure{margin:1em 0;overflow-x:auto}figure svg{max-width:100%;height:auto}\
figcaption{font-size:.9em;color:#444}\
code{background:#f4f4f4;padding:0 .2em}pre{background:#f4f4f4;padding:.5em;overflow-x:auto}\
blockquote{border-left:4px solid #c9a400;margin:0;padding:.2em 1em;background:#fffbe6}\
nav a{margin-right:1em}";

/// Sorts a `table.sortable` by the clicked header: numerically by each cell's `data-sort` when both
/// are numbers, else by text; cells without a number sort last.
const SORT: &str = "document.querySelectorAll('table.sortable').forEach(function(t){\
t.querySelectorAll('thead th').forEach(function(th,i){th.addEventListener('click',function(){\
var asc=th.getAttribute('aria-sort')!=='ascending';\
t.querySelectorAll('thead th').forEach(function(h){h.removeAttribute('aria-sort')});\
th.setAttribute('aria-sort',asc?'ascending':'descending');\
var b=t.tBodies[0],rows=Array.prototype.slice.call(b.rows);\
function key(r){var c=r.cells[i];return c.hasAttribute('data-sort')?c.getAttribute('data-sort'):c.textContent.trim()}\
rows.sort(function(x,y){var a=key(x),c=key(y),na=parseFloat(a),nc=parseFloat(c),r;\
if(!isNaN(na)&&!isNaN(nc)){r=na-nc}else if(!isNaN(na)){return -1}else if(!isNaN(nc)){return 1}\
else{r=a.localeCompare(c)}return asc?r:-r});\
rows.forEach(function(r){b.appendChild(r)})})})});";

/// A whole page: `title` (text) and `body` (HTML this module or the kit made).
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n{body}\n\
         <script>{SORT}</script>\n</body>\n</html>\n",
        escape(title)
    )
}

/// Markdown the kit wrote, as HTML: raw HTML shown as text, an image whose file is one of `figures`
/// (file name, SVG) replaced by that SVG inline, any other image by its words, links kept only when
/// relative or http(s).
pub fn markdown(md: &str, figures: &[(&str, &str)]) -> String {
    let mut events = Vec::new();
    // Per open link: whether it was kept (so its end is kept too).
    let mut links: Vec<bool> = Vec::new();
    let mut image: Option<(String, String)> = None;
    for event in Parser::new_ext(md, Options::ENABLE_TABLES) {
        if let Some((dest, alt)) = &mut image {
            match event {
                Event::End(TagEnd::Image) => {
                    let done = std::mem::take(dest);
                    let words = std::mem::take(alt);
                    image = None;
                    match figures.iter().find(|(name, _)| *name == done) {
                        Some((_, svg)) => events
                            .push(Event::Html(CowStr::from(format!("<figure>{svg}</figure>")))),
                        None => events.push(Event::Text(CowStr::from(format!("[{words}]")))),
                    }
                }
                Event::Text(t) | Event::Code(t) => alt.push_str(&t),
                _ => {}
            }
            continue;
        }
        match event {
            Event::Html(h) | Event::InlineHtml(h) => events.push(Event::Text(h)),
            Event::Start(Tag::Image { dest_url, .. }) => {
                image = Some((dest_url.to_string(), String::new()));
            }
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }) => {
                let keep = safe_link(&dest_url) && !matches!(link_type, LinkType::Email);
                links.push(keep);
                if keep {
                    events.push(Event::Start(Tag::Link {
                        link_type,
                        dest_url,
                        title,
                        id,
                    }));
                }
            }
            Event::End(TagEnd::Link) => {
                if links.pop().unwrap_or(false) {
                    events.push(Event::End(TagEnd::Link));
                }
            }
            other => events.push(other),
        }
    }
    let mut out = String::new();
    pulldown_cmark::html::push_html(&mut out, events.into_iter());
    out
}

/// Anchors, http(s) links, and relative links that stay inside the page's folder; never another
/// scheme (`javascript:`, `data:`, `file:`, `smb:` …), an absolute path, a host-relative link
/// (`//host/x`, which on a `file://` page is `file://host/…`, a network share), a backslash
/// (browsers read `\` as `/`) or a `..` that climbs above the page's folder.
fn safe_link(dest: &str) -> bool {
    // Browsers drop leading and trailing controls and spaces, and tabs and newlines anywhere.
    let d: String = dest
        .trim_matches(|c: char| c <= ' ')
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .collect::<String>()
        .to_ascii_lowercase();
    if d.starts_with("http://") || d.starts_with("https://") {
        return !d.contains('\\');
    }
    if d.starts_with('#') {
        return true;
    }
    if d.starts_with('/') || d.contains('\\') {
        return false;
    }
    // A scheme is letters before the first `:` that comes before any `/`, `?` or `#`.
    if d.find([':', '/', '?', '#'])
        .is_some_and(|i| d.as_bytes()[i] == b':')
    {
        return false;
    }
    stays_inside(&d)
}

/// True when a relative path (up to its `?` or `#`) never climbs above its starting folder; `%2e`
/// counts as `.`, as browsers read it.
fn stays_inside(relative: &str) -> bool {
    let path = relative.split(['?', '#']).next().unwrap_or_default();
    let path = path.replace("%2e", ".");
    let mut depth = 0usize;
    let segments: Vec<&str> = path.split('/').collect();
    for (i, segment) in segments.iter().enumerate() {
        match *segment {
            ".." => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return false,
            },
            "." | "" => {}
            // The last segment is a file, not a folder to climb out of.
            _ if i + 1 < segments.len() => depth += 1,
            _ => {}
        }
    }
    true
}

/// A sortable table: `head` the header texts, each row's cells as (HTML, sort key when numeric).
pub fn sortable(id: &str, head: &[&str], rows: &[Vec<(String, Option<f64>)>]) -> String {
    let mut out = format!(
        "<table class=\"sortable\" id=\"{}\">\n<thead><tr>",
        escape(id)
    );
    for h in head {
        let _ = write!(out, "<th>{}</th>", escape(h));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in rows {
        out.push_str("<tr>");
        for (html, key) in row {
            match key {
                Some(k) if k.is_finite() => {
                    let _ = write!(out, "<td class=\"num\" data-sort=\"{k}\">{html}</td>");
                }
                _ => {
                    let _ = write!(out, "<td>{html}</td>");
                }
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_font_stacks_name_a_cjk_font_of_each_platform_before_the_generic_one() {
        let page = page("t", "");
        let stack = page.split("font-family:").nth(1).unwrap();
        let html = &stack[..stack.find(';').unwrap()];
        let svg = crate::outputs::figure::draw::FONT;
        // macOS, Windows, Linux (Noto, Source Han, WenQuanYi), in the page and in every figure.
        for stack in [html, svg] {
            for family in [
                "PingFang SC",
                "Microsoft YaHei",
                "Noto Sans CJK SC",
                "WenQuanYi Micro Hei",
            ] {
                let at = stack
                    .find(family)
                    .unwrap_or_else(|| panic!("{family} in {stack}"));
                assert!(at < stack.find("sans-serif").unwrap(), "{stack}");
            }
        }
    }

    #[test]
    fn hostile_markdown_is_text() {
        let md = "# <script>alert(1)</script>\n\n| a |\n|---|\n| <img src=x onerror=alert(1)> |\n\n\
                  ![x](http://example.com/x.png) [ok](summary.json) [bad](javascript:alert(1)) \
                  [file](file:///etc/passwd)\n\n![fig](figure.svg)\n";
        let html = markdown(md, &[("figure.svg", "<svg id=\"inline\"></svg>")]);
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(html.contains("&lt;script&gt;"), "{html}");
        assert!(!html.contains("example.com"), "{html}");
        assert!(!html.contains("javascript:"), "{html}");
        assert!(!html.contains("file:"), "{html}");
        assert!(html.contains("<a href=\"summary.json\">ok</a>"), "{html}");
        assert!(
            html.contains("<figure><svg id=\"inline\"></svg></figure>"),
            "{html}"
        );
        let page = page("<b>", &html);
        assert!(page.contains("<title>&lt;b&gt;</title>"));
        assert!(page.contains("Content-Security-Policy"));
    }

    #[test]
    fn links() {
        for ok in [
            "summary.json",
            "./a/b.md",
            "#x",
            "https://a.b/c",
            "HTTP://a.b/c",
            "a/b:c",
            "a/../b.md",
            "runs/x/../../report.md?x#..",
            "explanations.md#../..",
        ] {
            assert!(safe_link(ok), "{ok}");
        }
        for bad in [
            "javascript:x",
            " JavaScript:x",
            "java\tscript:x",
            "data:text/html,x",
            "file:///x",
            "vbscript:x",
            "smb://host/share",
            "ftp://host/x",
            "//host/x",
            " //host/x",
            "/\t/host/x",
            "\\\\host\\share",
            "\\host",
            "/\\host\\x",
            "a\\..\\..\\x",
            "https://a.b\\@evil/x",
            "/etc/passwd",
            "../x",
            "./../x",
            "a/../../x",
            "%2e%2e/x",
            "a/%2E%2E/%2e%2e/x",
        ] {
            assert!(!safe_link(bad), "{bad}");
        }
    }

    #[test]
    fn sortable_tables_escape_their_header_and_key_numbers() {
        let t = sortable(
            "v",
            &["<a>"],
            &[vec![("x".into(), Some(1.5))], vec![("y".into(), None)]],
        );
        assert!(t.contains("<th>&lt;a&gt;</th>"));
        assert!(t.contains("data-sort=\"1.5\""));
    }
}
