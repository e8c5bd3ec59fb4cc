//! The one error type of the core. The Python binding maps each variant onto
//! the Python exception a user expects (FileNotFoundError, ValueError, ...).

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading or opening an input failed; `path` names the file.
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },

    /// The input is not valid UTF-8; `offset` is the first bad byte in the file.
    #[error("{}: invalid UTF-8 at byte offset {offset}; the corpus must be UTF-8 text", path.display())]
    InvalidUtf8 { path: PathBuf, offset: u64 },

    /// An argument that cannot be used; the message says how to fix the call.
    #[error("{0}")]
    InvalidArgument(String),

    /// A token id that the vocabulary does not have.
    #[error("unknown token id {0}")]
    UnknownId(u32),

    /// The progress observer asked to stop (Ctrl-C in Python).
    #[error("interrupted")]
    Interrupted,
}

impl Error {
    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        Error::Io { path: path.to_path_buf(), source }
    }
}
