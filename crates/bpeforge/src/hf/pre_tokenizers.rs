//! The pre-tokenizers of a `tokenizer.json`, as `tokenizers` runs them: each
//! step cuts every piece the steps before made, and pieces that come out
//! empty are dropped. A byte-level BPE file has one ByteLevel step, which may
//! put a space before each piece and cut it with GPT-2's regex, and then
//! spells each piece in GPT-2's byte chars: steps after it (Falcon's Digits
//! and Split) cut that spelling, so they are run on it here too, and the
//! pieces are turned back into bytes for the merges at the end.

use serde_json::Value;

use super::char_classes::is_punctuation;
use super::json::{field_bool, kind, refuse};
use super::normalizers::pattern;
use super::regexes::Matcher;
use super::split::{char_matches, events, pieces, Behavior};
use crate::error::Error;
use crate::formats::byte_level::{byte_chars, ByteTable};
use crate::pretokenize::pattern::Pattern;

pub enum Step {
    Split {
        pattern: Matcher,
        behavior: Behavior,
        invert: bool,
    },
    Digits {
        individual: bool,
    },
    Punctuation {
        behavior: Behavior,
    },
    /// `\w+|[^\w\s]+`, the rest removed.
    Whitespace(Box<fancy_regex::Regex>),
    WhitespaceSplit,
    /// `regex`: GPT-2's, when the step has `use_regex`.
    ByteLevel {
        add_prefix_space: bool,
        regex: Option<Pattern>,
    },
}

pub struct PreTokenizer {
    steps: Vec<Step>,
    byte_chars: [char; 256],
    byte_table: ByteTable,
}

impl PreTokenizer {
    pub fn parse(json: &Value) -> Result<Self, Error> {
        let mut flat = Vec::new();
        flatten(json, &mut flat)?;
        let steps = flat.iter().map(|step| Step::parse(step)).collect::<Result<Vec<_>, _>>()?;
        let byte_levels = steps.iter().filter(|step| matches!(step, Step::ByteLevel { .. })).count();
        if byte_levels != 1 {
            let what = if byte_levels == 0 { "without ByteLevel" } else { "with several ByteLevel steps" };
            return Err(refuse(&format!("pre_tokenizer {what}"), "bpeforge encodes byte-level BPE, which has one"));
        }
        Ok(Self { steps, byte_chars: byte_chars(), byte_table: ByteTable::new() })
    }

    /// The preset a pipeline of one Split (Isolated) on a preset's regex, or
    /// ByteLevel's own regex, amounts to: then the encoder's scanner and
    /// cache run it.
    pub fn single_preset(&self) -> Option<&Pattern> {
        match &self.steps[..] {
            [Step::ByteLevel { add_prefix_space: false, regex: Some(gpt2) }] => Some(gpt2),
            [Step::Split { pattern: Matcher::Preset(preset), behavior, invert }, Step::ByteLevel { add_prefix_space: false, regex: None }]
                // Keeping only the matches of a regex that covers every char is the same cut.
                if (*behavior, *invert) == (Behavior::Isolated, false) || (*behavior, *invert) == (Behavior::Removed, true) =>
            {
                Some(preset)
            }
            _ => None,
        }
    }

    /// Call `visit` with each piece of `text`, in order, as the bytes the BPE merges.
    pub fn pre_tokenize(&self, text: &str, mut visit: impl FnMut(&[u8])) -> Result<(), Error> {
        if let Some(preset) = self.single_preset() {
            // The same pieces, straight from the scanner, without a string a step.
            return preset.for_each_piece(text, |piece| visit(piece.as_bytes()));
        }
        let mut current: Vec<String> = vec![text.to_string()];
        let mut next = Vec::new();
        let mut found = Vec::new();
        for step in &self.steps {
            for piece in &current {
                if let Step::ByteLevel { add_prefix_space, regex } = step {
                    let spaced;
                    let piece = if *add_prefix_space && !piece.starts_with(' ') {
                        spaced = format!(" {piece}");
                        &spaced
                    } else {
                        piece
                    };
                    let spell = |part: &str| part.bytes().map(|byte| self.byte_chars[usize::from(byte)]).collect();
                    match regex {
                        Some(gpt2) => gpt2.for_each_piece(piece, |part| next.push(spell(part)))?,
                        None => next.push(spell(piece)),
                    }
                    continue;
                }
                for (start, end) in step.cut(piece, &mut found)? {
                    next.push(piece[start..end].to_string());
                }
            }
            std::mem::swap(&mut current, &mut next);
            next.clear();
        }
        for piece in current {
            let bytes = self.byte_table.decode(&piece).expect("ByteLevel spelled every piece in byte chars");
            visit(&bytes);
        }
        Ok(())
    }
}

