//! How a batch's texts go to its workers: each worker owns a contiguous range
//! of about equal bytes and starts there, then takes what is left of the
//! others' ranges once its own is done.
//!
//! Why not rayon's own split: it hands the halves of a batch to whichever
//! thread takes a job first, which differs call by call, so a worker's state
//! (whose table holds the pieces of the texts it saw) met the other half of the
//! texts in the next call, and a batch encoded again took four calls to warm.
//! Here a worker meets the same texts again but for the few it takes from
//! another's range at the end.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use rayon::prelude::*;

/// `work(state, i)` for every `i` in `0..weights.len()`, on the current rayon
/// pool, one worker a state; the results in index order. Worker `w` starts
/// with the `w`-th of `states.len()` contiguous ranges of about equal
/// `weights`; a worker done with its own takes, one at a time, from the front
/// of the next unfinished range. After an error no worker starts an item
/// past the lowest index that has failed, but those before it still run, so
/// the error returned is that of the lowest index that fails, whichever
/// worker meets its error first (a batch raises its first text's error).
///
/// Each of the pool's threads that joins takes the worker of its own index
/// when that one is free (`claim`), so that a state, and the range of texts
/// its tables hold, stays on one thread, and so on one core, call after call.
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
    if let [state] = states {
        // One worker: every item in order on this thread, with no shared
        // cursor, result slot or reordering (a batch of 12,940 lines spent
        // 5% of a warm call on them).
        return (0..weights.len()).map(|i| work(state, i)).collect();
    }
    let bounds = ranges_by_weight(weights, states.len());
    let cursors: Vec<Cursor> = bounds[..states.len()].iter().map(|&start| Cursor(AtomicUsize::new(start))).collect();
    // The lowest index that has failed (`usize::MAX`: none yet).
    let first_failed = AtomicUsize::new(usize::MAX);
    let workers = states.len();
    let states: Vec<Mutex<&mut S>> = states.iter_mut().map(Mutex::new).collect();
    let done: Vec<Vec<(usize, Result<R, E>)>> = (0..workers)
        .into_par_iter()
        .map(|_| {
            let (worker, mut state) = claim(&states);
            let mut done = Vec::new();
            for range in (worker..workers).chain(0..worker) {
                loop {
                    let i = cursors[range].0.fetch_add(1, Ordering::Relaxed);
                    // A range's items come in index order: past a failed
                    // index, none of the rest of it is needed.
                    if i >= bounds[range + 1] || i > first_failed.load(Ordering::Relaxed) {
                        break;
                    }
                    let result = work(&mut state, i);
                    if result.is_err() {
                        first_failed.fetch_min(i, Ordering::Relaxed);
                    }
                    done.push((i, result));
                }
            }
            done
        })
        .collect();
    in_index_order(done, weights.len())
}

/// The worker of the calling thread's index in the pool (modulo their
/// number) if no other thread holds it, else the next free one, and its state.
///
/// Why: rayon runs the `w`-th job of a parallel loop on whichever thread
/// takes it, so worker 0's state went from one core to the other between the
/// groups of a batch (3 a call for 10 MB), and each time the part of its
/// tables in the other core's L2 was read again: on 2 threads the workers
/// spent 8% more time on the same texts than one worker alone. Every slot of
/// the loop finds a free state: at most `states.len()` run at once.
fn claim<'a, 's, S>(states: &'a [Mutex<&'s mut S>]) -> (usize, MutexGuard<'a, &'s mut S>) {
    let mine = rayon::current_thread_index().unwrap_or(0) % states.len();
    let order = (mine..states.len()).chain(0..mine);
    order
        .map(|worker| states[worker].try_lock().map(|state| (worker, state)))
        .find_map(Result::ok)
        .expect("a free state: no more slots than states run at once")
}

/// The next item of a range, alone on its cache line (two, for the
/// adjacent-line prefetcher): packed in one line, each worker's take of its
/// next item moved that line away from the other core, once a text (6,028
/// times a 2-thread batch of 20news).
#[repr(align(128))]
struct Cursor(AtomicUsize);

