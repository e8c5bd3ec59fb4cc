//! The BPE model of a byte-level `tokenizer.json`: its vocabulary (token text
//! in GPT-2's byte chars), its merges (`"a b"` strings or `[a, b]` pairs) and
//! options, on bpeforge's `Vocabulary` and merge loop.
//!
//! Options: `ignore_merges` (a piece that is a whole token is that token) is
//! run; with a `continuing_subword_prefix` or an `end_of_word_suffix` a
//! piece's symbols are not its bytes, and `affix_bpe` merges it instead of
//! bpeforge's byte tables; `dropout` is accepted only off.
//! A byte with no token (Falcon has none for some control bytes, GPT-NeoX
//! none for the bytes UTF-8 never holds) is dropped from its piece before the
//! merges, as `tokenizers` drops a char it has no token for; `byte_fallback`
//! and `unk_token` act on such a char instead, so with a missing byte that
//! text can hold they are refused.

use rustc_hash::FxHashSet;
use serde_json::Value;

use super::affix_bpe::AffixBpe;
use super::json::{field_bool, field_nonempty_str, refuse};
use crate::bpe::vocab::{utf8_never_holds, Vocabulary};
use crate::error::Error;
use crate::formats::byte_level::ByteTable;

pub struct BpeModel {
    pub ignore_merges: bool,
    /// The bytes a piece loses before its merges (those with no token), when text can hold any.
    pub dropped: Option<Box<[bool; 256]>>,
    /// Each id's token text as the file spells it, for decoding.
    pub texts: Vec<Option<String>>,
    /// The merges of a model with a subword prefix or suffix (then `vocab` only spells tokens).
    pub affixed: Option<AffixBpe>,
}

impl BpeModel {
    /// The model and its vocabulary (with the merges), which the pipeline's encoder takes.
    pub fn parse(json: &Value) -> Result<(Self, Vocabulary), Error> {
        let component = "model";
        check_kind(json)?;
        let prefix = field_nonempty_str(json, "continuing_subword_prefix").unwrap_or_default();
        let suffix = field_nonempty_str(json, "end_of_word_suffix").unwrap_or_default();
        if json.get("dropout").and_then(Value::as_f64).is_some_and(|p| p > 0.0) {
            return Err(refuse("model.dropout", "dropout makes encoding random"));
        }
        let ignore_merges = field_bool(json, "ignore_merges", component)?.unwrap_or(false);
        let vocab_json = json.get("vocab").and_then(Value::as_object).ok_or_else(|| {
            Error::InvalidArgument("model.vocab is not a JSON object of token text to id".to_string())
        })?;
        let table = ByteTable::new();
        let mut entries = Vec::with_capacity(vocab_json.len());
        let mut texts: Vec<Option<String>> = Vec::new();
        for (text, id) in vocab_json {
            let id = id.as_u64().and_then(|id| u32::try_from(id).ok()).ok_or_else(|| {
                Error::InvalidArgument(format!("model.vocab: token {text:?} has id {id}; ids are 0 to 2^32 - 1"))
            })?;
            // A token outside the byte alphabet (an added token's text) is never a merge's
            // result, so only its text is kept, for decoding.
            if let Some(bytes) = table.decode(text) {
                entries.push((id, bytes));
            }
            let slot = id as usize;
            if texts.len() <= slot {
                texts.resize(slot + 1, None);
            }
            texts[slot] = Some(text.clone());
        }
        let merge_texts = parse_merges(json.get("merges"))?;
        let affixed = match (prefix, suffix) {
            ("", "") => None,
            // Every byte needs its tokens in each place (`AffixBpe::new` refuses otherwise).
            _ => Some(AffixBpe::new(vocab_json, &merge_texts, prefix, suffix)?),
        };
        let missing = fill_missing_bytes(&mut entries);
        let dropped = missing.iter().any(|&byte| !utf8_never_holds(byte)).then(|| {
            let mut dropped = Box::new([false; 256]);
            for &byte in &missing {
                dropped[usize::from(byte)] = true;
            }
            dropped
        });
        if dropped.is_some() {
            let acts_instead = [
                ("byte_fallback", json.get("byte_fallback").and_then(Value::as_bool) == Some(true)),
                ("unk_token", field_nonempty_str(json, "unk_token").is_some()),
            ];
            if let Some((option, _)) = acts_instead.iter().find(|(_, on)| *on) {
                return Err(refuse(
                    &format!("model.{option} with a vocabulary missing bytes"),
                    "it would act on those bytes",
                ));
            }
        }
        // With affixes a merge's result is not its parts' bytes: the table only spells tokens then.
        let merges = match affixed {
            None => {
                merge_texts.iter().map(|(left, right)| merge_bytes(left, right, &table)).collect::<Result<_, _>>()?
            }
            Some(_) => Vec::new(),
        };
        let vocab = Vocabulary::new(entries, &merges)?;
        Ok((Self { ignore_merges, dropped, texts, affixed }, vocab))
    }
}

