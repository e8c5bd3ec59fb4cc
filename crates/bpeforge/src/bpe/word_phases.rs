//! Merging a long piece in two phases, where a vocabulary's early merges never
//! join words: SuperBPE's pieces are whole lines, and its first merges are an
//! ordinary word-level BPE's.
//!
//! The rule. Let `J(x, y)` be the lowest rank of a merge whose left token
//! ends with byte `x` and whose right token starts with byte `y`
//! (`char_merges::junction_ranks`), and `T` the lowest `J(x, ' ')` over the
//! printable ASCII bytes `x`: the first merge that joins a word to the space
//! of the next one (SuperBPE's first superword merge). Merges ranked below
//! `T` are *early*, the others *late*. Cut a piece between every two bytes
//! with `J(x, y) >= T`. When ranks grow (`Vocabulary::ranks_grow`), the
//! piece's ids are those of its parts merged alone with the early merges,
//! end to end, then merged on the whole with every merge.
//!
//! Proof. No early merge joins across a cut: it would join a left token that
//! ends with `x` to a right one that starts with `y`, so its rank is at least
//! `J(x, y) >= T`. While an early merge is on offer somewhere, the loop takes
//! it (it takes the lowest rank), and each part's early merges come in the
//! order they come alone (lowest rank, leftmost first, within the part). So
//! the loop's state when no early merge is on offer is the parts' early
//! merges end to end. From there on it takes late merges only: a merge made
//! of a late merge's token ranks above it (ranks grow), so no early merge is
//! ever on offer again, and the loop goes on from that state as from any.
//!
//! Why it is fast: the parts are words (` the`, ` house,`), which the
//! encoder's tables already hold; their ids are the early merges' whenever
//! no id was made by a late merge (then no late merge was taken, and the
//! loop took the early ones in the same order), which `is_late` tells. The
//! second phase starts from a dozen words' ids instead of seventy bytes.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::bpe::merges::{MergeTable, NONE};

/// Where `WordPhases::id` comes from.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Words of a bit set over the 65,536 pairs of bytes.
pub const PAIR_WORDS: usize = 256 * 256 / 64;

/// Where a vocabulary's pieces cut for the early merges, and which ids the
/// late merges make (see the module's comment).
#[derive(Debug, Clone)]
pub struct WordPhases {
    /// Tells the words one vocabulary's merges made (`word_cache.rs`) from
    /// another's: distinct for each vocabulary built (its clones share it).
    id: u64,
    /// `T`: merges ranked below it are early.
    late_from: u32,
    /// Bit `x << 8 | y`: no early merge joins byte `x` to a following `y`.
    cuts: Box<[u64; PAIR_WORDS]>,
    /// Bit `x << 8 | y`: no merge at all does (no token holds the pair:
    /// `Vocabulary::can_cut_between`), so the late merges do not either.
    run_ends: Box<[u64; PAIR_WORDS]>,
    /// Bit by id: some late merge makes the token.
    late_ids: Box<[u64]>,
}

impl WordPhases {
    /// The phases of the merges in `table`, with `junction` their
    /// `junction_ranks`, over `ids` ids; `None` when they do not pay: ranks
    /// do not grow, no merge joins a word to a space (every such cut is then
    /// one where no token spans, `Vocabulary::can_cut_between`), or the late
    /// merges are most of the merges.
    pub fn new(table: &MergeTable, junction: &[u32], pairs_in_tokens: &[u64; PAIR_WORDS], ids: usize) -> Option<Self> {
        let late_from = (0x21..=0x7Eu8).map(|x| junction[(x as usize) << 8 | b' ' as usize]).min()?;
        let early = table.len().min(late_from as usize);
        if !table.ranks_grow() || late_from == NONE || early < table.len() - early {
            return None;
        }
        let mut cuts = Box::new([0u64; PAIR_WORDS]);
        for (pair, &rank) in junction.iter().enumerate() {
            if rank >= late_from {
                cuts[pair >> 6] |= 1 << (pair & 63);
            }
        }
        let mut late_ids = vec![0u64; ids.div_ceil(64)].into_boxed_slice();
        for entry in table.entries().filter(|entry| entry.rank >= late_from) {
            late_ids[entry.merged as usize >> 6] |= 1 << (entry.merged & 63);
        }
        let run_ends = Box::new(pairs_in_tokens.map(|word| !word));
        Some(Self { id: NEXT_ID.fetch_add(1, Ordering::Relaxed), late_from, cuts, run_ends, late_ids })
    }

