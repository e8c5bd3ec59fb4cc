//! The chunk reader over arbitrary bytes, tiny chunk sizes and arbitrary
//! special tokens: the chunks reassemble the input (or, for invalid UTF-8, an
//! `InvalidUtf8` error at the first invalid byte), and pre-tokenizing each
//! chunk alone gives the pre-tokens of the whole.
//!
//! Input: a `Header` (3 bytes), then `num_specials % 5` special tokens each
//! ended by the byte 0xFF, then the file's bytes (anything, 0xFF included).
#![no_main]

use std::path::Path;
use std::sync::OnceLock;

use arbitrary::{Arbitrary, Unstructured};
use bpeforge::ChunkReader;
use bpeforge::SpecialSplitter;
use bpeforge::{Error, Pattern};
use bpeforge_fuzz::{items, split_fields};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Header {
    /// Chunk size `target % 32` (0 is taken as 1).
    target: u8,
    /// The pattern, `% 6`: GPT-2, cl100k (they cut before different
    /// whitespace), a custom regex (cuts only after special tokens), o200k,
    /// llama3 or qwen2 (as cl100k).
    flags: u8,
    num_specials: u8,
}

/// Compiled once: compiling cl100k per input made the target 15x slower.
fn patterns() -> &'static [Pattern; 6] {
    static PATTERNS: OnceLock<[Pattern; 6]> = OnceLock::new();
    PATTERNS.get_or_init(|| {
        ["gpt2", "cl100k", r"\S+|\s+", "o200k", "llama3", "qwen2"].map(|spec| Pattern::new(spec).expect("pattern"))
    })
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(header) = Header::arbitrary(&mut u) else { return };
    let (fields, data) = split_fields(u.take_rest(), usize::from(header.num_specials % 5));
    let Ok(tokens) = fields.iter().map(|f| std::str::from_utf8(f).map(str::to_string)).collect::<Result<Vec<_>, _>>()
    else {
        return;
    };
    let Ok(splitter) = SpecialSplitter::new(&tokens) else { return };
    let target = usize::from(header.target % 32);
    let pattern = &patterns()[usize::from(header.flags % 6)];
    let mut reader = ChunkReader::new(data, Path::new("fuzz.txt"), &splitter, pattern.cut_before(), target);
    let mut chunks: Vec<String> = Vec::new();
    let mut offset = 0u64;
    let whole = std::str::from_utf8(data);
    loop {
        match reader.next_chunk() {
            Ok(Some(chunk)) => {
                assert!(!chunk.text.is_empty(), "empty chunk");
                assert_eq!(chunk.offset, offset, "chunk offset");
                offset += chunk.text.len() as u64;
                chunks.push(chunk.text);
            }
            Ok(None) => break,
            Err(Error::InvalidUtf8 { offset: bad, .. }) => {
                let first_bad = whole.as_ref().expect_err("InvalidUtf8 on valid UTF-8").valid_up_to() as u64;
                assert_eq!(bad, first_bad, "offset of the first invalid byte");
                assert!(offset <= bad, "chunks before the error reach past it");
                assert_eq!(chunks.concat().as_bytes(), &data[..offset as usize]);
                return;
            }
            Err(e) => panic!("unexpected error {e}"),
        }
    }
    let text = whole.expect("invalid UTF-8 read without an error");
    assert_eq!(chunks.concat(), text);

    let expected = items(&splitter, pattern, text);
    let got: Vec<_> = chunks.iter().flat_map(|chunk| items(&splitter, pattern, chunk)).collect();
    assert_eq!(got, expected, "chunks {chunks:?}");
});
