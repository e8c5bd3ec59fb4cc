//! A trained vocabulary and its merges as Python objects, each token's bytes
//! held once.
//!
//! A merge's two sides are tokens of the vocabulary, and the core shares
//! their bytes (the trainer's `Learned::tokens`). Here too: a side
//! is the vocabulary's own `bytes` object, found by where its bytes lie, not
//! a copy; and each token's Rust bytes are freed as soon as its `bytes`
//! object is made, so the two copies never coexist whole. On one long
//! pre-token (a file of one letter), the tokens are hundreds of MB, and a
//! copy for the vocabulary, two for the merges and the Rust bytes held until
//! the end were four times that.

use std::collections::HashMap;
use std::sync::Arc;

use bpeforge::Merge;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyTuple};

/// A merge side: the id of the vocabulary token whose bytes it shares, or
/// its own bytes (a side that is no token of the vocabulary).
enum Side {
    Token(usize),
    Own(Arc<[u8]>),
}

/// `(vocab bytes by id, merges as (left, right))`, consuming both.
pub(crate) fn vocab_and_merges_to_py<'py>(
    py: Python<'py>,
    vocab: Vec<Arc<[u8]>>,
    merges: Vec<Merge>,
) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyList>)> {
    // Where each token's bytes lie -> the first id with them (a spelling two
    // merges make is one allocation under two ids).
    let mut first_id: HashMap<*const u8, usize> = HashMap::with_capacity(vocab.len());
    for (id, token) in vocab.iter().enumerate() {
        first_id.entry(token.as_ptr()).or_insert(id);
    }
    let side = |token: Arc<[u8]>| first_id.get(&token.as_ptr()).map_or(Side::Own(token), |&id| Side::Token(id));
    // The merges' hold on the tokens goes here, so each token below is freed once converted.
    let sides: Vec<(Side, Side)> = merges.into_iter().map(|(left, right)| (side(left), side(right))).collect();
    let mut objects: Vec<Bound<'py, PyBytes>> = Vec::with_capacity(vocab.len());
    for (id, token) in vocab.into_iter().enumerate() {
        let object = match first_id[&token.as_ptr()] {
            first if first < id => objects[first].clone(),
            _ => PyBytes::new(py, &token),
        };
        drop(token);
        objects.push(object);
    }
    let object = |side: &Side| match side {
        Side::Token(id) => objects[*id].clone(),
        Side::Own(bytes) => PyBytes::new(py, bytes),
    };
    let merges: Vec<Bound<'py, PyTuple>> =
        sides.iter().map(|(left, right)| PyTuple::new(py, [object(left), object(right)])).collect::<PyResult<_>>()?;
    Ok((PyList::new(py, objects)?, PyList::new(py, merges)?))
}
