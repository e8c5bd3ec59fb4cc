//! Inputs as Python passes them: a path (a whole file) or `(path, start, end)`
//! (a shard planned by `plan_shards`), and the planner itself.

use std::path::PathBuf;

use bpeforge::Pattern;
use bpeforge::Source;
use pyo3::prelude::*;

use crate::errors::to_py_err;

#[derive(FromPyObject)]
pub enum SourceArg {
    Range(PathBuf, u64, u64),
    Whole(PathBuf),
}

impl From<SourceArg> for Source {
    fn from(arg: SourceArg) -> Self {
        match arg {
            SourceArg::Range(path, start, end) => Source::range(path, start..end),
            SourceArg::Whole(path) => Source::whole(path),
        }
    }
}

pub fn to_sources(args: Vec<SourceArg>) -> Vec<Source> {
    args.into_iter().map(Source::from).collect()
}

/// Byte ranges `(start, end)` of `path`, about `target` bytes each, that
/// count and encode like the whole file; `[None]` for a file read whole.
#[pyfunction]
#[pyo3(signature = (path, target, special_tokens, pattern="gpt2"))]
pub fn plan_shards(
    py: Python<'_>,
    path: PathBuf,
    target: u64,
    special_tokens: Vec<String>,
    pattern: &str,
) -> PyResult<Vec<Option<(u64, u64)>>> {
    let cut_before = Pattern::new(pattern).map_err(to_py_err)?.cut_before();
    let planned = py.detach(|| bpeforge::plan_shards(&path, target, &special_tokens, cut_before));
    let ranges = planned.map_err(to_py_err)?.into_iter().map(|s| s.range.map(|r| (r.start, r.end)));
    Ok(ranges.collect())
}
