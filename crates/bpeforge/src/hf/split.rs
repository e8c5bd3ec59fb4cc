//! Cutting one piece of text where a pattern matches, with HF's
//! `SplitDelimiterBehavior`s (`NormalizedString::split` in `tokenizers`).
//! Pieces that come out empty are dropped, as `tokenizers` drops them.

use crate::error::Error;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behavior {
    /// The matches go, the rest stays.
    Removed,
    /// Each match is a piece, and each stretch between.
    Isolated,
    /// Each match joins the piece before it.
    MergedWithPrevious,
    /// Each match joins the piece after it.
    MergedWithNext,
    /// Runs of matches (and of non-matches) are one piece each.
    Contiguous,
}

impl Behavior {
    pub fn parse(name: &str, component: &str) -> Result<Self, Error> {
        Ok(match name {
            "Removed" => Behavior::Removed,
            "Isolated" => Behavior::Isolated,
            "MergedWithPrevious" => Behavior::MergedWithPrevious,
            "MergedWithNext" => Behavior::MergedWithNext,
            "Contiguous" => Behavior::Contiguous,
            other => {
                return Err(Error::InvalidArgument(format!("{component}: unknown split behavior {other:?}")));
            }
        })
    }
}

/// A stretch of the text and whether it is a match.
type Event = ((usize, usize), bool);

/// The stretches of a text of `len` bytes that `matches` (in order, not
/// overlapping) make: each match, and each gap between, flagged; `invert`
/// swaps the flags (a Split's `invert`).
pub fn events(len: usize, matches: &[(usize, usize)], invert: bool) -> Vec<Event> {
    if len == 0 {
        return vec![((0, 0), invert)];
    }
    let mut events = Vec::with_capacity(matches.len() * 2 + 1);
    let mut previous = 0;
    for &(start, end) in matches {
        if previous != start {
            events.push(((previous, start), invert));
        }
        events.push(((start, end), !invert));
        previous = end;
    }
    if previous != len {
        events.push(((previous, len), invert));
    }
    events
}

/// The byte ranges of the pieces `behavior` makes of `events`, empty ones left out.
pub fn pieces(events: &[Event], behavior: Behavior) -> Vec<(usize, usize)> {
    let kept: Vec<(usize, usize)> = match behavior {
        Behavior::Isolated => events.iter().map(|&(range, _)| range).collect(),
        Behavior::Removed => events.iter().filter(|(_, is_match)| !is_match).map(|&(range, _)| range).collect(),
        Behavior::Contiguous => {
            let mut out: Vec<(usize, usize)> = Vec::new();
            let mut previous_match = false;
            for &(range, is_match) in events {
                match out.last_mut() {
                    Some(last) if is_match == previous_match => last.1 = range.1,
                    _ => out.push(range),
                }
                previous_match = is_match;
            }
            out
        }
        Behavior::MergedWithPrevious => {
            let mut out: Vec<(usize, usize)> = Vec::new();
            let mut previous_match = false;
            for &(range, is_match) in events {
                match out.last_mut() {
                    Some(last) if is_match && !previous_match => last.1 = range.1,
                    _ => out.push(range),
                }
                previous_match = is_match;
            }
            out
        }
        Behavior::MergedWithNext => {
            let mut out: Vec<(usize, usize)> = Vec::new();
            let mut previous_match = false;
            for &(range, is_match) in events.iter().rev() {
                match out.last_mut() {
                    Some(last) if is_match && !previous_match => last.0 = range.0,
                    _ => out.push(range),
                }
                previous_match = is_match;
            }
            out.reverse();
            out
        }
    };
    kept.into_iter().filter(|(start, end)| start != end).collect()
}

/// Each char of `text` for which `is_match` holds as a one-char match.
pub fn char_matches(text: &str, is_match: impl Fn(char) -> bool) -> Vec<(usize, usize)> {
    text.char_indices().filter(|&(_, ch)| is_match(ch)).map(|(at, ch)| (at, at + ch.len_utf8())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(text: &str, behavior: Behavior) -> Vec<&str> {
        let matches = char_matches(text, |ch| ch == '-');
        pieces(&events(text.len(), &matches, false), behavior).into_iter().map(|(s, e)| &text[s..e]).collect()
    }

    #[test]
    fn hf_split_behaviors_cut_as_tokenizers_does() {
        // The cases of `tokenizers`' own test of `NormalizedString::split`.
        let text = "The-final--countdown";
        assert_eq!(split(text, Behavior::Removed), ["The", "final", "countdown"]);
        assert_eq!(split(text, Behavior::Isolated), ["The", "-", "final", "-", "-", "countdown"]);
        assert_eq!(split(text, Behavior::MergedWithPrevious), ["The-", "final-", "-", "countdown"]);
        assert_eq!(split(text, Behavior::MergedWithNext), ["The", "-final", "-", "-countdown"]);
        assert_eq!(split(text, Behavior::Contiguous), ["The", "-", "final", "--", "countdown"]);
    }
}
