//! Worst-case inputs for every preset, at two sizes, and how the time grows
//! between them (the bound: 0.25 MB -> 1 MB at most 4.5x; 4.0 is linear).
//!
//! `cargo run --release --example worst_cases -- [DATA] [--runs N] [--small BYTES] [--large BYTES] [--dump DIR] [PRESET|INPUT...]`
//!
//! DATA is the shared data directory (default: `$BPEFORGE_TEST_DATA`), holding
//! `cs336/gpt2_vocab.json` + `cs336/gpt2_merges.txt` (the gpt2 preset) and
//! `openai/{cl100k,o200k}_base.tiktoken.gz` (cl100k and o200k with their own
//! patterns; llama3 and qwen2 use the cl100k ranks with their patterns).
//! Each input is encoded end to end with `Encoder::encode` (the text is one
//! document), the two sizes alternating, and the best thread CPU time of
//! `--runs` (default 5) is kept for each; the ids of the two sizes are then
//! checked to decode back to their text (after the timing, so that the
//! check's buffers do not change what the allocator has at hand). `--dump
//! DIR` also writes each input's ids there (little-endian u32), to compare
//! two builds. Names after DATA keep only those presets or inputs (`gpt2
//! cjk`). The largest growth is printed last. The 1 MB rows are
//! memory-bound, and another busy process on the machine moves them most.

use std::io::Read;
use std::path::{Path, PathBuf};

use bpeforge::{Encoder, Pattern, Vocabulary};

const PRESETS: [&str; 5] = ["gpt2", "cl100k", "o200k", "llama3", "qwen2"];

/// Seconds this thread has run on a CPU, so that other processes on a busy
/// machine do not count.
fn cpu_seconds() -> f64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `now` is a valid, writable timespec; the call only writes it.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    assert_eq!(status, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    now.tv_sec as f64 + now.tv_nsec as f64 * 1e-9
}

/// A seeded xorshift, so that every run builds the same inputs.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// Chars drawn at random from `alphabet` (a run of one char if it holds one),
/// as many as fit in `bytes` bytes of UTF-8.
fn text_of(alphabet: &[char], bytes: usize) -> String {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut text = String::with_capacity(bytes + 4);
    while text.len() + alphabet[0].len_utf8() <= bytes {
        text.push(alphabet[rng.below(alphabet.len())]);
    }
    text
}

/// The inputs: name and the chars they draw from.
fn inputs() -> Vec<(&'static str, Vec<char>)> {
    vec![
        ("one letter", vec!['a']),
        ("random digits", "0123456789".chars().collect()),
        ("spaces", vec![' ']),
        ("one emoji", vec!['\u{1F642}']),
        // The 20 commonest Chinese chars (as `benchmarks/_encode_peers.py`):
        // they merge into many multi-char tokens.
        ("cjk (20 common)", "的一是不了人我在有他这为之大来以个中上们".chars().collect()),
        // Ideographs drawn from the whole CJK Unified block.
        ("cjk (random)", (0x4E00..0x9FA5).filter_map(char::from_u32).collect()),
        ("2-byte char run", vec!['é']),
        ("3-byte char run", vec!['中']),
    ]
}

fn gpt2_byte_decoder() -> std::collections::HashMap<char, u8> {
    let mut printable: Vec<u32> = (b'!' as u32..=b'~' as u32).chain(0xA1..=0xAC).chain(0xAE..=0xFF).collect();
    let mut chars = printable.clone();
    let mut extra = 0;
    for byte in 0..256 {
        if !printable.contains(&byte) {
            printable.push(byte);
            chars.push(256 + extra);
            extra += 1;
        }
    }
    chars.iter().zip(&printable).map(|(&c, &b)| (char::from_u32(c).expect("char"), b as u8)).collect()
}

/// The `"token": id` pairs of a flat JSON object (GPT-2's `vocab.json`).
fn json_object(text: &str) -> Vec<(String, u32)> {
    let mut chars = text.chars().peekable();
    let mut pairs = Vec::new();
    loop {
        match chars.next() {
            None => break,
            Some('"') => {
                let mut key = String::new();
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => match chars.next().expect("escape") {
                            'u' => {
                                let hex: String = chars.by_ref().take(4).collect();
                                let mut code = u32::from_str_radix(&hex, 16).expect("\\u");
                                if (0xD800..0xDC00).contains(&code) {
                                    let low: String = chars.by_ref().skip(2).take(4).collect();
                                    let low = u32::from_str_radix(&low, 16).expect("\\u low");
                                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                                }
                                key.push(char::from_u32(code).expect("code point"));
                            }
                            'n' => key.push('\n'),
                            't' => key.push('\t'),
                            'r' => key.push('\r'),
                            'b' => key.push('\u{8}'),
                            'f' => key.push('\u{c}'),
                            other => key.push(other),
                        },
                        _ => key.push(c),
                    }
                }
                while chars.peek().is_some_and(|&c| c != ':') {
                    chars.next();
                }
                chars.next();
                while chars.peek().is_some_and(|c| c.is_whitespace()) {
                    chars.next();
                }
                let mut number = String::new();
                while let Some(&c) = chars.peek().filter(|c| c.is_ascii_digit()) {
                    number.push(c);
                    chars.next();
                }
                pairs.push((key, number.parse().expect("id")));
            }
            Some(_) => {}
        }
    }
    pairs
}

