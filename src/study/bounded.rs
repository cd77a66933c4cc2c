//! Bounds on what a run's text becomes once parsed. A size limit bounds the text, not what it
//! becomes: 32 MiB of `{}` lines is 11 million records, and 3 bytes of `{},` a map. Every reader of
//! a run's files (from an archive or a folder) counts items before it parses, and keeps only the
//! first few malformed lines.

use anyhow::{Result, ensure};

/// The most JSON items (objects, arrays and the values in them) all of one run's JSON files may
/// hold together: a study's largest real run holds a few hundred thousand.
pub const ITEMS_MAX: usize = 4_000_000;
/// The most lines `samples.jsonl` may hold (one per probe process).
pub const LINES_MAX: usize = 1_000_000;
/// The longest `samples.jsonl` line, bytes (a real one holds at most a few hundred KiB).
pub const LINE_MAX: usize = 4 << 20;
/// Malformed lines an error or a report names; the others are counted.
pub const SHOWN: usize = 5;

/// Counts JSON items in `text`, roughly and never fewer than it holds: every `{`, `[` and `,`
/// outside strings, plus one.
pub fn json_items(text: &[u8]) -> usize {
    let (mut items, mut in_string, mut escaped) = (1, false, false);
    for &b in text {
        match (in_string, b) {
            (true, _) if escaped => escaped = false,
            (true, b'\\') => escaped = true,
            (true, b'"') => in_string = false,
            (true, _) => {}
            (false, b'"') => in_string = true,
            (false, b'{' | b'[' | b',') => items += 1,
            (false, _) => {}
        }
    }
    items
}

/// A running count of items against [`ITEMS_MAX`].
#[derive(Debug, Default)]
pub struct Budget {
    used: usize,
}

impl Budget {
    /// Counts `text`'s items; an error names `what` once the run's total passes [`ITEMS_MAX`].
    pub fn spend(&mut self, what: &str, text: &[u8]) -> Result<()> {
        self.used += json_items(text);
        ensure!(
            self.used <= ITEMS_MAX,
            "{what}: more than {ITEMS_MAX} JSON items in the run's files (a real run holds far \
             fewer): not a run the kit writes; refused before parsing"
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_are_counted_outside_strings_only() {
        assert_eq!(json_items(b"{}"), 2);
        assert_eq!(json_items(b"[{},{},{}]"), 7);
        assert_eq!(json_items(br#"{"a,{[":"\",["}"#), 2);
        assert!(json_items(&b"{},".repeat(1000)) >= 2000);
    }

    #[test]
    fn a_budget_refuses_past_its_limit() {
        let mut budget = Budget::default();
        budget.spend("a", &b",".repeat(ITEMS_MAX / 2)).unwrap();
        let err = budget.spend("b", &b",".repeat(ITEMS_MAX / 2)).unwrap_err();
        assert!(format!("{err}").starts_with("b: more than"), "{err}");
    }
}
