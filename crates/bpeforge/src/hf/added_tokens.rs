//! Added tokens (`added_tokens` of a `tokenizer.json`), found in the text as
//! `tokenizers`' `AddedVocabulary` finds them: first the tokens with
//! `normalized: false` in the raw text, then, in each stretch between them
//! once normalized, the tokens with `normalized: true` (in their normalized
//! spelling). Each pass takes the leftmost-longest match; `single_word`
//! skips a match with a word char on either side, `lstrip` and `rstrip`
//! take the whitespace beside it into the token.

use std::borrow::Cow;

use aho_corasick::{AhoCorasick, MatchKind};
use rustc_hash::FxHashMap;
use serde_json::Value;

use super::char_classes::{SPACE, WORD};
use super::json::{field_bool, field_str, field_u32};
use super::normalizers::Normalizer;
use crate::error::Error;

#[derive(Debug, Clone)]
pub struct AddedToken {
    pub id: u32,
    pub content: String,
    pub special: bool,
    pub normalized: bool,
    pub single_word: bool,
    pub lstrip: bool,
    pub rstrip: bool,
}

/// One pass's tokens: an automaton over their spellings, and the token of each pattern.
struct Pass {
    automaton: AhoCorasick,
    tokens: Vec<AddedToken>,
    /// The bytes the spellings begin with, when at most three and none a
    /// letter, digit or space: a text without them holds none (most texts;
    /// `memchr` answers that faster than the automaton's search of each
    /// short text).
    first_bytes: Option<Vec<u8>>,
    /// Else, the first two bytes of every spelling, when they are at most
    /// three pairs and some first byte is one most texts hold (Phi-2's
    /// tokens of 2-32 spaces or tabs: "  " and "\t\t", and "<|": searching
    /// each text that holds a space was a quarter of encoding lines).
    first_pairs: Option<Vec<memchr::memmem::Finder<'static>>>,
}

/// A stretch of text, or an added token's id.
pub enum Segment<'t> {
    Text(&'t str),
    Token(u32),
}

pub struct AddedVocabulary {
    tokens: Vec<AddedToken>,
    /// Id -> index in `tokens`, for decoding (Whisper has 1,609 added tokens).
    by_id: FxHashMap<u32, usize>,
    raw: Option<Pass>,
    normalized: Option<Pass>,
}

impl AddedToken {
    pub fn parse(json: &Value, number: usize) -> Result<Self, Error> {
        let component = format!("added_tokens[{number}]");
        let flag = |name: &str, default: bool| -> Result<bool, Error> {
            Ok(field_bool(json, name, &component)?.unwrap_or(default))
        };
        Ok(Self {
            id: field_u32(json, "id", &component)?,
            content: field_str(json, "content", &component)?.to_string(),
            special: flag("special", false)?,
            normalized: flag("normalized", true)?,
            single_word: flag("single_word", false)?,
            lstrip: flag("lstrip", false)?,
            rstrip: flag("rstrip", false)?,
        })
    }
}

impl AddedVocabulary {
    /// `tokens` with the ids `tokenizers` gives them; `normalizer` spells the
    /// normalized ones as they are looked for.
    pub fn new(tokens: Vec<AddedToken>, normalizer: Option<&Normalizer>) -> Result<Self, Error> {
        let (normalized, raw): (Vec<AddedToken>, Vec<AddedToken>) = tokens.iter().cloned().partition(|t| t.normalized);
        let spell = |token: &AddedToken| match normalizer {
            Some(normalizer) => normalizer.normalize(Cow::Borrowed(token.content.as_str())).into_owned(),
            None => token.content.clone(),
        };
        Ok(Self {
            raw: Pass::new(raw, |token| token.content.clone())?,
            normalized: Pass::new(normalized, spell)?,
            by_id: tokens.iter().enumerate().map(|(index, token)| (token.id, index)).collect(),
            tokens,
        })
    }

    pub fn tokens(&self) -> &[AddedToken] {
        &self.tokens
    }