/// Refuses a model other than BPE.
pub fn check_kind(json: &Value) -> Result<(), Error> {
    let kind = json.get("type").and_then(Value::as_str).unwrap_or("BPE");
    if kind != "BPE" {
        return Err(refuse(&format!("model '{kind}'"), "bpeforge runs BPE models only"));
    }
    Ok(())
}

/// Give each byte the vocabulary lacks an id past all others (bpeforge's
/// tables want every byte; `dropped` keeps these out of the merges); returns them.
fn fill_missing_bytes(entries: &mut Vec<(u32, Vec<u8>)>) -> Vec<u8> {
    let present: FxHashSet<u8> =
        entries.iter().filter(|(_, bytes)| bytes.len() == 1).map(|(_, bytes)| bytes[0]).collect();
    let first_free = entries.iter().map(|&(id, _)| id + 1).max().unwrap_or(0);
    let missing: Vec<u8> = (0..=255u8).filter(|byte| !present.contains(byte)).collect();
    entries.extend(missing.iter().zip(first_free..).map(|(&byte, id)| (id, vec![byte])));
    missing
}

/// A merge's two tokens, as bytes.
type Merge = (Vec<u8>, Vec<u8>);

/// The merges' two tokens each, as the file spells them, in rank order.
fn parse_merges(json: Option<&Value>) -> Result<Vec<(String, String)>, Error> {
    let list = match json {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(list)) => list,
        Some(_) => return Err(Error::InvalidArgument("model.merges must be a JSON array".to_string())),
    };
    let mut seen = FxHashSet::default();
    let mut merges = Vec::with_capacity(list.len());
    for (rank, merge) in list.iter().enumerate() {
        let (left, right) = match merge {
            Value::String(text) => text.split_once(' ').unwrap_or((text, "")),
            Value::Array(pair) if pair.len() == 2 => {
                (pair[0].as_str().unwrap_or_default(), pair[1].as_str().unwrap_or_default())
            }
            _ => ("", ""),
        };
        if left.is_empty() || right.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "model.merges[{rank}] is {merge}; expected \"left right\" or [left, right]"
            )));
        }
        if !seen.insert((left, right)) {
            // HF keeps the last rank of a pair listed twice, bpeforge's tables the first.
            return Err(refuse(&format!("model.merges[{rank}] ({merge}), listed twice"), "the ranks would differ"));
        }
        merges.push((left.to_string(), right.to_string()));
    }
    Ok(merges)
}

fn merge_bytes(left: &str, right: &str, table: &ByteTable) -> Result<Merge, Error> {
    match (table.decode(left), table.decode(right)) {
        (Some(left), Some(right)) => Ok((left, right)),
        _ => Err(Error::InvalidArgument(format!("merge {left:?} {right:?} is not in byte-level spelling"))),
    }
}
