//! The linked list of parts on a tournament tree (`min_tree.rs`), one leaf
//! per part keyed `(rank, position)`: each merge rewrites three leaves in
//! place, where a heap would push and later skip stale entries. The path of
//! pieces of 33-1024 bytes (CJK clauses are GPT-2 pieces of 20-130 bytes).

use crate::bpe::char_merges::CharMerges;
use crate::bpe::list::{byte_nodes, heap_key, merge_with_next, node_at, Node};
use crate::bpe::merges::{MergeEntry, MergeTable, NONE};
use crate::bpe::min_tree::MinTree;

/// The linked list on a tournament tree of `(rank, position)` keys, one leaf
/// per part (`min_tree.rs`): each merge rewrites three leaves instead of
/// pushing onto a heap and skipping stale entries. Pieces with characters of 2 or 3 bytes start with those the rule of
/// `char_merges.rs` allows already merged.
pub(super) fn merge_tree(
    piece: &[u8],
    table: &MergeTable,
    char_merges: &CharMerges,
    nodes: &mut Vec<Node>,
    tree: &mut MinTree,
    starting_ids: &mut Vec<u32>,
    out: &mut Vec<u32>,
) {
    nodes.clear();
    if piece.is_ascii() {
        byte_nodes(piece, table, nodes);
    } else {
        starting_ids.clear();
        char_merges.starting_ids(piece, table, starting_ids);
        id_nodes(starting_ids, |left, right| table.merge(left, right), nodes);
    }
    merge_nodes(nodes, tree, |left, right| table.merge(left, right), out);
}

/// The tree from tokens `ids` (at least one), looking pairs up with `merge`.
pub(super) fn merge_tree_ids(
    ids: &[u32],
    merge: impl Fn(u32, u32) -> Option<MergeEntry>,
    nodes: &mut Vec<Node>,
    tree: &mut MinTree,
    out: &mut Vec<u32>,
) {
    nodes.clear();
    id_nodes(ids, &merge, nodes);
    merge_nodes(nodes, tree, merge, out);
}

/// The list's nodes for tokens `ids`, with the merge of each and the next.
#[inline]
fn id_nodes(ids: &[u32], merge: impl Fn(u32, u32) -> Option<MergeEntry>, nodes: &mut Vec<Node>) {
    nodes.extend((0..ids.len()).map(|i| node_at(i, ids[i], ids.get(i + 1).and_then(|&next| merge(ids[i], next)))));
}

/// Merge the list `nodes` (built by `byte_nodes` or `id_nodes`) on the tree,
/// looking pairs up with `merge`; its ids to `out`.
#[inline(always)]
fn merge_nodes(
    nodes: &mut [Node],
    tree: &mut MinTree,
    merge: impl Fn(u32, u32) -> Option<MergeEntry>,
    out: &mut Vec<u32>,
) {
    let n = nodes.len();
    nodes[n - 1].next = NONE;
    tree.refill(nodes.iter().enumerate().map(|(at, node)| tree_key(node.rank, at as u32)));
    // Look up the merge of part `at` with its next one, and set its leaf.
    let update = |tree: &mut MinTree, nodes: &mut [Node], at: u32| {
        let node = nodes[at as usize];
        let rule = (node.next != NONE).then(|| merge(node.id, nodes[node.next as usize].id)).flatten();
        let (rank, merged) = rule.map_or((NONE, NONE), |rule| (rule.rank, rule.merged));
        nodes[at as usize].merged = merged;
        tree.set(at as usize, tree_key(rank, at));
    };
    loop {
        let key = tree.min();
        if key == u64::MAX {
            break;
        }
        let at = key as u32;
        let node = merge_with_next(nodes, at);
        tree.set(node.next as usize, u64::MAX);
        if node.prev != NONE {
            update(tree, nodes, node.prev);
        }
        update(tree, nodes, at);
    }
    out.extend(nodes.iter().filter(|node| node.id != NONE).map(|node| node.id));
}

/// `heap_key`, or "no key" (`u64::MAX`) when there is no merge.
#[inline]
fn tree_key(rank: u32, at: u32) -> u64 {
    if rank == NONE {
        u64::MAX
    } else {
        heap_key(rank, at)
    }
}
