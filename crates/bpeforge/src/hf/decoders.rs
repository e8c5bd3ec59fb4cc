//! Decoding ids to bytes, as the ByteLevel decoder of `tokenizers` does:
//! each token's text through GPT-2's byte table, or as its own UTF-8 when a
//! char of it is not one of the table's (an added token such as
//! `<｜begin▁of▁sentence｜>`). Other decoders are refused at load.

use serde_json::Value;

use super::json::{kind, refuse};
use crate::error::Error;
use crate::formats::byte_level::ByteTable;

/// Checks that `json` is a decoder bpeforge decodes exactly as `tokenizers`.
pub fn check(json: &Value) -> Result<(), Error> {
    if json.is_null() {
        return Err(refuse("decoder null", "tokenizers then joins token texts with spaces"));
    }
    match kind(json, "decoder")? {
        "ByteLevel" => Ok(()),
        "Sequence" => {
            let steps = json.get("decoders").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
            match steps {
                [only] => check(only),
                _ => Err(refuse("decoder Sequence of several decoders", "bpeforge decodes ByteLevel only")),
            }
        }
        other => Err(refuse(&format!("decoder {other:?}"), "bpeforge decodes ByteLevel only")),
    }
}

/// The bytes of one token's text.
pub fn token_bytes(table: &ByteTable, text: &str, out: &mut Vec<u8>) {
    match table.decode(text) {
        Some(bytes) => out.extend_from_slice(&bytes),
        None => out.extend_from_slice(text.as_bytes()),
    }
}
