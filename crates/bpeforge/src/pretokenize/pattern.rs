//! The pre-tokenizer: GPT-2's pattern (the default, CS336), the presets
//! cl100k and o200k (OpenAI's), llama3 (Llama 3's) and qwen2 (Qwen2's), or any
//! regex a user gives.
//!
//! Each preset runs on a hand-written scanner (`scan/`); the contract is the
//! Python `regex` package's `finditer` with the preset's regex (the consts
//! below): each match, left to right, is a pre-token. A custom regex runs on
//! `fancy-regex`, the engine tiktoken uses for such patterns (look-around,
//! possessive quantifiers), matching as `regex` does; unlike `findall`, a match
//! is kept whole even if the pattern has capture groups, and empty matches are
//! dropped. Text that no match covers (a custom regex such as `\w+` leaves the
//! spaces) is a pre-token of its own, so encoding is lossless for every
//! pattern; `unmatched_bytes` counts it, for the report. The presets cover
//! every char.
//!
//! Unicode: the scanners' classes are Unicode 16.0, read from the tables of
//! the `regex-syntax` crate (`scripts/gen_unicode_tables.py`): the version of
//! fancy-regex, of tiktoken's engine and of the Oniguruma in HF `tokenizers`,
//! so a preset splits every code point as those encoders do. The Python
//! `regex` package has had Unicode 17.0 since 2025: on the ~4,700 code points
//! that 17.0 newly assigned, the presets follow the encoders, not `regex`
//! (`tests/test_unicode_version.py`).
//!
//! Where a text may be cut for parallel work also depends on the pattern
//! (`cut_before`, used by `io/chunking.rs` and `io/shards.rs`): before ASCII
//! whitespace that follows a non-space char, where no piece can span the cut
//! and where the piece after it starts whatever came before (no look-behind):
//! - GPT-2: before a space, tab, CR or LF; its pieces hold whitespace only at
//!   their start or as whitespace runs.
//! - cl100k, o200k, llama3 and qwen2: before a space or tab only. Their
//!   punctuation pieces keep the newlines (and o200k's slashes) that follow,
//!   as in "!\n" (`[^\s\p{L}\p{N}]+[\r\n]*`), so a cut before CR or LF is not
//!   safe. A space or tab is taken only by a piece that starts with it (a
//!   word's or a punctuation run's one leading char, or a whitespace run).
//! - a custom regex: nowhere but special tokens and file ends.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::error::Error;
use crate::pretokenize::{scan, superword, superword_stage1};

/// GPT-2's pattern, as a regex (for tools that need the string).
pub const GPT2: &str = r"'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";

/// tiktoken's `cl100k_base` (GPT-3.5/4).
pub const CL100K: &str = r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s";

/// tiktoken's `o200k_base` (GPT-4o).
pub const O200K: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|\p{N}{1,3}",
    r"| ?[^\s\p{L}\p{N}]+[\r\n/]*",
    r"|\s*[\r\n]+",
    r"|\s+(?!\S)",
    r"|\s+",
);

/// Llama 3's (its `tokenizer.json`, the `Split` pre-tokenizer's regex).
pub const LLAMA3: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// Qwen2's (`PRETOKENIZE_REGEX` of transformers' Qwen2 tokenizer): llama3's,
/// one digit a piece.
pub const QWEN2: &str =
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// The presets: name and regex, in the order the docs list them.
pub const PRESETS: [(&str, &str); 5] =
    [("gpt2", GPT2), ("cl100k", CL100K), ("o200k", O200K), ("llama3", LLAMA3), ("qwen2", QWEN2)];

#[derive(Debug, Clone, Default)]
pub enum Pattern {
    /// GPT-2's pattern (`GPT2`).
    #[default]
    Gpt2,
    /// tiktoken's `cl100k_base` (`CL100K`).
    Cl100k,
    /// tiktoken's `o200k_base` (`O200K`).
    O200k,
    /// Llama 3's (`LLAMA3`).
    Llama3,
    /// Qwen2's (`QWEN2`).
    Qwen2,
    /// A custom regex, run on fancy-regex.
    Regex {
        spec: String,
        regex: Box<fancy_regex::Regex>,
        /// Bytes of text no match covered, over every call (shared by clones).
        unmatched: Arc<AtomicU64>,
    },
}

impl Pattern {
    /// `"gpt2"`, `"cl100k"`, `"o200k"`, `"llama3"`, `"qwen2"` (any common
    /// spelling of one), or a regex of one's own; a misspelt preset is an
    /// error (`pattern_names.rs`).
    pub fn new(spec: &str) -> Result<Self, Error> {
        let spec = crate::pretokenize::pattern_names::resolve(spec)?;
        match spec {
            "gpt2" => return Ok(Pattern::Gpt2),
            "cl100k" => return Ok(Pattern::Cl100k),
            "o200k" => return Ok(Pattern::O200k),
            "llama3" => return Ok(Pattern::Llama3),
            "qwen2" => return Ok(Pattern::Qwen2),
            _ => {}
        }
        let regex = fancy_regex_for_long_texts(spec).map_err(|e| {
            Error::InvalidArgument(format!(
                "pattern {spec:?} does not compile: {}; give a preset (\"gpt2\", \"cl100k\", \"o200k\", \"llama3\", \"qwen2\") or a valid regex",
                compile_error_detail(&e)
            ))
        })?;
        Ok(Pattern::Regex { spec: spec.to_string(), regex: Box::new(regex), unmatched: Arc::default() })
    }

