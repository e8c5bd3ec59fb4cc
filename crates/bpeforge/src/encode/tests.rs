//! The encoder's tests: ids equal to merging every piece whole, whatever the
//! caches, windows, batches and threads.

use super::batch::{give_back, worker_states};
use super::document_end::AHEAD;
use super::state::STREAMING_LONG_TABLE_BYTES;
use super::*;
use crate::bpe::encode_piece;
use crate::encode::cache::long_pieces::LONG_PIECE_MAX;
use crate::util::packed_key::{hash_packed, pack};

fn encoder() -> Encoder {
    let mut entries: Vec<(u32, Vec<u8>)> = (0..=255u8).map(|b| (b as u32, vec![b])).collect();
    entries.extend([(256, b" t".to_vec()), (257, b"<|e|>".to_vec()), (258, b"<|e|><|e|>".to_vec())]);
    let vocab = Vocabulary::new(entries, &[(b" ".to_vec(), b"t".to_vec())]).unwrap();
    Encoder::new(vocab, &["<|e|>".to_string(), "<|e|><|e|>".to_string()], Pattern::Gpt2).unwrap()
}

/// Specials found ahead of the scanner (`document_end.rs`) give the ids
/// of splitting on them first, for every preset: specials next to
/// whitespace runs, long pieces and non-ASCII, stray first bytes, and
/// look-aheads short enough that most batches are scanned past a special
/// not yet found (and scanned again).
#[test]
fn specials_found_ahead_give_the_ids_of_splitting_first() {
    let mut entries: Vec<(u32, Vec<u8>)> = (0..=255u8).map(|b| (b as u32, vec![b])).collect();
    let merges: [(&[u8], &[u8]); 4] = [(b" ", b"t"), (b"h", b"e"), (b"1", b"2"), (b" ", b" ")];
    for (left, right) in merges {
        entries.push((entries.len() as u32, [left, right].concat()));
    }
    // Three first bytes, one of them whitespace (a document may then end
    // at a split point), and a split point inside a special.
    for special in ["<|e|>", "<|e|><|e|>", "[ x]", " [y]"] {
        entries.push((entries.len() as u32, special.as_bytes().to_vec()));
    }
    let merges: Vec<(Vec<u8>, Vec<u8>)> = merges.iter().map(|(l, r)| (l.to_vec(), r.to_vec())).collect();
    let specials: Vec<String> = ["<|e|>", "<|e|><|e|>", "[ x]", " [y]"].iter().map(|s| s.to_string()).collect();
    let parts = [
        "the",
        " he",
        " t",
        "12",
        "345",
        " ",
        "   ",
        "\n",
        "\r\n",
        "\t",
        "'s",
        "'ll",
        "é",
        "中文",
        "🙂",
        "’",
        "!",
        "<",
        "<|",
        "[",
        "<|e|>",
        "<|e|><|e|>",
        "[ x]",
        " [y]",
        "Hello",
        "ÀB",
    ];
    let mut rng = crate::util::test_rng::XorShift(0x51ec_1a15_0f00_d5ed);
    for pattern in ["gpt2", "cl100k", "o200k", "llama3", "qwen2"] {
        let vocab = Vocabulary::new(entries.clone(), &merges).unwrap();
        let enc = Encoder::new(vocab, &specials, Pattern::new(pattern).unwrap()).unwrap();
        let scan = enc.pattern.batch_scanner().expect("a preset");
        for case in 0..150 {
            let mut text = String::new();
            while text.len() < [40, 900, 3000][case % 3] {
                match rng.below(40) {
                    // Runs longer than a short look-ahead, and than a batch.
                    0 => text.push_str(&" ".repeat(1 + rng.below(700))),
                    1 => text.push_str(&"ab".repeat(1 + rng.below(700))),
                    2 => text.push_str(&"9".repeat(1 + rng.below(300))),
                    _ => text.push_str(parts[rng.below(parts.len())]),
                }
            }
            let mut state = enc.pooled_state();
            let mut expected = Vec::new();
            enc.with_state(&mut state, |state| enc.encode_split_first(&text, state, &mut expected)).unwrap();
            for ahead in [1, 2, 7, 64, 700, AHEAD] {
                let mut ids = Vec::new();
                enc.with_state(&mut state, |state| {
                    enc.encode_documents_scanning_ahead(text.as_bytes(), scan, ahead, state, &mut ids);
                    Ok(())
                })
                .unwrap();
                assert_eq!(ids, expected, "{pattern}, case {case}, ahead {ahead}: {text:?}");
            }
        }
    }
}

