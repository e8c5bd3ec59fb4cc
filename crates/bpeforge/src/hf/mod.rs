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
//! Step 4 runs on an `Encoder` of the model's vocabulary: each piece is looked
//! up in its caches and merged only when they lack it (`piece_buffer`,
//! `Encoder::encode_piece_ends`). A pipeline that amounts to one of
//! bpeforge's presets (a Split on a preset's regex, or ByteLevel's own regex,
//! and no prefix space) runs step 3 on the encoder's scanner too; any other
//! runs its steps (`pre_tokenizers`) into a buffer of pieces first.
//! `ignore_merges` gives a piece that is a token the merges do not make
//! that token, in the encoder (`encode/unmerged_tokens.rs`). A batch of
//! texts looks up the pieces of several short texts together (`runs`).
//! Whatever a file holds that is not run exactly as `tokenizers` runs it is
//! refused when loading, naming the component (`json::refuse`).

mod added_tokens;
mod affix_bpe;
mod char_classes;
mod class_run;
mod decoders;
mod deepseek_blocks;
mod deepseek_split;
mod deepseek_v3;
mod json;
mod model;
mod normalizers;
mod piece_buffer;
mod post_processors;
mod pre_tokenize;
mod pre_tokenizers;
mod regexes;
mod runs;
mod split;
mod stable_chars;

use std::borrow::Cow;

use serde_json::Value;

use crate::formats::byte_level::ByteTable;
pub use added_tokens::AddedToken;
use added_tokens::{AddedVocabulary, Segment};
use model::BpeModel;
use normalizers::Normalizer;
use piece_buffer::{CutBuffers, PieceBuffer};
use post_processors::PostProcessor;
use pre_tokenizers::PreTokenizer;

use crate::bpe::vocab::Vocabulary;
use crate::encode::{EncodeState, Encoder};
use crate::error::Error;
use crate::pretokenize::pattern::Pattern;
use crate::pretokenize::scan::for_each_batch;
use deepseek_blocks::DeepSeekV3;

pub struct HfTokenizer {
    normalizer: Option<Normalizer>,
    added: AddedVocabulary,
    pre_tokenizer: PreTokenizer,
    model: BpeModel,
    post: PostProcessor,
    /// Step 4 (and 3, for a preset's pipeline) on its caches.
    encoder: Encoder,
    /// How step 3 cuts a stretch.
    cutter: Cutter,
    byte_table: ByteTable,
}

/// How step 3 cuts a stretch into pieces.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Cutter {
    /// The encoder's scanner: the pipeline amounts to a preset.
    Preset,
    /// DeepSeek V3's scanner (`deepseek_blocks`), straight into pieces.
    DeepSeekV3,
    /// The pre-tokenizer's steps, into a buffer of pieces (`pre_tokenize`).
    Steps,
}

