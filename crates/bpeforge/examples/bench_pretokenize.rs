//! The pre-tokenizer alone, in MB/s on one core: each preset's hand-written
//! scanner, and the same preset's regex on fancy-regex (what the presets other
//! than gpt2 ran on before the scanners), checking that both give the same
//! pieces.
//!
//! `cargo run --release --example bench_pretokenize -- FILE [--mb N] [--runs N] [--no-regex] [PRESET...]`
//!
//! FILE may be plain or compressed (.xz, .gz, .zst); `--mb` keeps its first N
//! MB (cut at a char boundary), `--runs` is the number of timed scanner runs
//! (the best is reported; fancy-regex runs once). Time is the thread's CPU
//! time (Unix), so that other processes on a busy machine do not count. The text is scanned whole, as
//! one document (special tokens are text here). A mismatch with fancy-regex
//! is reported with its first differing piece: expected only on the code
//! points Unicode 17.0 newly assigned (see `pretokenize/pattern.rs`).

use std::io::Read;
use std::path::Path;

use bpeforge::Pattern;
use bpeforge::PRESETS;

/// Seconds this thread has run on a CPU (`CLOCK_THREAD_CPUTIME_ID`), so that
/// other processes on a busy machine do not count.
fn cpu_seconds() -> f64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `now` is a valid, writable timespec; the call only writes it.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    assert_eq!(status, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    now.tv_sec as f64 + now.tv_nsec as f64 * 1e-9
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut path = None;
    let mut limit_mb: Option<f64> = None;
    let mut runs = 5;
    let mut with_regex = true;
    let mut presets: Vec<String> = Vec::new();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--mb" => limit_mb = Some(args.next().and_then(|v| v.parse().ok()).expect("--mb N")),
            "--runs" => runs = args.next().and_then(|v| v.parse().ok()).expect("--runs N"),
            "--no-regex" => with_regex = false,
            _ if path.is_none() => path = Some(arg),
            _ => presets.push(arg),
        }
    }
    let Some(path) = path else {
        eprintln!("usage: bench_pretokenize FILE [--mb N] [--runs N] [--no-regex] [PRESET...]");
        std::process::exit(2);
    };
    if presets.is_empty() {
        presets = PRESETS.iter().map(|(name, _)| name.to_string()).collect();
    }

    let mut bytes = Vec::new();
    bpeforge::open_input(Path::new(&path)).expect("open").read_to_end(&mut bytes).expect("read");
    if let Some(mb) = limit_mb {
        let mut end = ((mb * 1e6) as usize).min(bytes.len());
        while end < bytes.len() && (bytes[end] & 0xC0) == 0x80 {
            end -= 1;
        }
        bytes.truncate(end);
    }
    let text = String::from_utf8(bytes).expect("UTF-8");
    let mb = text.len() as f64 / 1e6;
    println!("{path}: {mb:.1} MB, best of {runs} scanner runs");
    println!("| preset | fancy-regex MB/s | scanner MB/s | speed-up | pieces | same pieces |");
    println!("|---|---:|---:|---:|---:|---|");

    for name in &presets {
        let scanner = Pattern::new(name).expect("preset");
        let source = scanner.regex_source().to_string();
        let mut best = f64::INFINITY;
        let mut count = 0usize;
        for _ in 0..runs {
            let started = cpu_seconds();
            let (mut n, mut total) = (0usize, 0usize);
            scanner
                .for_each_piece(&text, |p| {
                    n += 1;
                    total += p.len();
                })
                .expect("scan");
            best = best.min(cpu_seconds() - started);
            assert_eq!(total, text.len(), "{name}: the pieces do not cover the text");
            count = n;
        }
        let scanner_speed = mb / best;

        let (regex_speed, same) = if with_regex {
            let regex = Pattern::new(&source).expect("the preset's regex compiles as a custom one");
            let mut expected: Vec<&str> = Vec::with_capacity(count);
            let started = cpu_seconds();
            regex.for_each_piece(&text, |p| expected.push(p)).expect("regex");
            let speed = mb / (cpu_seconds() - started);
            let mut got: Vec<&str> = Vec::with_capacity(count);
            scanner.for_each_piece(&text, |p| got.push(p)).expect("scan");
            let same = match got.iter().zip(&expected).position(|(a, b)| a != b) {
                None if got.len() == expected.len() => "yes".to_string(),
                None => format!("no: {} pieces, fancy-regex {}", got.len(), expected.len()),
                Some(i) => format!("no: piece {i}: {:?} vs fancy-regex {:?}", got[i], expected[i]),
            };
            (format!("{speed:.0}"), same)
        } else {
            ("-".to_string(), "-".to_string())
        };
        let speedup = regex_speed.parse::<f64>().map_or("-".to_string(), |r| format!("{:.1}x", scanner_speed / r));
        println!("| {name} | {regex_speed} | {scanner_speed:.0} | {speedup} | {count} | {same} |");
    }
}