#[test]
fn specials_longest_first_and_merges_inside_pieces() {
    let ids = encoder().encode("a t<|e|><|e|>x<|e|>").unwrap();
    // "a", " t" (merged), the double special, "x", the single special.
    assert_eq!(ids, [b'a' as u32, 256, 258, b'x' as u32, 257]);
}

/// A streaming state's table (1 Ki buckets) starts over again and again
/// on 60 K distinct pieces, often in the middle of a batch, where the
/// batch's buckets, worked out for the larger table, would be past the
/// new one's end (`PieceBatch::refresh_buckets`; a debug build checks
/// each index): the ids are those of no cache.
#[test]
fn a_table_that_starts_over_mid_batch_gives_the_same_ids() {
    let enc = encoder();
    let mut rng = crate::util::test_rng::XorShift(0x2545_f491_4f6c_dd1d);
    let mut word = || -> String { (0..rng.below(6) + 3).map(|_| (b'a' + rng.below(26) as u8) as char).collect() };
    let words: Vec<String> =
        (0..60_000).map(|i| if i % 3 == 0 { " the".into() } else { format!(" {}", word()) }).collect();
    let distinct: std::collections::HashSet<&String> = words.iter().collect();
    assert!(distinct.len() > 30_000, "{} distinct pieces", distinct.len());
    let text = words.concat();
    enc.set_cache_bytes(0);
    let expected = enc.encode(&text).unwrap();
    enc.set_cache_bytes(DEFAULT_CACHE_BYTES);
    let mut state = enc.lookup_only_state();
    for call in 0..2 {
        let mut out = Vec::new();
        enc.encode_with(&text, &mut state, &mut out).unwrap();
        assert!(out == expected, "call {call}");
    }
}

/// Tokens that merge to themselves ("ab", "abc") and one that does not
/// ("cab" encodes as "c" "ab": no seed), in random words: the seeded
/// tables give the ids of no cache at all, for any cache size, and the
/// seeds the text finds stop being seeds.
#[test]
fn seeded_tables_give_the_same_ids() {
    let vocab = crate::encode::cache::seeds::vocabulary_with_a_token_bpe_never_makes();
    let enc = Encoder::new(vocab, &[], Pattern::Gpt2).unwrap();
    let mut rng = crate::util::test_rng::XorShift(0x9e37_79b9_7f4a_7c15);
    let words: Vec<String> = (0..5000)
        .map(|_| {
            let word: String = (0..rng.below(6) + 1).map(|_| ["a", "b", "c", "ab", "cab"][rng.below(5)]).collect();
            format!(" {word}")
        })
        .collect();
    let text = words.concat();
    enc.set_cache_bytes(0);
    let expected = enc.encode(&text).unwrap();
    enc.seed_tables();
    assert_eq!(enc.cache_info().seeds, 0, "nothing is planted while the cache is off");
    for bytes in [256, 64 << 10, DEFAULT_CACHE_BYTES] {
        enc.set_cache_bytes(bytes);
        let planted = enc.cache_info().seeds;
        assert!(planted >= 3, "{planted} seeds with the cache on: planted again");
        assert!(enc.encode(&text).unwrap() == expected, "first call, {bytes} bytes");
        assert!(enc.cache_info().seeds < planted, "the text found some");
        assert!(enc.encode(&text).unwrap() == expected, "warm, {bytes} bytes");
        enc.set_cache_bytes(bytes);
        assert!(enc.encode_batch(&words, |ids| ids).unwrap().concat() == expected, "batch, {bytes} bytes");
    }
}

