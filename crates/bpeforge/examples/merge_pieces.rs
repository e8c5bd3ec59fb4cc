//! Time the merges alone (`bpe::encode_piece`) on a set of pieces, for
//! profiling them without scanning or caches:
//! `cargo run --release --example merge_pieces -- TABLES PIECES [RUNS]`, where
//! TABLES is as for `encode_file` and PIECES is the pieces one after another,
//! each a length byte then its bytes (e.g. the distinct pre-tokens of a
//! corpus, from `bpeforge.count`). Prints ns a piece for each run.

use std::time::Instant;

use bpeforge::{encode_piece, Scratch};

#[path = "shared/tables.rs"]
mod tables;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let vocab = tables::read_vocabulary(&args[1]);
    let data = std::fs::read(&args[2]).expect("pieces file");
    let runs: usize = args.get(3).map_or(5, |n| n.parse().expect("runs"));
    let mut pieces = Vec::new();
    let mut rest = &data[..];
    while let Some((&len, after)) = rest.split_first() {
        let (piece, next) = after.split_at(len as usize);
        pieces.push(piece);
        rest = next;
    }
    let (mut scratch, mut out) = (Scratch::default(), Vec::new());
    for run in 0..runs {
        out.clear();
        let started = Instant::now();
        for piece in &pieces {
            encode_piece(piece, &vocab, &mut scratch, &mut out);
        }
        let ns = started.elapsed().as_nanos() as f64 / pieces.len() as f64;
        // The sum of the ids, to compare two builds' results.
        let sum: u64 = out.iter().map(|&id| id as u64).sum();
        println!("run {run}: {} pieces, {} ids (sum {sum}), {ns:.1} ns a piece", pieces.len(), out.len());
    }
}
