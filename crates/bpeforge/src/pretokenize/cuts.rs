//! Where a text may be cut so that each part pre-tokenizes alone to the
//! pieces of the whole: the one rule the file reader (`io/chunking.rs`), the
//! shard planner (`io/shards.rs`) and the encoder's long-text windows share.
//!
//! The scanners never look behind their start, so a cut is safe at any
//! boundary of the whole text's pieces; these functions find boundaries
//! that are certain without scanning: right after a special token, or
//! before ASCII whitespace that follows a non-space character.

use crate::pretokenize::charclass::{classify, CharClass};
use crate::pretokenize::specials::SpecialSplitter;

/// Whether the pattern always splits just before byte `pos` of `bytes`:
/// the char before `pos` is not whitespace and the byte at `pos` is ASCII
/// whitespace. No piece holds a non-space char followed by a space char, and
/// each side scans alone exactly as it does in the whole (no look-behind; the
/// last piece before `pos` stops at whitespace or at the end alike).
/// `bytes` must be valid UTF-8 up to `pos`; `pos` must be inside `bytes`.
pub fn is_split_point(bytes: &[u8], pos: usize) -> bool {
    if pos == 0 || !bytes[pos].is_ascii() || classify(bytes[pos] as u32) != CharClass::Whitespace {
        return false;
    }
    let mut char_start = pos - 1;
    while char_start > 0 && (bytes[char_start] & 0xC0) == 0x80 {
        char_start -= 1;
    }
    match std::str::from_utf8(&bytes[char_start..pos]) {
        Ok(s) => s.chars().all(|c| classify(c as u32) != CharClass::Whitespace),
        Err(_) => false, // invalid UTF-8 is reported by the reader, never cut here
    }
}

/// How many bytes at the end of a buffer `find_cut` searches for special
/// tokens before it searches the whole buffer (see there).
const CUT_TAIL: usize = 64 << 10;

/// The last safe cut in `buf`, if any (see the module docs).
///
/// Found from the last `CUT_TAIL` bytes when they hold it, so that a stretch
/// is not searched for special tokens twice (here, and again when it is
/// encoded): a single `encode` of 10 MB is cut every 1 MiB, and the second
/// search was 3-4% of a warm call. The result is the whole buffer's
/// (`find_cut_from`).
pub(crate) fn find_cut(buf: &[u8], specials: &SpecialSplitter, cut_before: &[u8]) -> Option<usize> {
    let tail = buf.len().checked_sub(CUT_TAIL).filter(|&from| from > 0 && !specials.straddles(buf, from));
    tail.and_then(|from| find_cut_from(buf, from, specials, cut_before))
        .or_else(|| find_cut_from(buf, 0, specials, cut_before))
}

/// `find_cut`, with special tokens searched for from byte `from` on, which
/// no occurrence of one straddles. Then the matches found from there are the
/// whole buffer's from there (those before end by `from`, and none starts
/// between the last of them and `from`, or the search would have found it),
/// so a cut found after `from`, or the end of a match found, is the one a
/// search of the whole buffer gives; `None` when it would need what lies
/// before `from` (and always `None` when `buf` has no safe cut).
fn find_cut_from(buf: &[u8], from: usize, specials: &SpecialSplitter, cut_before: &[u8]) -> Option<usize> {
    let settled = buf.len().checked_sub(specials.max_len())?;
    let last_special_end = specials
        .find_all(&buf[from..])
        .map(|(start, end, _)| (from + start, from + end))
        .take_while(|&(start, _)| start < settled)
        .last()
        .map(|(_, end)| end);
    if cut_before.is_empty() {
        return last_special_end.filter(|&end| end > 0);
    }
    let floor = last_special_end.unwrap_or(from);
    let upper = settled.min(buf.len().saturating_sub(1));
    let whitespace_cut =
        (floor + 1..=upper).rev().find(|&pos| cut_before.contains(&buf[pos]) && is_split_point(buf, pos));
    whitespace_cut.or(last_special_end.filter(|&end| end > 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_points() {
        let text = "ab \ncd".as_bytes();
        assert!(is_split_point(text, 2)); // "b" | " "
        assert!(!is_split_point(text, 3)); // " " | "\n": inside a run
        assert!(!is_split_point(text, 4)); // "\n" | "c": the run's last char may lead
        assert!(!is_split_point(text, 0));
        assert!(is_split_point("é\n".as_bytes(), 2));
    }

    /// The tail-first search gives the whole buffer's cut: buffers whose
    /// last 64 KiB hold no cut, or hold only specials, or have a special
    /// (or two overlapping ones) across where the tail begins.
    #[test]
    fn the_cut_found_from_the_tail_is_the_whole_buffers() {
        let tokens: Vec<String> = ["<|e|>", "<|e|><|e|>", "|><|"].iter().map(|t| t.to_string()).collect();
        let splitter = SpecialSplitter::new(&tokens).unwrap();
        let mut rng = crate::util::test_rng::XorShift(0x5eed_cafe);
        let parts: [&[u8]; 7] = [b"ab", b" ", b"\n", b"<|e|>", b"<|e|><|e|>", b"|><|", b"xyz"];
        let (mut from_tail, mut cuts) = (0, std::collections::HashSet::new());
        for case in 0..120 {
            let len = CUT_TAIL + [0, 1, 7, 100, 5000, 70_000][case % 6];
            let mut buf = Vec::with_capacity(len + 16);
            // Mostly one kind of part near the tail's start, mixed elsewhere.
            let (near, only) = (len - CUT_TAIL, rng.below(parts.len()));
            while buf.len() < len {
                let tail_of_one_part = buf.len() + 32 > near && case % 3 == 0;
                let mostly_one_part = buf.len().abs_diff(near) < 64 && rng.below(4) > 0;
                let part = if tail_of_one_part || mostly_one_part { only } else { rng.below(parts.len()) };
                buf.extend_from_slice(parts[part]);
            }
            let whole = find_cut_from(&buf, 0, &splitter, b" \t\r\n");
            assert_eq!(find_cut(&buf, &splitter, b" \t\r\n"), whole, "case {case}");
            assert_eq!(find_cut(&buf, &splitter, b""), find_cut_from(&buf, 0, &splitter, b""), "case {case}");
            from_tail += whole.is_some_and(|cut| cut > buf.len() - CUT_TAIL) as usize;
            cuts.insert(whole.map(|cut| buf.len() - cut));
        }
        // Both ways were taken: cuts in the tail, and cuts before it or none.
        assert!(from_tail > 30 && from_tail < 110, "{from_tail} cuts in the tail");
        assert!(cuts.len() > 20);
    }
}