/// Pieces longer than the long-piece table keeps, cut in windows
/// (`encode_in_windows`), give the ids of merging each whole piece, cold
/// and warm, with the cache off, tiny and at its default, alone and in a
/// batch on two threads.
#[test]
fn pieces_cut_in_windows_give_the_ids_of_merging_them_whole() {
    let enc = Encoder::new(crate::encode::cache::seeds::vocabulary_with_a_token_bpe_never_makes(), &[], Pattern::Gpt2)
        .unwrap();
    enc.seed_tables();
    let mut rng = crate::util::test_rng::XorShift(11);
    let mut letters = |n: usize| -> String { (0..n).map(|_| ["a", "b", "c", "ab", "cab"][rng.below(5)]).collect() };
    let pieces = [letters(1500), "cab".repeat(700), letters(5000), letters(1025)];
    let text = pieces.iter().map(|piece| format!(" {piece}")).collect::<String>();
    let mut expected = Vec::new();
    for piece in &pieces {
        let piece = format!(" {piece}");
        assert!(piece.len() > LONG_PIECE_MAX, "each is one piece of over {LONG_PIECE_MAX} bytes");
        encode_piece(piece.as_bytes(), &enc.vocab, &mut crate::bpe::Scratch::default(), &mut expected);
    }
    for bytes in [0, 256, DEFAULT_CACHE_BYTES] {
        enc.set_cache_bytes(bytes);
        assert_eq!(enc.encode(&text).unwrap(), expected, "cold, {bytes} bytes");
        assert_eq!(enc.encode(&text).unwrap(), expected, "warm, {bytes} bytes");
        let texts = [text.as_str(), text.as_str()];
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let batch = pool.install(|| enc.encode_batch(&texts, |ids| ids)).unwrap();
        assert_eq!(batch.concat(), [expected.clone(), expected.clone()].concat(), "batch, {bytes} bytes");
    }
}

#[test]
fn same_ids_for_any_cache_size_and_the_cache_is_shared() {
    let enc = encoder();
    let text: String = (0..3000).map(|i| format!(" t{} tt{}<|e|>a t\u{e9}{} ", i % 700, i % 13, i % 997)).collect();
    enc.set_cache_bytes(0);
    let expected = enc.encode(&text).unwrap();
    let off = enc.cache_info();
    assert_eq!((off.entries, off.bytes, off.capacity, off.thread_tables), (0, 0, 0, 0), "{off:?}");
    assert!(off.misses > 0, "{off:?}");
    for bytes in [256, 1024, 64 << 10, DEFAULT_CACHE_BYTES] {
        enc.set_cache_bytes(bytes);
        assert_eq!(enc.encode(&text).unwrap(), expected, "cold, {bytes} bytes");
        assert_eq!(enc.encode(&text).unwrap(), expected, "warm, {bytes} bytes");
        let texts: Vec<&str> = text.split_inclusive('\u{e9}').collect();
        let batch: Vec<u32> = enc.encode_batch(&texts, |ids| ids).unwrap().concat();
        assert_eq!(batch, expected, "batch, {bytes} bytes");
        let info = enc.cache_info();
        assert!(info.bytes <= bytes && info.capacity == bytes, "{info:?}");
    }
    // Another thread finds what this one cached, once two states were
    // lent at once (a batch on two workers would do it too).
    drop((enc.pooled_state(), enc.pooled_state()));
    enc.set_cache_bytes(1 << 20);
    enc.encode(&text).unwrap();
    let warmed = enc.cache_info();
    assert!(warmed.misses > 0 && warmed.entries > 0, "{warmed:?}");
    // (A fresh state: `encode` would borrow this thread's warm one, whose
    // own table answers without asking the shared cache.)
    let mut ids = Vec::new();
    let fresh = || enc.encode_with(&text, &mut EncodeState::default(), &mut ids).unwrap();
    std::thread::scope(|scope| scope.spawn(fresh).join().unwrap());
    assert_eq!(ids, expected);
    let after = enc.cache_info();
    assert_eq!(after.misses, warmed.misses, "{after:?}");
    assert!(after.hits > warmed.hits, "{after:?}");
    // A lookup-only state reads the cache and adds nothing.
    enc.set_cache_bytes(1 << 20);
    let mut ids = Vec::new();
    enc.encode_with(&text, &mut EncodeState::lookup_only(), &mut ids).unwrap();
    assert_eq!(ids, expected);
    assert_eq!(enc.cache_info().entries, 0);
}

