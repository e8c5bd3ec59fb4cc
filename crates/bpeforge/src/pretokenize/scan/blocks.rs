//! The scanning loop: 64 bytes at a time where a family has block rules and
//! the text is ASCII (for GPT-2 also its curly quotes and dashes, below), one
//! piece at a time (`Scanner::piece_end`) elsewhere.
//!
//! Why: the char-by-char scanners branch on the class of every piece's first
//! chars, and in English text the next piece's class is as good as random, so
//! those branches mispredict. Here a window of 64 bytes is classified into
//! bitmasks (`classify.rs`) and the family's rules turn them into a mask of
//! piece starts (`Scanner::block_starts`) with word operations; the pieces are
//! the spans between set bits.
//!
//! Two phases (as gigatoken and simdjson do): the scan writes the ends of a
//! batch of pieces into an array (`PieceEnds::fill`), eight set bits at a time
//! without a branch per piece, and only then does the caller look at the
//! pieces (a closure called per piece from inside the window loop was half the
//! scan's time). The window loop is compiled once per way of classifying a
//! block (SSE2, AVX2, AVX-512BW), and `fill` picks the best the CPU has.
//!
//! The rules are exact only where they see every byte they depend on as ASCII:
//! a byte's start status depends on bytes `i - 1..=i + 1` (a contraction's on
//! the two after its apostrophe), so a window is trusted up to two bytes
//! before its first non-ASCII byte. Except, in a family that opts in
//! (`Scanner::BLOCKS_PASS_PUNCTUATION`: GPT-2), General Punctuation chars that
//! are "other" (’ “ ” — …, `is_other_punctuation`): their three bytes carry no
//! letter, digit or space bit, and where an "other" char only continues a run
//! of "other" chars or takes U+0020 before it, three "other" bytes start and
//! end a piece exactly where the char does. They sent 8% of Gutenberg's pieces
//! char by char; 0.7% now.
//!
//! Each window begins at a known piece start and the next at the last start it
//! found, so no state crosses windows; where a window yields no whole piece
//! the char-by-char scanner takes over. Both paths give the same pieces: the
//! tests below compare them on generated text, and every preset's scanner is
//! checked against `regex` in `tests/test_scanners.py`.

#[cfg(target_arch = "aarch64")]
use super::classify::Neon;
#[cfg(target_arch = "x86_64")]
use super::classify::{Avx2, Avx512};
use super::classify::{Baseline, Classify, Level, Masks, BLOCK};
use super::letters_of_three::pass_letters;
use super::Scanner;
use std::mem::MaybeUninit;

/// Bytes a window reads: the block and one byte of look-ahead.
const WINDOW: usize = BLOCK + 1;
/// The longest char-by-char turn after windows that met non-ASCII: 4 KiB.
const MAX_SCALAR_TURN_SHIFT: usize = 6;
/// A window that stops (meets non-ASCII) within this many bytes counts
/// towards a char-by-char turn.
const WASTED_WINDOW: usize = 16;
/// A batch of piece ends is handed over once it holds this many. The
/// encoder prefetches a batch's buckets before it looks any up, so a batch
/// is also how far ahead the prefetches run: warm encoding of 10 MB of
/// Gutenberg (`examples/encode_file`) ran at 545-599 MB/s with 256, 560-600
/// with 384, 615-661 with 512 and 628-658 with 768.
pub(crate) const BATCH_PIECES: usize = 512;
/// Room for a batch: a window adds at most 63 ends past `BATCH_PIECES - 1`,
/// and the unconditional writes of `push_starts` 8 more.
pub(crate) const BATCH_ROOM: usize = BATCH_PIECES + BLOCK + 8;

