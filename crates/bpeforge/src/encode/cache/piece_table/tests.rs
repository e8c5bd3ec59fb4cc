//! The piece table's tests: bounded, what goes in comes out, seeds give way,
//! frequent pieces stay.

use super::*;
use crate::util::packed_key::pack;

fn key(i: u32) -> u128 {
    pack(format!("p{i}").as_bytes()).unwrap()
}

fn lookup(table: &mut PieceTable, i: u32) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    let key = key(i);
    table.get(key, hash_packed(key), &mut out).then_some(out)
}

/// What the warm path finds for `key` (`Probe::get_inline_at`).
fn inline_entry(table: &PieceTable, key: u128) -> Option<Entry> {
    let probe = table.probe();
    // SAFETY: the bucket index is this probe's.
    unsafe { probe.get_inline_at(key, probe.bucket_index(hash_packed(key))) }.copied()
}

fn ids(i: u32) -> Vec<u32> {
    (0..i % 6 + 1).map(|j| i * 10 + j).collect()
}

#[test]
fn bucket_is_one_cache_line() {
    assert_eq!(BUCKET_BYTES, 64);
    assert_eq!(std::mem::align_of::<Bucket>(), 64);
}

#[test]
fn returns_what_was_inserted_and_stays_bounded() {
    let mut table = PieceTable::default();
    for i in 0..1000 {
        let k = key(i);
        table.insert(k, hash_packed(k), &ids(i));
    }
    for i in 0..1000 {
        assert_eq!(lookup(&mut table, i), Some(ids(i)), "piece {i}");
    }
    // Far more pieces than fit: memory stops growing, what is kept is right.
    // (Ids that fit inline: overflowed ones would make it start over.)
    let far_more = MAX_BUCKETS as u32 * 4;
    let inline_ids = |i: u32| ids(i)[..INLINE_IDS.min(ids(i).len())].to_vec();
    for i in 0..far_more {
        let k = key(i);
        table.insert(k, hash_packed(k), &inline_ids(i));
    }
    let slots = MAX_BUCKETS * WAYS;
    assert!(table.buckets.len() == MAX_BUCKETS && table.entries <= slots + slots / SLOTS_PER_STASHED);
    assert!(
        table.bytes() <= MAX_BUCKETS * BUCKET_BYTES + MAX_BUCKETS * WAYS * OVERFLOW_IDS_PER_SLOT * 8,
        "{}",
        table.bytes()
    );
    let kept =
        (0..far_more).filter(|&i| lookup(&mut table, i).inspect(|got| assert_eq!(*got, inline_ids(i))).is_some());
    assert!(kept.count() > MAX_BUCKETS * WAYS / 4, "the table keeps a useful share");
}

#[test]
fn reserving_keeps_what_it_holds_within_the_bound_and_never_shrinks() {
    let mut table = PieceTable::with_max_buckets(1 << 12);
    for i in 0..300 {
        table.insert(key(i), hash_packed(key(i)), &ids(i));
    }
    let before = table.buckets.len();
    table.reserve(3000);
    assert_eq!(table.buckets.len(), 4096);
    table.reserve(1 << 20);
    assert_eq!(table.buckets.len(), 4096, "bounded");
    table.reserve(10);
    assert_eq!(table.buckets.len(), 4096, "never shrinks");
    assert!(before < 4096);
    for i in 0..300 {
        assert_eq!(lookup(&mut table, i), Some(ids(i)), "piece {i}");
    }
    let mut empty = PieceTable::default();
    empty.reserve(0);
    assert_eq!(empty.buckets.len(), FIRST_BUCKETS);
}