    /// The added token with this id, if any.
    pub fn token(&self, id: u32) -> Option<&AddedToken> {
        self.by_id.get(&id).map(|&index| &self.tokens[index])
    }

    /// Each stretch of `text` and added token with `normalized: false`, in order.
    pub fn for_each_raw<'t, E>(&self, text: &'t str, visit: impl FnMut(Segment<'t>) -> Result<(), E>) -> Result<(), E> {
        split(self.raw.as_ref(), text, visit)
    }

    /// Each stretch of normalized `text` and added token with `normalized: true`, in order.
    pub fn for_each_normalized<'t, E>(
        &self,
        text: &'t str,
        visit: impl FnMut(Segment<'t>) -> Result<(), E>,
    ) -> Result<(), E> {
        split(self.normalized.as_ref(), text, visit)
    }
}

impl Pass {
    fn new(tokens: Vec<AddedToken>, spell: impl Fn(&AddedToken) -> String) -> Result<Option<Self>, Error> {
        if tokens.is_empty() {
            return Ok(None);
        }
        let patterns: Vec<String> = tokens.iter().map(&spell).collect();
        if let Some(token) = tokens.iter().zip(&patterns).find(|(_, p)| p.is_empty()).map(|(t, _)| t) {
            return Err(super::json::refuse(
                &format!("added token {:?}", token.content),
                "it is empty once normalized",
            ));
        }
        for (at, pattern) in patterns.iter().enumerate() {
            if let Some(other) = patterns[..at].iter().position(|earlier| earlier == pattern) {
                // `tokenizers` then picks one of the two by its hash map's order, which varies from run to run.
                return Err(super::json::refuse(
                    &format!("added tokens {:?} and {:?}", tokens[other].content, tokens[at].content),
                    &format!("both are looked for as {pattern:?}, and tokenizers picks either"),
                ));
            }
        }
        let automaton = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&patterns)
            .map_err(|err| Error::InvalidArgument(format!("added tokens: {err}")))?;
        let mut first_bytes: Vec<u8> = patterns.iter().map(|pattern| pattern.as_bytes()[0]).collect();
        first_bytes.sort_unstable();
        first_bytes.dedup();
        // A byte text is full of (a space, a letter) says little: then pairs, where there are few.
        let common = |byte: &u8| byte.is_ascii_alphanumeric() || byte.is_ascii_whitespace();
        let first_bytes = (first_bytes.len() <= 3).then_some(first_bytes).filter(|bytes| !bytes.iter().any(common));
        let mut first_pairs: Vec<&[u8]> =
            patterns.iter().map(|pattern| &pattern.as_bytes()[..2.min(pattern.len())]).collect();
        first_pairs.sort_unstable();
        first_pairs.dedup();
        let first_pairs = (first_bytes.is_none() && first_pairs.len() <= 3 && first_pairs.iter().all(|p| p.len() == 2))
            .then(|| first_pairs.iter().map(|pair| memchr::memmem::Finder::new(pair).into_owned()).collect());
        Ok(Some(Self { automaton, tokens, first_bytes, first_pairs }))
    }
}

impl Pass {
    /// False when `text` holds none of the tokens' spellings for sure.
    fn may_hold_one(&self, text: &str) -> bool {
        let text = text.as_bytes();
        if let Some(pairs) = &self.first_pairs {
            return pairs.iter().any(|pair| pair.find(text).is_some());
        }
        match self.first_bytes.as_deref() {
            Some(&[a]) => memchr::memchr(a, text).is_some(),
            Some(&[a, b]) => memchr::memchr2(a, b, text).is_some(),
            Some(&[a, b, c]) => memchr::memchr3(a, b, c, text).is_some(),
            _ => true,
        }
    }
}

