//! Time a SuperBPE tokenizer's first call on a file's lines, without Python,
//! for profiling the core:
//! `cargo run --release --example superbpe_lines -- TOKENIZER_JSON TEXT [RUNS]`.
//! The encoder is the one `Tokenizer.from_hf` builds for a tokenizer.json of
//! the reference's stage-2 pipeline: the file's vocabulary on the pattern
//! PATTERN (default: `bpeforge.superbpe`'s SUPERWORD_PATTERN). Each run builds
//! it anew (so the text is new to its caches) and encodes each line as a text
//! of one batch, as `encode_batch_to_numpy` does on one thread; prints the
//! best run (thread CPU time) and a checksum of the ids.

use bpeforge::{encode_piece, Encoder, HfTokenizer, Pattern, Scratch};

const SUPERWORD_PATTERN: &str = r"\p{N}+?(?=(?:\d{3})+(?!\d)|(?!\p{N}))|\P{N}+";

/// Seconds this thread has run on a CPU, so that other processes on a busy
/// machine do not count.
fn cpu_seconds() -> f64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `now` is a valid, writable timespec; the call only writes it.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    assert_eq!(status, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    now.tv_sec as f64 + now.tv_nsec as f64 * 1e-9
}

/// Minor page faults of this thread so far.
fn page_faults() -> i64 {
    // SAFETY: an all-zero `rusage` is valid, and the call only writes it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid, writable rusage.
    let status = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
    assert_eq!(status, 0, "getrusage(RUSAGE_THREAD)");
    usage.ru_minflt
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let json = std::fs::read_to_string(&args[1]).expect("tokenizer.json");
    let text = std::fs::read_to_string(&args[2]).expect("text file");
    let runs: usize = args.get(3).map_or(1, |n| n.parse().expect("runs"));
    let pattern = std::env::var("PATTERN").unwrap_or_else(|_| SUPERWORD_PATTERN.into());
    let vocab = HfTokenizer::from_json(&json).expect("tokenizer").vocab().clone();
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    if std::env::var("MERGES").as_deref() == Ok("1") {
        return merges_only(&vocab, &lines, runs);
    }
    let mut best = f64::INFINITY;
    // All built first, so that a profile of the encoding can skip their building (`perf record -D`).
    let encoders: Vec<Encoder> = (0..runs)
        .map(|_| {
            let encoder = Encoder::new(vocab.clone(), &[], Pattern::new(&pattern).expect("PATTERN")).expect("encoder");
            encoder.seed_tables();
            let (mut out, mut ends) = (Vec::new(), Vec::new());
            encoder.encode_batch_into(&["a few words, 123\n"], None, &mut out, &mut ends).expect("warm-up");
            encoder
        })
        .collect();
    eprintln!("built {runs} encoders");
    for (run, encoder) in encoders.iter().enumerate() {
        let (mut out, mut ends) = (Vec::new(), Vec::new());
        let (started, faults) = (cpu_seconds(), page_faults());
        encoder.encode_batch_into(&lines, None, &mut out, &mut ends).expect("encode");
        let (seconds, faults) = (cpu_seconds() - started, page_faults() - faults);
        best = best.min(seconds);
        let sum = out.iter().fold(0u64, |sum, &id| sum.wrapping_mul(31).wrapping_add(id as u64));
        let rate = text.len() as f64 / seconds / 1e6;
        println!("run {run}: {} ids (sum {sum:x}), {rate:.1} MB/s, {faults} page faults", out.len());
    }
    println!("best: {:.1} MB/s (thread CPU time)", text.len() as f64 / best / 1e6);
}

/// MERGES=1: `encode_piece` on each line (as one piece, digits and all) with a
/// new `Scratch` a run: the merges alone, no scanning or piece caches.
fn merges_only(vocab: &bpeforge::Vocabulary, lines: &[&str], runs: usize) {
    let bytes: usize = lines.iter().map(|line| line.len()).sum();
    let mut best = f64::INFINITY;
    for run in 0..runs {
        let (mut scratch, mut out) = (Scratch::default(), Vec::with_capacity(bytes / 2));
        let started = cpu_seconds();
        for line in lines {
            encode_piece(line.as_bytes(), vocab, &mut scratch, &mut out);
        }
        let seconds = cpu_seconds() - started;
        best = best.min(seconds);
        let sum = out.iter().fold(0u64, |sum, &id| sum.wrapping_mul(31).wrapping_add(id as u64));
        println!("run {run}: {} ids (sum {sum:x}), {:.1} MB/s", out.len(), bytes as f64 / seconds / 1e6);
    }
    println!("best: {:.1} MB/s (thread CPU time, merges only)", bytes as f64 / best / 1e6);
}
