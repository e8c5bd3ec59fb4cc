//! `bpeforge._core`: the thin layer between Python and the Rust core.
//!
//! Each function converts its arguments, releases the GIL around the core
//! call, and maps errors. Policy (defaults, argument checks a user reads) lives
//! in `python/bpeforge`; algorithms live in `crates/bpeforge`.

mod counts;
mod detached;
mod encoder;
mod errors;
mod hf;
mod id_array;
mod id_list;
mod jsonl;
mod observer;
mod pools;
mod rank_file;
mod reader;
mod short_text;
mod sources;
mod text;
mod text_list;
mod trained;
mod utf8_stream;

use std::path::PathBuf;

use bpeforge::Pattern;
use bpeforge::{Extension, Merge, TrainOptions, DEFAULT_CHUNK_SIZE};
use bpeforge::{TrainResult, TrainStats};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};

use detached::run_detached;
use encoder::PyEncoder;
use observer::PyObserver;

/// Train; returns `(vocab bytes by id, merges as (left, right), stats dict)`.
/// With `base`, continue training it instead (`bpeforge::extend`): returns
/// `([(id, bytes)], new merges, stats dict)`, and `vocab_size` counts every
/// token, the base's included.
#[pyfunction]
#[pyo3(signature = (
    paths, vocab_size, special_tokens, num_threads=None, chunk_size=None, progress=None,
    min_frequency=0, max_token_length=None, pattern="gpt2", profile=false, base=None,
))]
#[allow(clippy::too_many_arguments)]
fn train<'py>(
    py: Python<'py>,
    paths: Vec<PathBuf>,
    vocab_size: usize,
    special_tokens: Vec<String>,
    num_threads: Option<usize>,
    chunk_size: Option<usize>,
    progress: Option<Py<PyAny>>,
    min_frequency: u64,
    max_token_length: Option<usize>,
    pattern: &str,
    profile: bool,
    base: Option<PyRef<'py, PyEncoder>>,
) -> PyResult<Bound<'py, PyTuple>> {
    let options = TrainOptions {
        pattern: pattern.to_string(),
        profile,
        num_threads,
        chunk_size: chunk_size.unwrap_or(DEFAULT_CHUNK_SIZE),
        min_frequency,
        max_token_length,
        ..TrainOptions::new(vocab_size, special_tokens)
    };
    let observer = PyObserver::new(progress);
    match base {
        None => {
            let result = run_detached(py, &observer, || bpeforge::train(&paths, &options, &observer))?;
            train_result_to_py(py, result)
        }
        Some(base) => {
            let base = base.encoder().clone();
            let extension = run_detached(py, &observer, || bpeforge::extend(&paths, &options, &base, &observer))?;
            extension_to_py(py, &extension)
        }
    }
}

/// `(vocab bytes by id, merges, stats dict)` for Python.
pub(crate) fn train_result_to_py<'py>(py: Python<'py>, result: TrainResult) -> PyResult<Bound<'py, PyTuple>> {
    let stats = stats_to_py(py, &result.stats)?;
    let (vocab, merges) = trained::vocab_and_merges_to_py(py, result.vocab, result.merges)?;
    PyTuple::new(py, [vocab.into_any(), merges.into_any(), stats.into_any()])
}

/// `([(id, bytes)], new merges, stats dict)` for Python; the stats hold the
/// corpus's length in tokens with the base and with the extension.
pub(crate) fn extension_to_py<'py>(py: Python<'py>, extension: &Extension) -> PyResult<Bound<'py, PyTuple>> {
    let vocab = PyList::new(py, extension.vocab.iter().map(|(id, bytes)| (*id, PyBytes::new(py, bytes))))?;
    let merges = merges_to_py(py, &extension.merges)?;
    let stats = stats_to_py(py, &extension.stats)?;
    stats.set_item("tokens_before", extension.tokens_before)?;
    stats.set_item("tokens_after", extension.tokens_after)?;
    PyTuple::new(py, [vocab.into_any(), merges.into_any(), stats.into_any()])
}

fn merges_to_py<'py>(py: Python<'py>, merges: &[Merge]) -> PyResult<Bound<'py, PyList>> {
    PyList::new(py, merges.iter().map(|(l, r)| (PyBytes::new(py, l), PyBytes::new(py, r))))
}

