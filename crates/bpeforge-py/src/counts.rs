//! `bpeforge._core.Counts`: a pre-token count table from Python.
//!
//! Built from files (the core's parallel reader) or from documents handed in
//! batches from Python (JSON Lines, Parquet, any iterator), saved to and loaded
//! from count files, added together, and trained from at any vocabulary size.

use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::PathBuf;

use bpeforge::{add_texts, CountSettings, CountsFile, Documents, TieBreak, TrainOptions, DEFAULT_CHUNK_SIZE};
use bpeforge::{Error, Pattern};
use bpeforge::{SpecialSplitter, SuperwordRules};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString, PyTuple};

use crate::detached::run_detached;
use crate::encoder::PyEncoder;
use crate::errors::to_py_err;
use crate::observer::PyObserver;
use crate::pools::noted_threads;
use crate::sources::{to_sources, SourceArg};
use crate::{extension_to_py, train_result_to_py};

#[pyclass(module = "bpeforge._core", name = "Counts")]
pub struct PyCounts {
    inner: CountsFile,
}

/// The documents of `add_texts`: a list (or any iterable) of str. One str is
/// refused rather than taken as its characters; PyO3's own message for it
/// ("Can't extract `str` to `Vec`") did not say what to pass.
fn documents(texts: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    let refuse = |what: String| PyTypeError::new_err(format!("add_texts takes a list of str (the documents); {what}"));
    if texts.is_instance_of::<PyString>() {
        return Err(refuse("got one str: pass [text] to add one document".into()));
    }
    let items = texts.try_iter().map_err(|_| refuse(format!("got type {}", type_name(texts))))?;
    items
        .enumerate()
        .map(|(index, item)| {
            let item = item?;
            if item.is_instance_of::<PyString>() {
                return item.extract::<String>(); // a str that is not UTF-8 (a lone surrogate) says so itself
            }
            Err(refuse(format!("item {index} has type {}", type_name(&item))))
        })
        .collect()
}

fn type_name(value: &Bound<'_, PyAny>) -> String {
    value.get_type().name().map(|name| name.to_string()).unwrap_or_else(|_| "?".into())
}

#[pymethods]
impl PyCounts {
    /// An empty table for documents counted with `special_tokens` and `pattern`.
    #[new]
    #[pyo3(signature = (special_tokens, pattern="gpt2"))]
    fn new(special_tokens: Vec<String>, pattern: &str) -> PyResult<Self> {
        SpecialSplitter::new(&special_tokens).map_err(to_py_err)?;
        let pattern = Pattern::new(pattern).map_err(to_py_err)?.spec().to_string();
        Ok(Self { inner: CountsFile { pattern, special_tokens, ..CountsFile::default() } })
    }

