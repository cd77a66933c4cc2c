//! `note <text>` lines: the program saying why, in its own words, in any kind (steady included,
//! at any point of the handshake). Kept verbatim and in order, at most [`MAX_NOTES`] of them, each
//! cut at [`MAX_NOTE_BYTES`]; they are never a protocol error.

use crate::json::Value;

/// Notes kept; later ones are dropped.
pub const MAX_NOTES: usize = 32;
/// Bytes kept of one note's text (cut at a character boundary).
pub const MAX_NOTE_BYTES: usize = 300;

/// The text of a `note` line: what follows the word `note` and its whitespace, without trailing
/// whitespace; `None` for any other line.
pub fn note_text(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix("note")?;
    if !(rest.is_empty() || rest.starts_with(char::is_whitespace)) {
        return None;
    }
    Some(rest.trim())
}

/// The notes of one program.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Notes(Vec<String>);

impl Notes {
    /// Keeps the note of `line` if it is a `note` line; returns whether it was one.
    pub fn take(&mut self, line: &str) -> bool {
        let Some(text) = note_text(line) else {
            return false;
        };
        if self.0.len() < MAX_NOTES {
            let mut end = text.len().min(MAX_NOTE_BYTES);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            self.0.push(text[..end].to_owned());
        }
        true
    }

    /// `["…", …]`.
    pub fn to_json(&self) -> Value {
        Value::Arr(self.0.iter().map(|n| Value::Str(n.clone())).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn note_lines_and_others() {
        assert_eq!(
            note_text("note pthread_create failed: EAGAIN\r"),
            Some("pthread_create failed: EAGAIN")
        );
        assert_eq!(note_text("  note\tx  y "), Some("x  y"));
        assert_eq!(note_text("note"), Some(""));
        assert_eq!(note_text("notes x"), None);
        assert_eq!(note_text("ready note=1"), None);
    }

    #[test]
    fn at_most_32_each_cut_at_300_bytes() {
        let mut n = Notes::default();
        assert!(!n.take("result a=1"));
        assert!(n.take(&format!("note {}", "é".repeat(200))));
        assert_eq!(n.0[0].len(), 300);
        for i in 0..40 {
            assert!(n.take(&format!("note {i}")));
        }
        assert_eq!(n.0.len(), MAX_NOTES);
        assert_eq!(n.0[31], "30");
        let mut m = Notes::default();
        m.take("note a \"b\"");
        assert_eq!(m.to_json().to_json(), r#"["a \"b\""]"#);
    }
}
