//! The two trainers' conventions bpeforge can follow.

use crate::error::Error;

/// Which pair a tie of counts goes to, and what `vocab_size` counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TieBreak {
    /// CS336 (DESIGN §1.1.4): the greater `(left bytes, right bytes)`;
    /// `vocab_size` = 256 bytes + merges + specials.
    #[default]
    Cs336,
    /// HF `tokenizers`' `BpeTrainer` (`hf_merge.rs`): the smallest pair of
    /// ids; `vocab_size` = specials + bytes seen + distinct new tokens.
    Hf,
}

impl TieBreak {
    pub fn parse(name: &str) -> Result<Self, Error> {
        match name {
            "cs336" => Ok(Self::Cs336),
            "hf" => Ok(Self::Hf),
            _ => Err(Error::InvalidArgument(format!("tie_break must be \"cs336\" or \"hf\", not {name:?}"))),
        }
    }
}

/// What one document of a text file is: no token spans two documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Documents {
    /// A whole file, split at special tokens (CS336).
    #[default]
    Files,
    /// Each line too, its `\n` kept at its end, as HF's `train(files)` reads them.
    Lines,
}

impl Documents {
    pub fn parse(name: &str) -> Result<Self, Error> {
        match name {
            "files" => Ok(Self::Files),
            "lines" => Ok(Self::Lines),
            _ => Err(Error::InvalidArgument(format!("documents must be \"files\" or \"lines\", not {name:?}"))),
        }
    }
}