/// The ends (exclusive byte offsets) of consecutive pieces of a text, found
/// ahead of their use; the first piece starts where the previous batch's
/// last one ended (0 for the first batch).
#[repr(C)]
pub(crate) struct PieceEnds {
    len: usize,
    /// Where the scan stands: the start of the next piece.
    start: usize,
    /// The char-by-char scanner's turn lasts until here.
    scalar_until: usize,
    /// Windows in a row that met non-ASCII within their first
    /// `WASTED_WINDOW` bytes: in Cyrillic or CJK text nearly every one does,
    /// and classifying them only to hand them over cost a fifth of the
    /// scanning time, so each such window lengthens the next char-by-char
    /// turn (up to `MAX_SCALAR_TURN`); any other window resets it. Otherwise
    /// the char-by-char scanner takes only the pieces up to the window's
    /// first non-ASCII byte that stopped it (an accented letter in English;
    /// a curly quote too, except in GPT-2).
    windows_stopped: usize,
    /// The first `len` are written; the rest are not initialized, so that
    /// a scan (one per document: 20news has one every 1.6 KB) does not zero
    /// 4.6 KiB first (`memset` was 1-2% of warm encoding there). Last, and
    /// the fields in order (`repr(C)`): after the fields set to 0 the
    /// compiler zeroed it all in one `memset`.
    ends: [MaybeUninit<usize>; BATCH_ROOM],
}

impl PieceEnds {
    pub(crate) fn new() -> Self {
        Self { len: 0, start: 0, scalar_until: 0, windows_stopped: 0, ends: [MaybeUninit::uninit(); BATCH_ROOM] }
    }

    pub(crate) fn as_slice(&self) -> &[usize] {
        let written = &self.ends[..self.len];
        // SAFETY: the first `len` ends are written (`scalar_turn`,
        // `push_starts`), and `MaybeUninit<usize>` has `usize`'s layout.
        unsafe { std::slice::from_raw_parts(written.as_ptr().cast::<usize>(), written.len()) }
    }

    /// Scan on from byte `start`, a piece start, as a new scan would: the
    /// batch is emptied, and the scan that wrote it is undone past `start`.
    /// The encoder rescans a batch this way when the document turns out to
    /// end earlier than it was scanned for (`encode/document_end.rs`).
    pub(crate) fn rewind(&mut self, start: usize) {
        (self.len, self.start, self.scalar_until, self.windows_stopped) = (0, start, 0, 0);
    }

    /// Replace the batch with the next pieces of `bytes` (the text this scan
    /// began on, or a prefix of it longer than the pieces so far), at least `BATCH_PIECES` of them unless the text ends first;
    /// false when there were none left.
    #[inline(always)]
    pub(crate) fn fill<S: Scanner>(&mut self, bytes: &[u8]) -> bool {
        // SAFETY: `active` is a level the CPU has.
        unsafe { self.fill_at::<S>(bytes, Level::active()) }
    }

    /// `fill` with `level`'s classifier. A batch (about 1 KB of English) is
    /// worth one branch on the level; the AVX loops are functions of their
    /// own, compiled with their features, and the baseline's (and NEON's,
    /// which every aarch64 target enables) is inlined here.
    ///
    /// # Safety
    /// The CPU has `level` (`Level::is_supported`).
    #[inline(always)]
    unsafe fn fill_at<S: Scanner>(&mut self, bytes: &[u8], level: Level) -> bool {
        debug_assert!(level.is_supported());
        // SAFETY: the caller vouches for `level`; the baseline is on every CPU.
        unsafe {
            match level {
                Level::Baseline => self.fill_with::<S, Baseline>(bytes),
                #[cfg(target_arch = "x86_64")]
                Level::Avx2 => self.fill_avx2::<S>(bytes),
                #[cfg(target_arch = "x86_64")]
                Level::Avx512 => self.fill_avx512::<S>(bytes),
                #[cfg(target_arch = "aarch64")]
                Level::Neon => self.fill_with::<S, Neon>(bytes),
            }
        }
    }

    /// `fill_with` for AVX2, compiled with it and with the scalar
    /// extensions every AVX2 CPU has: TZCNT, LZCNT and POPCNT for the bit
    /// loops, which x86-64's baseline lacks (`count_ones` is otherwise a
    /// dozen instructions).
    ///
    /// # Safety
    /// The CPU has these features (`Level::Avx2.is_supported()`).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,bmi1,bmi2,popcnt,lzcnt")]
    unsafe fn fill_avx2<S: Scanner>(&mut self, bytes: &[u8]) -> bool {
        // SAFETY: as for this function.
        unsafe { self.fill_with::<S, Avx2>(bytes) }
    }

