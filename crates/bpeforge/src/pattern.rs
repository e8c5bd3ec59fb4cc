//! The pre-tokenizer: GPT-2's pattern (the default, CS336), OpenAI's cl100k
//! and o200k presets, or any regex a user gives.
//!
//! GPT-2 runs on the hand-written scanner (`pretokenize.rs`), the fast path.
//! The others run on `fancy-regex`, the engine tiktoken uses for exactly these
//! patterns (look-around, possessive quantifiers), matching as the Python
//! `regex` package does: each match, left to right, is a pre-token. Unlike
//! `findall`, a match is kept whole even if the pattern has capture groups,
//! and empty matches are dropped. Text that no match covers (a custom regex
//! such as `\w+` leaves the spaces) is a pre-token of its own, so encoding is
//! lossless for every pattern; `unmatched_bytes` counts it, for the report.
//!
//! Unicode: fancy-regex's classes are Unicode 16.0, the `regex` package's
//! 17.0; they differ only on the ~4,700 code points 17.0 newly assigned
//! (tiktoken splits those as we do). GPT-2's scanner uses tables generated
//! from `regex` and agrees everywhere. See `tests/test_patterns.py`.
//!
//! Where a text may be cut for parallel work also depends on the pattern
//! (`cut_before`, used by `chunking.rs` and `shards.rs`): before ASCII
//! whitespace that follows a non-space char, where no piece can span the cut
//! and where the piece after it starts whatever came before (no look-behind):
//! - GPT-2: before a space, tab, CR or LF; its pieces hold whitespace only at
//!   their start or as whitespace runs.
//! - cl100k and o200k: before a space or tab only. Their punctuation pieces
//!   keep the newlines (and o200k's slashes) that follow, as in "!\n"
//!   (`[^\s\p{L}\p{N}]++[\r\n]*+`), so a cut before CR or LF is not safe.
//! - a custom regex: nowhere but special tokens and file ends.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::error::Error;
use crate::pretokenize::Gpt2Splitter;

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

#[derive(Debug, Clone, Default)]
pub enum Pattern {
    #[default]
    Gpt2,
    Regex {
        spec: String,
        regex: Box<fancy_regex::Regex>,
        /// Bytes of text no match covered, over every call (shared by clones).
        unmatched: Arc<AtomicU64>,
    },
}

impl Pattern {
    /// `"gpt2"`, `"cl100k"`, `"o200k"`, or a regex of one's own.
    pub fn new(spec: &str) -> Result<Self, Error> {
        let source = match spec {
            "gpt2" => return Ok(Pattern::Gpt2),
            "cl100k" => CL100K,
            "o200k" => O200K,
            custom => custom,
        };
        let regex = fancy_regex::Regex::new(source).map_err(|e| {
            Error::InvalidArgument(format!(
                "pattern {spec:?} does not compile: {}; give \"gpt2\", \"cl100k\", \"o200k\" or a valid regex",
                compile_error_detail(&e)
            ))
        })?;
        Ok(Pattern::Regex { spec: spec.to_string(), regex: Box::new(regex), unmatched: Arc::default() })
    }

    /// What `new` was given: a preset name or the custom regex.
    pub fn spec(&self) -> &str {
        match self {
            Pattern::Gpt2 => "gpt2",
            Pattern::Regex { spec, .. } => spec,
        }
    }

    /// The regex itself (the preset's, for a preset).
    pub fn regex_source(&self) -> &str {
        match self {
            Pattern::Gpt2 => GPT2,
            Pattern::Regex { regex, .. } => regex.as_str(),
        }
    }

    /// The ASCII whitespace bytes a text may be cut before when they follow a
    /// non-space char (see the module docs); empty: special tokens only.
    pub fn cut_before(&self) -> &'static [u8] {
        match self {
            Pattern::Gpt2 => b" \t\r\n",
            Pattern::Regex { spec, .. } if spec == "cl100k" || spec == "o200k" => b" \t",
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

    /// Call `visit` with each pre-token of one document, in order; together
    /// they are the whole document.
    #[inline]
    pub fn for_each_piece<'t>(&self, text: &'t str, mut visit: impl FnMut(&'t str)) -> Result<(), Error> {
        match self {
            Pattern::Gpt2 => Gpt2Splitter::new(text).for_each(visit),
            Pattern::Regex { spec, regex, unmatched } => {
                let (mut covered, mut gaps) = (0, 0);
                for found in regex.find_iter(text) {
                    let found = found
                        .map_err(|e| Error::InvalidArgument(format!("pattern {spec:?} failed on the input: {e}")))?;
                    if found.start() > covered {
                        visit(&text[covered..found.start()]);
                        gaps += found.start() - covered;
                    }
                    if !found.as_str().is_empty() {
                        visit(found.as_str());
                    }
                    covered = covered.max(found.end());
                }
                if covered < text.len() {
                    visit(&text[covered..]);
                    gaps += text.len() - covered;
                }
                if gaps > 0 {
                    unmatched.fetch_add(gaps as u64, Ordering::Relaxed);
                }
            }
        }
        Ok(())
    }
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
