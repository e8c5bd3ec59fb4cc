//! ALLOWED DOC

use super::{EncodeState, Encoder};
use crate::error::Error;
use crate::pretokenize::cuts::find_cut;

impl Encoder {
    // tiktoken's special-token policy (`bpeforge.tiktoken`): only the special
    // tokens a call allows are tokens; the others are text. `allowed` and
    // `which` are masks over `special_tokens()`. The search is tiktoken's:
    // the leftmost special of all, and past it by one byte when it is not
    // allowed. With no special a prefix of another (all of OpenAI's sets),
    // that is exactly "the leftmost allowed one".

    /// `encode_with`, recognising only the special tokens that `allowed`
    /// marks (`None`: all of them). All allowed takes `encode_with`'s own
    /// path; none allowed (tiktoken's `encode_ordinary`) never searches for
    /// specials.
    pub fn encode_allowing(
        &self,
        text: &str,
        allowed: Option<&[bool]>,
        state: &mut EncodeState,
        out: &mut Vec<u32>,
    ) -> Result<(), Error> {
        match allowed.filter(|allowed| !allowed.iter().all(|&a| a)) {
            None => self.encode_with(text, state, out),
            Some(allowed) => self.with_state(state, |state| self.encode_pieces_allowing(text, allowed, state, out)),
        }
    }

    /// The index of the leftmost special token in `text` that `which` marks.
    pub fn find_special(&self, text: &str, which: &[bool]) -> Option<usize> {
        self.next_special(text.as_bytes(), 0, which).map(|(_, _, index)| index)
    }

    /// `stable_prefix_len` for `encode_allowing`: where not every special is
    /// allowed, only a cut before whitespace, where the pattern splits
    /// whatever the specials are (a cut after a special that is text could
    /// split its last piece).
    pub fn stable_prefix_len_allowing(&self, text: &str, allowed: Option<&[bool]>) -> usize {
        if allowed.is_none_or(|allowed| allowed.iter().all(|&a| a)) {
            return self.stable_prefix_len(text);
        }
        let (bytes, cut_before) = (text.as_bytes(), self.pattern.cut_before());
        let before_whitespace =
            |cut: usize| cut_before.contains(&bytes[cut]) && crate::pretokenize::cuts::is_split_point(bytes, cut);
        find_cut(bytes, &self.specials, cut_before)
            .filter(|&cut| cut < bytes.len() && before_whitespace(cut))
            .unwrap_or(0)
    }

    pub(super) fn encode_pieces_allowing(
        &self,
        text: &str,
        allowed: &[bool],
        state: &mut EncodeState,
        out: &mut Vec<u32>,
    ) -> Result<(), Error> {
        let mut last = 0;
        if allowed.iter().any(|&a| a) {
            while let Some((start, end, index)) = self.next_special(text.as_bytes(), last, allowed) {
                self.encode_document(&text[last..start], state, out)?;
                out.push(self.special_ids[index]);
                last = end;
            }
        }
        self.encode_document(&text[last..], state, out)
    }

    /// The first match at or after `from` of a special token that `which` marks.
    pub(super) fn next_special(&self, bytes: &[u8], mut from: usize, which: &[bool]) -> Option<(usize, usize, usize)> {
        while from < bytes.len() {
            let (start, end, index) = self.specials.find_all(&bytes[from..]).next()?;
            if which[index] {
                return Some((from + start, from + end, index));
            }
            from += start + 1;
        }
        None
    }
}