    /// `fill_with` for AVX-512BW, compiled with it (and as `fill_avx2`).
    ///
    /// # Safety
    /// The CPU has these features (`Level::Avx512.is_supported()`).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw,avx2,bmi1,bmi2,popcnt,lzcnt")]
    unsafe fn fill_avx512<S: Scanner>(&mut self, bytes: &[u8]) -> bool {
        // SAFETY: as for this function.
        unsafe { self.fill_with::<S, Avx512>(bytes) }
    }

    /// The scanning loop, with classifier `C`; inlined whole into each
    /// entry above, so that `C::classify` is compiled with its features.
    ///
    /// # Safety
    /// The CPU has `C`'s instructions.
    #[inline(always)]
    unsafe fn fill_with<S: Scanner, C: Classify>(&mut self, bytes: &[u8]) -> bool {
        self.len = 0;
        while self.start < bytes.len() && self.len < BATCH_PIECES {
            let start = self.start;
            if self.window_fits::<S>(bytes) {
                // SAFETY: the caller vouches for `C`.
                let (starts, mut stopped_at) = unsafe { window_starts::<S, C>(bytes, start) };
                // A window that stopped within its first bytes was classified
                // for little (see `windows_stopped`); English with curly
                // quotes stops often, but late.
                if stopped_at > start && stopped_at - start <= WASTED_WINDOW {
                    if self.windows_stopped > 0 {
                        let turn = BLOCK << self.windows_stopped.min(MAX_SCALAR_TURN_SHIFT);
                        stopped_at = stopped_at.max(start + turn);
                    }
                    self.windows_stopped += 1;
                } else {
                    self.windows_stopped = 0;
                }
                self.scalar_until = stopped_at;
                let last = 63 - starts.leading_zeros() as usize;
                if last > 0 {
                    self.push_starts(start, starts & !1);
                    self.start = start + last;
                    continue;
                }
            } else if self.tail_fits::<S>(bytes) {
                // SAFETY: the caller vouches for `C`.
                unsafe { self.tail_window::<S, C>(bytes) };
            }
            self.scalar_turn::<S>(bytes);
        }
        self.len > 0
    }

    /// Whether the text's last bytes, too few for a window, are to be
    /// scanned as one padded with spaces (`tail_window`).
    #[inline(always)]
    fn tail_fits<S: Scanner>(&self, bytes: &[u8]) -> bool {
        S::HAS_BLOCK_RULES && self.start >= self.scalar_until && S::ends_as_if_spaces_followed(bytes)
    }

    /// The pieces of the text's last bytes (fewer than `WINDOW`) but the
    /// last, from a window of them followed by spaces, which the rules take
    /// as they take the end of the text (`Scanner::ends_as_if_spaces_followed`);
    /// the char-by-char scanner then finds where the last piece ends where
    /// the window stopped trusting its rules before the pad. A window
    /// stopped by a char it cannot pass gives the pieces before that char;
    /// the char-by-char scanner takes those after it, until a window of
    /// what is left of the tail may be tried again (`scalar_turn`).
    ///
    /// Why: a text of a line (50 bytes of English) had no window at all,
    /// and the char-by-char scanner took a third of encoding a batch of
    /// such lines with warm caches.
    ///
    /// # Safety
    /// The CPU has `C`'s instructions.
    #[inline(always)]
    unsafe fn tail_window<S: Scanner, C: Classify>(&mut self, bytes: &[u8]) {
        let (start, tail) = (self.start, &bytes[self.start..]);
        // SAFETY: the caller vouches for `C`; the tail is shorter than a window.
        let masks = unsafe { C::classify_padded(tail) };
        // SAFETY: as above.
        let leads = || unsafe { C::letter_leads_padded(tail) };
        let (starts, stopped_at) = starts_of::<S>(bytes, start, &masks, b' ', leads);
        // Stopped, the window still gives the pieces before the char that
        // stopped it (`starts_of` keeps the starts it trusts), as a whole
        // window does; the char-by-char scanner takes over from its last.
        self.scalar_until = if stopped_at == start { bytes.len() } else { stopped_at };
        // A start in the pad, still trusted, ends the last piece at the text's end: no match ending
        // there looked past it but through `(?!\S)` (`Scanner::ends_as_if_spaces_followed`). Found
        // char by char, a line's last piece was a sixteenth of DeepSeek V3's time on lines.
        let starts = starts & below(tail.len() + 1);
        self.push_starts(start, starts & !1);
        self.start = start + (63 - starts.leading_zeros() as usize);
    }

