//! Large id buffers given back when their owner is done with them (the
//! binding's `IdArray`, once NumPy frees its array), kept for the next call
//! that needs one, with their pages still mapped.
//!
//! Why: ids written into fresh memory make the kernel zero each page as it is
//! first written, 3-4% of a warm call (and at times far more on a VM). A loop
//! that drops the previous result hands its buffer back, and the next call
//! writes over pages already there.
//!
//! Bounded: at most `KEPT_MAX` buffers, `KEPT_BYTES_MAX` in all; only buffers
//! of `MIN_BYTES` or more. Never waits: a contended lock (or one a fork left
//! held) skips the reuse.

use std::sync::Mutex;

const KEPT_MAX: usize = 2;
/// The most memory kept that NumPy freed: two outputs of calls on up to
/// 16 MB of text each (a buffer has room for an id per two bytes).
const KEPT_BYTES_MAX: usize = 64 << 20;
/// The smallest buffer kept; the binding's `IdArray` keeps such a buffer's
/// unwritten room (no memory) so that it comes back whole.
pub const MIN_BYTES: usize = 4 << 20;

/// The buffers kept: one store a process (`take`, `give_back`).
struct Store {
    kept: Mutex<Vec<Vec<u32>>>,
}

static STORE: Store = Store::new();

/// A kept buffer with room for `capacity` ids (the smallest that has it),
/// empty; `None` if none has.
pub fn take(capacity: usize) -> Option<Vec<u32>> {
    STORE.take(capacity)
}

/// Keep `ids`' allocation for a later `take`, or free it (too small, or no
/// room: the oldest kept ones give way to it).
pub fn give_back(ids: Vec<u32>) {
    STORE.give_back(ids);
}

impl Store {
    const fn new() -> Self {
        Self { kept: Mutex::new(Vec::new()) }
    }

    fn take(&self, capacity: usize) -> Option<Vec<u32>> {
        if capacity * size_of::<u32>() < MIN_BYTES {
            return None;
        }
        let mut kept = self.kept.try_lock().ok()?;
        let fits = kept.iter().enumerate().filter(|(_, ids)| ids.capacity() >= capacity);
        let (at, _) = fits.min_by_key(|(_, ids)| ids.capacity())?;
        let mut ids = kept.swap_remove(at);
        ids.clear();
        Some(ids)
    }

    fn give_back(&self, ids: Vec<u32>) {
        let bytes = ids.capacity() * size_of::<u32>();
        if !(MIN_BYTES..=KEPT_BYTES_MAX).contains(&bytes) {
            return;
        }
        let Ok(mut kept) = self.kept.try_lock() else { return };
        kept.push(ids);
        let held = |kept: &[Vec<u32>]| kept.iter().map(|ids| ids.capacity() * size_of::<u32>()).sum::<usize>();
        while kept.len() > KEPT_MAX || held(&kept) > KEPT_BYTES_MAX {
            // Dropped here, under the lock: an `munmap`, no longer than a take.
            kept.remove(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_come_back_empty_with_their_room_and_the_store_is_bounded() {
        let store = Store::new();
        let (take, give_back) = (|capacity| store.take(capacity), |ids| store.give_back(ids));
        let big = MIN_BYTES / size_of::<u32>();
        let mut ids: Vec<u32> = Vec::with_capacity(big * 2);
        ids.extend(0..1000);
        let at = ids.as_ptr();
        give_back(ids);
        assert!(take(big * 3).is_none(), "none has room for more than it had");
        let again = take(big).expect("the buffer given back");
        assert_eq!((again.as_ptr(), again.len()), (at, 0), "the same memory, empty");
        assert!(again.capacity() >= big * 2);
        assert!(take(big).is_none(), "taken once");
        // Small ones are not kept; no more than `KEPT_MAX` are.
        give_back(Vec::with_capacity(16));
        assert!(take(16).is_none());
        for _ in 0..KEPT_MAX + 2 {
            give_back(Vec::with_capacity(big));
        }
        let mut taken = Vec::new();
        while let Some(ids) = take(big) {
            taken.push(ids);
        }
        assert_eq!(taken.len(), KEPT_MAX);
        // Too large to keep.
        give_back(Vec::with_capacity(KEPT_BYTES_MAX / size_of::<u32>() + 1));
        assert!(take(big).is_none());
    }
}
