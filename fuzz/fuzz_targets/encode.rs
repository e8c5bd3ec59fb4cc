//! Encode/decode round trip on a vocabulary built from the fuzz input: the 256
//! bytes (ids rotated), merges of existing tokens (possibly repeated, possibly
//! spelling the same bytes twice) and special tokens. Checks that encoding
//! never fails or panics, `decode_bytes(encode(text)) == text`, the ids equal
//! a plain reference BPE's, the stable prefix encodes apart, and a warm cache
//! gives the same ids.
//!
//! Input: a `Header` (5 bytes), `num_merges` merges as two little-endian u16
//! token indexes each, `num_specials % 5` special tokens each ended by the
//! byte 0xFF, then the text (UTF-8). `tests/test_fuzz_regressions.py` builds
//! the same tokenizer from the corpus files.
#![no_main]

use std::collections::HashMap;
use std::sync::OnceLock;

use arbitrary::{Arbitrary, Unstructured};
use bpeforge::EncodeState;
use bpeforge::Gpt2Splitter;
use bpeforge::{Encoder, Error, Pattern, Vocabulary};
use bpeforge_fuzz::{reference_bpe, reference_special_split, split_fields};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Header {
    /// The byte `(b + rotate) % 256` gets id `b`.
    rotate: u8,
    /// `pattern % 8`: 0-5 GPT-2, 6 cl100k, 7 o200k.
    pattern: u8,
    /// 192 and up: the text is repeated `repeat - 190` times (up to `MAX_TEXT` bytes),
    /// so that pre-tokens over 128 bytes (the heap path of bpe.rs) are common.
    repeat: u8,
    num_merges: u8,
    num_specials: u8,
}

/// Texts are cut to this length after repeating.
const MAX_TEXT: usize = 16 << 10;
/// The reference BPE is quadratic: it checks texts whose pieces are at most this long.
const MAX_REFERENCE_PIECE: usize = 1024;

fn patterns() -> &'static [Pattern; 3] {
    static PATTERNS: OnceLock<[Pattern; 3]> = OnceLock::new();
    PATTERNS.get_or_init(|| ["gpt2", "cl100k", "o200k"].map(|name| Pattern::new(name).unwrap()))
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(header) = Header::arbitrary(&mut u) else { return };
    let Ok(merge_indexes) =
        (0..header.num_merges).map(|_| <(u16, u16)>::arbitrary(&mut u)).collect::<Result<Vec<_>, _>>()
    else {
        return;
    };
    let (fields, text) = split_fields(u.take_rest(), usize::from(header.num_specials % 5));
    let Ok(specials) = fields.iter().map(|f| std::str::from_utf8(f).map(str::to_string)).collect::<Result<Vec<_>, _>>()
    else {
        return;
    };
    let Ok(text) = std::str::from_utf8(text) else { return };
    let mut text = text.to_string();
    if header.repeat >= 192 {
        text = text.repeat(usize::from(header.repeat - 190));
        let mut end = text.len().min(MAX_TEXT);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }

    // Tokens by id: the bytes, then one id per merge (as training gives), then
    // the specials that are not already a token.
    let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b.wrapping_add(header.rotate)]).collect();
    let mut merges: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    for (left, right) in merge_indexes {
        let left = tokens[usize::from(left) % tokens.len()].clone();
        let right = tokens[usize::from(right) % tokens.len()].clone();
        tokens.push([left.as_slice(), right.as_slice()].concat());
        merges.push((left, right));
    }
    for special in &specials {
        if !special.is_empty() && !tokens.iter().any(|t| t == special.as_bytes()) {
            tokens.push(special.as_bytes().to_vec());
        }
    }
    let entries: Vec<(u32, Vec<u8>)> = tokens.iter().cloned().enumerate().map(|(id, t)| (id as u32, t)).collect();
    let vocab = Vocabulary::new(entries, &merges).expect("a vocabulary built from valid merges is refused");
    let pattern_index = usize::from(header.pattern % 8).saturating_sub(5);
    let encoder = match Encoder::new(vocab, &specials, patterns()[pattern_index].clone()) {
        Ok(encoder) => encoder,
        Err(_) => {
            let mut seen = std::collections::HashSet::new();
            assert!(specials.iter().any(|s| s.is_empty() || !seen.insert(s)), "refused specials {specials:?}");
            return;
        }
    };

    let encoded = encoder.encode(&text).expect("the GPT-2 scanner and the presets never fail");
    assert_eq!(encoder.decode_bytes(&encoded).unwrap(), text.as_bytes(), "round trip");

    // The same ids from a plain BPE over the reference split (GPT-2 only: the
    // presets' regexes are fancy-regex's and have no second implementation here).
    if pattern_index == 0 && Gpt2Splitter::new(&text).all(|p| p.len() <= MAX_REFERENCE_PIECE) {
        let mut lowest: HashMap<&[u8], u32> = HashMap::new();
        for (id, token) in tokens.iter().enumerate() {
            lowest.entry(token.as_slice()).or_insert(id as u32);
        }
        let byte_ids: [u32; 256] = std::array::from_fn(|b| lowest[[b as u8].as_slice()]);
        let mut rules: HashMap<(u32, u32), (u32, u32)> = HashMap::new();
        for (rank, (left, right)) in merges.iter().enumerate() {
            let merged = lowest[[left.as_slice(), right.as_slice()].concat().as_slice()];
            rules.entry((lowest[left.as_slice()], lowest[right.as_slice()])).or_insert((rank as u32, merged));
        }
        let mut expected = Vec::new();
        for piece in reference_special_split(&specials, &text) {
            match piece {
                Ok(index) => expected.push(lowest[specials[index].as_bytes()]),
                Err(document) => {
                    for pretoken in Gpt2Splitter::new(&document) {
                        expected.extend(reference_bpe(pretoken.as_bytes(), &byte_ids, &rules));
                    }
                }
            }
        }
        assert_eq!(encoded, expected, "ids differ from the reference BPE");
    }

    // Streaming: the stable prefix encodes apart from the rest.
    let cut = encoder.stable_prefix_len(&text);
    assert!(text.is_char_boundary(cut), "stable prefix ends inside a char");
    let mut apart = encoder.encode(&text[..cut]).unwrap();
    apart.extend(encoder.encode(&text[cut..]).unwrap());
    assert_eq!(apart, encoded, "encoding the stable prefix ({cut} bytes) apart changes the ids");

    // A state kept across calls (its cache warm) gives the same ids.
    let mut state = EncodeState::default();
    for _ in 0..2 {
        let mut out = Vec::new();
        encoder.encode_with(&text, &mut state, &mut out).unwrap();
        assert_eq!(out, encoded, "warm cache");
    }

    // Ids outside the vocabulary are refused by name, never a panic.
    let past_end = tokens.len() as u32;
    for bad in [past_end, u32::MAX] {
        let mut ids = encoded.clone();
        ids.push(bad);
        assert!(matches!(encoder.decode_bytes(&ids), Err(Error::UnknownId(id)) if id == bad));
    }
});
