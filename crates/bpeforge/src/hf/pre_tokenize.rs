//! Running a pre-tokenizer's steps over a stretch of text, as `tokenizers`
//! runs them: each step cuts every piece the steps before made (pieces that
//! come out empty are dropped). A byte-level BPE file has one ByteLevel step,
//! which may put a space before each piece and cut it with GPT-2's regex, and
//! then spells each piece in GPT-2's byte chars: steps after it (Falcon's
//! Digits and Split) cut that spelling, so they are run on it here too, and
//! the pieces are turned back into bytes for the merges at the end.
//!
//! Depth first: each piece a step makes goes through the next steps before
//! the step's next piece, with one set of buffers a step (`CutLevel`), so no
//! list of all the pieces is made between steps. When no step removes or adds
//! a byte (Isolated Splits, Digits, no prefix space, nothing after ByteLevel)
//! the pieces are the stretch cut at their ends, and no byte is copied.

use super::piece_buffer::{CutBuffers, CutLevel, PieceBuffer};
use super::pre_tokenizers::{PreTokenizer, Step};
use crate::error::Error;

impl PreTokenizer {
    /// The pieces of `text` in `out` (emptied first), as the bytes the BPE
    /// merges, without the bytes `dropped` marks.
    pub fn pre_tokenize(
        &self,
        text: &str,
        out: &mut PieceBuffer,
        cuts: &mut CutBuffers,
        dropped: Option<&[bool; 256]>,
    ) -> Result<(), Error> {
        out.clear();
        if text.is_empty() {
            return Ok(());
        }
        let at = self.steps.iter().position(|step| matches!(step, Step::ByteLevel { .. }));
        let at = at.expect("parse keeps one ByteLevel step");
        let Step::ByteLevel { add_prefix_space, regex } = &self.steps[at] else { unreachable!() };
        let (before, after) = (&self.steps[..at], &self.steps[at + 1..]);
        out.in_stretch = dropped.is_none() && after.is_empty() && self.steps.iter().all(Step::keeps_every_char);
        let mut levels = std::mem::take(&mut cuts.levels);
        levels.resize_with(before.len(), CutLevel::default);
        if let ([step], true, None) = (before, out.in_stretch, regex) {
            // One step's pieces are the stretch's (DeepSeek V3's, Llama 3-like Splits): their ends at once.
            let level = &mut levels[0];
            let mut pieces = std::mem::take(&mut level.pieces);
            pieces.clear();
            let cut = step.cut(text, 0, level, &mut pieces);
            pieces.iter().for_each(|&(_, end)| out.push_end(end));
            level.pieces = pieces;
            cuts.levels = levels;
            return cut;
        }
        let mut spaced = std::mem::take(&mut cuts.spaced);
        let (mut spelled, mut parts) = (std::mem::take(&mut cuts.spelled), std::mem::take(&mut cuts.parts));
        spelled.clear();
        parts.clear();
        let result = cut_depth(before, text, 0, text.len(), &mut levels, &mut |start, end| {
            let mut piece = &text[start..end];
            if out.in_stretch {
                return match regex {
                    Some(gpt2) => gpt2.for_each_piece(piece, |part| out.push_end(end_in(text, part))),
                    None => {
                        out.push_end(end);
                        Ok(())
                    }
                };
            }
            if *add_prefix_space && !piece.starts_with(' ') {
                spaced.clear();
                spaced.push(' ');
                spaced.push_str(piece);
                piece = &spaced;
            }
            // Without steps after it, ByteLevel's pieces go to the merges as they are;
            // otherwise they are spelled in byte chars, which those steps cut.
            let mut take = |part: &str| {
                if after.is_empty() {
                    out.push(part.as_bytes(), dropped);
                } else {
                    let first = spelled.len();
                    spelled.extend(part.bytes().map(|byte| self.byte_chars[usize::from(byte)]));
                    parts.push((first, spelled.len()));
                }
            };
            match regex {
                Some(gpt2) => gpt2.for_each_piece(piece, &mut take),
                None => {
                    take(piece);
                    Ok(())
                }
            }
        });
        cuts.levels = levels;
        cuts.spaced = spaced;
        if result.is_ok() && !after.is_empty() {
            let mut levels = std::mem::take(&mut cuts.after_levels);
            levels.resize_with(after.len(), CutLevel::default);
            for &(start, end) in &parts {
                cut_depth(after, &spelled, start, end, &mut levels, &mut |start, end| {
                    for ch in spelled[start..end].chars() {
                        let byte = self.byte_table.byte(ch).expect("ByteLevel spelled every piece in byte chars");
                        out.push_byte(byte, dropped);
                    }
                    out.end_piece();
                    Ok(())
                })?;
            }
            cuts.after_levels = levels;
        }
        (cuts.spelled, cuts.parts) = (spelled, parts);
        result
    }
}

/// Where `part` (a slice of `text`) ends in `text`.
fn end_in(text: &str, part: &str) -> usize {
    part.as_ptr() as usize - text.as_ptr() as usize + part.len()
}

/// `emit` each piece `steps` make of `text[start..end]`, in order, as a range of `text`.
fn cut_depth(
    steps: &[Step],
    text: &str,
    start: usize,
    end: usize,
    levels: &mut [CutLevel],
    emit: &mut impl FnMut(usize, usize) -> Result<(), Error>,
) -> Result<(), Error> {
    let Some((step, rest)) = steps.split_first() else { return emit(start, end) };
    let (level, deeper) = levels.split_first_mut().expect("a level a step");
    let mut pieces = std::mem::take(&mut level.pieces);
    pieces.clear();
    let cut = step.cut(&text[start..end], start, level, &mut pieces);
    let result =
        cut.and_then(|()| pieces.iter().try_for_each(|&(start, end)| cut_depth(rest, text, start, end, deeper, emit)));
    level.pieces = pieces;
    result
}
