//! The flat scan: a piece's parts in an array, each with the rank of its
//! merge with the next, scanned for the lowest after every merge. Only the
//! two neighbours of a merge are looked up again. Quadratic in the piece, and
//! the fastest way for the short pieces that are almost all of a text.

use crate::bpe::char_merges::CharMerges;
use crate::bpe::merges::{MergeEntry, MergeTable, NONE};

/// Pieces up to this many bytes use the flat scan. Its every merge rescans
/// the piece (a chain of dependent compares), so past a few dozen bytes the
/// heap wins: on 10 MB of multilingual text (CJK sentences are GPT-2 pieces of
/// 20-130 bytes) 32 encoded 16% faster than 128 (median of 7, the
/// `encode_file` example), English unchanged within noise.
pub(super) const FLAT_MAX: usize = 32;

#[derive(Clone, Copy)]
pub(super) struct Part {
    pub(super) id: u32,
    /// Rank of the merge of this part with the next one, or `NONE`.
    rank: u32,
    merged: u32,
}

/// As `merge_tree`, pieces with characters of 2 or 3 bytes start with those
/// `char_merges.rs` allows already merged.
pub(super) fn merge_flat(
    piece: &[u8],
    table: &MergeTable,
    char_merges: &CharMerges,
    parts: &mut Vec<Part>,
    starting_ids: &mut Vec<u32>,
    out: &mut Vec<u32>,
) {
    parts.clear();
    if piece.is_ascii() {
        byte_parts(piece, table, parts);
        // English words: most pairs asked have a merge, so the pair filter
        // would only add a read to each lookup.
        merge_parts(parts, |left, right| table.merge_direct(left, right));
    } else {
        starting_ids.clear();
        char_merges.starting_ids(piece, table, starting_ids);
        return merge_flat_ids(starting_ids, |left, right| table.merge(left, right), parts, out);
    }
    out.extend(parts.iter().map(|p| p.id));
}

/// The flat scan from tokens `ids` (at least one), looking pairs up with
/// `merge`.
#[inline]
pub(super) fn merge_flat_ids(
    ids: &[u32],
    merge: impl Fn(u32, u32) -> Option<MergeEntry>,
    parts: &mut Vec<Part>,
    out: &mut Vec<u32>,
) {
    parts.clear();
    parts.extend(ids.windows(2).map(|w| part_with(w[0], merge(w[0], w[1]))));
    parts.push(part_with(ids[ids.len() - 1], None));
    merge_parts(parts, merge);
    out.extend(parts.iter().map(|p| p.id));
}

/// The flat scan of a piece of 2 bytes or more from its bytes, with only the
/// merges ranked below `limit` (`word_phases.rs`'s early merges).
pub(super) fn merge_flat_below(
    piece: &[u8],
    table: &MergeTable,
    limit: u32,
    parts: &mut Vec<Part>,
    out: &mut Vec<u32>,
) {
    parts.clear();
    let below = |rule: Option<MergeEntry>| rule.filter(|rule| rule.rank < limit);
    let byte_id = |byte| table.byte_id(byte);
    parts.extend(piece.windows(2).map(|w| part_with(byte_id(w[0]), below(table.byte_pair_merge(w[0], w[1])))));
    parts.push(part_with(byte_id(piece[piece.len() - 1]), None));
    merge_parts(parts, |left, right| below(table.merge(left, right)));
    out.extend(parts.iter().map(|p| p.id));
}

/// A character's bytes merged on their own, as the flat scan merges a piece:
/// the token they become and the highest rank taken, if they become one
/// (`Vocabulary::new` builds the table of `char_merges.rs` with this).
pub(super) fn merge_into_one(piece: &[u8], table: &MergeTable, parts: &mut Vec<Part>) -> Option<(u32, u32)> {
    parts.clear();
    byte_parts(piece, table, parts);
    let highest_rank = merge_parts(parts, |left, right| table.merge(left, right));
    (parts.len() == 1).then(|| (parts[0].id, highest_rank))
}

/// The parts a piece of 2 bytes or more starts as: its bytes, with the merge
/// of each byte and the next.
#[inline]
fn byte_parts(piece: &[u8], table: &MergeTable, parts: &mut Vec<Part>) {
    parts.extend(piece.windows(2).map(|w| part_with(table.byte_id(w[0]), table.byte_pair_merge(w[0], w[1]))));
    parts.push(part_with(table.byte_id(piece[piece.len() - 1]), None));
}

/// The flat scan's merges, looking pairs up with `merge`; the highest rank
/// applied (0 if none).
#[inline(always)]
fn merge_parts(parts: &mut Vec<Part>, merge: impl Fn(u32, u32) -> Option<MergeEntry>) -> u32 {
    let mut highest_rank = 0;
    while let Some(i) = lowest_rank(parts) {
        highest_rank = highest_rank.max(parts[i].rank);
        let merged = parts[i].merged;
        parts.remove(i + 1);
        let after = parts.get(i + 1).and_then(|next| merge(merged, next.id));
        parts[i] = part_with(merged, after);
        if i > 0 {
            parts[i - 1] = part_with(parts[i - 1].id, merge(parts[i - 1].id, merged));
        }
    }
    highest_rank
}

#[inline]
fn part_with(id: u32, rule: Option<MergeEntry>) -> Part {
    match rule {
        Some(rule) => Part { id, rank: rule.rank, merged: rule.merged },
        None => Part { id, rank: NONE, merged: NONE },
    }
}

/// Position of the lowest-ranked merge, the leftmost of equals; `None` if no
/// part has one.
#[inline]
fn lowest_rank(parts: &[Part]) -> Option<usize> {
    let mut best = (NONE, 0);
    for (i, p) in parts.iter().enumerate() {
        if p.rank < best.0 {
            best = (p.rank, i);
        }
    }
    (best.0 != NONE).then_some(best.1)
}