    /// What `new` was given: a preset name or the custom regex.
    pub fn spec(&self) -> &str {
        match self {
            Pattern::Gpt2 => "gpt2",
            Pattern::Cl100k => "cl100k",
            Pattern::O200k => "o200k",
            Pattern::Llama3 => "llama3",
            Pattern::Qwen2 => "qwen2",
            Pattern::Regex { spec, .. } => spec,
        }
    }

    /// The regex itself (the preset's, for a preset).
    pub fn regex_source(&self) -> &str {
        match self {
            Pattern::Gpt2 => GPT2,
            Pattern::Cl100k => CL100K,
            Pattern::O200k => O200K,
            Pattern::Llama3 => LLAMA3,
            Pattern::Qwen2 => QWEN2,
            Pattern::Regex { regex, .. } => regex.as_str(),
        }
    }

    /// The ASCII whitespace bytes a text may be cut before when they follow a
    /// non-space char (see the module docs); empty: special tokens only.
    pub fn cut_before(&self) -> &'static [u8] {
        match self {
            Pattern::Gpt2 => b" \t\r\n",
            Pattern::Cl100k | Pattern::O200k | Pattern::Llama3 | Pattern::Qwen2 => b" \t",
            Pattern::Regex { .. } => b"",
        }
    }

    /// Bytes that no match of a custom regex covered so far (each became a
    /// pre-token of its own); always 0 for the presets, which cover every char.
    pub fn unmatched_bytes(&self) -> u64 {
        match self {
            Pattern::Regex { unmatched, .. } => unmatched.load(Ordering::Relaxed),
            _ => 0,
        }
    }

    /// The preset's batch scanner (`scan::PieceEnds::fill` for its family),
    /// for a loop that changes where the document ends as it goes
    /// (`encode/document_end.rs`); `None` for a custom regex.
    pub(crate) fn batch_scanner(&self) -> Option<fn(&mut scan::PieceEnds, &[u8]) -> bool> {
        Some(match self {
            Pattern::Gpt2 => scan::PieceEnds::fill::<scan::gpt2::Gpt2>,
            Pattern::Cl100k => scan::PieceEnds::fill::<scan::cl100k::Cl100k>,
            Pattern::O200k => scan::PieceEnds::fill::<scan::o200k::O200k>,
            Pattern::Llama3 => scan::PieceEnds::fill::<scan::cl100k::Llama3>,
            Pattern::Qwen2 => scan::PieceEnds::fill::<scan::cl100k::Qwen2>,
            Pattern::Regex { .. } => return None,
        })
    }

    /// Call `visit` with each pre-token of one document, in order; together
    /// they are the whole document.
    #[inline]
    pub fn for_each_piece<'t>(&self, text: &'t str, mut visit: impl FnMut(&'t str)) -> Result<(), Error> {
        let mut from = 0;
        self.for_each_batch(
            text,
            #[inline(always)]
            |ends| {
                for &end in ends {
                    debug_assert!(text.is_char_boundary(end));
                    // SAFETY: `from < end <= text.len()`, and every end is a
                    // char boundary: the scanners step over whole chars (the
                    // block rules end pieces only before ASCII bytes), and a
                    // regex match ends on one.
                    visit(unsafe { text.get_unchecked(from..end) });
                    from = end;
                }
            },
        )
    }

    /// The pre-tokens of one document in batches, each given by the ends
    /// (exclusive byte offsets) of its pieces: the first piece of a batch
    /// starts where the last one of the previous batch ended (at 0 for the
    /// first), and the last batch's last end is the document's length. The
    /// encoder works a batch at a time (packing, prefetching, then lookups);
    /// a batch holds at most `scan::BATCH_ROOM` pieces.
    #[inline]
    pub fn for_each_batch(&self, text: &str, mut visit: impl FnMut(&[usize])) -> Result<(), Error> {
        match self {
            Pattern::Gpt2 => scan::for_each_batch::<scan::gpt2::Gpt2>(text, visit),
            Pattern::Cl100k => scan::for_each_batch::<scan::cl100k::Cl100k>(text, visit),
            Pattern::O200k => scan::for_each_batch::<scan::o200k::O200k>(text, visit),
            Pattern::Llama3 => scan::for_each_batch::<scan::cl100k::Llama3>(text, visit),
            Pattern::Qwen2 => scan::for_each_batch::<scan::cl100k::Qwen2>(text, visit),
            // Its matches cover the text: nothing to count as unmatched.
            Pattern::Regex { spec, regex, .. } if spec == superword::SUPERWORD_PATTERN => {
                return superword::for_each_batch(text, regex, visit);
            }
            Pattern::Regex { spec, regex, .. } if spec == superword_stage1::STAGE1_PATTERN => {
                return superword_stage1::for_each_batch(text, regex, visit);
            }
            Pattern::Regex { spec, regex, unmatched } => {
                let (mut covered, mut gaps) = (0, 0);
                let mut ends = Vec::with_capacity(scan::BATCH_PIECES);
                for found in regex.find_iter(text) {
                    let found = found.map_err(|e| search_failed(&format!("pattern {spec:?}"), &e))?;
                    if found.start() > covered {
                        ends.push(found.start());
                        gaps += found.start() - covered;
                    }
                    if !found.as_str().is_empty() {
                        ends.push(found.end());
                    }
                    covered = covered.max(found.end());
                    if ends.len() >= scan::BATCH_PIECES {
                        visit(&ends);
                        ends.clear();
                    }
                }
                if covered < text.len() {
                    ends.push(text.len());
                    gaps += text.len() - covered;
                }
                if !ends.is_empty() {
                    visit(&ends);
                }
                if gaps > 0 {
                    unmatched.fetch_add(gaps as u64, Ordering::Relaxed);
                }
            }
        }
        Ok(())
    }
}

