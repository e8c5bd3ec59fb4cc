//! The positions a queue entry of SuperBPE's stage 2 holds (`hf_occurrences.rs`),
//! packed: ascending, each as its distance from the one before in LEB128
//! (7 bits a byte). Entries hold every occurrence of their pair when they
//! were pushed, and most never pop: at 100 MB of Gutenberg they held 110
//! million positions after the replay, more than the arena of the text, as
//! 4 bytes each; a frequent pair's positions are a few bytes apart, so most
//! take 1-2 bytes here.

/// One position inline (most entries: pairs seen once), or two or more packed.
pub(super) enum Positions {
    One(u32),
    Many(Box<[u8]>),
}

impl Positions {
    /// From positions in any order (sorted here: a merge walks them left to right).
    pub fn new(mut positions: Vec<u32>) -> Self {
        if let [one] = positions[..] {
            return Self::One(one);
        }
        if !positions.is_sorted() {
            positions.sort_unstable();
        }
        let mut last = 0;
        let size = positions.iter().map(|&p| packed_len(p - std::mem::replace(&mut last, p))).sum();
        let mut packer = Packer::with_capacity(size);
        positions.iter().for_each(|&p| packer.push(p));
        packer.finish()
    }

    /// Append the positions, ascending, to `out`.
    pub fn unpack_into(&self, out: &mut Vec<u32>) {
        match self {
            Self::One(one) => out.push(*one),
            Self::Many(bytes) => {
                let (mut at, mut value, mut shift) = (0u32, 0u32, 0);
                for &byte in bytes.iter() {
                    value |= u32::from(byte & 0x7F) << shift;
                    if byte & 0x80 == 0 {
                        at += value;
                        out.push(at);
                        (value, shift) = (0, 0);
                    } else {
                        shift += 7;
                    }
                }
            }
        }
    }

    #[cfg(test)]
    pub fn to_vec(&self) -> Vec<u32> {
        let mut out = Vec::new();
        self.unpack_into(&mut out);
        out
    }
}

/// Bytes `distance` takes packed.
pub(super) fn packed_len(distance: u32) -> usize {
    (32 - distance.leading_zeros()).max(1).div_ceil(7) as usize
}

/// Positions packed one at a time, ascending.
pub(super) struct Packer {
    bytes: Vec<u8>,
    last: u32,
    len: usize,
}

impl Packer {
    /// Room for `bytes` packed bytes (`packed_len` of each distance gives the exact size).
    pub fn with_capacity(bytes: usize) -> Self {
        Self { bytes: Vec::with_capacity(bytes), last: 0, len: 0 }
    }

    /// Add `position`, at or after the last one added.
    #[inline]
    pub fn push(&mut self, position: u32) {
        let mut distance = position - self.last;
        self.last = position;
        self.len += 1;
        while distance >= 0x80 {
            self.bytes.push((distance as u8 & 0x7F) | 0x80);
            distance >>= 7;
        }
        self.bytes.push(distance as u8);
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn finish(self) -> Positions {
        match self.len {
            1 => Positions::One(self.last),
            _ => Positions::Many(self.bytes.into_boxed_slice()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_come_back_ascending_whatever_their_distances() {
        let positions = vec![u32::MAX, 0, 5, 5, 127, 128, 16_383, 16_384, 1 << 21, (1 << 28) + 3];
        let packed = Positions::new(positions.clone());
        let mut sorted = positions;
        sorted.sort_unstable();
        assert_eq!(packed.to_vec(), sorted);
        let Positions::Many(bytes) = &packed else { panic!("ten positions are many") };
        let distances = sorted.iter().scan(0, |last, &p| Some(p - std::mem::replace(last, p)));
        assert_eq!(bytes.len(), distances.map(packed_len).sum::<usize>());
        assert!(matches!(Positions::new(vec![42]), Positions::One(42)));
        assert_eq!((packed_len(0), packed_len(127), packed_len(128), packed_len(u32::MAX)), (1, 1, 2, 5));
    }
}
