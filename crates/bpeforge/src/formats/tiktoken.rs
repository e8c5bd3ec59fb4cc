//! tiktoken's rank files (`.tiktoken`: one `base64(token) rank` line per token)
//! read in one pass without Python (o200k's 200 K lines took 0.2 s in Python,
//! the largest part of `Tokenizer.from_tiktoken`).
//!
//! Strict on purpose, as `gpt2.rs`: a line that is not exactly
//! `base64 SPACE digits` (`\r\n` allowed, blank lines skipped), base64 that is
//! not canonical, an empty token, a rank over 2^32 - 1, or a token or rank
//! given twice gives `None`, and the Python reader decides and names the line.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use rustc_hash::FxHashSet;

/// `(token, rank)` in rank order, or `None` (see the module's comment).
pub fn parse_rank_file(data: &[u8]) -> Option<Vec<(Vec<u8>, u32)>> {
    let ranks: Vec<(Vec<u8>, u32)> = parse_rank_lines(data)?.into_iter().map(|(rank, token)| (token, rank)).collect();
    all_unique(&ranks).then_some(ranks)
}

/// As `parse_rank_file`, as `(rank, token)`, but a token given twice is left
/// for the caller to find (`rank_vocab.rs` counts the distinct tokens of the
/// index it builds anyway; a set of o200k's 200 K tokens here took a tenth of
/// building its encoder). Ranks given twice give `None`.
pub fn parse_rank_lines(data: &[u8]) -> Option<Vec<(u32, Vec<u8>)>> {
    let mut ranks = Vec::with_capacity(data.len() / 16);
    let mut decoded = Vec::new();
    for line in data.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            continue;
        }
        let space = line.iter().position(|&b| b == b' ')?;
        let (token, rank) = (&line[..space], &line[space + 1..]);
        // Decoded into one buffer, then copied at its exact length: the vocabulary boxes each token, and a
        // vector of the decoder's estimated capacity was reallocated there.
        decoded.clear();
        STANDARD.decode_vec(token, &mut decoded).ok()?;
        if decoded.is_empty() {
            return None;
        }
        ranks.push((digits(rank)?, decoded.to_vec()));
    }
    ranks.sort_unstable_by_key(|&(rank, _)| rank);
    ranks.windows(2).all(|pair| pair[0].0 != pair[1].0).then_some(ranks)
}

/// Whether no token is given twice.
fn all_unique(ranks: &[(Vec<u8>, u32)]) -> bool {
    let mut tokens = FxHashSet::with_capacity_and_hasher(ranks.len(), Default::default());
    ranks.iter().all(|(token, _)| tokens.insert(token.as_slice()))
}

/// A rank written as plain ASCII digits that fits 32 bits.
fn digits(text: &[u8]) -> Option<u32> {
    if text.is_empty() || text.len() > 10 || !text.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(text).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_lines_in_rank_order() {
        let file = b"IQ== 0\r\nIA== 2\n\naGk= 1\n";
        let expected = vec![(b"!".to_vec(), 0), (b"hi".to_vec(), 1), (b" ".to_vec(), 2)];
        assert_eq!(parse_rank_file(file), Some(expected));
        assert_eq!(parse_rank_file(b""), Some(vec![]));
    }

    #[test]
    fn defers_whatever_is_unusual() {
        for file in [
            &b"IQ==  0\n"[..],    // two spaces
            b"IQ==\t0\n",         // a tab
            b"IQ== 0 1\n",        // three fields
            b"IQ== -1\n",         // negative
            b"IQ== +1\n",         // a sign
            b"IQ== 4294967296\n", // over 32 bits
            b"IQ= 0\n",           // bad padding
            b"I!== 0\n",          // not base64
            b"IR== 0\n",          // non-canonical trailing bits (Python accepts: it decides)
            b" 0\n",              // an empty token
            b"IQ== 0\nIQ== 1\n",  // a token twice
            b"IQ== 0\nIA== 0\n",  // a rank twice
            b"IQ==\n",            // no rank
        ] {
            assert_eq!(parse_rank_file(file), None, "{:?}", String::from_utf8_lossy(file));
        }
    }
}