/// `encode_batch_into` gives `encode_batch`'s ids, concatenated after
/// what `out` held, with each text's end, on any number of threads and
/// for any split of the texts (many small, a few long, empty ones).
#[test]
fn a_flat_batch_gives_each_texts_ids_in_order() {
    let enc = encoder();
    let mut rng = crate::util::test_rng::XorShift(0x2545_f491_4f6c_dd1d);
    let texts: Vec<String> = (0..400)
        .map(|i| match i % 50 {
            0 => String::new(),
            7 => (0..2000).map(|j| [" t", "a", "<|e|>", " tt", "\u{e9}"][(i + j) % 5]).collect(),
            _ => (0..rng.below(40)).map(|_| [" t", "a", "<|e|>", " tt", "x ", "\u{e9}"][rng.below(6)]).collect(),
        })
        .collect();
    let each = enc.encode_batch(&texts, |ids| ids).unwrap();
    for threads in [1, 2, 3, 5] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        for call in 0..3 {
            let (mut out, mut ends) = (vec![7u32, 7], vec![2usize]);
            pool.install(|| enc.encode_batch_into(&texts, None, &mut out, &mut ends)).unwrap();
            let mut expected = vec![7u32, 7];
            let mut expected_ends = vec![2usize];
            for ids in &each {
                expected.extend_from_slice(ids);
                expected_ends.push(expected.len());
            }
            assert!(out == expected, "{threads} threads, call {call}");
            assert_eq!(ends, expected_ends, "{threads} threads, call {call}");
        }
    }
}

/// A batch worker whose state the pool makes in the call starts with a
/// copy of the kept state's table of short pieces (seeds included), not
/// with the seeds alone, and with an empty table of long pieces; the ids
/// are those of one thread, and a worker whose state is new too (nothing
/// kept) plants the seeds as before.
#[test]
fn a_new_batch_worker_starts_with_the_kept_states_tables() {
    let enc = encoder();
    let long_word = " ".to_string() + &"a".repeat(40);
    let texts: Vec<String> = (0..64).map(|i| format!(" tt{i} <|e|>{long_word} x{}", i * 7)).collect();
    // One text at a time: one state, kept.
    let expected: Vec<Vec<u32>> = texts.iter().map(|text| enc.encode(text).unwrap()).collect();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    pool.install(|| {
        let mut states = worker_states(texts.len(), || enc.pooled_state());
        assert_eq!(states.len(), 2);
        assert!(states[0].table.pieces_held() > 64, "the kept state holds the texts' pieces");
        assert!(!states[1].wants_seeds, "copied, so not planted again");
        assert_eq!(states[1].table.pieces_held(), states[0].table.pieces_held());
        assert_eq!(states[1].table.seeds(), states[0].table.seeds());
        assert!(states[0].long.bytes() > 0 && states[1].long.bytes() == 0, "long pieces are not copied");
        let key = pack(b" tt").unwrap();
        let mut out = Vec::new();
        assert!(states[1].table.get(key, hash_packed(key), &mut out), "a piece the kept state merged");
        assert_eq!(out, [256, u32::from(b't')]);
        give_back(states);
        let (mut out, mut ends) = (Vec::new(), Vec::new());
        enc.encode_batch_into(&texts, None, &mut out, &mut ends).unwrap();
        assert!(out == expected.concat(), "same ids from the copied tables");
    });
    let fresh = encoder(); // nothing kept: both states are new
    pool.install(|| {
        let states = worker_states(texts.len(), || fresh.pooled_state());
        assert!(states.iter().all(|state| state.wants_seeds && state.table.pieces_held() == 0));
    });
}

