//! Whether a long piece repeats a short period: a run of one char (`aaaa`,
//! spaces, a line of `=`), of one multi-byte char (`ééé`, an emoji) or of a
//! few (`1212`, `abcabc`). Its tokens repeat too, so each chunk that the
//! chunked merge (`chunked.rs`) cuts after the first few starts where the
//! last one did in the period, its bytes equal the last one's, and it takes
//! the last one's ids: a run costs a comparison of bytes per chunk. Only a
//! speed gate: the chunked merge is exact on any piece (its seams are
//! checked), and the run costs what other long pieces cost where this fails.
//!
//! Why it is asked before the piece is cut into parts: where no token holds
//! two neighbouring bytes (GPT-2 has no token of two spaces), a run cuts
//! into a part per byte, and 1 MB of spaces took 6.4 ms to cut and look up
//! byte by byte, against 0.7 ms merged a chunk at a time.

/// Periods tried, in bytes: four chars of three bytes, or an emoji and a
/// few more. Each costs one comparison that stops at the first byte that
/// differs, so a piece that is not a run pays a few dozen byte compares.
pub(crate) const PERIOD_MAX: usize = 16;

/// The shortest period of `piece` up to `PERIOD_MAX` bytes that repeats at
/// least twice: the `p` for which every byte equals the one `p` after it.
pub(crate) fn short_period(piece: &[u8]) -> Option<usize> {
    (1..=PERIOD_MAX.min(piece.len() / 2)).find(|&p| piece[p..] == piece[..piece.len() - p])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_shortest_period_and_only_whole_runs() {
        assert_eq!(short_period(b"aaaaaaaa"), Some(1));
        assert_eq!(short_period(b"abababab"), Some(2));
        // A period need not divide the length: the run may stop mid-period.
        assert_eq!(short_period(b"abcabcab"), Some(3));
        assert_eq!(short_period("🙂🙂🙂".as_bytes()), Some(4));
        assert_eq!(short_period(b"aaaaaaab"), None, "one byte off at the end");
        assert_eq!(short_period(b"baaaaaaa"), None, "one byte off at the start");
        assert_eq!(short_period(b"ab"), None, "a period must repeat");
        assert_eq!(short_period(b""), None);
        let long_period: Vec<u8> = (0..PERIOD_MAX as u8 + 1).cycle().take(200).collect();
        assert_eq!(short_period(&long_period), None, "longer than PERIOD_MAX");
        let longest: Vec<u8> = (0..PERIOD_MAX as u8).cycle().take(200).collect();
        assert_eq!(short_period(&longest), Some(PERIOD_MAX));
    }

    /// Against the definition, on generated pieces of a few letters.
    #[test]
    fn agrees_with_the_definition() {
        let mut rng = crate::util::test_rng::XorShift(0x9e37_79b9_7f4a_7c15);
        for _ in 0..2000 {
            let period: Vec<u8> = (0..1 + rng.below(20)).map(|_| b"ab"[rng.below(2)]).collect();
            let mut piece: Vec<u8> = period.iter().cycle().take(rng.below(80)).copied().collect();
            if rng.below(4) == 0 && !piece.is_empty() {
                let at = rng.below(piece.len());
                piece[at] = b'c';
            }
            let expected = (1..=PERIOD_MAX)
                .filter(|&p| 2 * p <= piece.len())
                .find(|&p| (p..piece.len()).all(|i| piece[i] == piece[i - p]));
            assert_eq!(short_period(&piece), expected, "{piece:?}");
        }
    }
}