    /// Distinct for each vocabulary built.
    #[inline]
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Merges of this rank and above are late.
    #[inline]
    pub fn late_from(&self) -> u32 {
        self.late_from
    }

    /// Whether a piece cuts between these two bytes for the early merges.
    #[cfg(test)]
    pub fn is_cut(&self, first: u8, second: u8) -> bool {
        let pair = (first as usize) << 8 | second as usize;
        self.cuts[pair >> 6] & 1 << (pair & 63) != 0
    }

    /// Whether a late merge makes token `id`.
    #[inline]
    pub fn is_late(&self, id: u32) -> bool {
        self.late_ids.get(id as usize >> 6).is_some_and(|word| word & 1 << (id & 63) != 0)
    }

    /// Where the words of `piece` end in the 64 bytes from `window`: bit `i`
    /// of the first mask says that one ends after byte `window + i` (at a
    /// cut, or at the piece's end), of the second that a run of words does
    /// (no merge at all joins the two bytes, so the late merges stay on
    /// either side too; or the piece ends). Without a branch a byte: where
    /// words end is as good as random.
    #[inline]
    pub fn end_masks(&self, piece: &[u8], window: usize) -> (u64, u64) {
        let bytes = (piece.len() - 1 - window).min(64);
        let (mut words, mut runs) = (0, 0);
        for (i, pair) in piece[window..window + bytes + 1].windows(2).enumerate() {
            let pair = (pair[0] as usize) << 8 | pair[1] as usize;
            words |= (self.cuts[pair >> 6] >> (pair & 63) & 1) << i;
            runs |= (self.run_ends[pair >> 6] >> (pair & 63) & 1) << i;
        }
        if bytes < 64 {
            (words | 1 << bytes, runs | 1 << bytes)
        } else {
            (words, runs)
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::bpe::vocab::Vocabulary;
    use crate::bpe::{encode_piece, merge_heap, Scratch};
    use crate::util::test_rng::XorShift as Rng;

    /// Letters, a punctuation mark, a 2-byte char, whitespace.
    const ALPHABET: [&str; 9] = ["a", "b", "c", "d", ",", "é", " ", " ", "\n"];

    /// Random chars of `ALPHABET`; one line in four without whitespace (a
    /// word of more than 15 or 32 bytes).
    fn random_line(rng: &mut Rng, chars: usize) -> Vec<u8> {
        let alphabet = if rng.below(4) == 0 { &ALPHABET[..6] } else { &ALPHABET[..] };
        (0..chars).flat_map(|_| alphabet[rng.below(alphabet.len())].bytes()).collect()
    }

    /// The pieces of SuperBPE's first stage: a space starts a piece unless a
    /// space or a newline comes before it.
    fn words(line: &[u8]) -> Vec<Vec<u8>> {
        let mut words: Vec<Vec<u8>> = Vec::new();
        for (at, &byte) in line.iter().enumerate() {
            let starts = at == 0 || (byte == b' ' && !matches!(line[at - 1], b' ' | b'\n'));
            match words.last_mut() {
                Some(word) if !starts => word.push(byte),
                _ => words.push(vec![byte]),
            }
        }
        words
    }

    /// A vocabulary learnt as SuperBPE learns one, but taking a random
    /// adjacent pair each time instead of the most frequent: `early` merges
    /// inside the words of random lines, then up to `late` on whole lines.
    fn random_vocab(rng: &mut Rng, early: usize, late: usize) -> Vocabulary {
        let mut entries: Vec<(u32, Vec<u8>)> = (0..=255u8).map(|b| (b as u32, vec![b])).collect();
        let lines: Vec<Vec<u8>> = (0..20).map(|_| random_line(rng, 60)).collect();
        let as_bytes = |piece: &Vec<u8>| -> Vec<Vec<u8>> { piece.iter().map(|&b| vec![b]).collect() };
        let mut pieces: Vec<Vec<Vec<u8>>> = lines.iter().flat_map(|line| words(line)).map(|w| as_bytes(&w)).collect();
        let mut merges: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        for stage in [early, early + late] {
            if stage > early {
                pieces = lines.iter().map(as_bytes).collect();
                for (left, right) in &merges {
                    pieces.iter_mut().for_each(|piece| apply(piece, left, right));
                }
            }
            for _ in 0..stage * 4 {
                if merges.len() >= stage {
                    break;
                }
                let piece = &pieces[rng.below(pieces.len())];
                if piece.len() < 2 {
                    continue;
                }
                let at = rng.below(piece.len() - 1);
                let (left, right) = (piece[at].clone(), piece[at + 1].clone());
                if merges.contains(&(left.clone(), right.clone())) {
                    continue;
                }
                let token = [left.as_slice(), right.as_slice()].concat();
                if !entries.iter().any(|(_, bytes)| *bytes == token) {
                    entries.push((entries.len() as u32, token));
                }
                pieces.iter_mut().for_each(|piece| apply(piece, &left, &right));
                merges.push((left, right));
            }
        }
        Vocabulary::new(entries, &merges).unwrap()
    }

    fn apply(piece: &mut Vec<Vec<u8>>, left: &[u8], right: &[u8]) {
        let mut at = 0;
        while at + 1 < piece.len() {
            if piece[at] == left && piece[at + 1] == right {
                piece[at] = [left, right].concat();
                piece.remove(at + 1);
            }
            at += 1;
        }
    }

    /// The tokens of 2-15 bytes that encode to themselves, as the encoder
    /// seeds its tables.
    fn seeds(vocab: &Vocabulary) -> Vec<u32> {
        let (mut scratch, mut ids) = (Scratch::default(), Vec::new());
        let whole = |(id, token): &(u32, &[u8])| {
            ids.clear();
            merge_heap(token, vocab, &mut scratch, &mut ids);
            (2..=15).contains(&token.len()) && ids == [*id]
        };
        vocab.tokens().filter(whole).map(|(id, _)| id).collect()
    }

    #[test]
    fn pieces_merged_in_two_phases_give_the_heaps_ids() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let (mut phased, mut scratch) = (0, Scratch::default());
        for round in 0..300 {
            let early = 20 + rng.below(150);
            let late = rng.below(early);
            let vocab = random_vocab(&mut rng, early, late);
            phased += vocab.word_phases().is_some() as usize;
            // One scratch for all: each vocabulary's words are its own (`WordCache::serve`). Half the
            // vocabularies start with the encoder's seeds planted (`Scratch::plant_words`).
            if round % 2 == 0 {
                scratch.plant_words(&vocab, &seeds(&vocab));
            }
            for _ in 0..30 {
                let chars = 1 + rng.below(400);
                let piece = random_line(&mut rng, chars);
                let (mut ids, mut expected) = (Vec::new(), Vec::new());
                encode_piece(&piece, &vocab, &mut scratch, &mut ids);
                merge_heap(&piece, &vocab, &mut scratch, &mut expected);
                assert_eq!(ids, expected, "round {round}: {:?}", String::from_utf8_lossy(&piece));
            }
        }
        assert!(phased > 200, "{phased} of 300 vocabularies merge in phases");
    }

    #[test]
    fn only_vocabularies_whose_early_merges_keep_words_apart_have_phases() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        // No merge joins a word to a space: `can_cut_between` already cuts there.
        assert!(random_vocab(&mut rng, 100, 0).word_phases().is_none());
        let vocab = random_vocab(&mut rng, 100, 40);
        let phases = vocab.word_phases().expect("phases");
        assert!(phases.late_from() >= 100);
        assert!(phases.is_cut(b'a', b' ') && !phases.is_cut(b' ', b'a'));
    }
}
