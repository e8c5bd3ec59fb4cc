//! Small building blocks with no tokenizer knowledge: packed keys, cache
//! prefetch hints, huge-page buffers, recycled id buffers, UTF-32 to UTF-8,
//! the threads a call runs on, the SIMD level the scanners run at, and the tests' random numbers.

pub(crate) mod huge_pages;
pub(crate) mod packed_key;
pub(crate) mod prefetch;
pub(crate) mod recycled;
pub(crate) mod simd_level;
#[cfg(test)]
pub(crate) mod test_rng;
pub(crate) mod threads;
pub(crate) mod utf32;
