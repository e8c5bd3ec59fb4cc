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
pub type Event = ((usize, usize), bool);

/// The stretches of a text of `len` bytes that `matches` (in order, not
/// overlapping) make: each match, and each gap between, flagged; `invert`
/// swaps the flags (a Split's `invert`). `out` is emptied first.
pub fn events(len: usize, matches: &[(usize, usize)], invert: bool, out: &mut Vec<Event>) {
    out.clear();
    if len == 0 {
        out.push(((0, 0), invert));
        return;
    }
    let mut previous = 0;
    for &(start, end) in matches {
        if previous != start {
            out.push(((previous, start), invert));
        }
        out.push(((start, end), !invert));
        previous = end;
    }
    if previous != len {
        out.push(((previous, len), invert));
    }
}

/// Append to `out` the byte ranges (moved by `offset`) of the pieces
/// `behavior` makes of `events`, empty ones left out.
pub fn pieces(events: &[Event], behavior: Behavior, offset: usize, out: &mut Vec<(usize, usize)>) {
    let first = out.len();
    match behavior {
        Behavior::Isolated => out.extend(events.iter().map(|&(range, _)| range)),
        Behavior::Removed => out.extend(events.iter().filter(|(_, is_match)| !is_match).map(|&(range, _)| range)),
        Behavior::Contiguous => {
            let mut previous_match = false;
            for &(range, is_match) in events {
                match out[first..].last_mut() {
                    Some(last) if is_match == previous_match => last.1 = range.1,
                    _ => out.push(range),
                }
                previous_match = is_match;
            }
        }
        Behavior::MergedWithPrevious => {
            let mut previous_match = false;
            for &(range, is_match) in events {
                match out[first..].last_mut() {
                    Some(last) if is_match && !previous_match => last.1 = range.1,
                    _ => out.push(range),
                }
                previous_match = is_match;
            }
        }
        Behavior::MergedWithNext => {
            let mut previous_match = false;
            for &(range, is_match) in events.iter().rev() {
                match out[first..].last_mut() {
                    Some(last) if is_match && !previous_match => last.0 = range.0,
                    _ => out.push(range),
                }
                previous_match = is_match;
            }
            out[first..].reverse();
        }
    }
    let mut kept = first;
    for at in first..out.len() {
        let (start, end) = out[at];
        if start != end {
            out[kept] = (start + offset, end + offset);
            kept += 1;
        }
    }
    out.truncate(kept);
}

/// Append to `out` the ranges (moved by `offset`) of each match in `matches`
/// and each gap between them in a text of `len` bytes, as Isolated cuts.
pub fn isolated(len: usize, matches: &[(usize, usize)], offset: usize, out: &mut Vec<(usize, usize)>) {
    let mut previous = 0;
    for &(start, end) in matches {
        if previous != start {
            out.push((previous + offset, start + offset));
        }
        if start != end {
            out.push((start + offset, end + offset));
        }
        previous = end;
    }
    if previous != len {
        out.push((previous + offset, len + offset));
    }
}

/// Each char of `text` for which `is_match` holds as a one-char match, in `out` (emptied first).
pub fn char_matches(text: &str, is_match: impl Fn(char) -> bool, out: &mut Vec<(usize, usize)>) {
    out.clear();
    out.extend(text.char_indices().filter(|&(_, ch)| is_match(ch)).map(|(at, ch)| (at, at + ch.len_utf8())));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(text: &str, behavior: Behavior) -> Vec<&str> {
        let (mut matches, mut found, mut cut) = (Vec::new(), Vec::new(), Vec::new());
        char_matches(text, |ch| ch == '-', &mut matches);
        events(text.len(), &matches, false, &mut found);
        pieces(&found, behavior, 0, &mut cut);
        cut.into_iter().map(|(s, e)| &text[s..e]).collect()
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
