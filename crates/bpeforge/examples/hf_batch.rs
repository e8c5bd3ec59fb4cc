//! Time warm calls of a `tokenizer.json` pipeline on a file's lines, each
//! line a text of one batch on one thread, as `encode_batch_to_numpy(lines,
//! num_threads=1)` runs them but without Python, for profiling the core:
//! `RAYON_NUM_THREADS=1 cargo run --release --example hf_batch -- TOKENIZER_JSON TEXT [RUNS]`.
//! With `ONE_TEXT=1` the file is one text instead; with `BY_TEXT=1` each
//! text is looked up on its own (`Encoder::encode_batch_into_by`), not in
//! runs of texts (`HfTokenizer::encode_batch_into`). Prints the best of RUNS
//! calls after a first one (thread CPU time, so that other processes on a
//! busy machine do not count), the ns a line, and a checksum of the ids.

use bpeforge::{HfTokenizer, Workspace};

/// Seconds this thread has run on a CPU.
fn cpu_seconds() -> f64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `now` is a valid, writable timespec; the call only writes it.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    assert_eq!(status, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    now.tv_sec as f64 + now.tv_nsec as f64 * 1e-9
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let json = std::fs::read_to_string(&args[1]).expect("tokenizer.json");
    let text = std::fs::read_to_string(&args[2]).expect("text file");
    let runs: usize = args.get(3).map_or(5, |n| n.parse().expect("runs"));
    let tokenizer = HfTokenizer::from_json(&json).expect("tokenizer");
    let lines: Vec<&str> =
        if std::env::var_os("ONE_TEXT").is_some() { vec![&text] } else { text.split_inclusive('\n').collect() };
    let encoder = tokenizer.encoder();
    let by_text = std::env::var_os("BY_TEXT").is_some();
    let mut best = f64::INFINITY;
    for run in 0..=runs {
        let (mut out, mut ends) = (Vec::new(), Vec::new());
        let started = cpu_seconds();
        if by_text {
            encoder
                .encode_batch_into_by(&lines, &mut out, &mut ends, |text, state, work: &mut Workspace, out| {
                    tokenizer.encode_into(text, false, work, state, out)
                })
                .expect("encode");
        } else {
            tokenizer.encode_batch_into(&lines, false, &mut out, &mut ends).expect("encode");
        }
        let seconds = cpu_seconds() - started;
        if run > 0 {
            best = best.min(seconds);
        }
        let sum = out.iter().fold(0u64, |sum, &id| sum.wrapping_mul(31).wrapping_add(u64::from(id)));
        if run == runs {
            println!("{} ids (sum {sum:x}) of {} texts", out.len(), lines.len());
        }
    }
    println!(
        "best warm: {:.1} MB/s, {:.0} ns a text (thread CPU time)",
        text.len() as f64 / best / 1e6,
        best * 1e9 / lines.len() as f64
    );
}
