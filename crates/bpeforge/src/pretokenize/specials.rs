//! Splitting text on special tokens, longest match first.
//!
//! Aho-Corasick with leftmost-longest semantics is exactly Python's
//! `re.split("|".join(sorted(specials, key=len, reverse=True)))`: at the
//! leftmost position where any special starts, the longest one wins, so with
//! `<|endoftext|>` and `<|endoftext|><|endoftext|>` both special the double is
//! one match.

use std::ops::Range;

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
    /// The distinct first bytes of the tokens, when there are one to three
    /// (`first_starting_in`); `None` otherwise, or without tokens.
    first_bytes: Option<Vec<u8>>,
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
        let mut first_bytes: Vec<u8> = tokens.iter().map(|token| token.as_bytes()[0]).collect();
        first_bytes.sort_unstable();
        first_bytes.dedup();
        let first_bytes = (1..=3).contains(&first_bytes.len()).then_some(first_bytes);
        Ok(Self { tokens: tokens.to_vec(), automaton, anchored, max_len, first_bytes })
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

    /// Whether `first_starting_in` can be asked: the tokens begin with one
    /// to three distinct bytes (`<` for all of OpenAI's and most models').
    pub fn has_few_first_bytes(&self) -> bool {
        self.first_bytes.is_some()
    }

    /// The first match `(start, end, token index)` of `find_all(haystack)`
    /// that starts in `range`, when none of them starts between
    /// `range.start` and the match (the caller knows none does before
    /// `range.start` either: then it is the leftmost-longest match from
    /// there, as `find_all` gives it). Found as `memchr` finds the first
    /// bytes, each checked by the anchored automaton; the match may end
    /// past `range.end`.
    ///
    /// Why not the automaton alone: this searches a few KiB at a time just
    /// ahead of the scanner (`encode/document_end.rs`), where an unanchored
    /// search runs to the next match, however far; and a `memchr` of one to
    /// three bytes over L1-hot text is the cheapest search there is.
    ///
    /// # Panics
    /// Without `has_few_first_bytes`.
    pub fn first_starting_in(&self, haystack: &[u8], range: Range<usize>) -> Option<(usize, usize, usize)> {
        let (Some(first_bytes), Some(anchored)) = (self.first_bytes.as_deref(), self.anchored.as_ref()) else {
            panic!("first_starting_in needs one to three first bytes (has_few_first_bytes)");
        };
        let verified = |find: &dyn Fn(&[u8]) -> Option<usize>| {
            let mut from = range.start;
            while let Some(offset) = find(&haystack[from..range.end]) {
                let start = from + offset;
                let input = Input::new(haystack).range(start..).anchored(Anchored::Yes);
                if let Some(found) = anchored.find(input) {
                    return Some((start, found.end(), found.pattern().as_usize()));
                }
                from = start + 1;
            }
            None
        };
        match *first_bytes {
            [a] => verified(&|bytes| memchr::memchr(a, bytes)),
            [a, b] => verified(&|bytes| memchr::memchr2(a, b, bytes)),
            [a, b, c] => verified(&|bytes| memchr::memchr3(a, b, c, bytes)),
            _ => unreachable!("one to three first bytes"),
        }
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
pub(crate) mod tests {
    use super::*;

    /// A splitter of `tokens` (valid ones), for tests here and elsewhere.
    pub(crate) fn splitter(tokens: &[&str]) -> SpecialSplitter {
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

    /// `first_starting_in`, from each match's end on, finds `find_all`'s
    /// matches: tokens that overlap, share a prefix, or are prefixes of
    /// one another, first bytes that begin no match, ranges cut anywhere.
    #[test]
    fn first_starting_in_finds_the_matches_of_find_all() {
        let s = splitter(&["<|e|>", "<|e|><|e|>", "<<", "|><|", "<x"]);
        assert!(s.has_few_first_bytes());
        let mut rng = crate::util::test_rng::XorShift(0x0dd_f00d);
        let parts: [&[u8]; 8] = [b"<", b"|", b"e", b">", b"<|e|>", b"x", b" ", b"<<"];
        for case in 0..400 {
            let mut haystack = Vec::new();
            while haystack.len() < 40 + case % 60 {
                haystack.extend_from_slice(parts[rng.below(parts.len())]);
            }
            let expected: Vec<_> = s.find_all(&haystack).collect();
            let (mut found, mut from) = (Vec::new(), 0);
            while from < haystack.len() {
                // Ranges of a few bytes at a time, as the encoder asks.
                let until = (from + 1 + rng.below(7)).min(haystack.len());
                match s.first_starting_in(&haystack, from..until) {
                    Some(m) => {
                        found.push(m);
                        from = m.1;
                    }
                    None => from = until,
                }
            }
            assert_eq!(found, expected, "case {case}: {:?}", String::from_utf8_lossy(&haystack));
        }
    }

    #[test]
    fn few_first_bytes_only_up_to_three() {
        assert!(splitter(&["[a]", "<b>", "{c}", "<d>"]).has_few_first_bytes());
        assert!(!splitter(&["[a]", "<b>", "{c}", "(d)"]).has_few_first_bytes());
        assert!(!splitter(&[]).has_few_first_bytes());
    }

    #[test]
    fn rejects_empty_and_duplicates() {
        assert!(SpecialSplitter::new(&["".to_string()]).is_err());
        assert!(SpecialSplitter::new(&["x".to_string(), "x".to_string()]).is_err());
    }
}
