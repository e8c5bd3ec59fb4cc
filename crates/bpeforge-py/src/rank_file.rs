//! A tiktoken rank file, GPT-2's `vocab.json` and `merges.txt`, or a pickled
//! vocabulary, straight to an `Encoder` (`bpeforge::rank_file_vocabulary`,
//! `gpt2_files_vocabulary`, `unpack_vocabulary`), and the vocabulary and
//! merges of an encoder as Python objects, made only when the Python layer
//! first needs them (o200k's 200 K tokens as a dict and
//! 400 K merge sides were most of loading it, and an encode needs neither).

use bpeforge::{gpt2_files_vocabulary, rank_file_vocabulary, Encoder, Pattern, SpecialId, Vocabulary};
use bpeforge::{pack_vocabulary, unpack_vocabulary};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use crate::encoder::PyEncoder;
use crate::errors::to_py_err;

/// The encoder of the rank file `data` (its shipped `splits`, if any), with
/// `special_tokens` as `(name, id or None: the next id)`, or None when the
/// file or the specials hold anything unusual: the Python reader then
/// decides and names it.
#[pyfunction]
pub fn encoder_from_rank_file(
    py: Python<'_>,
    data: &[u8],
    splits: Option<&[u8]>,
    special_tokens: Vec<SpecialId>,
    pattern: &str,
    cache_bytes: usize,
) -> PyResult<Option<PyEncoder>> {
    let names: Vec<String> = special_tokens.iter().map(|(name, _)| name.clone()).collect();
    let vocab = py.detach(|| rank_file_vocabulary(data, splits, &special_tokens));
    encoder_of(py, vocab, &names, pattern, cache_bytes)
}

/// The encoder of GPT-2's `vocab.json` and `merges.txt` contents with
/// `special_tokens` (appended after the largest id unless spelled like a
/// token), or None when the files or the specials hold anything unusual: the
/// Python reader then decides and names it.
#[pyfunction]
pub fn encoder_from_gpt2_files(
    py: Python<'_>,
    vocab: &[u8],
    merges: &[u8],
    special_tokens: Vec<String>,
    pattern: &str,
    cache_bytes: usize,
) -> PyResult<Option<PyEncoder>> {
    let built = py.detach(|| gpt2_files_vocabulary(vocab, merges, &special_tokens));
    encoder_of(py, built, &special_tokens, pattern, cache_bytes)
}

fn encoder_of(
    py: Python<'_>,
    vocab: Option<Vocabulary>,
    special_tokens: &[String],
    pattern: &str,
    cache_bytes: usize,
) -> PyResult<Option<PyEncoder>> {
    let pattern = Pattern::new(pattern).map_err(to_py_err)?;
    let Some(vocab) = vocab else { return Ok(None) };
    let encoder = py.detach(|| Encoder::new(vocab, special_tokens, pattern)).map_err(to_py_err)?;
    PyEncoder::from_encoder(py, encoder, cache_bytes).map(Some)
}

/// `[(id, token bytes)]` of `encoder`'s vocabulary, in id order.
#[pyfunction]
pub fn encoder_vocab<'py>(py: Python<'py>, encoder: &PyEncoder) -> PyResult<Bound<'py, PyList>> {
    let tokens: Vec<(u32, &[u8])> = encoder.encoder().vocab().tokens().collect();
    PyList::new(py, tokens.into_iter().map(|(id, token)| (id, PyBytes::new(py, token))))
}

/// `[(left, right)]` of `encoder`'s merges, in rank order.
#[pyfunction]
pub fn encoder_merges<'py>(py: Python<'py>, encoder: &PyEncoder) -> PyResult<Bound<'py, PyList>> {
    let vocab = encoder.encoder().vocab();
    let bytes = |id: u32| PyBytes::new(py, vocab.token(id).unwrap_or_default());
    PyList::new(py, vocab.id_merges().into_iter().map(|(left, right, _)| (bytes(left), bytes(right))))
}

/// `(one more than the largest id, number of tokens, number of merges)` of `encoder`'s vocabulary.
#[pyfunction]
pub fn encoder_sizes(encoder: &PyEncoder) -> (usize, usize, usize) {
    let vocab = encoder.encoder().vocab();
    (vocab.len(), vocab.tokens().count(), vocab.num_merges())
}

/// `encoder`'s vocabulary as bytes (`bpeforge::pack_vocabulary`), for pickling.
#[pyfunction]
pub fn encoder_pack<'py>(py: Python<'py>, encoder: &PyEncoder) -> Bound<'py, PyBytes> {
    let packed = py.detach(|| pack_vocabulary(encoder.encoder().vocab()));
    PyBytes::new(py, &packed)
}

/// The encoder of a vocabulary `encoder_pack` wrote, with `special_tokens`
/// (in it already), or None when `data` is not such bytes (another version's).
#[pyfunction]
pub fn encoder_from_packed(
    py: Python<'_>,
    data: &[u8],
    special_tokens: Vec<String>,
    pattern: &str,
    cache_bytes: usize,
) -> PyResult<Option<PyEncoder>> {
    let vocab = py.detach(|| unpack_vocabulary(data));
    encoder_of(py, vocab, &special_tokens, pattern, cache_bytes)
}