fn gpt2_vocab(dir: &Path) -> Vocabulary {
    let decoder = gpt2_byte_decoder();
    let bytes = |token: &str| -> Vec<u8> { token.chars().map(|c| decoder[&c]).collect() };
    let json = std::fs::read_to_string(dir.join("cs336/gpt2_vocab.json")).expect("gpt2_vocab.json");
    let entries = json_object(&json).into_iter().map(|(token, id)| (id, bytes(&token))).collect();
    let merges_text = std::fs::read_to_string(dir.join("cs336/gpt2_merges.txt")).expect("gpt2_merges.txt");
    let merges: Vec<(Vec<u8>, Vec<u8>)> = merges_text
        .lines()
        .filter(|line| !line.starts_with("#version") && !line.trim().is_empty())
        .map(|line| {
            let (left, right) = line.split_once(' ').expect("merge line");
            (bytes(left), bytes(right))
        })
        .collect();
    Vocabulary::new(entries, &merges).expect("GPT-2 vocab")
}

fn base64(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("base64 char {c}"),
    } as u32;
    let digits: Vec<u32> = text.bytes().filter(|&c| c != b'=').map(value).collect();
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    for chunk in digits.chunks(4) {
        let word = chunk.iter().enumerate().fold(0, |acc, (i, d)| acc | d << (18 - 6 * i));
        out.extend_from_slice(&word.to_be_bytes()[1..chunk.len()]);
    }
    out
}

fn tiktoken_vocab(path: &Path) -> Vocabulary {
    let mut text = String::new();
    bpeforge::open_input(path).expect("rank file").read_to_string(&mut text).expect("read");
    let ranks: Vec<(Vec<u8>, u32)> = text
        .lines()
        .filter(|line| !line.is_empty())
        .map(|line| {
            let (token, rank) = line.split_once(' ').expect("token rank");
            (base64(token), rank.parse().expect("rank"))
        })
        .collect();
    let merges = bpeforge::merges_from_ranks(&ranks).expect("merges");
    let entries = ranks.into_iter().map(|(token, rank)| (rank, token)).collect();
    Vocabulary::new(entries, &merges).expect("vocab")
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut data: Option<PathBuf> = std::env::var_os("BPEFORGE_TEST_DATA").map(PathBuf::from);
    let (mut runs, mut small, mut large) = (5usize, 250_000usize, 1_000_000usize);
    let mut dump: Option<PathBuf> = None;
    let mut only: Vec<String> = Vec::new();
    while let Some(arg) = args.next() {
        let mut number = || args.next().and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{arg} N"));
        match arg.as_str() {
            "--runs" => runs = number(),
            "--small" => small = number(),
            "--large" => large = number(),
            "--dump" => dump = Some(PathBuf::from(args.next().expect("--dump DIR"))),
            _ if Path::new(&arg).is_dir() => data = Some(PathBuf::from(arg)),
            _ => only.push(arg),
        }
    }
    let Some(data) = data else {
        eprintln!(
            "usage: worst_cases [DATA] [--runs N] [--small BYTES] [--large BYTES] [--dump DIR] [NAME...] \
             (or set BPEFORGE_TEST_DATA)"
        );
        std::process::exit(2);
    };
    let (presets, names): (Vec<String>, Vec<String>) = only.into_iter().partition(|o| PRESETS.contains(&o.as_str()));
    let inputs: Vec<_> = inputs()
        .into_iter()
        .filter(|(name, _)| names.is_empty() || names.iter().any(|o| name.starts_with(o.as_str())))
        .collect();

    println!(
        "best of {runs} runs, thread CPU time, `Encoder::encode` of one document; growth {small} -> {large} bytes"
    );
    println!("| preset | input | {} KB ms | {} KB ms | growth |", small / 1000, large / 1000);
    println!("|---|---|--:|--:|--:|");
    let (mut cl100k, mut worst) = (None, 0.0f64);
    for preset in PRESETS {
        if !presets.is_empty() && !presets.iter().any(|p| p == preset) {
            continue;
        }
        let (vocab, specials) = match preset {
            "gpt2" => (gpt2_vocab(&data), vec!["<|endoftext|>".to_string()]),
            "o200k" => (tiktoken_vocab(&data.join("openai/o200k_base.tiktoken.gz")), vec![]),
            _ => {
                let vocab = cl100k.get_or_insert_with(|| tiktoken_vocab(&data.join("openai/cl100k_base.tiktoken.gz")));
                (vocab.clone(), vec![])
            }
        };
        let encoder = Encoder::new(vocab, &specials, Pattern::new(preset).expect("preset")).expect("encoder");
        for (name, alphabet) in &inputs {
            let texts = [text_of(alphabet, small), text_of(alphabet, large)];
            let mut best = [f64::INFINITY; 2];
            for _ in 0..runs {
                for (size, text) in texts.iter().enumerate() {
                    let started = cpu_seconds();
                    let ids = encoder.encode(text).expect("encode");
                    best[size] = best[size].min(cpu_seconds() - started);
                    drop(ids);
                }
            }
            for text in &texts {
                let ids = encoder.encode(text).expect("encode");
                assert_eq!(encoder.decode_bytes(&ids).expect("decode"), text.as_bytes(), "{preset} {name}");
                if let Some(dir) = &dump {
                    let file = format!("{preset}.{}.{}.u32", name.replace([' ', '(', ')'], ""), text.len());
                    let bytes: Vec<u8> = ids.iter().flat_map(|id| id.to_le_bytes()).collect();
                    std::fs::write(dir.join(file), bytes).expect("write ids");
                }
            }
            let growth = best[1] / best[0];
            worst = worst.max(growth);
            println!("| {preset} | {name} | {:.2} | {:.2} | {growth:.2}x |", best[0] * 1e3, best[1] * 1e3);
        }
    }
    println!("largest growth: {worst:.2}x");
}
