//! A byte-level BPE `tokenizer.json` of HF `tokenizers` (Llama 3, Qwen 2,
//! DeepSeek, OLMo, GPT-NeoX, ...), encoded with the ids `tokenizers` gives.
//!
//! The pipeline, as `tokenizers` runs it on one sequence:
//! 1. added tokens with `normalized: false` are cut out of the raw text
//!    (`added_tokens`);
//! 2. each stretch between them is normalized (`normalizers`), and the added
//!    tokens with `normalized: true` are cut out of it;
//! 3. each remaining stretch is pre-tokenized (`pre_tokenizers`, `split`,
//!    `regexes`), ending with ByteLevel;
//! 4. the BPE model merges each piece's bytes (`model`, on `bpe::encode_piece`);
//! 5. with `add_special_tokens`, the post-processor's ids go around the
//!    result (`post_processors`).
//!
//! A pipeline that amounts to one of bpeforge's presets (a Split on a
//! preset's regex, or ByteLevel's own regex, and no prefix space) runs steps
//! 3-4 on the `Encoder`: its scanner and piece cache. Whatever a file holds
//! that is not run exactly as `tokenizers` runs it is refused when loading,
//! naming the component (`json::refuse`).

mod added_tokens;
mod affix_bpe;
mod char_classes;
mod decoders;
mod json;
mod model;
mod normalizers;
mod post_processors;
mod pre_tokenizers;
mod regexes;
mod split;

use std::borrow::Cow;

use serde_json::Value;

use crate::formats::byte_level::ByteTable;
pub use added_tokens::AddedToken;
use added_tokens::{AddedVocabulary, Segment};
use model::BpeModel;
use normalizers::Normalizer;
use post_processors::PostProcessor;
use pre_tokenizers::PreTokenizer;

use crate::bpe::vocab::Vocabulary;
use crate::bpe::{encode_piece, Scratch};
use crate::encode::{EncodeState, Encoder};
use crate::error::Error;

pub struct HfTokenizer {
    normalizer: Option<Normalizer>,
    added: AddedVocabulary,
    pre_tokenizer: PreTokenizer,
    model: BpeModel,
    post: PostProcessor,
    /// Steps 3-4 on the encoder, for pipelines that amount to a preset.
    fast: Option<Encoder>,
    byte_table: ByteTable,
}

/// Buffers one call reuses from stretch to stretch.
#[derive(Default)]
pub struct Workspace {
    scratch: Scratch,
}

impl HfTokenizer {
    /// Load the text of a `tokenizer.json`.
    pub fn from_json(text: &str) -> Result<Self, Error> {
        let doc: Value =
            serde_json::from_str(text).map_err(|err| Error::InvalidArgument(format!("not valid JSON: {err}")))?;
        let model_json = doc
            .get("model")
            .ok_or_else(|| Error::InvalidArgument("not an HF tokenizer.json: no top-level 'model'".to_string()))?;
        // The model's kind first: a file of another kind is named as such, not by the first step it lacks.
        model::check_kind(model_json)?;
        for setting in ["truncation", "padding"] {
            if doc.get(setting).is_some_and(|value| !value.is_null()) {
                return Err(json::refuse(
                    &format!("{setting} {}", json::short(&doc[setting])),
                    &format!("tokenizers applies it to every encoding; set \"{setting}\": null"),
                ));
            }
        }
        let normalizer = Normalizer::parse(doc.get("normalizer").unwrap_or(&Value::Null))?;
        let pre_tokenizer = PreTokenizer::parse(doc.get("pre_tokenizer").unwrap_or(&Value::Null))?;
        let post = PostProcessor::parse(doc.get("post_processor").unwrap_or(&Value::Null))?;
        decoders::check(doc.get("decoder").unwrap_or(&Value::Null))?;
        let model = BpeModel::parse(model_json)?;
        let tokens = added_tokens_with_ids(doc.get("added_tokens"), model_json)?;
        let added = AddedVocabulary::new(tokens, normalizer.as_ref())?;
        let fast = match pre_tokenizer.single_preset() {
            Some(pattern)
                if model.dropped.is_none()
                    && model.affixed.is_none()
                    && (!model.ignore_merges || merges_rebuild_every_token(&model.vocab)) =>
            {
                Some(Encoder::new(model.vocab.clone(), &[], pattern.clone())?)
            }
            _ => None,
        };
        Ok(Self { normalizer, added, pre_tokenizer, model, post, fast, byte_table: ByteTable::new() })
    }

    /// The ids of `text`; with `add_special_tokens`, the post-processor's around them.
    pub fn encode(&self, text: &str, add_special_tokens: bool) -> Result<Vec<u32>, Error> {
        let mut out = Vec::with_capacity(text.len() / 3 + 4);
        let mut state = self.fast.as_ref().map(Encoder::pooled_state);
        self.encode_into(text, add_special_tokens, &mut Workspace::default(), state.as_deref_mut(), &mut out)?;
        Ok(out)
    }

    /// `encode`, appending to `out` with buffers (and the encoder's state, for
    /// a fast pipeline) kept by the caller.
    pub fn encode_into(
        &self,
        text: &str,
        add_special_tokens: bool,
        work: &mut Workspace,
        mut state: Option<&mut EncodeState>,
        out: &mut Vec<u32>,
    ) -> Result<(), Error> {
        let start = out.len();
        let mut raw = Vec::new();
        self.added.split_raw(text, &mut raw);
        for segment in raw {
            let stretch = match segment {
                Segment::Token(id) => {
                    out.push(id);
                    continue;
                }
                Segment::Text(stretch) => stretch,
            };
            let normalized = match &self.normalizer {
                Some(normalizer) => normalizer.normalize(Cow::Borrowed(stretch)),
                None => Cow::Borrowed(stretch),
            };
            let mut normalized_segments = Vec::new();
            self.added.split_normalized(&normalized, &mut normalized_segments);
            for segment in &normalized_segments {
                match *segment {
                    Segment::Token(id) => out.push(id),
                    Segment::Text(stretch) => self.encode_stretch(stretch, work, state.as_deref_mut(), out)?,
                }
            }
        }
        if add_special_tokens {
            let mut ids = out.split_off(start);
            self.post.apply(&mut ids);
            out.extend_from_slice(&ids);
        }
        Ok(())
    }