    /// Whether the next piece is to come from a window.
    #[inline(always)]
    fn window_fits<S: Scanner>(&self, bytes: &[u8]) -> bool {
        S::HAS_BLOCK_RULES && self.start >= self.scalar_until && self.start + WINDOW <= bytes.len()
    }

    /// The char-by-char scanner's pieces, one at least unless the text is
    /// done, until a window or a tail's window fits or the batch is full.
    ///
    /// Out of line, and compiled for the x86-64 baseline whatever the
    /// level, so that the window loop is small: inlined, the char-by-char
    /// scanner made every level 10-25% slower on English, and in the AVX
    /// loops each of its calls into the Unicode tables (once per non-ASCII
    /// char) cleared the upper halves of the vector registers and reloaded
    /// the loop's vector constants after; out of line that is once a turn.
    #[inline(never)]
    fn scalar_turn<S: Scanner>(&mut self, bytes: &[u8]) {
        while self.start < bytes.len() {
            let start = self.start;
            let end = S::piece_end(bytes, start);
            debug_assert!(end > start);
            self.ends[self.len].write(end);
            self.len += 1;
            self.start = end;
            if end >= bytes.len()
                || self.len >= BATCH_PIECES
                || self.window_fits::<S>(bytes)
                || self.tail_fits::<S>(bytes)
            {
                break;
            }
        }
    }

    /// Append `base + i` for each set bit `i` of `starts`: eight at a time,
    /// written whether or not the bits are there (a window holds 10-15
    /// pieces of English, and a loop that stops at the last bit mispredicts
    /// its exit), counted by `count_ones`.
    ///
    /// The stores are volatile only so that they stay eight scalar stores:
    /// in the AVX-512 loop LLVM vectorized the eight `trailing_zeros` into
    /// a population count by byte shuffles (`vpshufb`, `vpsadbw`) on values
    /// moved in one by one, and the scanner alone ran 8-13% slower on
    /// English (`examples/bench_pretokenize`, gpt2 2,404-2,540 against
    /// 2,723-2,747 MB/s, o200k 1,437-1,468 against 1,582-1,583).
    #[inline(always)]
    fn push_starts(&mut self, base: usize, mut starts: u64) {
        let count = starts.count_ones() as usize;
        let mut at = self.len;
        loop {
            let eight: &mut [MaybeUninit<usize>; 8] = (&mut self.ends[at..at + 8]).try_into().expect("room for eight");
            for end in eight.iter_mut() {
                // SAFETY: `end` is a valid, writable slot of `ends`.
                unsafe { std::ptr::write_volatile(end.as_mut_ptr(), base + starts.trailing_zeros() as usize) };
                starts &= starts.wrapping_sub(1);
            }
            at += 8;
            if starts == 0 {
                break;
            }
        }
        self.len += count;
    }
}

/// Call `visit` with each batch of piece ends of `text` as scanner `S`
/// splits it.
#[inline(always)]
pub(crate) fn for_each_batch<S: Scanner>(text: &str, mut visit: impl FnMut(&[usize])) {
    let mut batch = PieceEnds::new();
    while batch.fill::<S>(text.as_bytes()) {
        visit(batch.as_slice());
    }
}

/// The piece starts of the window at `start` that its ASCII bytes (and
/// passed punctuation) decide (bit `i` for byte `start + i`; bit 0 always
/// set), and where the char-by-char scanner should take over if the window
/// stopped short: past the first byte that stopped it, or `start` when it
/// did not stop.
///
/// # Safety
/// The CPU has `C`'s instructions.
#[inline(always)]
unsafe fn window_starts<S: Scanner, C: Classify>(bytes: &[u8], start: usize) -> (u64, usize) {
    let block: &[u8; BLOCK] = bytes[start..start + BLOCK].try_into().expect("a whole block");
    // SAFETY: the caller vouches for `C`.
    let masks = unsafe { C::classify(block) };
    // SAFETY: as above.
    starts_of::<S>(bytes, start, &masks, bytes[start + BLOCK], || unsafe { C::letter_leads(block) })
}