/// A text kept as UTF-16, made UTF-8 by the worker that takes it
/// (`BatchText`, as the binding does for a Python `str`).
struct Utf16Text(Vec<u16>);

impl BatchText for Utf16Text {
    fn weight(&self) -> usize {
        self.0.len()
    }

    fn utf8<'a>(&'a self, buffer: &'a mut String) -> Result<&'a str, Error> {
        buffer.clear();
        for c in char::decode_utf16(self.0.iter().copied()) {
            buffer.push(c.map_err(|_| Error::InvalidArgument("a lone surrogate".into()))?);
        }
        Ok(buffer.as_str())
    }
}

/// Texts the workers make UTF-8 of, each in its own buffer reused from
/// text to text, give the ids of the same texts borrowed; one that cannot
/// be made fails the batch, and `out` is left as it was.
#[test]
fn texts_the_workers_make_give_the_ids_of_the_same_texts_borrowed() {
    let enc = encoder();
    let texts: Vec<String> = (0..200).map(|i| format!("t{i} ab tt ñ “{}” t", "x".repeat(i % 37))).collect();
    let made: Vec<Utf16Text> = texts.iter().map(|text| Utf16Text(text.encode_utf16().collect())).collect();
    for threads in [1, 2, 3] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let (mut expected, mut expected_ends) = (vec![7u32], vec![1usize]);
        pool.install(|| enc.encode_batch_into(&texts, None, &mut expected, &mut expected_ends)).unwrap();
        let (mut out, mut ends) = (vec![7u32], vec![1usize]);
        pool.install(|| enc.encode_batch_into(&made, None, &mut out, &mut ends)).unwrap();
        assert_eq!((&out, &ends), (&expected, &expected_ends), "{threads} threads");
        let mut broken: Vec<Utf16Text> = texts.iter().map(|text| Utf16Text(text.encode_utf16().collect())).collect();
        broken[150].0.push(0xD800);
        let (mut out, mut ends) = (vec![7u32], vec![1usize]);
        assert!(pool.install(|| enc.encode_batch_into(&broken, None, &mut out, &mut ends)).is_err());
        assert_eq!(out, [7], "{threads} threads");
    }
}

/// A text the pattern fails on fails the flat batch, and `out` is left
/// as it was (a custom pattern past fancy-regex's backtracking limit).
#[test]
fn a_failed_flat_batch_leaves_out_as_it_was() {
    let vocab = Vocabulary::new((0..=255u8).map(|b| (b as u32, vec![b])).collect(), &[] as &[(Vec<u8>, Vec<u8>)]);
    let enc = Encoder::new(vocab.unwrap(), &[], Pattern::new(r"(a|a)*(?=b)|.").unwrap()).unwrap();
    let bad = format!("{}c", "a".repeat(40));
    let texts: Vec<&str> = (0..300).map(|i| if i == 5 || i == 200 { bad.as_str() } else { "xyz" }).collect();
    assert!(enc.encode(&bad).is_err(), "the pattern fails on {bad:?}");
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let (mut out, mut ends) = (vec![1u32, 2, 3], vec![3usize]);
        let result = pool.install(|| enc.encode_batch_into(&texts, None, &mut out, &mut ends));
        assert!(result.is_err(), "{threads} threads");
        assert_eq!(out, [1, 2, 3], "{threads} threads");
    }
}

