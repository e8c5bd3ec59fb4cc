//! Train from the command line without Python, for profiling the core:
//! `cargo run --release --example train_file -- FILE VOCAB_SIZE [THREADS] [MERGES_OUT]`.
//! With `MERGES_OUT`, the merges are written there one a line as hex
//! `left right`, so that two builds can be compared byte for byte.

use std::io::Write;
use std::path::PathBuf;

use bpeforge::TrainOptions;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: train_file FILE VOCAB_SIZE [THREADS] [MERGES_OUT]");
        std::process::exit(2);
    }
    let vocab_size = args[2].parse().expect("VOCAB_SIZE must be an integer");
    let num_threads = args.get(3).map(|t| t.parse().expect("THREADS must be an integer"));
    let options = TrainOptions { num_threads, ..TrainOptions::new(vocab_size, vec!["<|endoftext|>".to_string()]) };
    let result = bpeforge::train(&[PathBuf::from(&args[1])], &options, &bpeforge::Silent)?;
    println!("{:?}", result.stats);
    if let Some(path) = args.get(4) {
        let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
        for (left, right) in &result.merges {
            writeln!(out, "{} {}", hex(left), hex(right))?;
        }
        out.flush()?;
    }
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