impl Step {
    fn parse(json: &Value) -> Result<Self, Error> {
        let component = "pre_tokenizer";
        Ok(match kind(json, component)? {
            "Split" => Step::Split {
                pattern: pattern(json, "pre_tokenizer Split")?,
                behavior: behavior(json, "pre_tokenizer Split", None)?,
                invert: field_bool(json, "invert", "pre_tokenizer Split")?.unwrap_or(false),
            },
            "Digits" => Step::Digits {
                individual: field_bool(json, "individual_digits", "pre_tokenizer Digits")?.unwrap_or(false),
            },
            "Punctuation" => {
                Step::Punctuation { behavior: behavior(json, "pre_tokenizer Punctuation", Some(Behavior::Isolated))? }
            }
            "Whitespace" => {
                Step::Whitespace(Box::new(fancy_regex::Regex::new(r"\w+|[^\w\s]+").expect("a valid regex")))
            }
            "WhitespaceSplit" => Step::WhitespaceSplit,
            "ByteLevel" => Step::ByteLevel {
                add_prefix_space: field_bool(json, "add_prefix_space", "pre_tokenizer ByteLevel")?.unwrap_or(true),
                regex: field_bool(json, "use_regex", "pre_tokenizer ByteLevel")?
                    .unwrap_or(true)
                    .then_some(Pattern::Gpt2),
            },
            other => return Err(refuse(&format!("pre_tokenizer {other:?}"), "bpeforge does not implement it")),
        })
    }

    /// The ranges of the pieces this step makes of `piece`, none empty.
    fn cut(&self, piece: &str, found: &mut Vec<(usize, usize)>) -> Result<Vec<(usize, usize)>, Error> {
        Ok(match self {
            Step::Split { pattern, behavior, invert } => {
                pattern.find(piece, found)?;
                pieces(&events(piece.len(), found, *invert), *behavior)
            }
            Step::Digits { individual } => {
                let behavior = if *individual { Behavior::Isolated } else { Behavior::Contiguous };
                pieces(&events(piece.len(), &char_matches(piece, char::is_numeric), false), behavior)
            }
            Step::Punctuation { behavior } => {
                pieces(&events(piece.len(), &char_matches(piece, is_punctuation), false), *behavior)
            }
            Step::Whitespace(regex) => {
                let matches: Vec<(usize, usize)> =
                    regex.find_iter(piece).filter_map(Result::ok).map(|m| (m.start(), m.end())).collect();
                pieces(&events(piece.len(), &matches, true), Behavior::Removed)
            }
            Step::WhitespaceSplit => {
                pieces(&events(piece.len(), &char_matches(piece, char::is_whitespace), false), Behavior::Removed)
            }
            Step::ByteLevel { .. } => unreachable!("pre_tokenize runs ByteLevel itself"),
        })
    }
}

fn behavior(json: &Value, component: &str, default: Option<Behavior>) -> Result<Behavior, Error> {
    match (json.get("behavior").and_then(Value::as_str), default) {
        (Some(name), _) => Behavior::parse(name, component),
        (None, Some(default)) => Ok(default),
        (None, None) => Err(Error::InvalidArgument(format!("{component} has no 'behavior'"))),
    }
}

/// The steps of nested Sequences, in order.
fn flatten<'j>(json: &'j Value, out: &mut Vec<&'j Value>) -> Result<(), Error> {
    if json.is_null() {
        return Ok(());
    }
    if kind(json, "pre_tokenizer")? == "Sequence" {
        let steps = json
            .get("pretokenizers")
            .and_then(Value::as_array)
            .ok_or_else(|| Error::InvalidArgument("pre_tokenizer Sequence has no 'pretokenizers' list".to_string()))?;
        for step in steps {
            flatten(step, out)?;
        }
    } else {
        out.push(json);
    }
    Ok(())
}
