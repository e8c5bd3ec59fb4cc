//! A batch's ids as one array. The first worker appends the ids of the texts
//! it takes in order from the batch's first straight to the caller's array
//! (all of them when it works alone); every other text's ids go to a buffer of
//! the worker that took it, kept by its state between calls, and are put in
//! text order after the parallel part.
//!
//! Why: with a `Vec` a text (`Encoder::encode_batch`), each worker allocated
//! one per text and the caller's thread freed them after copying them; a
//! 1-thread batch of 6 K documents took a fifth longer.

use std::mem::MaybeUninit;

/// The ids one worker wrote and which text each run of them belongs to.
pub(super) struct WorkerIds {
    pub(super) ids: Vec<u32>,
    /// `(text index, start, end)` in `ids`, in the order the worker took them.
    pub(super) spans: Vec<(usize, usize, usize)>,
    /// The first worker's: the caller's array (`write_in_order_to`).
    in_place: Option<InPlace>,
}

/// The caller's array, which ends with the ids of texts `0..next`.
struct InPlace {
    out: Vec<u32>,
    /// The text whose ids go there next.
    next: usize,
    /// Where in `out` the ids of each of texts `0..next` end.
    ends: Vec<usize>,
}

impl WorkerIds {
    /// No ids yet; they go to `ids` (emptied).
    pub(super) fn new(mut ids: Vec<u32>) -> Self {
        ids.clear();
        Self { ids, spans: Vec::new(), in_place: None }
    }

    /// Append the ids of texts 0, 1, 2... to `out` as long as this worker
    /// is the one that takes each next (`take_out` gives `out` back).
    pub(super) fn write_in_order_to(&mut self, out: Vec<u32>) {
        self.in_place = Some(InPlace { out, next: 0, ends: Vec::new() });
    }

    /// The array `write_in_order_to` was given, with the ids appended.
    pub(super) fn take_out(&mut self) -> Option<Vec<u32>> {
        self.in_place.take().map(|in_place| in_place.out)
    }

    /// Append the ids `encode` writes for text `index` in place (when it is
    /// the next there) or to `ids`.
    pub(super) fn record<E>(
        &mut self,
        index: usize,
        encode: impl FnOnce(&mut Vec<u32>) -> Result<(), E>,
    ) -> Result<(), E> {
        if let Some(in_place) = self.in_place.as_mut().filter(|in_place| in_place.next == index) {
            encode(&mut in_place.out)?;
            in_place.ends.push(in_place.out.len());
            in_place.next += 1;
            return Ok(());
        }
        let start = self.ids.len();
        encode(&mut self.ids)?;
        self.spans.push((index, start, self.ids.len()));
        Ok(())
    }
}

impl WorkerIds {
    /// Where the ids of text `first` and the texts after it go (to be
    /// recorded by `record_texts`): the caller's array when text `first` is
    /// the next in place, else this worker's buffer.
    pub(super) fn destination(&mut self, first: usize) -> &mut Vec<u32> {
        match self.in_place.as_mut().filter(|in_place| in_place.next == first) {
            Some(in_place) => &mut in_place.out,
            None => &mut self.ids,
        }
    }

    /// Record texts `first..first + text_ends.len()` as written to
    /// `destination(first)`, which held `start` ids before them, each
    /// ending where `text_ends` says.
    pub(super) fn record_texts(&mut self, first: usize, start: usize, text_ends: &[usize]) {
        if let Some(in_place) = self.in_place.as_mut().filter(|in_place| in_place.next == first) {
            in_place.ends.extend_from_slice(text_ends);
            in_place.next += text_ends.len();
            return;
        }
        let starts = std::iter::once(start).chain(text_ends.iter().copied());
        let spans = starts.zip(text_ends).enumerate().map(|(nth, (start, &end))| (first + nth, start, end));
        self.spans.extend(spans);
    }
}

/// A text's room in the output and the ids to write there.
type RoomAndIds<'a> = (&'a mut [MaybeUninit<u32>], &'a [u32]);