/// `workers + 1` bounds of contiguous ranges of `weights`, each about
/// `total / workers`: range `w` is `bounds[w]..bounds[w + 1]`. A range may be
/// empty (fewer items than workers, or one item heavier than a share).
fn ranges_by_weight(weights: &[usize], workers: usize) -> Vec<usize> {
    let total = weights.iter().sum::<usize>() as u128;
    let mut bounds = Vec::with_capacity(workers + 1);
    bounds.push(0);
    let mut sum = 0u128;
    for (i, &weight) in weights.iter().enumerate() {
        // Range `k - 1` ends before the item whose middle passes its share,
        // `k / workers` of the total.
        let middle = 2 * sum + weight as u128;
        while bounds.len() < workers && middle * workers as u128 > 2 * total * bounds.len() as u128 {
            bounds.push(i);
        }
        sum += weight as u128;
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
        assert_eq!(ranges_by_weight(&[1, 1, 1], 4), vec![0, 1, 2, 2, 3]);
        assert_eq!(ranges_by_weight(&[1, 1, 4, 1, 1], 3), vec![0, 2, 3, 5]);
        assert_eq!(ranges_by_weight(&[], 3), vec![0, 0, 0, 0]);
        assert_eq!(ranges_by_weight(&[5], 1), vec![0, 1]);
        assert_eq!(ranges_by_weight(&[0, 0, 3, 3], 2), vec![0, 3, 4]);
    }

    /// `run_with_affinity` on a pool of `threads`, each state recording the
    /// indices it ran; an item in `failing` fails with its index.
    fn run(
        threads: usize,
        workers: usize,
        weights: &[usize],
        failing: &[usize],
    ) -> (Result<Vec<usize>, usize>, Vec<Vec<usize>>) {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let mut states = vec![Vec::new(); workers];
        let results = pool.install(|| {
            run_with_affinity(&mut states, weights, |seen: &mut Vec<usize>, i| {
                seen.push(i);
                if failing.contains(&i) {
                    Err(i)
                } else {
                    Ok(i * 10)
                }
            })
        });
        (results, states)
    }

    #[test]
    fn every_item_runs_once_and_results_come_in_index_order() {
        for len in [0, 1, 2, 5, 100, 1000] {
            let weights: Vec<usize> = (0..len).map(|i| 1 + i % 7).collect();
            for (threads, workers) in [(1, 1), (2, 2), (3, 3), (2, 5)] {
                let (results, states) = run(threads, workers, &weights, &[]);
                assert_eq!(results.unwrap(), (0..len).map(|i| i * 10).collect::<Vec<_>>());
                let mut ran: Vec<usize> = states.concat();
                ran.sort_unstable();
                assert_eq!(ran, (0..len).collect::<Vec<_>>(), "each item ran once");
            }
        }
    }

    #[test]
    fn a_worker_runs_its_own_range_then_takes_the_next() {
        // On one thread the first worker runs before the second starts: it
        // runs its range, then all of the other's, in order.
        let (_, states) = run(1, 2, &[1; 6], &[]);
        assert_eq!(states, vec![vec![0, 1, 2, 3, 4, 5], vec![]]);
        let (_, states) = run(1, 3, &[1, 1, 4, 1, 1], &[]);
        assert_eq!(states[0], vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn each_state_stays_with_the_thread_of_its_index() {
        // As many threads as states: a thread takes its own state, or none
        // (when the other did all the work first); never the other's.
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let weights = [1; 64];
        let mut states = vec![Vec::new(); 2];
        for _ in 0..200 {
            pool.install(|| {
                run_with_affinity(&mut states, &weights, |threads: &mut Vec<Option<usize>>, _| {
                    threads.push(rayon::current_thread_index());
                    Ok::<_, ()>(())
                })
            })
            .unwrap();
        }
        for (worker, threads) in states.iter().enumerate() {
            assert!(threads.iter().all(|&thread| thread == Some(worker)), "state {worker} ran on {threads:?}");
        }
        assert!(!states[0].is_empty());
    }

    #[test]
    fn the_error_of_the_lowest_index_that_failed_is_returned() {
        let (result, _) = run(1, 2, &[1; 50], &[30]);
        assert_eq!(result, Err(30));
        // One thread: worker 0 fails at 7, and stops before it takes range 1.
        let (result, states) = run(1, 2, &[1; 50], &[7, 30]);
        assert_eq!(result, Err(7));
        assert_eq!(states.concat(), (0..8).collect::<Vec<_>>(), "nothing ran after the error");
        // Two threads: either may fail first; the lowest index that failed wins.
        for _ in 0..20 {
            let (result, states) = run(2, 2, &[1; 50], &[7, 30]);
            let lowest = states.concat().into_iter().filter(|i| [7, 30].contains(i)).min().unwrap();
            assert_eq!(result, Err(lowest));
        }
    }

    #[test]
    fn a_lower_index_that_fails_later_is_still_the_error_returned() {
        // Worker 1 fails on its first item at once; worker 0 reaches its
        // failing item 10 ms later, and still runs it.
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        for _ in 0..5 {
            let mut states = vec![Vec::new(); 2];
            let result = pool.install(|| {
                run_with_affinity(&mut states, &[1; 50], |seen: &mut Vec<usize>, i| {
                    seen.push(i);
                    if i < 10 {
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    }
                    if i == 10 || i == 25 {
                        Err(i)
                    } else {
                        Ok(())
                    }
                })
            });
            assert_eq!(result, Err(10));
            let ran = states.concat();
            assert!((0..=10).all(|i| ran.contains(&i)), "every item up to the lowest failure ran: {ran:?}");
        }
    }
}