/// `window_starts` of the block at `start` with `masks` and look-ahead byte
/// `ahead` (which a tail's window has from its padding, past `bytes`);
/// `letter_leads` gives the block's `Classify::letter_leads`, asked for
/// only where letters may be passed.
#[inline(always)]
fn starts_of<S: Scanner>(
    bytes: &[u8],
    start: usize,
    masks: &Masks,
    ahead: u8,
    letter_leads: impl FnOnce() -> u64,
) -> (u64, usize) {
    let mut passed = *masks;
    let (stopping, ahead_passed) = if S::BLOCKS_PASS_PUNCTUATION && masks.non_ascii != 0 {
        stopping_non_ascii(bytes, start, masks.non_ascii)
    } else if S::BLOCKS_PASS_LETTERS && masks.non_ascii != 0 {
        (pass_letters(bytes, start, &mut passed, letter_leads()), false)
    } else if S::BLOCKS_PASS_CJK_WORDS && masks.non_ascii != 0 {
        (S::pass_cjk_words(bytes, start, &mut passed, letter_leads()), false)
    } else {
        (masks.non_ascii, false)
    };
    let masks = &passed;
    // Bits below `trusted` have all of bytes `i - 1..=i + 1` in ASCII or in
    // passed punctuation.
    // Where a window passes letters, a char of three bytes that the block's
    // end cuts (or whose next char it cuts) is the next window's to pass, so
    // the char-by-char scanner is not sent there: in Japanese text two
    // windows in three end inside a char.
    let cut_by_end = |at: usize| {
        (S::BLOCKS_PASS_LETTERS || S::BLOCKS_PASS_CJK_WORDS)
            && at + 3 >= BLOCK
            && bytes.get(start + at).is_some_and(|&b| b & 0xF0 == 0xE0)
    };
    let (trusted, stopped_at) = if stopping != 0 {
        let first = stopping.trailing_zeros() as usize;
        (first.saturating_sub(1), if cut_by_end(first) { start } else { start + first + 1 })
    } else if ahead >= 0x80 && !ahead_passed {
        (BLOCK - 1, if cut_by_end(BLOCK) { start } else { start + WINDOW })
    } else {
        (BLOCK, start)
    };
    let starts = S::block_starts(bytes, start, masks, ahead, trusted) & below(trusted);
    (starts | 1, stopped_at)
}

/// The bits of `non_ascii` (the window at `start`'s) from the first char on
/// that the window cannot pass, and whether the look-ahead byte ends a
/// passed char. A passed char is "other" punctuation
/// (`is_other_punctuation`) whose three bytes the window may read (its
/// block and the look-ahead byte); the masks already class its bytes as
/// "other" (neither letter, digit nor space). The window begins at a char
/// boundary and passes whole chars, so each byte looked at is a lead byte.
/// Where the look-ahead byte ends a passed char, byte 63 is that char's
/// second byte, not a space, so GPT-2's one rule on the look-ahead byte
/// (does a word follow a run of spaces) is not asked about it.
#[inline(always)]
fn stopping_non_ascii(bytes: &[u8], start: usize, mut non_ascii: u64) -> (u64, bool) {
    let mut ahead_passed = false;
    while non_ascii != 0 {
        let at = non_ascii.trailing_zeros() as usize;
        // A tail's window (`tail_window`) may end before a char of fewer bytes.
        let char_bytes = bytes.get(start + at..start + at + 3);
        if at + 3 > WINDOW || !char_bytes.is_some_and(is_other_punctuation) {
            return (non_ascii, false);
        }
        non_ascii &= !(0b111 << at);
        ahead_passed = at + 3 == WINDOW;
    }
    (0, ahead_passed)
}

