//! How a batch's texts go to its workers: each worker owns a contiguous range
//! of about equal bytes and starts there, then takes what is left of the
//! others' ranges once its own is done.
//!
//! Why not rayon's own split: it hands the halves of a batch to whichever
//! thread takes a job first, which differs call by call, so a worker's state
//! (whose table holds the pieces of the texts it saw) met the other half of
//! the texts in the next call. On a batch encoded again (the benchmark's
//! 10 MB of Gutenberg, GPT-2, 2 threads) the tables took four calls to warm:
//! 16.1, 9.9, 8.4, 8.3 ms after the first. Here a worker meets the same texts
//! again but for the few it takes from another's range at the end.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use rayon::prelude::*;

/// `work(state, i)` for every `i` in `0..weights.len()`, on the current rayon
/// pool, one worker a state; the results in index order. Worker `w` starts
/// with the `w`-th of `states.len()` contiguous ranges of about equal
/// `weights`; a worker done with its own takes, one at a time, from the front
/// of the next unfinished range. After the first error no worker starts
/// another item, and the error of the lowest index that failed is returned.
pub(super) fn run_with_affinity<S, R, E>(
    states: &mut [S],
    weights: &[usize],
    work: impl Fn(&mut S, usize) -> Result<R, E> + Sync,
) -> Result<Vec<R>, E>
where
    S: Send,
    R: Send,
    E: Send,
{
    let bounds = ranges_by_weight(weights, states.len());
    let cursors: Vec<AtomicUsize> = bounds[..states.len()].iter().map(|&start| AtomicUsize::new(start)).collect();
    let failed = AtomicBool::new(false);
    let workers = states.len();
    let done: Vec<Vec<(usize, Result<R, E>)>> = states
        .par_iter_mut()
        .enumerate()
        .map(|(worker, state)| {
            let mut done = Vec::new();
            for range in (worker..workers).chain(0..worker) {
                while !failed.load(Ordering::Relaxed) {
                    let i = cursors[range].fetch_add(1, Ordering::Relaxed);
                    if i >= bounds[range + 1] {
                        break;
                    }
                    let result = work(state, i);
                    if result.is_err() {
                        failed.store(true, Ordering::Relaxed);
                    }
                    done.push((i, result));
                }
            }
            done
        })
        .collect();
    in_index_order(done, weights.len())
}

/// `workers + 1` bounds of contiguous ranges of `weights`, each about
/// `total / workers`: range `w` is `bounds[w]..bounds[w + 1]`. A range may be
/// empty (fewer items than workers, or one item heavier than a share).
fn ranges_by_weight(weights: &[usize], workers: usize) -> Vec<usize> {
    let total: usize = weights.iter().sum();
    let mut bounds = Vec::with_capacity(workers + 1);
    bounds.push(0);
    let mut sum = 0usize;
    for (i, weight) in weights.iter().enumerate() {
        // Range `bounds.len() - 1` ends once it holds its share of the total.
        while bounds.len() < workers && sum * workers >= total * bounds.len() && sum > 0 {
            bounds.push(i);
        }
        sum += weight;
    }
    bounds.resize(workers + 1, weights.len());
    bounds
}

/// The workers' `(index, result)` lists as one list in index order, or the
/// error of the lowest index that failed.
fn in_index_order<R, E>(done: Vec<Vec<(usize, Result<R, E>)>>, len: usize) -> Result<Vec<R>, E> {
    let mut slots: Vec<Option<R>> = (0..len).map(|_| None).collect();
    let mut first_error: Option<(usize, E)> = None;
    for (i, result) in done.into_iter().flatten() {
        match result {
            Ok(result) => slots[i] = Some(result),
            Err(error) if first_error.as_ref().is_none_or(|(first, _)| i < *first) => first_error = Some((i, error)),
            Err(_) => {}
        }
    }
    if let Some((_, error)) = first_error {
        return Err(error);
    }
    Ok(slots.into_iter().map(|slot| slot.expect("with no error every item ran")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_have_about_equal_weight_and_cover_every_item() {
        assert_eq!(ranges_by_weight(&[1, 1, 1, 1], 2), vec![0, 2, 4]);
        assert_eq!(ranges_by_weight(&[10, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1], 2), vec![0, 1, 11]);
        assert_eq!(ranges_by_weight(&[1, 1, 1], 4), vec![0, 1, 2, 3, 3]);
        assert_eq!(ranges_by_weight(&[], 3), vec![0, 0, 0, 0]);
        assert_eq!(ranges_by_weight(&[5], 1), vec![0, 1]);
        assert_eq!(ranges_by_weight(&[0, 0, 3, 3], 2), vec![0, 3, 4]);
    }

    #[test]
    fn every_item_runs_once_and_results_come_in_index_order() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        for len in [0, 1, 2, 5, 100] {
            let weights: Vec<usize> = (0..len).map(|i| 1 + i % 7).collect();
            let mut states = vec![0usize; 3];
            let results = pool.install(|| {
                run_with_affinity(&mut states, &weights, |ran: &mut usize, i| Ok::<_, ()>((*ran += 1, i).1))
            });
            assert_eq!(results.unwrap(), (0..len).collect::<Vec<_>>());
            assert_eq!(states.iter().sum::<usize>(), len, "each item ran once");
        }
    }

    #[test]
    fn a_worker_keeps_its_own_range() {
        // One worker (the pool has one thread) runs range 0, then takes range 1.
        let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        let mut states = vec![Vec::new(), Vec::new()];
        let weights = [1; 6];
        pool.install(|| run_with_affinity(&mut states, &weights, |seen: &mut Vec<usize>, i| Ok::<_, ()>(seen.push(i))))
            .unwrap();
        // Whichever state ran first took its own range before the other's.
        for (worker, seen) in states.iter().enumerate() {
            if let Some(&first) = seen.first() {
                assert_eq!(first, worker * 3, "worker {worker} started in its own range: {seen:?}");
            }
        }
    }

    #[test]
    fn the_first_error_by_index_is_returned() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let weights = [1; 50];
        let mut states = vec![(), ()];
        let result = pool.install(|| {
            run_with_affinity(&mut states, &weights, |_, i| if i == 7 || i == 30 { Err(i) } else { Ok(i) })
        });
        // 30 may fail first, but 7 is in worker 0's range, run before any stealing
        // unless the flag stopped it: either way the lowest failed index is returned.
        let error = result.unwrap_err();
        assert!(error == 7 || error == 30, "{error}");
    }
}
