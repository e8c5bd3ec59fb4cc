//! Time the encoder without Python, for profiling the core:
//! `cargo run --release --example encode_file -- TABLES TEXT`, where TABLES is
//! a line with the vocab size, then `id hex` lines, then `lefthex righthex`
//! merge lines (written from Python with `bpeforge.io`).

use std::time::Instant;

use bpeforge::{Encoder, Pattern, Vocabulary};

fn hex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex")).collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let tables = std::fs::read_to_string(&args[1]).expect("tables file");
    let mut lines = tables.lines();
    let size: usize = lines.next().expect("size line").parse().expect("size");
    let mut entries = Vec::new();
    for line in lines.by_ref().take(size) {
        let (id, bytes) = line.split_once(' ').expect("id hex");
        entries.push((id.parse().expect("id"), hex(bytes)));
    }
    let merges: Vec<(Vec<u8>, Vec<u8>)> =
        lines.map(|l| l.split_once(' ').expect("pair")).map(|(a, b)| (hex(a), hex(b))).collect();
    let vocab = Vocabulary::new(entries, &merges).expect("vocab");
    let encoder = Encoder::new(vocab, &["<|endoftext|>".to_string()], Pattern::Gpt2).expect("encoder");
    let text = std::fs::read_to_string(&args[2]).expect("text file");
    let started = Instant::now();
    let ids = encoder.encode(&text).expect("encode");
    let seconds = started.elapsed().as_secs_f64();
    println!("{} ids, {:.1} MB/s", ids.len(), text.len() as f64 / seconds / 1e6);
}
