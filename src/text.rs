//! Plain-text layout shared by every floor that prints to a terminal: aligned columns.

/// Rows as aligned columns: each line starts with `indent`, its cells are separated by `gap` and
/// padded to their column's width (the longest cell of the column in characters, at least
/// `min_widths[c]` when given), and trailing spaces are trimmed. Rows may have fewer cells than
/// others.
pub fn columns(rows: &[Vec<String>], indent: &str, gap: &str, min_widths: &[usize]) -> String {
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
    fn a_minimum_width_widens_a_column_but_never_narrows_it() {
        let t = columns(
            &rows(&[&["a", "b", "c"], &["long", "b", ""]]),
            "",
            "  ",
            &[2, 3],
        );
        assert_eq!(t, "a     b    c\nlong  b\n");
    }
}