/// Pieces a shared slot cannot hold, long ones (over 15 bytes) and short
/// ones of more than `MAX_IDS` ids, merged by one worker are found by the
/// next through the second level (`shared_long.rs`), with the same ids.
#[test]
fn long_pieces_and_many_id_pieces_are_shared_between_workers() {
    let enc = encoder();
    // Distinct words: `i` in letters (digits would be pieces of their own).
    let letters = |i: usize| format!("{}{}", (b'a' + (i % 26) as u8) as char, (b'a' + (i / 26 % 26) as u8) as char);
    let text: String =
        (0..600).map(|i| format!(" abcdefghijklmnop{} xyzw{} tt", letters(i), letters(i % 50))).collect();
    enc.set_cache_bytes(0);
    let expected = enc.encode(&text).unwrap();
    enc.set_cache_bytes(DEFAULT_CACHE_BYTES);
    drop((enc.pooled_state(), enc.pooled_state()));
    let fresh = || {
        let mut ids = Vec::new();
        enc.encode_with(&text, &mut EncodeState::default(), &mut ids).unwrap();
        ids
    };
    assert_eq!(fresh(), expected);
    let first = enc.cache_info();
    assert!(first.misses > 600, "{first:?}");
    assert_eq!(fresh(), expected, "a second worker, from the shared cache");
    assert_eq!(enc.cache_info().misses, first.misses, "the second worker merged what the first had shared");
    // A thread alone adds nothing to the shared cache; its kept table
    // adds all of it, these pieces too, once a second state comes.
    let enc = encoder();
    assert_eq!(enc.encode(&text).unwrap(), expected);
    let alone = enc.cache_info();
    assert_eq!(alone.entries, 0, "{alone:?}");
    drop(enc.lookup_only_state());
    let mut ids = Vec::new();
    enc.encode_with(&text, &mut EncodeState::default(), &mut ids).unwrap();
    assert_eq!(ids, expected);
    assert_eq!(enc.cache_info().misses, alone.misses, "merged again what the kept table held");
}

#[test]
fn one_thread_alone_leaves_the_shared_cache_empty_until_another_state_comes() {
    let enc = encoder();
    let text: String = (0..2000).map(|i| format!(" t{} tt{} ", i % 500, i % 7)).collect();
    let expected = enc.encode(&text).unwrap();
    assert_eq!(enc.encode(&text).unwrap(), expected);
    let alone = enc.cache_info();
    assert_eq!((alone.entries, alone.bytes, alone.thread_tables), (0, 0, 1), "{alone:?}");
    assert!(alone.hits > 0 && alone.misses > 0, "{alone:?}");
    // A streaming state: the kept state adds its table, and the stream
    // merges nothing that call merged.
    let mut stream = enc.lookup_only_state();
    assert!(enc.cache_info().entries > 0);
    let mut ids = Vec::new();
    enc.encode_with(&text, &mut stream, &mut ids).unwrap();
    assert_eq!(ids, expected);
    assert_eq!(enc.cache_info().misses, alone.misses, "the stream merged pieces the cache had");
    // From then on every state adds what it merges: a fresh one on
    // another text, then a fresh one after it, which merges nothing.
    let other: String = (0..500).map(|i| format!(" x{i}")).collect();
    let fresh = || {
        let mut ids = Vec::new();
        enc.encode_with(&other, &mut EncodeState::default(), &mut ids).unwrap();
        ids
    };
    let first = fresh();
    let misses = enc.cache_info().misses;
    assert_eq!(fresh(), first);
    assert_eq!(enc.cache_info().misses, misses);
}

#[test]
fn long_pieces_give_the_same_ids_when_their_table_fills() {
    let enc = encoder();
    // 4,000 distinct pre-tokens of 18-21 bytes (a space, 16 t's, a
    // letter code): about 560 KB in a long-piece table, several times
    // what a streaming state's holds, so it fills, turns pieces away and
    // starts over while encoding.
    let code = |i: usize| (0..3).map(|d| (b'a' + (i / 26usize.pow(d) % 26) as u8) as char).collect::<String>();
    let text: String = (0..4000).map(|i| format!(" {}{}", "t".repeat(16), code(i))).collect();
    enc.set_cache_bytes(0);
    let expected = enc.encode(&text).unwrap();
    let mut small = EncodeState::lookup_only();
    for round in 0..3 {
        let mut ids = Vec::new();
        enc.encode_with(&text, &mut small, &mut ids).unwrap();
        assert_eq!(ids, expected, "round {round}");
    }
    assert!(small.long.bytes() <= STREAMING_LONG_TABLE_BYTES);
}