/// Buffers one worker reuses from stretch to stretch.
#[derive(Default)]
pub struct Workspace {
    pieces: PieceBuffer,
    cuts: CutBuffers,
    /// A stretch's ids, when its model writes them itself (`runs.rs`).
    ids: Vec<u32>,
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
        let (model, vocab) = BpeModel::parse(model_json)?;
        let tokens = added_tokens_with_ids(doc.get("added_tokens"), model_json)?;
        let added = AddedVocabulary::new(tokens, normalizer.as_ref())?;
        let preset = pre_tokenizer.single_preset().filter(|_| model.dropped.is_none() && model.affixed.is_none());
        let plain_model = model.dropped.is_none() && model.affixed.is_none();
        let cutter = match (preset, pre_tokenizer.is_deepseek_v3() && plain_model) {
            (Some(_), _) => Cutter::Preset,
            (None, true) => Cutter::DeepSeekV3,
            (None, false) => Cutter::Steps,
        };
        // Without the scanner the pattern only chooses the tokens planted in the tables (`seeds.rs`).
        let pattern = preset.or_else(|| pre_tokenizer.first_preset()).cloned().unwrap_or(Pattern::Gpt2);
        // The encoder's vocabulary is the pipeline's (no copy: Llama 3's is 60 MiB of tables).
        let mut encoder = Encoder::new(vocab, &[], pattern)?;
        if model.ignore_merges && model.affixed.is_none() {
            encoder.ignore_merges();
        }
        if model.affixed.is_none() {
            // Here, when the tokenizer is built, so that no call waits for it.
            encoder.seed_tables();
        }
        Ok(Self { normalizer, added, pre_tokenizer, model, post, encoder, cutter, byte_table: ByteTable::new() })
    }

    /// The ids of `text`; with `add_special_tokens`, the post-processor's around them.
    pub fn encode(&self, text: &str, add_special_tokens: bool) -> Result<Vec<u32>, Error> {
        let mut out = crate::encode::ids_buffer(text.len());
        self.encode_append(text, add_special_tokens, &mut out)?;
        Ok(out)
    }

    /// `encode`, appending to `out`: a caller that encodes one short text
    /// after another keeps one buffer, where a new one a call (sized for the
    /// first batch of pieces, 2 KiB) went past the allocator's thread cache.
    pub fn encode_append(&self, text: &str, add_special_tokens: bool, out: &mut Vec<u32>) -> Result<(), Error> {
        let mut state = self.encoder.pooled_state();
        self.encode_into(text, add_special_tokens, &mut Workspace::default(), &mut state, out)
    }

    /// Each added token and each normalized stretch of `text` between them,
    /// in order, as `tokenizers` finds them: the added tokens with
    /// `normalized: false` in the raw text, then the others in each stretch
    /// once normalized. Shared by one text (`encode_into`) and batches of
    /// short texts (`runs.rs`).
    fn for_each_segment(
        &self,
        text: &str,
        mut visit: impl FnMut(Segment<'_>) -> Result<(), Error>,
    ) -> Result<(), Error> {
        self.added.for_each_raw(text, |segment| {
            let Segment::Text(stretch) = segment else { return visit(segment) };
            let normalized = match &self.normalizer {
                Some(normalizer) => normalizer.normalize(Cow::Borrowed(stretch)),
                None => Cow::Borrowed(stretch),
            };
            self.added.for_each_normalized(&normalized, &mut visit)
        })
    }

    /// `encode`, appending to `out` with buffers and the encoder's state
    /// kept by the caller (`Encoder::encode_batch_into_by`).
    pub fn encode_into(
        &self,
        text: &str,
        add_special_tokens: bool,
        work: &mut Workspace,
        state: &mut EncodeState,
        out: &mut Vec<u32>,
    ) -> Result<(), Error> {
        let start = out.len();
        self.encoder.in_call(state, |state| {
            self.for_each_segment(text, |segment| match segment {
                Segment::Token(id) => {
                    out.push(id);
                    Ok(())
                }
                Segment::Text(stretch) => self.encode_stretch(stretch, work, state, out),
            })
        })?;
        if add_special_tokens {
            self.post.apply_from(out, start);
        }
        Ok(())
    }

    /// Steps 3-4 on text between added tokens.
    fn encode_stretch(
        &self,
        stretch: &str,
        work: &mut Workspace,
        state: &mut EncodeState,
        out: &mut Vec<u32>,
    ) -> Result<(), Error> {
        match self.cutter {
            Cutter::Preset => return self.encoder.encode_scanned(stretch, state, out),
            Cutter::DeepSeekV3 => {
                let (bytes, mut from) = (stretch.as_bytes(), 0);
                for_each_batch::<DeepSeekV3>(stretch, |ends| {
                    self.encoder.encode_piece_ends(bytes, from, ends, state, out);
                    from = ends[ends.len() - 1];
                });
                return Ok(());
            }
            Cutter::Steps => {}
        }
        let pieces = &mut work.pieces;
        self.pre_tokenizer.pre_tokenize(stretch, pieces, &mut work.cuts, self.model.dropped.as_deref())?;
        match &self.model.affixed {
            Some(affixed) => {
                pieces.pieces(stretch).for_each(|piece| affixed.encode(piece, self.model.ignore_merges, out));
            }
            None => self.encoder.encode_piece_ends(pieces.bytes_of(stretch), 0, &pieces.ends, state, out),
        }
        Ok(())
    }

    /// The most ids the post-processor adds to a text.
    pub fn special_ids_per_text(&self) -> usize {
        self.post.added()
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
        self.encoder.vocab()
    }

    /// Whether step 3 runs on a scanner (step 4 always runs on the encoder's caches).
    pub fn is_fast(&self) -> bool {
        self.cutter != Cutter::Steps
    }

    /// The encoder whose caches merge the pieces, for callers that keep its state across texts.
    pub fn encoder(&self) -> &Encoder {
        &self.encoder
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
