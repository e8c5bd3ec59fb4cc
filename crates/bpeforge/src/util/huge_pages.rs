//! Large output buffers backed by transparent huge pages where Linux allows.
//!
//! An encode call writes its ids into a fresh buffer (NumPy then owns it), so
//! every call pays a page fault per 4 KiB of ids; `madvise(MADV_HUGEPAGE)` makes
//! it one per 2 MiB (touching 10 MB of ids: 4 ms -> 1 ms in a fresh process).
//! A thread's piece table, which doubles up to 16 MiB during a first call,
//! faults in the same way. Only a hint: where THP is off or the system is not
//! Linux nothing changes, and the ids are the same either way.

/// Buffers smaller than this stay as they are: a huge page is 2 MiB, and only
/// the whole ones inside the buffer are advised.
const MIN_BYTES: usize = 4 << 20;
const HUGE_PAGE: usize = 2 << 20;

/// `Vec::with_capacity(capacity)`, advised to be backed by huge pages when
/// it is large. Memory is only committed where written, as with any `Vec`;
/// a huge page commits 2 MiB at a time, so a buffer written in part holds at
/// most one huge page more than it would.
pub fn vec_with_capacity<T>(capacity: usize) -> Vec<T> {
    let buffer: Vec<T> = Vec::with_capacity(capacity);
    advise(buffer.as_ptr().cast(), buffer.capacity() * std::mem::size_of::<T>());
    buffer
}

/// Advise the whole huge pages inside `[start, start + len)`.
fn advise(start: *const u8, len: usize) {
    if len < MIN_BYTES {
        return;
    }
    let first = (start as usize).next_multiple_of(HUGE_PAGE);
    let end = (start as usize + len) / HUGE_PAGE * HUGE_PAGE;
    if end <= first {
        return;
    }
    #[cfg(target_os = "linux")]
    // SAFETY: the range lies inside an allocation this thread owns; the
    // advice changes how its pages are backed, never their contents, and a
    // refusal (EINVAL where THP is unsupported) is harmless.
    unsafe {
        libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_buffer_keeps_its_capacity_and_contents() {
        let mut ids: Vec<u32> = vec_with_capacity(3 << 20);
        assert!(ids.capacity() >= 3 << 20);
        ids.extend(0..3 << 20);
        assert!(ids.iter().enumerate().all(|(i, &id)| id == i as u32));
        let small: Vec<u64> = vec_with_capacity(10);
        assert!(small.capacity() >= 10);
    }
}