    /// Steps 3-4 on text between added tokens.
    fn encode_stretch(
        &self,
        stretch: &str,
        work: &mut Workspace,
        state: Option<&mut EncodeState>,
        out: &mut Vec<u32>,
    ) -> Result<(), Error> {
        if let (Some(encoder), Some(state)) = (&self.fast, state) {
            return encoder.encode_with(stretch, state, out);
        }
        let vocab = &self.model.vocab;
        let ignore_merges = self.model.ignore_merges;
        let mut kept = Vec::new();
        self.pre_tokenizer.pre_tokenize(stretch, |piece| {
            if let Some(affixed) = &self.model.affixed {
                return affixed.encode(piece, ignore_merges, out);
            }
            if let Some(whole) = vocab.id(piece).filter(|_| ignore_merges) {
                return out.push(whole);
            }
            match &self.model.dropped {
                Some(dropped) if piece.iter().any(|&byte| dropped[usize::from(byte)]) => {
                    kept.clear();
                    kept.extend(piece.iter().filter(|&&byte| !dropped[usize::from(byte)]));
                    encode_piece(&kept, vocab, &mut work.scratch, out)
                }
                _ => encode_piece(piece, vocab, &mut work.scratch, out),
            }
        })
    }

    /// The bytes of `ids`, as the ByteLevel decoder gives them.
    pub fn decode_bytes(&self, ids: &[u32]) -> Result<Vec<u8>, Error> {
        let mut out = Vec::with_capacity(ids.len() * 4);
        for &id in ids {
            let text = self.token_text(id).ok_or(Error::UnknownId(id))?;
            decoders::token_bytes(&self.byte_table, text, &mut out);
        }
        Ok(out)
    }

    /// The text of token `id` as the file spells it (an added token's own text first).
    pub fn token_text(&self, id: u32) -> Option<&str> {
        self.added
            .token(id)
            .map(|token| token.content.as_str())
            .or_else(|| self.model.texts.get(id as usize).and_then(Option::as_deref))
    }

    /// The bytes of token `id`, as decoding gives them.
    pub fn token_bytes(&self, id: u32) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        decoders::token_bytes(&self.byte_table, self.token_text(id)?, &mut out);
        Some(out)
    }

    /// One past the highest id.
    pub fn id_count(&self) -> usize {
        let added = self.added.tokens().iter().map(|token| token.id as usize + 1).max().unwrap_or(0);
        added.max(self.model.texts.len())
    }

    pub fn added_tokens(&self) -> &[AddedToken] {
        self.added.tokens()
    }

    pub fn vocab(&self) -> &Vocabulary {
        &self.model.vocab
    }

    /// Whether steps 3-4 run on the encoder's scanner and cache.
    pub fn is_fast(&self) -> bool {
        self.fast.is_some()
    }

    /// The encoder of a fast pipeline, for callers that keep its state across texts.
    pub fn encoder(&self) -> Option<&Encoder> {
        self.fast.as_ref()
    }
}

/// The added tokens with the ids `tokenizers` gives them (the ids in the file
/// are only checked there): the model's id for the text, else the next free
/// id past the model's vocabulary.
fn added_tokens_with_ids(json: Option<&Value>, model: &Value) -> Result<Vec<AddedToken>, Error> {
    let list = match json {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(list)) => list,
        Some(_) => return Err(Error::InvalidArgument("added_tokens must be a JSON array".to_string())),
    };
    let model_vocab = model.get("vocab").and_then(Value::as_object);
    let model_size = model_vocab.map_or(0, |vocab| vocab.len()) as u32;
    let mut tokens: Vec<AddedToken> = Vec::with_capacity(list.len());
    // `tokenizers` numbers the tokens the model lacks on from the model's size, in file order.
    let mut next_id = model_size;
    for (number, json) in list.iter().enumerate() {
        let mut token = AddedToken::parse(json, number)?;
        if token.content.is_empty() {
            continue;
        }
        if let Some(earlier) = tokens.iter().find(|earlier| earlier.content == token.content) {
            let relisted = AddedToken { id: earlier.id, ..token.clone() };
            if format!("{earlier:?}") == format!("{relisted:?}") {
                continue;
            }
            return Err(json::refuse(&format!("added token {:?} listed twice", token.content), "with different rules"));
        }
        let model_id = model_vocab.and_then(|vocab| vocab.get(&token.content)).and_then(Value::as_u64);
        token.id = match model_id {
            Some(id) => id as u32,
            None => {
                next_id += 1;
                next_id - 1
            }
        };
        tokens.push(token);
    }
    Ok(tokens)
}

/// Whether every token of `vocab` is what the merges make of its own bytes:
/// then `ignore_merges` changes no id.
fn merges_rebuild_every_token(vocab: &Vocabulary) -> bool {
    let mut scratch = Scratch::default();
    let mut ids = Vec::new();
    vocab.tokens().all(|(id, bytes)| {
        ids.clear();
        encode_piece(bytes, vocab, &mut scratch, &mut ids);
        ids.len() == 1 && ids[0] == id
    })
}
