//! The count-file reader on arbitrary bytes: `Ok` or `Err`, never a panic, and
//! never an allocation larger than `LIMIT` (inputs are a few KiB, so a larger
//! one can only come from trusting a length field). A file that reads back is
//! written and read again to the same table, and adding it to itself (what
//! `merge_counts` does) must not overflow silently.
#![no_main]

use bpeforge::CountsFile;
use bpeforge_fuzz::CappedAlloc;
use libfuzzer_sys::fuzz_target;

#[global_allocator]
static ALLOC: CappedAlloc<{ 16 << 20 }> = CappedAlloc;

fn entries(file: &CountsFile) -> Vec<(Vec<u8>, u64)> {
    let mut out = Vec::new();
    file.counts.for_each(|bytes, n| out.push((bytes.to_vec(), n)));
    out.sort();
    out
}

fuzz_target!(|data: &[u8]| {
    let Ok(file) = CountsFile::read_from(data, "fuzz.bin") else { return };
    let mut written = Vec::new();
    file.write_to(&mut written).unwrap();
    let again = CountsFile::read_from(written.as_slice(), "again.bin").expect("a written count file reads back");
    assert_eq!(
        (&again.pattern, &again.special_tokens, again.bytes_counted),
        (&file.pattern, &file.special_tokens, file.bytes_counted)
    );
    assert_eq!(entries(&again), entries(&file));
    let mut rewritten = Vec::new();
    again.write_to(&mut rewritten).unwrap();
    assert_eq!(rewritten, written, "writing is not deterministic");
    // merge_counts adds two files; the counts are u64 (overflow checks are on
    // in fuzz builds, so a wrapping sum is a panic here).
    let mut doubled = file.clone();
    let _ = doubled.merge(file, "fuzz.bin");
});
