//! The linked list of a piece's parts that the heap and tree paths merge
//! on: a node per byte, merged nodes unlinked, each node holding the merge of
//! its part with the next one.

use crate::bpe::merges::{MergeEntry, MergeTable, NONE};

/// A node of the doubly linked list of parts; `id == NONE` once merged away.
/// `rank` and `merged` are the merge of this part with the next one (`NONE`
/// if none), kept up to date as parts merge: a queue entry `(rank, at)` is
/// current exactly when `nodes[at]` is alive with that rank (ranks are
/// unique, so an equal rank is the same pair), which a pop checks without
/// a lookup (it was a third of the merge table's lookups).
#[derive(Clone, Copy)]
pub(super) struct Node {
    pub(super) id: u32,
    pub(super) prev: u32,
    pub(super) next: u32,
    pub(super) rank: u32,
    pub(super) merged: u32,
}

/// A queue entry: rank in the high half, position in the low half, so that
/// one integer comparison orders by rank and then leftmost first.
#[inline]
pub(super) fn heap_key(rank: u32, at: u32) -> u64 {
    (rank as u64) << 32 | at as u64
}

/// Merge part `at` with the part after it (into its `merged`), unlinking
/// that one; returns part `at` as it was.
#[inline(always)]
pub(super) fn merge_with_next(nodes: &mut [Node], at: u32) -> Node {
    let node = nodes[at as usize];
    let right = nodes[node.next as usize];
    nodes[at as usize].id = node.merged;
    nodes[at as usize].next = right.next;
    nodes[node.next as usize].id = NONE;
    if right.next != NONE {
        nodes[right.next as usize].prev = at;
    }
    node
}

/// The merge of part `at` with the part after it: `(rank, merged)`, or
/// `(NONE, NONE)` if there is none.
#[inline(always)]
pub(super) fn merge_after(nodes: &[Node], at: u32, table: &MergeTable) -> (u32, u32) {
    let node = nodes[at as usize];
    let rule = (node.next != NONE).then(|| table.merge(node.id, nodes[node.next as usize].id)).flatten();
    rule.map_or((NONE, NONE), |rule| (rule.rank, rule.merged))
}

/// The list's nodes for a piece's bytes, with the merge of each byte and the
/// next (the last one's `next` is set after).
#[inline]
pub(super) fn byte_nodes(piece: &[u8], table: &MergeTable, nodes: &mut Vec<Node>) {
    nodes.extend((0..piece.len()).map(|i| {
        let rule = piece.get(i + 1).and_then(|&next| table.byte_pair_merge(piece[i], next));
        node_at(i, table.byte_id(piece[i]), rule)
    }));
}

/// Node `i` of a list being built: linked to `i - 1` and `i + 1` (the last
/// one's `next` is set after).
#[inline]
pub(super) fn node_at(i: usize, id: u32, rule: Option<MergeEntry>) -> Node {
    let (rank, merged) = rule.map_or((NONE, NONE), |rule| (rule.rank, rule.merged));
    let prev = if i == 0 { NONE } else { i as u32 - 1 };
    Node { id, prev, next: i as u32 + 1, rank, merged }
}