fn stats_to_py<'py>(py: Python<'py>, result: &TrainStats) -> PyResult<Bound<'py, PyDict>> {
    let stats = PyDict::new(py);
    stats.set_item("bytes_read", result.bytes_read)?;
    stats.set_item("unique_pretokens", result.unique_pretokens)?;
    stats.set_item("pretokenize_seconds", result.pretokenize_time.as_secs_f64())?;
    stats.set_item("merge_seconds", result.merge_time.as_secs_f64())?;
    stats.set_item("threads", result.threads)?;
    stats.set_item("unmatched_bytes", result.unmatched_bytes)?;
    stats.set_item("longest_pretoken", result.longest_pretoken)?;
    let profile = &result.count_profile;
    let seconds = PyDict::new(py);
    seconds.set_item("read", profile.read.as_secs_f64())?;
    seconds.set_item("batches", profile.batches.as_secs_f64())?;
    seconds.set_item("fold", profile.fold.as_secs_f64())?;
    seconds.set_item("pretokenize_cpu", profile.pretokenize_cpu.as_secs_f64())?;
    seconds.set_item("count_cpu", profile.count_cpu.as_secs_f64())?;
    stats.set_item("count_profile", seconds)?;
    Ok(stats)
}

/// The pre-tokens of one document (no special-token handling).
#[pyfunction]
#[pyo3(signature = (text, pattern="gpt2"))]
fn pretokenize<'t>(text: &'t str, pattern: &str) -> PyResult<Vec<&'t str>> {
    let pattern = Pattern::new(pattern).map_err(errors::to_py_err)?;
    let mut pieces = Vec::new();
    pattern.for_each_piece(text, |piece| pieces.push(piece)).map_err(errors::to_py_err)?;
    Ok(pieces)
}

/// The canonical name of the preset `pattern` spells, or the regex itself; a
/// misspelt preset is a ValueError (`bpeforge::resolve_pattern`).
#[pyfunction]
fn resolve_pattern(pattern: &str) -> PyResult<String> {
    bpeforge::resolve_pattern(pattern).map(str::to_string).map_err(errors::to_py_err)
}

/// The merges a tiktoken rank table implies, in rank order (see `bpeforge::ranks`).
#[pyfunction]
fn merges_from_ranks<'py>(py: Python<'py>, ranks: Vec<(Bound<'py, PyBytes>, u32)>) -> PyResult<Bound<'py, PyList>> {
    // Each merge is made of the `bytes` objects given (as the vocabulary holds
    // them), not of new ones: 400 K fewer objects for o200k.
    let tokens: Vec<(&[u8], u32)> = ranks.iter().map(|(token, rank)| (token.as_bytes(), *rank)).collect();
    let splits = py.detach(|| bpeforge::merge_splits(&tokens)).map_err(errors::to_py_err)?;
    match splits {
        Some(splits) => PyList::new(py, splits.iter().map(|&(left, right)| (&ranks[left].0, &ranks[right].0))),
        // A part that is no token (a file lacking a byte): the merges as bytes, so that building the
        // vocabulary names what is missing. Only such files are split twice.
        None => {
            let merges = py.detach(|| bpeforge::merges_from_ranks(&tokens)).map_err(errors::to_py_err)?;
            byte_pairs_to_py(py, &merges)
        }
    }
}

/// `(left, right)` byte pairs as a list of `(bytes, bytes)` tuples.
fn byte_pairs_to_py<'py>(py: Python<'py>, pairs: &[(Vec<u8>, Vec<u8>)]) -> PyResult<Bound<'py, PyList>> {
    PyList::new(py, pairs.iter().map(|(left, right)| (PyBytes::new(py, left), PyBytes::new(py, right))))
}

/// GPT-2's `vocab.json` and `merges.txt` contents as `([(id, token)], [(left, right)])`, or None when
/// either holds anything unusual: the Python reader then decides and names the problem (see
/// `bpeforge::parse_vocab`).
#[pyfunction]
fn parse_gpt2_files<'py>(py: Python<'py>, vocab: &[u8], merges: &[u8]) -> PyResult<Option<Bound<'py, PyTuple>>> {
    use bpeforge::{parse_merges, parse_vocab};
    let Some((vocab, merges)) = py.detach(|| Some((parse_vocab(vocab)?, parse_merges(merges)?))) else {
        return Ok(None);
    };
    let vocab = PyList::new(py, vocab.iter().map(|(id, token)| (*id, PyBytes::new(py, token))))?;
    let pair = [vocab.into_any(), byte_pairs_to_py(py, &merges)?.into_any()];
    Ok(Some(PyTuple::new(py, pair)?))
}

