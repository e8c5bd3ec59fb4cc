//! Time the encoder without Python, for profiling the core:
//! `cargo run --release --example encode_file -- TABLES TEXT [RUNS [CACHE_BYTES]]`, where TABLES is
//! a line with the vocab size, then `id hex` lines, then `lefthex righthex`
//! merge lines (written from Python with `bpeforge.io`); RUNS (default 1)
//! encodes the text that many times, the later runs with the cache warm, and prints the best
//! (thread CPU time); CACHE_BYTES sets the shared cache's budget (0: none). The
//! table is seeded first as the Python `Tokenizer`'s is; SEEDS=0 in the
//! environment leaves it empty. PATTERN names the pre-tokenizer (default
//! gpt2); `<|endoftext|>` is a special token when the vocabulary has it.

use bpeforge::{Encoder, Pattern};

#[path = "shared/tables.rs"]
mod tables;

/// Seconds this thread has run on a CPU, so that other processes on a busy
/// machine do not count.
fn cpu_seconds() -> f64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `now` is a valid, writable timespec; the call only writes it.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    assert_eq!(status, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    now.tv_sec as f64 + now.tv_nsec as f64 * 1e-9
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let vocab = tables::read_vocabulary(&args[1]);
    let pattern = Pattern::new(&std::env::var("PATTERN").unwrap_or_else(|_| "gpt2".into())).expect("PATTERN");
    let specials: Vec<String> =
        ["<|endoftext|>"].iter().filter(|token| vocab.id(token.as_bytes()).is_some()).map(|t| t.to_string()).collect();
    let encoder = Encoder::new(vocab, &specials, pattern).expect("encoder");
    let text = std::fs::read_to_string(&args[2]).expect("text file");
    let runs: usize = args.get(3).map_or(1, |n| n.parse().expect("runs"));
    if let Some(bytes) = args.get(4) {
        encoder.set_cache_bytes(bytes.parse().expect("cache bytes"));
    }
    // As the Python `Tokenizer` does when it is built (`Encoder::seed_tables`), unless SEEDS=0.
    if std::env::var("SEEDS").as_deref() != Ok("0") {
        let started = std::time::Instant::now();
        encoder.seed_tables();
        println!("seeds planted in {:.1} ms", started.elapsed().as_secs_f64() * 1e3);
    }
    let mut best = f64::INFINITY;
    for run in 0..runs {
        let started = cpu_seconds();
        let ids = encoder.encode(&text).expect("encode");
        let seconds = cpu_seconds() - started;
        best = best.min(seconds);
        println!("run {run}: {} ids, {:.1} MB/s", ids.len(), text.len() as f64 / seconds / 1e6);
    }
    println!("best: {:.1} MB/s (thread CPU time)", text.len() as f64 / best / 1e6);
}