#[test]
fn long_pieces_cut_where_no_token_holds_the_pair_give_the_merges_ids() {
    use crate::bpe::Scratch;
    // Tokens hold the pairs ab, bc, cc, ba and nothing with x: a word of
    // a, b, c and x is cut at every other pair (x on either side, aa, ca, ...).
    let mut entries: Vec<(u32, Vec<u8>)> = (0..=255u8).map(|b| (b as u32, vec![b])).collect();
    entries.extend([(256, b"ab".to_vec()), (257, b"abc".to_vec()), (258, b"cc".to_vec()), (259, b"ba".to_vec())]);
    entries.extend([(260, b"abcc".to_vec()), (261, b"baba".to_vec())]);
    let merges: Vec<(Vec<u8>, Vec<u8>)> = [("a", "b"), ("ab", "c"), ("c", "c"), ("b", "a"), ("abc", "c"), ("ba", "ba")]
        .iter()
        .map(|(l, r)| (l.as_bytes().to_vec(), r.as_bytes().to_vec()))
        .collect();
    let vocab = Vocabulary::new(entries, &merges).unwrap();
    assert!(vocab.can_cut_between(b'a', b'x') && vocab.can_cut_between(b'c', b'a'));
    assert!(!vocab.can_cut_between(b'a', b'b') && !vocab.can_cut_between(b'b', b'a'));
    let enc = Encoder::new(vocab.clone(), &[], Pattern::Gpt2).unwrap();
    let mut rng = crate::util::test_rng::XorShift(0x9E37_79B9_7F4A_7C15);
    let mut next = move || rng.next();
    for round in 0..400 {
        // One word (one pre-token) of 16-2,000 letters, some of them repeats of earlier words' parts.
        let len = 16 + (next() % if round % 10 == 0 { 2000 } else { 200 }) as usize;
        let word: String = (0..len).map(|_| ['a', 'b', 'c', 'x', 'a', 'b'][(next() % 6) as usize]).collect();
        let mut expected = Vec::new();
        encode_piece(word.as_bytes(), &vocab, &mut Scratch::default(), &mut expected);
        assert_eq!(enc.encode(&word).unwrap(), expected, "{word}");
        assert_eq!(enc.encode(&word).unwrap(), expected, "again, from the tables: {word}");
    }
}

#[test]
fn decode_concatenates_and_rejects_unknown_ids() {
    let enc = encoder();
    assert_eq!(enc.decode_bytes(&[b'a' as u32, 256, 257]).unwrap(), b"a t<|e|>");
    assert_eq!(enc.decode_bytes(&[9999]).unwrap_err().to_string(), "unknown token id 9999");
}

#[test]
fn only_allowed_specials_are_tokens() {
    let enc = encoder();
    let text = "a t<|e|>x";
    let allowing = |allowed: &[bool]| {
        let mut out = Vec::new();
        enc.encode_allowing(text, Some(allowed), &mut EncodeState::default(), &mut out).unwrap();
        out
    };
    assert_eq!(allowing(&[true, true]), enc.encode(text).unwrap());
    assert_eq!(allowing(&[true, true]), [97, 256, 257, 120]);
    // None allowed: the special's bytes are text, pre-tokenized as any other.
    assert_eq!(allowing(&[false, false]), [97, 256, b'<' as u32, b'|' as u32, 101, b'|' as u32, b'>' as u32, 120]);
    assert_eq!(enc.find_special(text, &[true, true]), Some(0));
    assert_eq!(enc.find_special(text, &[false, true]), None);
    assert_eq!(enc.find_special("no special here", &[true, true]), None);
}

#[test]
fn stable_prefix_can_be_encoded_apart() {
    let enc = encoder();
    let text = "it t  t<|e|><|e|> at\n\n the end  ";
    let cut = enc.stable_prefix_len(text);
    assert!(cut > 0 && cut < text.len());
    let mut apart = enc.encode(&text[..cut]).unwrap();
    apart.extend(enc.encode(&text[cut..]).unwrap());
    assert_eq!(apart, enc.encode(text).unwrap());
    // Nothing is stable in a text shorter than the longest special token.
    assert_eq!(enc.stable_prefix_len("a b"), 0);
}
