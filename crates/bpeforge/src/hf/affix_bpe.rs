//! BPE with a `continuing_subword_prefix` or an `end_of_word_suffix` (CLIP's
//! `</w>`): each char of a piece starts as the token of its own spelling in
//! its place (`##` before every char but the first, `</w>` after the last),
//! so a piece's symbols are not its bytes and bpeforge's byte tables do not
//! apply. This is `tokenizers`' own loop (`Word::merge_all`): the lowest
//! rank first, the leftmost of equal ones, over token ids.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rustc_hash::FxHashMap;
use serde_json::{Map, Value};

use super::json::refuse;
use crate::error::Error;
use crate::formats::byte_level::byte_chars;

pub struct AffixBpe {
    ids: FxHashMap<String, u32>,
    /// `(left, right)` -> `(rank, merged)`.
    merges: FxHashMap<(u32, u32), (u32, u32)>,
    /// Each byte's token as a piece's only, first, middle and last char.
    byte_ids: [[u32; 256]; 4],
    byte_chars: [char; 256],
}

const ONLY: usize = 0;
const FIRST: usize = 1;
const MIDDLE: usize = 2;
const LAST: usize = 3;

#[derive(Clone, Copy)]
struct Symbol {
    id: u32,
    prev: usize,
    next: usize,
    alive: bool,
}

const NONE: usize = usize::MAX;

impl AffixBpe {
    pub fn new(
        vocab: &Map<String, Value>,
        merges: &[(String, String)],
        prefix: &str,
        suffix: &str,
    ) -> Result<Self, Error> {
        let ids: FxHashMap<String, u32> =
            vocab.iter().filter_map(|(text, id)| Some((text.clone(), u32::try_from(id.as_u64()?).ok()?))).collect();
        let chars = byte_chars();
        let mut byte_ids = [[0u32; 256]; 4];
        for (byte, &ch) in chars.iter().enumerate() {
            let forms =
                [format!("{ch}{suffix}"), format!("{ch}"), format!("{prefix}{ch}"), format!("{prefix}{ch}{suffix}")];
            for (place, form) in forms.iter().enumerate() {
                byte_ids[place][byte] = *ids.get(form).ok_or_else(|| {
                    refuse(&format!("model.vocab without {form:?}"), "a byte of text would have no token in that place")
                })?;
            }
        }
        let mut table = FxHashMap::default();
        for (rank, (left, right)) in merges.iter().enumerate() {
            let merged = right.get(prefix.len()..).map(|tail| format!("{left}{tail}"));
            let id = |text: &str| ids.get(text).copied();
            match (id(left), id(right), merged.as_deref().and_then(id)) {
                (Some(left), Some(right), Some(merged)) => {
                    table.insert((left, right), (rank as u32, merged));
                }
                _ => {
                    return Err(Error::InvalidArgument(format!(
                        "model.merges[{rank}] ({left:?} {right:?}) uses or makes a token model.vocab lacks"
                    )))
                }
            }
        }
        Ok(Self { ids, merges: table, byte_ids, byte_chars: chars })
    }

    /// Append the ids of one piece (its bytes).
    pub fn encode(&self, piece: &[u8], ignore_merges: bool, out: &mut Vec<u32>) {
        if piece.is_empty() {
            return;
        }
        if ignore_merges {
            let text: String = piece.iter().map(|&byte| self.byte_chars[usize::from(byte)]).collect();
            if let Some(&id) = self.ids.get(&text) {
                return out.push(id);
            }
        }
        let last = piece.len() - 1;
        let mut symbols: Vec<Symbol> = piece
            .iter()
            .enumerate()
            .map(|(at, &byte)| {
                let place = match (at == 0, at == last) {
                    (true, true) => ONLY,
                    (true, false) => FIRST,
                    (false, false) => MIDDLE,
                    (false, true) => LAST,
                };
                let next = if at == last { NONE } else { at + 1 };
                Symbol { id: self.byte_ids[place][usize::from(byte)], prev: at.wrapping_sub(1), next, alive: true }
            })
            .collect();
        let mut queue = BinaryHeap::new();
        for at in 0..last {
            if let Some(&(rank, merged)) = self.merges.get(&(symbols[at].id, symbols[at + 1].id)) {
                queue.push(Reverse((rank, at, merged)));
            }
        }
        while let Some(Reverse((_, at, merged))) = queue.pop() {
            let symbol = symbols[at];
            if !symbol.alive || symbol.next == NONE {
                continue;
            }
            let right = symbols[symbol.next];
            // An entry left from before a neighbour merged.
            if self.merges.get(&(symbol.id, right.id)).map(|&(_, id)| id) != Some(merged) {
                continue;
            }
            symbols[at].id = merged;
            symbols[at].next = right.next;
            symbols[symbol.next].alive = false;
            if right.next != NONE {
                symbols[right.next].prev = at;
            }
            if symbol.prev != NONE {
                if let Some(&(rank, id)) = self.merges.get(&(symbols[symbol.prev].id, merged)) {
                    queue.push(Reverse((rank, symbol.prev, id)));
                }
            }
            if right.next != NONE {
                if let Some(&(rank, id)) = self.merges.get(&(merged, symbols[right.next].id)) {
                    queue.push(Reverse((rank, at, id)));
                }
            }
        }
        out.extend(symbols.iter().filter(|symbol| symbol.alive).map(|symbol| symbol.id));
    }
}