/// The warm path's two lookups by bucket index: inline ids from one,
/// overflowed ids from the other, a seed or a miss from neither.
#[test]
fn the_warm_path_finds_inline_and_overflowed_ids_and_passes_seeds_on() {
    let mut table = PieceTable::with_max_buckets(1 << 8);
    table.reserve_for_seeds();
    let (seed, short, long, absent) = (key(1), key(2), key(3), key(4));
    table.plant(seed, hash_packed(seed), 11);
    table.insert(short, hash_packed(short), &[5, 6]);
    table.insert(long, hash_packed(long), &[7, 8, 9, 10, 11]);
    let probe = table.probe();
    let lookups = |key: u128| {
        let bucket = probe.bucket_index(hash_packed(key));
        // SAFETY: the bucket index is this probe's.
        unsafe {
            let inline = probe.get_inline_at(key, bucket).map(|entry| entry.ids[..entry.id_count()].to_vec());
            (inline, probe.get_overflowed_at(key, bucket).map(<[u32]>::to_vec))
        }
    };
    assert_eq!(lookups(short), (Some(vec![5, 6]), None));
    assert_eq!(lookups(long), (None, Some(vec![7, 8, 9, 10, 11])));
    assert_eq!(lookups(seed), (None, None), "a seed goes to `get`, which makes it a piece");
    assert_eq!(lookups(absent), (None, None));
}

#[test]
fn a_seed_is_found_off_the_warm_path_and_then_is_a_piece_like_any() {
    let mut table = PieceTable::with_max_buckets(1 << 8);
    table.reserve_for_seeds();
    let (seed, hash) = (key(7), hash_packed(key(7)));
    table.plant(seed, hash, 70);
    assert_eq!(table.seeds(), 1);
    assert!(inline_entry(&table, seed).is_none(), "the warm path passes seeds on");
    assert_eq!(lookup(&mut table, 7), Some(vec![70]));
    assert_eq!(table.seeds(), 0, "found once, it is the text's");
    let entry = inline_entry(&table, seed).expect("now on the warm path");
    assert_eq!((entry.id_count(), entry.ids[0]), (1, 70));
    assert_eq!(table.inline_entries().count(), 1, "and handed to the shared cache");
}

#[test]
fn seeds_give_way_to_the_text_and_never_push_it_aside() {
    // Two buckets: keys of bucket 0 only, one id each.
    let mut table = PieceTable::with_max_buckets(2);
    table.reserve_for_seeds();
    let home_zero: Vec<u32> = (0..).filter(|&i| hash_packed(key(i)) >> 63 == 0).take(6).collect();
    let plant = |table: &mut PieceTable, i: u32| table.plant(key(i), hash_packed(key(i)), i);
    let one_id = |table: &mut PieceTable, i: u32| table.insert(key(i), hash_packed(key(i)), &[i]);
    for &i in &home_zero[..3] {
        plant(&mut table, i);
    }
    assert_eq!(table.seeds(), 2, "a seed takes an empty way of its bucket or nothing");
    assert!(table.inline_entries().next().is_none(), "seeds are not handed to the shared cache");
    // The text's pieces take the seeds' ways of their own bucket: none
    // spills beside while a seed is there to give way.
    one_id(&mut table, home_zero[3]);
    one_id(&mut table, home_zero[4]);
    assert_eq!(table.seeds(), 0);
    assert!(!table.has_spilled(0));
    for &i in &home_zero[3..5] {
        assert_eq!(inline_entry(&table, key(i)).map(|e| e.ids[0]), Some(i));
    }
    // The seeds that gave way are gone, not wrong.
    for &i in &home_zero[..3] {
        assert_eq!(lookup(&mut table, i), None);
    }
    // A seed never takes a way that holds a piece.
    plant(&mut table, home_zero[5]);
    assert_eq!(lookup(&mut table, home_zero[5]), None);
}