/// Append the workers' ids to `out` in text order, and each text's end in
/// `out` to `ends`: first the first worker's array with the texts written
/// in place (`write_in_order_to`; without one, `out` is appended to), then
/// the rest. Every other text of the batch (`texts` of them) is in exactly
/// one worker's spans. The copy is cut into one task a worker on the current
/// pool (`in_equal_parts`): on one thread, the copy of 10 MB of Gutenberg's
/// ids (1 ms) was a tenth of a 2-thread call.
pub(super) fn append_in_text_order(out: &mut Vec<u32>, workers: &mut [WorkerIds], texts: usize, ends: &mut Vec<usize>) {
    let mut in_order = 0;
    if let Some(in_place) = workers.first_mut().and_then(|first| first.in_place.take()) {
        *out = in_place.out;
        ends.extend(in_place.ends);
        in_order = in_place.next;
    }
    let workers = &*workers;
    const NOWHERE: (usize, usize, usize) = (usize::MAX, 0, 0);
    // Where each text's ids are: (worker, start, end).
    let mut at = vec![NOWHERE; texts - in_order];
    for (worker, written) in workers.iter().enumerate() {
        for &(index, start, end) in &written.spans {
            at[index - in_order] = (worker, start, end);
        }
    }
    debug_assert!(!at.contains(&NOWHERE), "a text no worker encoded");
    let total: usize = workers.iter().map(|written| written.ids.len()).sum();
    if total == 0 {
        // Nothing but texts in place (and texts without ids).
        ends.extend(std::iter::repeat_n(out.len(), at.len()));
        return;
    }
    out.reserve(total);
    let base = out.len();
    // Each text's room in `out`, in text order, with the ids to write there.
    let mut copies: Vec<RoomAndIds> = Vec::with_capacity(at.len());
    let (mut room, mut filled) = (&mut out.spare_capacity_mut()[..total], base);
    for (worker, start, end) in at {
        let (here, after) = std::mem::take(&mut room).split_at_mut(end - start);
        copies.push((here, &workers[worker].ids[start..end]));
        room = after;
        filled += end - start;
        ends.push(filled);
    }
    rayon::scope(|scope| {
        for part in in_equal_parts(copies, total, workers.len()) {
            scope.spawn(move |_| {
                for (here, ids) in part {
                    for (slot, &id) in here.iter_mut().zip(ids) {
                        slot.write(id);
                    }
                }
            });
        }
    });
    // SAFETY: the `total` slots after `base` were split into one room per
    // text, of its ids' length, and every room was written above.
    unsafe { out.set_len(base + total) };
}

