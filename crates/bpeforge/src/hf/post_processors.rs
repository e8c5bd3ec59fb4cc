//! Post-processors: the ids put around one sequence when
//! `add_special_tokens` is true (`tokenizers`' default), none when false.
//! ByteLevel changes only offsets, so it adds nothing here. Pairs of
//! sequences are not encoded by bpeforge, so only the `single` template counts.

use serde_json::Value;

use super::json::{field_u32, kind, refuse, short};
use crate::error::Error;

/// The ids before and after the sequence's own.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PostProcessor {
    pub prefix: Vec<u32>,
    pub suffix: Vec<u32>,
}

impl PostProcessor {
    pub fn parse(json: &Value) -> Result<Self, Error> {
        if json.is_null() {
            return Ok(Self::default());
        }
        let component = "post_processor";
        match kind(json, component)? {
            "ByteLevel" => Ok(Self::default()),
            "RobertaProcessing" | "BertProcessing" => {
                let token_id = |name: &str| -> Result<u32, Error> {
                    let pair = json.get(name).and_then(Value::as_array).filter(|pair| pair.len() == 2);
                    pair.and_then(|pair| pair[1].as_u64()).and_then(|id| u32::try_from(id).ok()).ok_or_else(|| {
                        Error::InvalidArgument(format!(
                            "{component}: '{name}' must be [token, id], got {}",
                            short(json)
                        ))
                    })
                };
                Ok(Self { prefix: vec![token_id("cls")?], suffix: vec![token_id("sep")?] })
            }
            "TemplateProcessing" => template(json),
            "Sequence" => {
                let steps = json.get("processors").and_then(Value::as_array).ok_or_else(|| {
                    Error::InvalidArgument("post_processor Sequence has no 'processors' list".to_string())
                })?;
                let mut combined = Self::default();
                for step in steps {
                    let step = Self::parse(step)?;
                    // Each processor wraps what the ones before it made.
                    combined.prefix.splice(0..0, step.prefix);
                    combined.suffix.extend(step.suffix);
                }
                Ok(combined)
            }
            other => Err(refuse(&format!("post_processor {other:?}"), "bpeforge does not implement it")),
        }
    }

    /// How many ids it adds to a text.
    pub fn added(&self) -> usize {
        self.prefix.len() + self.suffix.len()
    }

    /// Its ids around those of `ids` from `start` on (one text's, in a batch's array).
    pub fn apply_from(&self, ids: &mut Vec<u32>, start: usize) {
        if !self.prefix.is_empty() {
            ids.splice(start..start, self.prefix.iter().copied());
        }
        ids.extend_from_slice(&self.suffix);
    }
}

/// TemplateProcessing's `single`: special tokens before and after `$A`.
fn template(json: &Value) -> Result<PostProcessor, Error> {
    let component = "post_processor TemplateProcessing";
    let pieces = json
        .get("single")
        .and_then(Value::as_array)
        .ok_or_else(|| Error::InvalidArgument(format!("{component} has no 'single' template")))?;
    let specials = json.get("special_tokens");
    let mut processor = PostProcessor::default();
    let mut seen_sequence = false;
    for piece in pieces {
        if let Some(sequence) = piece.get("Sequence") {
            if seen_sequence || sequence.get("id").and_then(Value::as_str) != Some("A") {
                return Err(refuse(
                    &format!("{component} single template {}", short(piece)),
                    "it repeats or names a second sequence",
                ));
            }
            seen_sequence = true;
        } else if let Some(special) = piece.get("SpecialToken") {
            let name = special.get("id").and_then(Value::as_str).unwrap_or_default();
            let ids = specials
                .and_then(|all| all.get(name))
                .and_then(|token| token.get("ids"))
                .and_then(Value::as_array)
                .ok_or_else(|| Error::InvalidArgument(format!("{component}: special token {name:?} has no ids")))?;
            let side = if seen_sequence { &mut processor.suffix } else { &mut processor.prefix };
            for id in ids {
                side.push(field_u32(&serde_json::json!({ "id": id }), "id", component)?);
            }
        } else {
            return Err(Error::InvalidArgument(format!("{component}: unknown template piece {}", short(piece))));
        }
    }
    if !seen_sequence {
        return Err(refuse(&format!("{component} without $A"), "it drops the text"));
    }
    Ok(processor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hf_templates_put_their_ids_around_the_text() {
        let llama = serde_json::json!({"type": "Sequence", "processors": [
            {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true},
            {"type": "TemplateProcessing",
             "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
             "pair": [],
             "special_tokens": {"<|begin_of_text|>": {"id": "<|begin_of_text|>", "ids": [128000], "tokens": ["<|begin_of_text|>"]}}}
        ]});
        let mut ids = vec![3, 7, 8];
        PostProcessor::parse(&llama).unwrap().apply_from(&mut ids, 1);
        assert_eq!(ids, [3, 128000, 7, 8], "around the ids from the start given only");
        let roberta = serde_json::json!({"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 0]});
        let mut ids = vec![5];
        PostProcessor::parse(&roberta).unwrap().apply_from(&mut ids, 0);
        assert_eq!(ids, [0, 5, 2]);
    }
}
