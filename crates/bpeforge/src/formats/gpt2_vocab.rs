//! GPT-2's `vocab.json` and `merges.txt` (`gpt2.rs`) straight to a
//! `Vocabulary`: what `Tokenizer.from_files` and `Tokenizer.load` build
//! without a Python object per token (GPT-2's vocabulary dict and 100 K merge
//! sides were a third of loading it).
//!
//! Special tokens spelled like no token are appended after the largest id,
//! in order; one spelled like exactly one token stands for it (GPT-2's
//! `<|endoftext|>` is in its `vocab.json`). Anything else (a file `gpt2.rs`
//! defers, a special token spelled like two ids, a pair listed twice, a
//! vocabulary that refuses its merges) gives `None`: the Python reader then builds the tokenizer its
//! own way, which decides and names the problem with the file's path.

use rustc_hash::FxHashMap;

use crate::bpe::vocab::Vocabulary;
use crate::formats::gpt2::{parse_merges, parse_vocab};

/// The vocabulary of these files' contents with `specials` (see the top), or
/// `None` for the Python reader.
pub fn gpt2_files_vocabulary(vocab_json: &[u8], merges_txt: &[u8], specials: &[String]) -> Option<Vocabulary> {
    let (mut entries, merges) = (parse_vocab(vocab_json)?, parse_merges(merges_txt)?);
    append_specials(&mut entries, specials)?;
    let vocab = Vocabulary::new(entries, &merges).ok()?;
    // A pair listed twice is one merge of the table: the tokenizer's merges, made from the table, would lose
    // the repeat that the file (and the Python reader's list) holds.
    (vocab.num_merges() == merges.len()).then_some(vocab)
}

/// Append the `specials` spelled like no token of `entries`, or `None` when
/// one is spelled like two.
fn append_specials(entries: &mut Vec<(u32, Vec<u8>)>, specials: &[String]) -> Option<()> {
    let mut spellings: FxHashMap<&[u8], usize> = specials.iter().map(|name| (name.as_bytes(), 0)).collect();
    for (_, token) in entries.iter() {
        if let Some(count) = spellings.get_mut(token.as_slice()) {
            *count += 1;
        }
    }
    if spellings.values().any(|&count| count > 1) {
        return None;
    }
    let mut next = entries.iter().map(|&(id, _)| id as u64 + 1).max().unwrap_or(0);
    let mut appended = Vec::new();
    for name in specials {
        if spellings[name.as_bytes()] == 0
            && !appended.iter().any(|(_, token): &(u32, Vec<u8>)| token == name.as_bytes())
        {
            appended.push((u32::try_from(next).ok()?, name.as_bytes().to_vec()));
            next += 1;
        }
    }
    entries.extend(appended);
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::byte_level::byte_chars;

    /// The 256 bytes (ids 0-255 in byte order), " w" (256) and, when asked, a
    /// second "<|s|>" token; the merge " w".
    fn files(two_spellings: bool) -> (Vec<u8>, Vec<u8>) {
        let chars = byte_chars();
        let text = |bytes: &[u8]| bytes.iter().map(|&b| chars[b as usize]).collect::<String>();
        let mut vocab: Vec<String> = (0..=255u8).map(|b| format!("{:?}: {b}", text(&[b]))).collect();
        vocab.push(format!("{:?}: 256", text(b" w")));
        if two_spellings {
            vocab.push("\"<|s|>\": 257".to_string());
            vocab.push("\"<|s|>\": 258".to_string());
        }
        let merges = format!("#version: 0.2\n{} {}\n", text(b" "), text(b"w"));
        (format!("{{{}}}", vocab.join(", ")).into_bytes(), merges.into_bytes())
    }

    #[test]
    fn specials_spelled_like_no_token_go_after_the_last_id() {
        let (vocab, merges) = files(false);
        let specials = ["<|s|>".to_string(), " w".to_string(), "<|t|>".to_string(), "<|s|>".to_string()];
        let built = gpt2_files_vocabulary(&vocab, &merges, &specials).unwrap();
        assert_eq!((built.id(b"<|s|>"), built.id(b"<|t|>"), built.id(b" w")), (Some(257), Some(258), Some(256)));
        assert_eq!(built.len(), 259);
        assert_eq!(built.id_merges(), [(b' ' as u32, b'w' as u32, 256)]);
        assert!(!built.merges_from_ranks(), "a merges.txt may hold tokens BPE never makes");
    }

    #[test]
    fn anything_unusual_is_left_to_the_python_reader() {
        let (vocab, merges) = files(true);
        assert!(gpt2_files_vocabulary(&vocab, &merges, &[]).is_some());
        assert!(gpt2_files_vocabulary(&vocab, &merges, &["<|s|>".to_string()]).is_none(), "spelled like two ids");
        assert!(gpt2_files_vocabulary(&vocab, b"a b c\n", &[]).is_none(), "a malformed merge");
        let twice = [merges.as_slice(), &merges[b"#version: 0.2\n".len()..]].concat();
        assert!(gpt2_files_vocabulary(&vocab, &twice, &[]).is_none(), "a pair listed twice");
        assert!(gpt2_files_vocabulary(b"[1, 2]", &merges, &[]).is_none(), "not an object");
    }
}