/// Whether the char that begins `encoded` (3 bytes of valid UTF-8 from a
/// char boundary on) is in U+2000..U+203F (`E2 80 xx`: General
/// Punctuation's first half, where English's curly quotes, dashes and
/// ellipsis are) and "other" (`[^\s\p{L}\p{N}]`): all of them but the
/// spaces U+2000..U+200A, U+2028, U+2029 and U+202F (checked against
/// `charclass` below and against `regex` by the Python tests).
#[inline(always)]
fn is_other_punctuation(encoded: &[u8]) -> bool {
    matches!(encoded, [0xE2, 0x80, 0x8B..=0xA7 | 0xAA..=0xAE | 0xB0..=0xBF])
}

/// The bits below `n` (`n <= 64`).
#[inline(always)]
pub(crate) fn below(n: usize) -> u64 {
    if n >= 64 {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

/// Masks shifted so that bit `i` holds byte `i - 1`'s bit (0 at bit 0: the
/// byte before a window is never looked at; bit 0 is a start anyway).
#[inline(always)]
pub(crate) fn before(mask: u64) -> u64 {
    mask << 1
}

/// Masks shifted so that bit `i` holds byte `i + 1`'s bit; `ahead_bit` is
/// that of the byte after the block.
#[inline(always)]
pub(crate) fn after(mask: u64, ahead_bit: bool) -> u64 {
    (mask >> 1) | (ahead_bit as u64) << 63
}

/// Apply contractions to `starts`: at each start on an apostrophe that
/// `suffix_len(bytes, index)` recognises (it returns the number of letters
/// after the apostrophe at `index`, or 0), the piece is the contraction and
/// the next one starts right after it. A contraction that
/// would end at or past `trusted` ends the window at its apostrophe instead
/// (the next window then begins there).
#[inline(always)]
pub(crate) fn apply_contractions(
    bytes: &[u8],
    start: usize,
    mut starts: u64,
    masks: &Masks,
    trusted: usize,
    suffix_len: impl Fn(&[u8], usize) -> usize,
) -> u64 {
    let mut apostrophes = masks.apostrophe & starts & below(trusted);
    while apostrophes != 0 {
        let at = apostrophes.trailing_zeros() as usize;
        apostrophes &= apostrophes - 1;
        let letters = suffix_len(bytes, start + at);
        if letters == 0 {
            continue;
        }
        let end = at + 1 + letters;
        if end >= trusted {
            return starts & below(at + 1);
        }
        starts = starts & !(below(end) & !below(at + 1)) | 1 << end;
    }
    starts
}

#[cfg(test)]
mod tests {
    use super::{is_other_punctuation, Level, PieceEnds, BLOCK};
    use crate::pretokenize::charclass::flags_beyond_ascii;
    use crate::pretokenize::scan::cl100k::{Cl100k, Llama3, Qwen2};
    use crate::pretokenize::scan::gpt2::Gpt2;
    use crate::pretokenize::scan::o200k::O200k;
    use crate::pretokenize::scan::{is_other, Scanner};

    /// The pieces of the char-by-char scanner alone.
    fn scalar_pieces<S: Scanner>(text: &str) -> Vec<&str> {
        let (bytes, mut start, mut out) = (text.as_bytes(), 0, Vec::new());
        while start < bytes.len() {
            let end = S::piece_end(bytes, start);
            out.push(&text[start..end]);
            start = end;
        }
        out
    }

    /// The pieces of the block scanner, the same with each classifier the
    /// CPU has (`for_each_batch` uses only the active one).
    fn block_pieces<S: Scanner>(text: &str) -> Vec<&str> {
        let mut pieces: Option<Vec<&str>> = None;
        for level in Level::supported() {
            let (mut batch, mut out, mut from) = (PieceEnds::new(), Vec::new(), 0);
            // SAFETY: the CPU has `level` (filtered above).
            while unsafe { batch.fill_at::<S>(text.as_bytes(), level) } {
                for &end in batch.as_slice() {
                    out.push(&text[from..end]);
                    from = end;
                }
            }
            match &pieces {
                Some(first) => assert_eq!(&out, first, "{level:?} on {text:?}"),
                None => pieces = Some(out),
            }
        }
        pieces.expect("the baseline is always supported")
    }

    /// Chars of U+2000..U+203F (`E2 80 xx`) in the contexts English puts
    /// them in, and the spaces among them (which stop a window).
    const GENERAL_PUNCTUATION: &[&str] = &[
        "’",
        "’s",
        "don’t",
        "’ll",
        "“",
        "”",
        "“Hi,” she said—",
        "—",
        " — ",
        "  —",
        "—\n",
        "x—y",
        "1—2",
        "…",
        "...…",
        "'’",
        "’'s",
        "\u{2009}",
        " \u{2009}x",
        "\u{2028}",
        "\u{2029}",
        "\u{202F}—",
        "—\u{2000}",
        "\u{200A}'s",
        "†‡",
        "\u{200B}",
        "\u{2027}",
        "\u{202A}",
        "\u{202E}",
        "\u{2030}",
        "\u{203F}",
        "—é",
        "é—",
        "\u{A0}—",
        "\u{2060}",
    ];

    /// Whether every char of `text` is ASCII or in `E2 80 xx`.
    fn ascii_or_general_punctuation(text: &str) -> bool {
        text.chars().all(|c| c.is_ascii() || ('\u{2000}'..='\u{203F}').contains(&c))
    }

    /// Texts of 0-400 chars drawn from fragments that meet every rule:
    /// words, contractions (and near-misses), runs of each kind of space,
    /// digits, punctuation, non-ASCII letters, marks and spaces, and General
    /// Punctuation.
    fn generated_texts(count: usize) -> impl Iterator<Item = String> {
        const FRAGMENTS: &[&str] = &[
            "a", "Z", "word", " ", "  ", "   ", "\n", "\n\n", "\r\n", "\t", " \t", "\x0B", "\x0C", "1", "2024", " 7",
            ".", ",", "!?", "'", "''", "'s", "'t", "'re", "'ve", "'ll", "'d", "'m", "'S", "'l", "'r", "'v", "don't",
            "it's", " 's", "x'", "é", "日本", "\u{3000}", "\u{301}", "١٢", "—", "\u{A0}", "ſ", "a'ſ", "12345678",
            ".\n", " .", "..", "\n  ", ".'s", "x.y", "\t.", "'RE", " \n", "\r", "-", "/", "//", "/\n", "\n/", "a/b",
            "HTTP", "Request", "XMLHttp", "aB", "ABc", "it's's", "IT'S", "'rE",
        ];
        let mut rng = crate::util::test_rng::XorShift(0x9E37_79B9_7F4A_7C15);
        let mut next = move || rng.next();
        (0..count).map(move |i| {
            // Mostly ASCII, so most windows take the block path; a quarter
            // ASCII and General Punctuation, which GPT-2's windows pass.
            let pieces = (next() % 120) as usize;
            let mut text = String::new();
            while text.chars().count() < pieces * 3 {
                let pick = next() as usize % (FRAGMENTS.len() + GENERAL_PUNCTUATION.len());
                let fragment = FRAGMENTS.get(pick).unwrap_or_else(|| &GENERAL_PUNCTUATION[pick - FRAGMENTS.len()]);
                let allowed = match i % 4 {
                    0 => true,
                    1 => ascii_or_general_punctuation(fragment),
                    _ => fragment.is_ascii(),
                };
                if allowed {
                    text.push_str(fragment);
                }
            }
            text
        })
    }

    fn blocks_give_the_char_by_char_pieces<S: Scanner>() {
        for text in generated_texts(20_000) {
            assert_eq!(block_pieces::<S>(&text), scalar_pieces::<S>(&text), "{text:?}");
        }
    }

    #[test]
    fn gpt2_blocks_give_the_char_by_char_pieces() {
        blocks_give_the_char_by_char_pieces::<Gpt2>();
    }

    #[test]
    fn o200k_blocks_give_the_char_by_char_pieces() {
        blocks_give_the_char_by_char_pieces::<O200k>();
    }

    #[test]
    fn cl100k_family_blocks_give_the_char_by_char_pieces() {
        blocks_give_the_char_by_char_pieces::<Cl100k>();
        blocks_give_the_char_by_char_pieces::<Llama3>();
        blocks_give_the_char_by_char_pieces::<Qwen2>();
    }

    fn all_scanners_agree(text: &str) {
        assert_eq!(block_pieces::<Gpt2>(text), scalar_pieces::<Gpt2>(text), "{text:?}");
        assert_eq!(block_pieces::<Cl100k>(text), scalar_pieces::<Cl100k>(text), "{text:?}");
        assert_eq!(block_pieces::<Llama3>(text), scalar_pieces::<Llama3>(text), "{text:?}");
        assert_eq!(block_pieces::<Qwen2>(text), scalar_pieces::<Qwen2>(text), "{text:?}");
        assert_eq!(block_pieces::<O200k>(text), scalar_pieces::<O200k>(text), "{text:?}");
    }

    /// Each General Punctuation fragment at every offset of a window and
    /// across its end (after ASCII prefixes of every length up to two
    /// blocks, of one long piece or of short ones), with the look-ahead
    /// byte and the end of the text at each of its bytes.
    #[test]
    fn general_punctuation_at_every_offset_of_a_window() {
        const PREFIXES: &[&str] = &["x", "a b ", "12,", " .", "it's ", "\n\n y", "'", "  "];
        for fragment in GENERAL_PUNCTUATION {
            for pattern in PREFIXES {
                for len in 0..=2 * BLOCK + 3 {
                    let prefix: String = pattern.chars().cycle().take(len).collect();
                    for suffix in ["", "a", "  ", " b'll c", " 9 — ’", "’’’’"] {
                        all_scanners_agree(&format!("{prefix}{fragment}{suffix}"));
                    }
                }
            }
        }
    }

    #[test]
    fn other_punctuation_is_what_the_char_classes_say() {
        for cp in 0x2000..=0x203Fu32 {
            let c = char::from_u32(cp).unwrap();
            let mut encoded = [0; 4];
            let encoded = c.encode_utf8(&mut encoded).as_bytes();
            assert_eq!(is_other_punctuation(encoded), is_other(flags_beyond_ascii(cp)), "{c:?}");
        }
        for not_in_the_range in ["\u{1FFF}", "\u{2040}", "\u{A0}a", "\u{3000}", "€", "→", "a’"] {
            assert!(!is_other_punctuation(&not_in_the_range.as_bytes()[..3]), "{not_in_the_range:?}");
        }
    }

    /// Every stretch of up to 70 bytes of a text that holds each rule's end
    /// cases (whitespace runs with CR/LF and spaces after them, contractions,
    /// digit runs, punctuation before CR/LF and '/', non-ASCII): a text that
    /// ends less than a window after a piece start is scanned with a window
    /// padded with spaces (`tail_window`), and must end as it would without.
    #[test]
    fn text_too_short_for_a_window_ends_where_the_rules_say() {
        let text = "It's 12345 o'clock.\n  Don't\t\x0b 'll say 'RE: x.y/z\r\n \n\n  a—b ’s \u{3000}!!\n \
                    HTTPRequest 'sa'\n\t\n word  \n   end.// \"\"\"\n1 22 333 4444 \r\r\n  \n x";
        let boundaries: Vec<usize> = text.char_indices().map(|(at, _)| at).chain([text.len()]).collect();
        for (i, &start) in boundaries.iter().enumerate() {
            for &end in boundaries[i..].iter().take_while(|&&end| end - start <= 70) {
                all_scanners_agree(&text[start..end]);
            }
        }
    }

    #[test]
    fn long_pieces_and_windows_that_end_in_a_contraction() {
        let cases = [
            "x".repeat(200),
            " ".repeat(130) + "y",
            format!("{}'s{}", "a ".repeat(31), " b".repeat(40)),
            format!("{}'ll{}", "a".repeat(61), " b".repeat(40)),
            format!("{}é{}", "ab ".repeat(30), " cd".repeat(30)),
            "\n".repeat(70) + &"z ".repeat(40),
        ];
        for text in &cases {
            assert_eq!(block_pieces::<Gpt2>(text), scalar_pieces::<Gpt2>(text), "{text:?}");
            assert_eq!(block_pieces::<Cl100k>(text), scalar_pieces::<Cl100k>(text), "{text:?}");
            assert_eq!(block_pieces::<O200k>(text), scalar_pieces::<O200k>(text), "{text:?}");
        }
    }
}