    /// Count text files (each ends a document) or shards of them, in parallel.
    /// Without `split_on_specials` the special tokens are the table's (for
    /// the vocabulary) but the text is counted whole, as HF's trainer reads it.
    #[staticmethod]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (
        paths, special_tokens, num_threads=None, chunk_size=None, progress=None, pattern="gpt2", documents="files",
        split_on_specials=true,
    ))]
    fn from_files(
        py: Python<'_>,
        paths: Vec<SourceArg>,
        special_tokens: Vec<String>,
        num_threads: Option<usize>,
        chunk_size: Option<usize>,
        progress: Option<Py<PyAny>>,
        pattern: &str,
        documents: &str,
        split_on_specials: bool,
    ) -> PyResult<Self> {
        let splitting = if split_on_specials { special_tokens.clone() } else { Vec::new() };
        let documents = Documents::parse(documents).map_err(to_py_err)?;
        let observer = PyObserver::new(progress);
        let num_threads = noted_threads(py, num_threads)?;
        let settings = CountSettings {
            special_tokens: &splitting,
            pattern,
            num_threads,
            chunk_size: chunk_size.unwrap_or(DEFAULT_CHUNK_SIZE),
            profile: false,
            documents,
        };
        let sources = to_sources(paths);
        let (mut inner, _, _) = run_detached(py, &observer, || bpeforge::count(&sources, &settings, &observer))?;
        inner.special_tokens = special_tokens;
        Ok(Self { inner })
    }

    /// Add documents (each counted as if followed by a special token), in parallel.
    #[pyo3(signature = (texts, num_threads=None))]
    fn add_texts(&mut self, py: Python<'_>, texts: &Bound<'_, PyAny>, num_threads: Option<usize>) -> PyResult<()> {
        let texts = documents(texts)?;
        let specials = SpecialSplitter::new(&self.inner.special_tokens).map_err(to_py_err)?;
        let pattern = Pattern::new(&self.inner.pattern).map_err(to_py_err)?;
        let pool = bpeforge::build_pool(noted_threads(py, num_threads)?).map_err(to_py_err)?;
        let inner = &mut self.inner;
        py.detach(|| {
            add_texts(&mut inner.counts, &texts, &specials, &pattern, &pool)?;
            inner.bytes_counted += texts.iter().map(|t| t.len() as u64).sum::<u64>();
            inner.unmatched_bytes += pattern.unmatched_bytes();
            Ok(())
        })
        .map_err(to_py_err)
    }

    /// Add another table counted the same way; `what` names it in errors. A
    /// table added to itself doubles (the other is read before this one changes).
    #[pyo3(signature = (other, what="the other table"))]
    fn merge(slf: &Bound<'_, Self>, other: &Bound<'_, PyCounts>, what: &str) -> PyResult<()> {
        let added = other.try_borrow()?.inner.clone();
        slf.try_borrow_mut()?.inner.merge(added, what).map_err(to_py_err)
    }

    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        let inner = &self.inner;
        py.detach(|| {
            let file = File::create(&path).map_err(|e| Error::Io { path: path.clone(), source: e })?;
            inner.write_to(BufWriter::new(file)).map_err(|e| Error::Io { path: path.clone(), source: e })
        })
        .map_err(to_py_err)
    }

    /// The count file's bytes: how a table travels between processes
    /// (pickling, Ray's object store) without a file.
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let mut out = Vec::new();
        self.inner.write_to(&mut out).map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(PyBytes::new(py, &out))
    }

    #[staticmethod]
    fn from_bytes(py: Python<'_>, data: &[u8]) -> PyResult<Self> {
        let inner = py.detach(|| CountsFile::read_from(data, "count table bytes")).map_err(to_py_err)?;
        Ok(Self { inner })
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyBytes>,))> {
        let rebuild = slf.getattr("from_bytes")?;
        Ok((rebuild, (slf.borrow().to_bytes(slf.py())?,)))
    }

    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let inner = py
            .detach(|| {
                let file = File::open(&path).map_err(|e| Error::Io { path: path.clone(), source: e })?;
                CountsFile::read_from(BufReader::new(file), &path.display().to_string())
            })
            .map_err(to_py_err)?;
        Ok(Self { inner })
    }

    /// Learn merges from (a copy of) the table: `(vocab, merges, stats)`; with
    /// `base`, continue training it: `([(id, bytes)], new merges, stats)`, and
    /// `vocab_size` counts the base's tokens too.
    #[pyo3(signature = (
        vocab_size, min_frequency=0, max_token_length=None, progress=None, base=None, num_threads=None, tie_break="cs336",
    ))]
    #[allow(clippy::too_many_arguments)]
    fn train<'py>(
        &self,
        py: Python<'py>,
        vocab_size: usize,
        min_frequency: u64,
        max_token_length: Option<usize>,
        progress: Option<Py<PyAny>>,
        base: Option<PyRef<'py, PyEncoder>>,
        num_threads: Option<usize>,
        tie_break: &str,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let num_threads = noted_threads(py, num_threads)?;
        let options = TrainOptions {
            tie_break: TieBreak::parse(tie_break).map_err(to_py_err)?,
            min_frequency,
            max_token_length,
            num_threads,
            pattern: self.inner.pattern.clone(),
            ..TrainOptions::new(vocab_size, self.inner.special_tokens.clone())
        };
        let observer = PyObserver::new(progress);
        let counted = self.inner.clone();
        match base {
            None => {
                let result = run_detached(py, &observer, || bpeforge::train_from_counts(counted, &options, &observer))?;
                train_result_to_py(py, result)
            }
            Some(base) => {
                let base = base.encoder().clone();
                let extension = run_detached(py, &observer, || {
                    let pool = bpeforge::build_pool(options.num_threads)?;
                    bpeforge::extend_from_counts(counted, &options, &base, &pool, &observer)
                })?;
                extension_to_py(py, &extension)
            }
        }
    }

    /// SuperBPE's stage 2 on a table of its pieces: replay `inherited`, then
    /// learn superword merges with `tie_break`'s loop: `(vocab, merges, stats)`.
    /// With `new_tokens`, learn that many past the replay (HF: until its
    /// vocabulary grows by that many), whatever `vocab_size` says (extending a base tokenizer).
    #[pyo3(
        name = "_train_superwords",
        signature = (
            vocab_size, inherited, max_words=4, forbid=vec![b": ".to_vec()], min_frequency=0, progress=None,
            new_tokens=None, tie_break="cs336", num_threads=None,
        ),
    )]
    #[allow(clippy::too_many_arguments)]
    fn train_superwords<'py>(
        &mut self,
        py: Python<'py>,
        vocab_size: usize,
        inherited: Vec<(Vec<u8>, Vec<u8>)>,
        max_words: usize,
        forbid: Vec<Vec<u8>>,
        min_frequency: u64,
        progress: Option<Py<PyAny>>,
        new_tokens: Option<usize>,
        tie_break: &str,
        num_threads: Option<usize>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let options = TrainOptions {
            tie_break: TieBreak::parse(tie_break).map_err(to_py_err)?,
            num_threads: noted_threads(py, num_threads)?,
            min_frequency,
            pattern: self.inner.pattern.clone(),
            ..TrainOptions::new(vocab_size, self.inner.special_tokens.clone())
        };
        let inherited: Vec<bpeforge::Merge> =
            inherited.into_iter().map(|(left, right)| (left.into(), right.into())).collect();
        let rules = SuperwordRules { max_words, forbid };
        let observer = PyObserver::new(progress);
        // Taken, not cloned, and dropped as soon as stage 2 has the pieces as ids: the table of whole
        // lines is about the corpus's size. The table is empty afterwards.
        let counts = std::mem::take(&mut self.inner.counts);
        let counted = CountsFile { counts, ..self.inner.clone() };
        let (result, replayed, learnt) = run_detached(py, &observer, || {
            bpeforge::train_superwords_from_counts(counted, &options, &inherited, &rules, new_tokens, &observer)
        })?;
        let core = train_result_to_py(py, result)?;
        // The pieces' length in tokens with the inherited merges, and with the superwords too.
        let stats = core.get_item(2)?;
        stats.set_item("tokens_before", replayed)?;
        stats.set_item("tokens_after", learnt)?;
        Ok(core)
    }

    #[getter]
    fn special_tokens(&self) -> Vec<String> {
        self.inner.special_tokens.clone()
    }

    #[getter]
    fn pattern(&self) -> &str {
        &self.inner.pattern
    }

    #[getter]
    fn bytes_counted(&self) -> u64 {
        self.inner.bytes_counted
    }

    fn __len__(&self) -> usize {
        self.inner.counts.len()
    }

    /// Every distinct pre-token with its count, sorted by bytes.
    fn items(&self) -> Vec<(Vec<u8>, u64)> {
        let mut out = Vec::with_capacity(self.inner.counts.len());
        self.inner.counts.for_each(|bytes, n| out.push((bytes.to_vec(), n)));
        out.sort_unstable();
        out
    }
}