/// `copies` (of `total` ids in all) as `parts` runs of about as many ids
/// each, a copy cut in two where a run ends. Not one run a worker: most of
/// what is left to copy is the other workers' (the first one's texts are
/// mostly in place), and the first's thread would wait.
fn in_equal_parts(copies: Vec<RoomAndIds<'_>>, total: usize, parts: usize) -> Vec<Vec<RoomAndIds<'_>>> {
    let per_part = total.div_ceil(parts.max(1)).max(1);
    let mut runs = vec![Vec::new()];
    let mut room_left = per_part;
    for (mut here, mut ids) in copies {
        while ids.len() > room_left {
            let (head, tail) = here.split_at_mut(room_left);
            let (head_ids, tail_ids) = ids.split_at(room_left);
            runs.last_mut().expect("a run").push((head, head_ids));
            runs.push(Vec::new());
            (here, ids, room_left) = (tail, tail_ids, per_part);
        }
        room_left -= ids.len();
        runs.last_mut().expect("a run").push((here, ids));
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn worker(ids: &[u32], spans: &[(usize, usize, usize)]) -> WorkerIds {
        WorkerIds { ids: ids.to_vec(), spans: spans.to_vec(), in_place: None }
    }

    #[test]
    fn ids_come_out_in_text_order_after_what_out_held() {
        // Worker 0 took texts 0, 1 and 3; worker 1 texts 2 and 4; text 1 has no ids.
        let first = worker(&[0, 3, 3], &[(0, 0, 1), (1, 1, 1), (3, 1, 3)]);
        let other = worker(&[2, 2, 2, 4], &[(2, 0, 3), (4, 3, 4)]);
        let (mut out, mut ends) = (vec![9, 9], vec![2]);
        append_in_text_order(&mut out, &mut [first, other], 5, &mut ends);
        assert_eq!(out, [9, 9, 0, 2, 2, 2, 3, 3, 4]);
        assert_eq!(ends, [2, 3, 3, 6, 8, 9]);
        let (mut out, mut ends) = (Vec::new(), Vec::new());
        append_in_text_order(&mut out, &mut [worker(&[], &[])], 0, &mut ends);
        assert!(out.is_empty() && ends.is_empty());
    }

    #[test]
    fn copies_are_cut_into_runs_of_about_equal_length() {
        let ids: Vec<u32> = (0..10).collect();
        let mut out = [MaybeUninit::new(0u32); 10];
        let (a, rest) = out.split_at_mut(1);
        let (b, c) = rest.split_at_mut(7);
        let copies = vec![(a, &ids[..1]), (b, &ids[1..8]), (c, &ids[8..])];
        let runs = in_equal_parts(copies, 10, 2);
        let lengths: Vec<Vec<usize>> = runs.iter().map(|run| run.iter().map(|(_, ids)| ids.len()).collect()).collect();
        assert_eq!(lengths, [vec![1, 4], vec![3, 2]], "the long copy is cut where the first run ends");
        for run in runs {
            for (here, ids) in run {
                assert_eq!(here.len(), ids.len());
                for (slot, &id) in here.iter_mut().zip(ids) {
                    slot.write(id);
                }
            }
        }
        // SAFETY: every slot was made with a value.
        assert!(out.iter().zip(0..).all(|(slot, i)| unsafe { slot.assume_init() } == i));
        assert_eq!(in_equal_parts(Vec::new(), 0, 3).len(), 1, "nothing to copy: one empty run");
    }

    /// The first worker's texts taken in order from text 0 are written to
    /// the caller's array as they come; from the first text another worker
    /// took, its texts go to its buffer like the others'.
    #[test]
    fn the_first_workers_texts_in_order_are_written_in_place() {
        let encode = |ids: &'static [u32]| {
            move |out: &mut Vec<u32>| -> Result<(), ()> {
                out.extend_from_slice(ids);
                Ok(())
            }
        };
        let mut first = WorkerIds::new(vec![7; 3]);
        first.write_in_order_to(vec![9, 9]);
        let mut other = WorkerIds::new(Vec::new());
        first.record(0, encode(&[0])).unwrap();
        first.record(1, encode(&[])).unwrap();
        other.record(2, encode(&[2, 2])).unwrap();
        first.record(3, encode(&[3, 3])).unwrap(); // after a text it did not take: to its buffer
        first.record(4, encode(&[4])).unwrap();
        other.record(5, encode(&[5])).unwrap();
        assert_eq!(first.spans, [(3, 0, 2), (4, 2, 3)]);
        let (mut out, mut ends) = (Vec::new(), vec![2]);
        append_in_text_order(&mut out, &mut [first, other], 6, &mut ends);
        assert_eq!(out, [9, 9, 0, 2, 2, 3, 3, 4, 5]);
        assert_eq!(ends, [2, 3, 3, 5, 7, 8, 9]);
        // Alone, every text is in place: nothing to copy.
        let mut alone = WorkerIds::new(Vec::new());
        alone.write_in_order_to(vec![1]);
        for (index, ids) in [&[5u32, 6][..], &[], &[7]].into_iter().enumerate() {
            alone.record(index, encode(ids)).unwrap();
        }
        let (mut out, mut ends) = (Vec::new(), Vec::new());
        append_in_text_order(&mut out, &mut [alone], 3, &mut ends);
        assert_eq!((out, ends), (vec![1, 5, 6, 7], vec![3, 3, 4]));
    }
}