/// `find_matches` of `tokenizers`' `AddedVocabulary`, empty stretches left
/// out, each given to `visit` as it is found.
fn split<'t, E>(
    pass: Option<&Pass>,
    text: &'t str,
    mut visit: impl FnMut(Segment<'t>) -> Result<(), E>,
) -> Result<(), E> {
    let Some(pass) = pass.filter(|pass| pass.may_hold_one(text)) else {
        if !text.is_empty() {
            visit(Segment::Text(text))?;
        }
        return Ok(());
    };
    let mut taken = 0;
    for found in pass.automaton.find_iter(text) {
        let token = &pass.tokens[found.pattern().as_usize()];
        let (mut start, mut stop) = (found.start(), found.end());
        if token.single_word {
            let word_before = text[..start].chars().next_back().is_some_and(|ch| WORD.contains(ch));
            let word_after = text[stop..].chars().next().is_some_and(|ch| WORD.contains(ch));
            if word_before || word_after {
                continue;
            }
        }
        if token.lstrip {
            let spaces =
                text[..start].chars().rev().take_while(|&ch| SPACE.contains(ch)).map(char::len_utf8).sum::<usize>();
            // Spaces an earlier match took are not taken twice.
            start = (start - spaces).max(taken);
        }
        if token.rstrip {
            stop += text[stop..].chars().take_while(|&ch| SPACE.contains(ch)).map(char::len_utf8).sum::<usize>();
        }
        if taken < start {
            visit(Segment::Text(&text[taken..start]))?;
        }
        // A match whose spaces an earlier one took (a token of spaces with lstrip and rstrip) is left
        // empty, and `tokenizers` drops empty pieces, its token with them.
        if start < stop {
            visit(Segment::Token(token.id))?;
        }
        // As in `tokenizers`, even when this match lies inside the spaces an earlier rstrip took: the text
        // after it is then read again.
        taken = stop;
    }
    if taken < text.len() {
        visit(Segment::Text(&text[taken..]))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(content: &str, id: u32, rules: &str) -> AddedToken {
        AddedToken {
            id,
            content: content.to_string(),
            special: true,
            normalized: false,
            single_word: rules.contains('w'),
            lstrip: rules.contains('l'),
            rstrip: rules.contains('r'),
        }
    }

    fn cut(tokens: Vec<AddedToken>, text: &str) -> Vec<String> {
        let vocabulary = AddedVocabulary::new(tokens, None).unwrap();
        let mut out = Vec::new();
        let cut = vocabulary.for_each_raw(text, |segment| {
            out.push(match segment {
                Segment::Text(text) => text.to_string(),
                Segment::Token(id) => format!("<{id}>"),
            });
            Ok::<(), ()>(())
        });
        cut.unwrap();
        out
    }

    #[test]
    fn hf_added_tokens_match_longest_first_with_their_rules() {
        assert_eq!(cut(vec![token("<a>", 1, ""), token("<a><b>", 2, "")], "x<a><b>y"), ["x", "<2>", "y"]);
        assert_eq!(cut(vec![token("<m>", 1, "lr")], "a  <m>  b"), ["a", "<1>", "b"]);
        assert_eq!(cut(vec![token("ab", 1, "w")], "ab xab ab"), ["<1>", " xab ", "<1>"]);
        assert_eq!(cut(vec![token("  ", 1, "lr")], "a      "), ["a", "<1>"]);
        assert_eq!(cut(vec![token("½", 1, "r"), token(" ", 2, "")], "½ \u{b}"), ["<1>", "<2>", "\u{b}"]);
    }

    #[test]
    fn hf_added_tokens_of_runs_of_spaces_are_found_by_their_first_two_bytes() {
        // Phi-2's: spaces and tabs whose first bytes every text holds; a text is searched only where it holds
        // two of them.
        let runs = || vec![token("   ", 1, ""), token("  ", 2, ""), token("\t\t", 3, ""), token("<|e|>", 4, "")];
        assert_eq!(cut(runs(), "a b c\td e"), ["a b c\td e"]);
        assert_eq!(cut(runs(), "a  b   c\t\td<|e|>  "), ["a", "<2>", "b", "<1>", "c", "<3>", "d", "<4>", "<2>"]);
        assert_eq!(cut(runs(), "<|e| x|>"), ["<|e| x|>"]);
    }
}
