//! The two phases of `word_phases.rs` on one piece, with each word's ids
//! kept from piece to piece (`word_cache.rs`).
//!
//! The words of a piece fall into runs: a run ends where no token holds the
//! two bytes around a cut (`Vocabulary::can_cut_between`), so no merge of
//! either phase crosses it, and each run is merged on its own. A run of up
//! to 15 bytes is looked up whole, with its final ids: under a vocabulary
//! learnt on English, a line of CJK is runs of a few chars (its early merges
//! cut it between almost every two chars, and merging those again in the
//! second phase made such lines twice as slow), as the encoder's table
//! finds them for other vocabularies. A line of English is one or two runs
//! of a dozen words each.

use crate::bpe::flat::{merge_flat, merge_flat_below, merge_flat_ids, FLAT_MAX};
use crate::bpe::scratch::Scratch;
use crate::bpe::tree::{merge_tree, merge_tree_ids};
use crate::bpe::vocab::Vocabulary;
use crate::bpe::word_cache::{Word, FINAL};
use crate::bpe::word_phases::WordPhases;
use crate::util::packed_key::{hash_packed, pack_at};

/// Append the ids of `piece` (of up to 1 KiB) to `out`, a run at a time:
/// a short run whole, a long one its words' early ids and then every merge
/// on them.
pub(super) fn merge_in_phases(
    piece: &[u8],
    vocab: &Vocabulary,
    phases: &WordPhases,
    scratch: &mut Scratch,
    out: &mut Vec<u32>,
) {
    scratch.words.serve(phases.id());
    let mut words = std::mem::take(&mut scratch.word_list);
    words.clear();
    let (mut start, mut run_start) = (0, 0);
    for window in (0..piece.len()).step_by(64) {
        let (mut ends, run_ends) = phases.end_masks(piece, window);
        while ends != 0 {
            let at = ends.trailing_zeros();
            ends &= ends - 1;
            let end = window + at as usize + 1;
            if run_ends >> at & 1 == 0 {
                // A long run's words are looked up once the run ends, their buckets asked for now.
                let key = pack_at(piece, start, end).unwrap_or(0);
                push_word(&mut words, Word { end, key, hash: 0 }, scratch);
                start = end;
                continue;
            }
            if run_start + 1 == end {
                // Bytes no token joins to their neighbours (text in a script the vocabulary lacks): each
                // its token, as many as follow at once.
                let bytes = (!(run_ends >> at)).trailing_zeros();
                out.extend(piece[run_start..run_start + bytes as usize].iter().map(|&byte| vocab.byte_id(byte)));
                ends &= u64::MAX.checked_shl(at + bytes).unwrap_or(0);
                (start, run_start) = (run_start + bytes as usize, run_start + bytes as usize);
                continue;
            }
            let run = &piece[run_start..end];
            match pack_at(piece, run_start, end) {
                // A short run is one word, whole (a CJK clause cut where no token holds two bytes).
                Some(key) => {
                    let (key, hash) = (key | FINAL, hash_packed(key | FINAL));
                    if !scratch.words.get(key, hash, out) {
                        let at = out.len();
                        merge_final(run, vocab, scratch, out);
                        scratch.words.put(key, hash, &out[at..]);
                    }
                }
                None => {
                    let key = pack_at(piece, start, end).unwrap_or(0);
                    push_word(&mut words, Word { end, key, hash: 0 }, scratch);
                    merge_run_in_phases(piece, run_start, &words, vocab, phases, scratch, out);
                }
            }
            words.clear();
            (start, run_start) = (end, end);
        }
    }
    scratch.word_list = words;
}

/// Append the ids of the run of `words` that starts at `piece[start]`: each
/// word's early ids, then every merge on them.
fn merge_run_in_phases(
    piece: &[u8],
    mut start: usize,
    words: &[Word],
    vocab: &Vocabulary,
    phases: &WordPhases,
    scratch: &mut Scratch,
    out: &mut Vec<u32>,
) {
    let mut early_ids = std::mem::take(&mut scratch.early_ids);
    early_ids.clear();
    for &Word { end, key, hash } in words {
        let word = &piece[start..end];
        start = end;
        if let &[byte] = word {
            early_ids.push(vocab.byte_id(byte));
        } else if key == 0 {
            merge_early(word, vocab, phases, scratch, &mut early_ids);
        } else if !scratch.words.get(key, hash, &mut early_ids) {
            let at = early_ids.len();
            merge_early(word, vocab, phases, scratch, &mut early_ids);
            scratch.words.put(key, hash, &early_ids[at..]);
        }
    }
    merge_late(&early_ids, vocab, scratch, out);
    scratch.early_ids = early_ids;
}

/// Add `word` to `words` with its key's hash, its bucket asked for.
#[inline]
fn push_word(words: &mut Vec<Word>, mut word: Word, scratch: &Scratch) {
    word.hash = hash_packed(word.key);
    scratch.words.prefetch(word.hash);
    words.push(word);
}

/// Append the ids of `word` under the early merges alone.
fn merge_early(word: &[u8], vocab: &Vocabulary, phases: &WordPhases, scratch: &mut Scratch, out: &mut Vec<u32>) {
    let (table, late_from) = (vocab.merge_table(), phases.late_from());
    let Scratch { parts, nodes, starting_ids, tree, .. } = scratch;
    if word.len() <= FLAT_MAX {
        return merge_flat_below(word, table, late_from, parts, out);
    }
    starting_ids.clear();
    starting_ids.extend(word.iter().map(|&byte| table.byte_id(byte)));
    let early = |left, right| table.merge(left, right).filter(|rule| rule.rank < late_from);
    merge_tree_ids(starting_ids, early, nodes, tree, out);
}

/// Append the ids of `word` (of 2 bytes or more) under every merge, as
/// `encode_piece` merges a piece of its length.
fn merge_final(word: &[u8], vocab: &Vocabulary, scratch: &mut Scratch, out: &mut Vec<u32>) {
    let (table, char_merges) = (vocab.merge_table(), vocab.char_merges());
    let Scratch { parts, nodes, starting_ids, tree, .. } = scratch;
    if word.len() <= FLAT_MAX {
        merge_flat(word, table, char_merges, parts, starting_ids, out);
    } else {
        merge_tree(word, table, char_merges, nodes, tree, starting_ids, out);
    }
}

/// Append to `out` the ids of a run whose words' early ids are `early_ids`
/// (end to end): the second phase, every merge on them.
fn merge_late(early_ids: &[u32], vocab: &Vocabulary, scratch: &mut Scratch, out: &mut Vec<u32>) {
    let table = vocab.merge_table();
    let merge = |left, right| table.merge(left, right);
    let Scratch { parts, nodes, tree, .. } = scratch;
    match early_ids {
        [] => {}
        &[id] => out.push(id),
        _ if early_ids.len() <= FLAT_MAX => merge_flat_ids(early_ids, merge, parts, out),
        _ => merge_tree_ids(early_ids, merge, nodes, tree, out),
    }
}