/// How many times a regex may backtrack in one search before it fails.
/// fancy-regex counts a search's every start position as a backtrack, so its
/// default (10^6) failed on a text of a million chars where nothing matches:
/// `(?=(\d{3})+(?!\d))`, SuperBPE's split, on a megabyte without digits.
/// Oniguruma, which `tokenizers` runs, limits each start position instead.
/// 2^25 searches a text of tens of megabytes that way, and still stops a
/// regex that backtracks exponentially with an error within a second.
const BACKTRACK_LIMIT: usize = 1 << 25;

/// A regex from a pattern or a `tokenizer.json`, with `BACKTRACK_LIMIT`.
pub fn fancy_regex_for_long_texts(source: &str) -> Result<fancy_regex::Regex, fancy_regex::Error> {
    fancy_regex::RegexBuilder::new(source).backtrack_limit(BACKTRACK_LIMIT).build()
}

/// The error of a search that failed (`BACKTRACK_LIMIT`), saying what to change.
pub fn search_failed(what: &str, error: &fancy_regex::Error) -> Error {
    Error::InvalidArgument(format!(
        "{what} failed on a text ({error}): it backtracked over {BACKTRACK_LIMIT} times in one search, as a regex \
         that backtracks exponentially does, or one that matches nowhere in tens of megabytes; simplify the \
         regex or give shorter texts"
    ))
}

/// The most telling text of a compile error. fancy-regex hands parts of a
/// pattern to the `regex` crate, whose own syntax error (the pattern with a
/// caret under the fault, and the reason) it would otherwise reduce to
/// "error parsing pattern 0".
fn compile_error_detail(error: &fancy_regex::Error) -> String {
    if let fancy_regex::Error::CompileError(compile) = error {
        if let fancy_regex::CompileError::InnerError(build) = compile.as_ref() {
            if let Some(syntax) = build.syntax_error() {
                return syntax.to_string();
            }
        }
    }
    error.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(spec: &str, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        Pattern::new(spec).unwrap().for_each_piece(text, |p| out.push(p.to_string())).unwrap();
        out
    }

    #[test]
    fn presets_split_as_tiktoken_does() {
        // cl100k: digits in threes, punctuation keeps its newlines, letters may take one leading char.
        assert_eq!(
            pieces("cl100k", "Hello world's 12345  foo!!\n\n bar"),
            ["Hello", " world", "'s", " ", "123", "45", " ", " foo", "!!\n\n", " bar"]
        );
        assert_eq!(pieces("o200k", "HelloWorld's 1234"), ["Hello", "World's", " ", "123", "4"]);
        assert_eq!(pieces("gpt2", "a\n\n\nb"), ["a", "\n\n", "\n", "b"]);
    }

    #[test]
    fn text_no_match_covers_is_a_piece_of_its_own_and_counted() {
        let pattern = Pattern::new(r"\w+").unwrap();
        let mut out = Vec::new();
        pattern.for_each_piece(", ab, cd!", |p| out.push(p)).unwrap();
        assert_eq!(out, [", ", "ab", ", ", "cd", "!"]);
        assert_eq!(pattern.unmatched_bytes(), 5);
        assert_eq!(pieces("x*", "ab"), ["a", "b"]); // only empty matches: each char between them
        assert_eq!(Pattern::Gpt2.unmatched_bytes(), 0);
    }

    #[test]
    fn a_bad_regex_names_itself_and_where_it_fails() {
        let err = Pattern::new("(unclosed").unwrap_err().to_string();
        assert!(err.starts_with("pattern \"(unclosed\" does not compile: Parsing error at position 9"), "{err}");
        // Rejected by the inner regex crate: its caret and reason come through.
        let err = Pattern::new("[z-a]").unwrap_err().to_string();
        assert!(err.contains("^^^") && err.contains("invalid character class range"), "{err}");
    }
}
