//! Helpers shared by the fuzz targets: naive reference implementations to
//! compare the fast code against, and an allocator that refuses huge blocks.

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashMap;

use bpeforge::{Piece, SpecialSplitter};
use bpeforge::Pattern;

/// The byte that separates fields of a fuzz input: it never occurs in UTF-8.
pub const SEPARATOR: u8 = 0xFF;

/// Up to `n` fields of `data`, each ended by `SEPARATOR`, and the rest after them.
pub fn split_fields(data: &[u8], n: usize) -> (Vec<&[u8]>, &[u8]) {
    let mut fields = Vec::new();
    let mut rest = data;
    while fields.len() < n {
        let Some(end) = rest.iter().position(|&b| b == SEPARATOR) else { break };
        fields.push(&rest[..end]);
        rest = &rest[end + 1..];
    }
    (fields, rest)
}

/// All the `SEPARATOR`-separated fields of `data` (at least one), if each is UTF-8.
pub fn utf8_fields(data: &[u8]) -> Option<Vec<&str>> {
    data.split(|&b| b == SEPARATOR).map(|field| std::str::from_utf8(field).ok()).collect()
}

/// One item of a text's full pre-tokenization: a special token (by index) or
/// a GPT-2 pre-token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    Special(usize),
    Pretoken(String),
}

/// The text as the trainer and the encoder see it: split on special tokens,
/// each text piece pre-tokenized with the GPT-2 scanner.
pub fn items(specials: &SpecialSplitter, pattern: &Pattern, text: &str) -> Vec<Item> {
    let mut out = Vec::new();
    for piece in specials.split(text) {
        match piece {
            Piece::Special(index) => out.push(Item::Special(index)),
            Piece::Text(document) => {
                pattern.for_each_piece(document, |p| out.push(Item::Pretoken(p.to_string()))).expect("pre-tokenize")
            }
        }
    }
    out
}

/// Python's `re.split` on the specials sorted longest first, written out: at
/// each position the longest special that starts there, else one char of text.
/// Returns `(is_special_index, text)` pieces with empty text left out.
pub fn reference_special_split(tokens: &[String], text: &str) -> Vec<Result<usize, String>> {
    let mut out: Vec<Result<usize, String>> = Vec::new();
    let mut pending = String::new();
    let mut pos = 0;
    while pos < text.len() {
        let rest = &text[pos..];
        let longest = tokens
            .iter()
            .enumerate()
            .filter(|(_, t)| rest.starts_with(t.as_str()))
            .max_by_key(|(i, t)| (t.len(), std::cmp::Reverse(*i)));
        match longest {
            Some((index, token)) => {
                if !pending.is_empty() {
                    out.push(Err(std::mem::take(&mut pending)));
                }
                out.push(Ok(index));
                pos += token.len();
            }
            None => {
                let c = rest.chars().next().unwrap();
                pending.push(c);
                pos += c.len_utf8();
            }
        }
    }
    if !pending.is_empty() {
        out.push(Err(pending));
    }
    out
}

/// A plain BPE: merge the adjacent pair with the lowest rank, the leftmost of
/// equals, until none has a merge. `merges` maps a pair of ids to
/// `(rank, merged id)`; `byte_ids` gives each byte's id.
pub fn reference_bpe(piece: &[u8], byte_ids: &[u32; 256], merges: &HashMap<(u32, u32), (u32, u32)>) -> Vec<u32> {
    let mut parts: Vec<u32> = piece.iter().map(|&b| byte_ids[b as usize]).collect();
    loop {
        let best = parts
            .windows(2)
            .enumerate()
            .filter_map(|(i, w)| merges.get(&(w[0], w[1])).map(|&(rank, merged)| (rank, i, merged)))
            .min();
        let Some((_, i, merged)) = best else { break };
        parts[i] = merged;
        parts.remove(i + 1);
    }
    parts
}

/// The system allocator, except that a block larger than `LIMIT` is refused
/// (the caller then aborts with "memory allocation of N bytes failed", which
/// libFuzzer reports as a crash). For a reader fed a few KiB, a request of
/// more than `LIMIT` can only come from trusting a length field.
pub struct CappedAlloc<const LIMIT: usize>;

unsafe impl<const LIMIT: usize> GlobalAlloc for CappedAlloc<LIMIT> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() > LIMIT {
            return std::ptr::null_mut();
        }
        System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if layout.size() > LIMIT {
            return std::ptr::null_mut();
        }
        System.alloc_zeroed(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > LIMIT {
            return std::ptr::null_mut();
        }
        System.realloc(ptr, layout, new_size)
    }
}