#[test]
fn a_full_bucket_spills_beside_and_a_miss_looks_there_only_then() {
    // Two buckets: the hash's top bit picks one. Keys of bucket 0 only,
    // one id each (a table this small starts over at its first overflow).
    let mut table = PieceTable::with_max_buckets(2);
    let home_zero: Vec<u32> = (0..).filter(|&i| hash_packed(key(i)) >> 63 == 0).take(5).collect();
    let one_id = |table: &mut PieceTable, i: u32| table.insert(key(i), hash_packed(key(i)), &[i]);
    for &i in &home_zero[..4] {
        one_id(&mut table, i);
    }
    assert_eq!(table.buckets.len(), 2, "bounded at two buckets");
    assert!(table.has_spilled(0) && !table.has_spilled(1));
    for &i in &home_zero[..4] {
        assert_eq!(lookup(&mut table, i), Some(vec![i]), "piece {i}, two of them beside their bucket");
    }
    assert_eq!(lookup(&mut table, home_zero[4]), None);
    assert!(table.dropped_few());
    // A fifth key of bucket 0 evicts; every key still found has its own id.
    one_id(&mut table, home_zero[4]);
    assert_eq!(table.dropped, 1);
    let found = home_zero.iter().filter(|&&i| lookup(&mut table, i).inspect(|got| assert_eq!(*got, vec![i])).is_some());
    assert_eq!(found.count(), 4);
}

#[test]
fn at_its_largest_a_full_bucket_stashes_before_it_evicts() {
    // 64 buckets, 128 slots: a stash of 8. Keys of bucket 0 only.
    let mut table = PieceTable::with_max_buckets(64);
    let home_zero: Vec<u32> = (0..).filter(|&i| hash_packed(key(i)) >> 58 == 0).take(13).collect();
    for &i in &home_zero {
        table.insert(key(i), hash_packed(key(i)), &ids(i));
    }
    assert_eq!((table.buckets.len(), table.stash.len(), table.dropped), (64, 8, 1));
    // Four in the two buckets, eight in the stash, one evicted (the
    // second way's): every key still found has its own ids.
    let kept: Vec<u32> = home_zero
        .iter()
        .copied()
        .filter(|&i| lookup(&mut table, i).inspect(|got| assert_eq!(*got, ids(i))).is_some())
        .collect();
    assert_eq!(kept.len(), 12);
    let inline = kept.iter().filter(|&&i| ids(i).len() <= INLINE_IDS).count();
    assert_eq!(table.inline_entries().count(), inline);
    // A key of another bucket is not looked for in the stash.
    assert!(!bit(&table.stashed, 1) && bit(&table.stashed, 0));
}

#[test]
fn a_text_that_moves_on_gets_the_first_ways() {
    // 64 buckets, 128 slots: an old text fills them, then a new one of
    // 100 pieces is encoded again and again (a piece is inserted when
    // missed, as the encoder does; one id each, so that no overflow
    // makes the table start over).
    let mut table = PieceTable::with_max_buckets(64);
    let encode = |table: &mut PieceTable, i: u32| {
        if lookup(table, i).is_none() {
            let k = key(i);
            table.insert(k, hash_packed(k), &[i]);
        }
    };
    for i in 0..1000 {
        encode(&mut table, i);
    }
    for _ in 0..50 {
        for i in 5000..5100 {
            encode(&mut table, i);
        }
    }
    // Held to the second ways, at most 64 of the new pieces would fit.
    let kept = (5000..5100).filter(|&i| lookup(&mut table, i).is_some()).count();
    assert!(kept > 70, "only {kept} of the new text's 100 pieces kept");
}

#[test]
fn frequent_pieces_survive_a_stream_of_new_ones() {
    let mut table = PieceTable::default();
    let frequent: Vec<u32> = (0..2000).collect();
    for round in 0..200_000u32 {
        let i = frequent[round as usize % frequent.len()];
        if lookup(&mut table, i).is_none() {
            let k = key(i);
            table.insert(k, hash_packed(k), &ids(i));
        }
        for new in 0..4 {
            let k = key(1_000_000 + round * 4 + new);
            table.insert(k, hash_packed(k), &[round]);
        }
    }
    let kept = frequent.iter().filter(|&&i| lookup(&mut table, i).is_some()).count();
    assert!(kept * 10 >= frequent.len() * 9, "only {kept} of {} frequent pieces kept", frequent.len());
}
