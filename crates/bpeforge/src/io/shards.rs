//! Planning shards: byte ranges of one big file that can be counted or
//! encoded apart (on other machines) with the results of the whole file.
//!
//! `chunking.rs` finds its cuts reading a file from the start, so it knows
//! which special tokens matched. A shard planner must cut near an arbitrary
//! offset without reading what comes before, so it looks only at a window
//! around each candidate and takes a cut that is safe whatever came before:
//! - no occurrence of any special token spans the cut (the matches on each
//!   side are then those of the whole text: leftmost-longest matching never
//!   carries a match across a position that no occurrence crosses), and
//! - either the cut is a pre-token split point (ASCII whitespace of the
//!   pattern's `cut_before` after a non-space char, `pretokenize/cuts.rs`),
//!   or an occurrence that no other occurrence overlaps ends there (it is
//!   matched in any reading, so the cut falls at a document boundary).
//!
//! Compressed files cannot be entered in the middle: each is one shard.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::ops::Range;
use std::path::Path;

use aho_corasick::{AhoCorasick, MatchKind};

use crate::error::Error;
use crate::io::chunking::Source;
use crate::io::input::Compression;
use crate::pretokenize::cuts::is_split_point;

/// Where to look for a cut first: this many bytes after the nominal offset,
/// doubled while none is found (one huge piece), up to the end of the file.
const FIRST_WINDOW: u64 = 64 << 10;

/// The shards of `path`, about `target` bytes each, in file order. Their
/// ranges cover the file exactly; a file of `target` bytes or fewer, or a
/// compressed one, is one whole shard.
pub fn plan_shards(
    path: &Path,
    target: u64,
    special_tokens: &[String],
    cut_before: &[u8],
) -> Result<Vec<Source>, Error> {
    let io_error = |e| Error::io(path, e);
    let len = std::fs::metadata(path).map_err(io_error)?.len();
    if Compression::of(path).is_compressed() || len <= target.max(1) {
        return Ok(vec![Source::whole(path)]);
    }
    let finder = CutFinder::new(special_tokens, cut_before)?;
    let mut file = File::open(path).map_err(io_error)?;
    let mut shards = Vec::new();
    let mut start = 0;
    while start < len {
        let end = match start.checked_add(target.max(1)).filter(|&nominal| nominal < len) {
            Some(nominal) => finder.first_cut_from(&mut file, nominal, len).map_err(io_error)?,
            None => len,
        };
        shards.push(Source::range(path, start..end));
        start = end;
    }
    Ok(shards)
}

struct CutFinder<'a> {
    /// Every occurrence of every special token, overlapping ones included.
    occurrences: Option<AhoCorasick>,
    max_len: u64,
    cut_before: &'a [u8],
}

impl<'a> CutFinder<'a> {
    fn new(special_tokens: &[String], cut_before: &'a [u8]) -> Result<Self, Error> {
        let occurrences = if special_tokens.is_empty() {
            None
        } else {
            let built = AhoCorasick::builder().match_kind(MatchKind::Standard).build(special_tokens);
            Some(built.map_err(|e| Error::InvalidArgument(format!("special tokens: {e}")))?)
        };
        let max_len = special_tokens.iter().map(|t| t.len() as u64).max().unwrap_or(0);
        Ok(Self { occurrences, max_len, cut_before })
    }

    /// The first safe cut at or after `nominal`, or `len` if there is none.
    fn first_cut_from(&self, file: &mut File, nominal: u64, len: u64) -> std::io::Result<u64> {
        // Enough before the candidates to see every occurrence that could span
        // or overlap one ending at a candidate, and the char before it.
        let before = (2 * self.max_len + 4).min(nominal);
        let mut after = FIRST_WINDOW;
        loop {
            let window_start = nominal - before;
            let window_end = nominal.saturating_add(after).min(len);
            let window = read_window(file, window_start..window_end)?;
            // Candidates need `max_len` bytes after them in view, unless the file ends.
            let last =
                if window_end == len { window.len() } else { window.len().saturating_sub(self.max_len as usize) };
            if let Some(cut) = self.first_safe(&window, before as usize, last) {
                return Ok(window_start + cut as u64);
            }
            if window_end == len {
                return Ok(len);
            }
            after = after.saturating_mul(2);
        }
    }

    /// The first safe cut in `first..last` of `window` (see the module docs).
    fn first_safe(&self, window: &[u8], first: usize, last: usize) -> Option<usize> {
        let found: Vec<Range<usize>> = match &self.occurrences {
            Some(ac) => ac.find_overlapping_iter(window).map(|m| m.range()).collect(),
            None => Vec::new(),
        };
        let spanned = |pos: usize| found.iter().any(|r| r.start < pos && pos < r.end);
        let isolated_end = |pos: usize| {
            found.iter().any(|r| {
                r.end == pos && found.iter().all(|other| other == r || other.end <= r.start || other.start >= r.end)
            })
        };
        (first.max(1)..last).find(|&pos| {
            !spanned(pos)
                && ((self.cut_before.contains(&window[pos]) && is_split_point(window, pos)) || isolated_end(pos))
        })
    }
}