/// A `.tiktoken` file's contents as `[(token, rank)]` in rank order, or None when it holds anything
/// unusual: the Python reader then decides and names the line (see `bpeforge::parse_rank_file`).
#[pyfunction]
fn parse_rank_file<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Option<Bound<'py, PyList>>> {
    let Some(ranks) = py.detach(|| bpeforge::parse_rank_file(data)) else {
        return Ok(None);
    };
    Ok(Some(PyList::new(py, ranks.iter().map(|(token, rank)| (PyBytes::new(py, token), *rank)))?))
}

/// What this build runs on this CPU: the SIMD level of the pre-tokenizer's
/// scanners, the best the CPU has, the `BPEFORGE_SIMD` cap as read, the
/// levels the CPU has, the CPU features they depend on, and a note where the
/// cap was not taken as given.
#[pyfunction]
fn build_info(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let report = bpeforge::simd_report();
    let info = PyDict::new(py);
    info.set_item("arch", std::env::consts::ARCH)?;
    info.set_item("simd_level", report.level.name())?;
    info.set_item("simd_best", report.best.name())?;
    info.set_item("simd_cap", report.cap)?;
    info.set_item("simd_levels", bpeforge::SimdLevel::supported().iter().map(|l| l.name()).collect::<Vec<_>>())?;
    info.set_item("cpu_features", report.cpu_features)?;
    info.set_item("simd_note", report.note)?;
    info.set_item("unicode_version", bpeforge::UNICODE_VERSION)?;
    Ok(info)
}

/// Run the scanners at `level` (a name `build_info()["simd_levels"]` lists)
/// from now on, in every thread: the tests compare the levels this way.
#[pyfunction]
fn set_simd_level(level: &str) -> PyResult<()> {
    let known = bpeforge::SimdLevel::from_name(level).ok_or_else(|| {
        pyo3::exceptions::PyValueError::new_err(format!("{level:?} is no SIMD level of this platform"))
    })?;
    bpeforge::SimdLevel::set_active(known).map_err(pyo3::exceptions::PyValueError::new_err)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<encoder::PyEncoder>()?;
    m.add_class::<hf::PyHfPipeline>()?;
    m.add_class::<id_array::IdArray>()?;
    m.add_class::<jsonl::PyJsonlBlocks>()?;
    m.add_class::<counts::PyCounts>()?;
    m.add_class::<reader::PyInputReader>()?;
    m.add_function(wrap_pyfunction!(train, m)?)?;
    m.add_function(wrap_pyfunction!(pretokenize, m)?)?;
    m.add_function(wrap_pyfunction!(resolve_pattern, m)?)?;
    m.add_function(wrap_pyfunction!(merges_from_ranks, m)?)?;
    m.add_function(wrap_pyfunction!(parse_gpt2_files, m)?)?;
    m.add_function(wrap_pyfunction!(parse_rank_file, m)?)?;
    m.add_function(wrap_pyfunction!(rank_file::encoder_from_rank_file, m)?)?;
    m.add_function(wrap_pyfunction!(rank_file::encoder_from_gpt2_files, m)?)?;
    m.add_function(wrap_pyfunction!(rank_file::encoder_vocab, m)?)?;
    m.add_function(wrap_pyfunction!(rank_file::encoder_merges, m)?)?;
    m.add_function(wrap_pyfunction!(rank_file::encoder_sizes, m)?)?;
    m.add_function(wrap_pyfunction!(rank_file::encoder_pack, m)?)?;
    m.add_function(wrap_pyfunction!(rank_file::encoder_from_packed, m)?)?;
    m.add_function(wrap_pyfunction!(sources::plan_shards, m)?)?;
    m.add_function(wrap_pyfunction!(pools::py_max_threads, m)?)?;
    m.add_function(wrap_pyfunction!(build_info, m)?)?;
    m.add_function(wrap_pyfunction!(set_simd_level, m)?)?;
    m.add("DEFAULT_CHUNK_SIZE", DEFAULT_CHUNK_SIZE)?;
    m.add("PATTERNS", bpeforge::PRESETS)?;
    Ok(())
}
