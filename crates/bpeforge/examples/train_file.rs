//! Train from the command line without Python, for profiling the core:
//! `cargo run --release --example train_file -- FILE VOCAB_SIZE [THREADS]`.

use std::path::PathBuf;

use bpeforge::train::TrainOptions;

fn main() -> Result<(), bpeforge::Error> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: train_file FILE VOCAB_SIZE [THREADS]");
        std::process::exit(2);
    }
    let vocab_size = args[2].parse().expect("VOCAB_SIZE must be an integer");
    let num_threads = args.get(3).map(|t| t.parse().expect("THREADS must be an integer"));
    let options = TrainOptions { num_threads, ..TrainOptions::new(vocab_size, vec!["<|endoftext|>".to_string()]) };
    let result = bpeforge::train(&[PathBuf::from(&args[1])], &options, &bpeforge::Silent)?;
    println!("{:?}", result.stats);
    Ok(())
}