fn read_window(file: &mut File, range: Range<u64>) -> std::io::Result<Vec<u8>> {
    file.seek(SeekFrom::Start(range.start))?;
    let mut window = Vec::with_capacity((range.end - range.start) as usize);
    file.take(range.end - range.start).read_to_end(&mut window)?;
    Ok(window)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pretokenize::pattern::Pattern;
    use crate::pretokenize::specials::SpecialSplitter;
    use crate::train::count::{count_files, Counting};
    use crate::Silent;

    /// A small deterministic generator (no crate needed for a test this size).
    struct Lcg(u64);

    impl Lcg {
        fn below(&mut self, n: usize) -> usize {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((self.0 >> 33) as usize) % n
        }
    }

    fn random_text(rng: &mut Lcg, len: usize) -> String {
        // Specials that overlap each other and contain spaces, words, runs of
        // whitespace, and multi-byte chars: the cases a cut can get wrong.
        let parts = [
            "<|e|>",
            "<|e|><|e|>",
            "<s> x",
            "x</s>",
            " ",
            "  ",
            "\n",
            "\n\n",
            "ab",
            "é",
            "日本",
            "'s",
            "9",
            "\u{3000}",
        ];
        let mut text = String::new();
        while text.len() < len {
            text.push_str(parts[rng.below(parts.len())]);
        }
        text
    }

    /// A fresh directory for one test's files (removed by the test).
    fn scratch_dir(test: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("bpeforge-shards-{test}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn counts(sources: &[Source], specials: &SpecialSplitter, pattern: &Pattern) -> Vec<(Vec<u8>, u64)> {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        let how = Counting { specials, pattern, chunk_size: 7, profile: false, lines: false };
        let (table, _, _) = count_files(sources, &how, &pool, &Silent).unwrap();
        let mut entries = Vec::new();
        table.for_each(|k, v| entries.push((k.to_vec(), v)));
        entries.sort();
        entries
    }

    #[test]
    fn shards_count_like_the_whole_file_and_cover_it() {
        let dir = scratch_dir("counts");
        let tokens: Vec<String> = ["<|e|>", "<|e|><|e|>", "<s> x", "x</s>"].map(String::from).to_vec();
        let specials = SpecialSplitter::new(&tokens).unwrap();
        let mut rng = Lcg(7);
        let patterns = ["gpt2", "cl100k", "o200k", "llama3", "qwen2"].map(|spec| Pattern::new(spec).unwrap());
        for (round, pattern) in patterns.iter().cycle().take(100).enumerate() {
            let path = dir.join(format!("{round}.txt"));
            let len = 50 + rng.below(400);
            std::fs::write(&path, random_text(&mut rng, len)).unwrap();
            let whole = counts(&[Source::whole(&path)], &specials, pattern);
            let file_len = std::fs::metadata(&path).unwrap().len();
            for target in [1, 5, 17, 64] {
                let shards = plan_shards(&path, target, &tokens, pattern.cut_before()).unwrap();
                let ranges: Vec<Range<u64>> = shards.iter().map(|s| s.range.clone().unwrap_or(0..file_len)).collect();
                assert_eq!(ranges.first().unwrap().start, 0);
                assert!(ranges.windows(2).all(|w| w[0].end == w[1].start && w[0].start < w[0].end));
                assert_eq!(ranges.last().unwrap().end, file_len);
                assert_eq!(counts(&shards, &specials, pattern), whole, "round {round}, target {target}: {ranges:?}");
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn never_cuts_after_an_occurrence_that_another_one_overlaps() {
        // "<s> x" matches first, so "x</s>" is text here: a cut after it would
        // split the text "</s>'s" that cl100k pre-tokenizes as ">'" + "s".
        let dir = scratch_dir("overlap");
        let path = dir.join("t.txt");
        std::fs::write(&path, "a<s> x</s>'s b<s> x</s>'s").unwrap();
        let tokens: Vec<String> = ["<s> x", "x</s>"].map(String::from).to_vec();
        let specials = SpecialSplitter::new(&tokens).unwrap();
        let pattern = Pattern::new("cl100k").unwrap();
        let shards = plan_shards(&path, 1, &tokens, b"").unwrap();
        assert_eq!(counts(&shards, &specials, &pattern), counts(&[Source::whole(&path)], &specials, &pattern));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn presets_keep_punctuation_with_the_newlines_after_it() {
        // cl100k, o200k, llama3 and qwen2 pre-tokenize "!\n" and "?!\r\n\r\n"
        // as one piece each: a cut before the CR or LF would split them.
        let dir = scratch_dir("newlines");
        let path = dir.join("t.txt");
        std::fs::write(&path, "a!\nb?!\r\n\r\nc /\nd e\t!\n").unwrap();
        let specials = SpecialSplitter::new(&[]).unwrap();
        for spec in ["cl100k", "o200k", "llama3", "qwen2"] {
            let pattern = Pattern::new(spec).unwrap();
            let shards = plan_shards(&path, 1, &[], pattern.cut_before()).unwrap();
            assert!(shards.len() > 2, "{spec}: expected cuts before the spaces and tab");
            assert_eq!(
                counts(&shards, &specials, &pattern),
                counts(&[Source::whole(&path)], &specials, &pattern),
                "{spec}"
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn small_and_compressed_files_are_one_whole_shard() {
        let dir = scratch_dir("whole");
        for name in ["small.txt", "big.txt.gz"] {
            let path = dir.join(name);
            std::fs::write(&path, "a b c d e f g").unwrap();
            let target = if name == "small.txt" { 100 } else { 2 };
            assert_eq!(plan_shards(&path, target, &[], b" ").unwrap(), [Source::whole(&path)]);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
