//! Reading the fields of a `tokenizer.json`, and the one way a component
//! bpeforge cannot run exactly is refused: an error that names it.

use serde_json::Value;

use crate::error::Error;

/// The error for a component bpeforge does not run exactly as `tokenizers`.
pub fn refuse(component: &str, why: &str) -> Error {
    Error::InvalidArgument(format!(
        "{component} is not supported: {why}; bpeforge refuses it rather than encode differently from HF tokenizers"
    ))
}

/// The `type` of a component.
pub fn kind<'j>(json: &'j Value, component: &str) -> Result<&'j str, Error> {
    json.get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::InvalidArgument(format!("{component} has no 'type': {}", short(json))))
}

pub fn field_bool(json: &Value, name: &str, component: &str) -> Result<Option<bool>, Error> {
    match json.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(value)) => Ok(Some(*value)),
        Some(other) => Err(Error::InvalidArgument(format!("{component}: '{name}' must be true or false, got {other}"))),
    }
}

pub fn field_str<'j>(json: &'j Value, name: &str, component: &str) -> Result<&'j str, Error> {
    json.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| Error::InvalidArgument(format!("{component}: '{name}' must be a string")))
}

/// An optional string field; `null` and `""` both mean none.
pub fn field_nonempty_str<'j>(json: &'j Value, name: &str) -> Option<&'j str> {
    json.get(name).and_then(Value::as_str).filter(|text| !text.is_empty())
}

pub fn field_u32(json: &Value, name: &str, component: &str) -> Result<u32, Error> {
    json.get(name)
        .and_then(Value::as_u64)
        .and_then(|value| u32::try_from(value).ok())
        .ok_or_else(|| Error::InvalidArgument(format!("{component}: '{name}' must be an id (0 to 2^32 - 1)")))
}

/// The first characters of a JSON value, for messages.
pub fn short(json: &Value) -> String {
    let text = json.to_string();
    match text.char_indices().nth(120) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text,
    }
}
