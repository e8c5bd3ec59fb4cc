//! The pre-tokenizers of a `tokenizer.json`, as `tokenizers` runs them: each
//! step cuts every piece the steps before made, and pieces that come out
//! empty are dropped. A byte-level BPE file has one ByteLevel step, which may
//! put a space before each piece and cut it with GPT-2's regex, and then
//! spells each piece in GPT-2's byte chars: steps after it (Falcon's Digits
//! and Split) cut that spelling, so they are run on it here too, and the
//! pieces are turned back into bytes for the merges at the end.

use serde_json::Value;

use super::char_classes::is_punctuation;
use super::deepseek_blocks::DeepSeekV3;
use super::deepseek_v3;
use super::json::{field_bool, kind, refuse};
use super::normalizers::pattern;
use super::piece_buffer::CutLevel;
use super::regexes::Matcher;
use super::split::{char_matches, events, isolated, pieces, Behavior};
use crate::error::Error;
use crate::formats::byte_level::{byte_chars, ByteTable};
use crate::pretokenize::pattern::Pattern;
use crate::pretokenize::scan::for_each_batch;

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
    /// DeepSeek V3's three Splits in one pass (`deepseek_v3`).
    DeepSeekV3,
    /// `regex`: GPT-2's, when the step has `use_regex`.
    ByteLevel {
        add_prefix_space: bool,
        regex: Option<Pattern>,
    },
}

pub struct PreTokenizer {
    pub(super) steps: Vec<Step>,
    pub(super) byte_chars: [char; 256],
    pub(super) byte_table: ByteTable,
}

impl PreTokenizer {
    pub fn parse(json: &Value) -> Result<Self, Error> {
        let mut flat = Vec::new();
        flatten(json, &mut flat)?;
        let mut steps = flat.iter().map(|step| Step::parse(step)).collect::<Result<Vec<_>, _>>()?;
        if let Some(at) = (0..flat.len()).find(|&at| deepseek_v3::starts_with_v3_splits(&flat[at..])) {
            steps.splice(at..at + 3, [Step::DeepSeekV3]);
        }
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

    /// Whether the pipeline is DeepSeek V3's three Splits and ByteLevel
    /// without its regex or prefix space: then their scanner cuts each
    /// stretch straight into pieces (`deepseek_blocks`).
    pub fn is_deepseek_v3(&self) -> bool {
        matches!(&self.steps[..], [Step::DeepSeekV3, Step::ByteLevel { add_prefix_space: false, regex: None }])
    }

    /// The preset of the first Split on one, if any (the tokens planted in
    /// the encoder's tables are those one piece of it can be, `seeds.rs`).
    pub fn first_preset(&self) -> Option<&Pattern> {
        self.steps.iter().find_map(|step| match step {
            Step::Split { pattern: Matcher::Preset(preset), .. } => Some(preset),
            _ => None,
        })
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

    /// Whether every char of a piece is in one of the pieces it makes.
    pub(super) fn keeps_every_char(&self) -> bool {
        match self {
            Step::Split { behavior, .. } | Step::Punctuation { behavior } => *behavior != Behavior::Removed,
            Step::Digits { .. } | Step::DeepSeekV3 => true,
            Step::Whitespace(_) | Step::WhitespaceSplit => false,
            Step::ByteLevel { add_prefix_space, .. } => !add_prefix_space,
        }
    }

    /// Append to `out` the ranges (moved by `offset`) of the pieces this
    /// step makes of `piece`, none empty.
    pub(super) fn cut(
        &self,
        piece: &str,
        offset: usize,
        cuts: &mut CutLevel,
        out: &mut Vec<(usize, usize)>,
    ) -> Result<(), Error> {
        let (found, events_of) = (&mut cuts.found, &mut cuts.events);
        let behavior = match self {
            Step::Split { pattern, behavior: Behavior::Isolated, invert: false } => {
                // Each match and each gap a piece, in order: no flagged stretches needed.
                pattern.find(piece, found)?;
                isolated(piece.len(), found, offset, out);
                return Ok(());
            }
            Step::Split { pattern, behavior, invert } => {
                pattern.find(piece, found)?;
                events(piece.len(), found, *invert, events_of);
                *behavior
            }
            Step::DeepSeekV3 => {
                let mut start = offset;
                for_each_batch::<DeepSeekV3>(piece, |ends| {
                    out.extend(ends.iter().map(|&end| (std::mem::replace(&mut start, end + offset), end + offset)));
                });
                return Ok(());
            }
            Step::Digits { individual } => {
                char_matches(piece, char::is_numeric, found);
                events(piece.len(), found, false, events_of);
                if *individual {
                    Behavior::Isolated
                } else {
                    Behavior::Contiguous
                }
            }
            Step::Punctuation { behavior } => {
                char_matches(piece, is_punctuation, found);
                events(piece.len(), found, false, events_of);
                *behavior
            }
            Step::Whitespace(regex) => {
                found.clear();
                found.extend(regex.find_iter(piece).filter_map(Result::ok).map(|m| (m.start(), m.end())));
                events(piece.len(), found, true, events_of);
                Behavior::Removed
            }
            Step::WhitespaceSplit => {
                char_matches(piece, char::is_whitespace, found);
                events(piece.len(), found, false, events_of);
                Behavior::Removed
            }
            Step::ByteLevel { .. } => unreachable!("pre_tokenize runs ByteLevel itself"),
        };
        pieces(events_of, behavior, offset, out);
        Ok(())
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
