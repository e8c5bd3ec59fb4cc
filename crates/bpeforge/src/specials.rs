//! Splitting text on special tokens, longest match first.
//!
//! Aho-Corasick with leftmost-longest semantics is exactly Python's
//! `re.split("|".join(sorted(specials, key=len, reverse=True)))`: at the
//! leftmost position where any special starts, the longest one wins, so with
//! `<|endoftext|>` and `<|endoftext|><|endoftext|>` both special the double is
//! one match.

use aho_corasick::{AhoCorasick, Anchored, Input, MatchKind, StartKind};

use crate::error::Error;

/// A piece of text between special tokens, or one special token (by index).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece<'t> {
    Text(&'t str),
    Special(usize),
}

/// The special tokens of a trainer or tokenizer, compiled once.
#[derive(Debug, Clone)]
pub struct SpecialSplitter {
    tokens: Vec<String>,
    automaton: Option<AhoCorasick>,
    /// The same tokens for anchored searches only (`straddles`): one
    /// automaton for both kinds may cost twice the memory and time.
    anchored: Option<AhoCorasick>,
    max_len: usize,
}

impl SpecialSplitter {
    /// Rejects empty and duplicated tokens: both make the split ill-defined.
    pub fn new(tokens: &[String]) -> Result<Self, Error> {
        validate(tokens)?;
        let build = |start: StartKind| -> Result<Option<AhoCorasick>, Error> {
            if tokens.is_empty() {
                return Ok(None);
            }
            let built = AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostLongest)
                .start_kind(start)
                .build(tokens)
                .map_err(|e| Error::InvalidArgument(format!("special tokens: {e}")))?;
            Ok(Some(built))
        };
        let (automaton, anchored) = (build(StartKind::Unanchored)?, build(StartKind::Anchored)?);
        let max_len = tokens.iter().map(String::len).max().unwrap_or(0);
        Ok(Self { tokens: tokens.to_vec(), automaton, anchored, max_len })
    }

    pub fn tokens(&self) -> &[String] {
        &self.tokens
    }

    /// Length in bytes of the longest special token (0 without any).
    pub fn max_len(&self) -> usize {
        self.max_len
    }

    /// Byte ranges `(start, end, token index)` of the matches in `haystack`.
    pub fn find_all<'s, 'h>(&'s self, haystack: &'h [u8]) -> impl Iterator<Item = (usize, usize, usize)> + use<'s, 'h> {
        self.automaton
            .iter()
            .flat_map(move |ac| ac.find_iter(haystack))
            .map(|m| (m.start(), m.end(), m.pattern().as_usize()))
    }

    /// Whether an occurrence of a special token in `haystack` starts before
    /// byte `at` and ends after it (overlapping ones too: any occurrence, not
    /// only `find_all`'s matches). At each start that could reach past `at`,
    /// the longest token there (an anchored search): fewer than `max_len`
    /// short searches, however many tokens there are.
    pub fn straddles(&self, haystack: &[u8], at: usize) -> bool {
        let Some(anchored) = &self.anchored else { return false };
        let longest_at = |start: usize| anchored.find(Input::new(haystack).range(start..).anchored(Anchored::Yes));
        (at.saturating_sub(self.max_len.saturating_sub(1))..at)
            .any(|start| longest_at(start).is_some_and(|m| m.end() > at))
    }

    /// The text between specials and the specials themselves, in order.
    /// Empty text pieces are left out.
    pub fn split<'s, 't>(&'s self, text: &'t str) -> impl Iterator<Item = Piece<'t>> + use<'s, 't> {
        let mut last = 0;
        let mut matches = self.find_all(text.as_bytes());
        let mut pending_special: Option<usize> = None;
        std::iter::from_fn(move || loop {
            if let Some(index) = pending_special.take() {
                return Some(Piece::Special(index));
            }
            match matches.next() {
                Some((start, end, index)) => {
                    let before = &text[last..start];
                    last = end;
                    pending_special = Some(index);
                    if !before.is_empty() {
                        return Some(Piece::Text(before));
                    }
                }
                None => {
                    let rest = &text[last..];
                    last = text.len();
                    return (!rest.is_empty()).then_some(Piece::Text(rest));
                }
            }
        })
    }
}

fn validate(tokens: &[String]) -> Result<(), Error> {
    let mut seen = std::collections::HashSet::new();
    for token in tokens {
        if token.is_empty() {
            return Err(Error::InvalidArgument("a special token is the empty string; remove it".into()));
        }
        if !seen.insert(token.as_str()) {
            return Err(Error::InvalidArgument(format!(
                "special token {token:?} is given twice; list each special token once"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn splitter(tokens: &[&str]) -> SpecialSplitter {
        SpecialSplitter::new(&tokens.iter().map(|t| t.to_string()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn longest_special_wins() {
        let s = splitter(&["<|e|>", "<|e|><|e|>"]);
        let pieces: Vec<Piece> = s.split("a<|e|><|e|>b<|e|>").collect();
        assert_eq!(pieces, [Piece::Text("a"), Piece::Special(1), Piece::Text("b"), Piece::Special(0)]);
    }

    #[test]
    fn no_specials_means_one_piece() {
        let s = splitter(&[]);
        assert_eq!(s.split("abc").collect::<Vec<_>>(), [Piece::Text("abc")]);
        assert_eq!(s.split("").count(), 0);
    }

    #[test]
    fn rejects_empty_and_duplicates() {
        assert!(SpecialSplitter::new(&["".to_string()]).is_err());
        assert!(SpecialSplitter::new(&["x".to_string(), "x".to_string()]).is_err());
    }
}
