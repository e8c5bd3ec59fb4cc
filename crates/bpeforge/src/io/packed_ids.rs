//! A chunk's ids as the bytes an output takes: little-endian, 2 or 4 bytes an id.
//!
//! uint32 ids already are those bytes on a little-endian machine, so they are
//! lent as they are instead of copied (the copies were 7% of a one-core
//! `bpeforge encode`).

pub enum PackedIds {
    /// Ids narrowed to their little-endian bytes (uint16, or uint32 on a
    /// big-endian machine).
    Bytes(Vec<u8>),
    /// uint32 ids, whose memory is their little-endian bytes.
    Native(Vec<u32>),
}

impl PackedIds {
    pub fn new(ids: Vec<u32>, width: usize) -> Self {
        match width {
            2 => Self::Bytes(ids.iter().flat_map(|&id| (id as u16).to_le_bytes()).collect()),
            _ if cfg!(target_endian = "little") => Self::Native(ids),
            _ => Self::Bytes(ids.iter().flat_map(|&id| id.to_le_bytes()).collect()),
        }
    }

    pub fn bytes(&self) -> &[u8] {
        match self {
            Self::Bytes(bytes) => bytes,
            // SAFETY: the slice covers exactly the ids' initialized memory, a
            // `u8` needs no alignment, and any bytes are valid `u8`s; it
            // borrows `ids`, so the memory outlives it.
            Self::Native(ids) => unsafe {
                std::slice::from_raw_parts(ids.as_ptr().cast::<u8>(), size_of_val(&ids[..]))
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_little_endian_at_either_width() {
        let ids = vec![1u32, 0x0102_0304, 65535];
        assert_eq!(PackedIds::new(ids.clone(), 4).bytes(), [1, 0, 0, 0, 4, 3, 2, 1, 255, 255, 0, 0]);
        assert_eq!(PackedIds::new(ids, 2).bytes(), [1, 0, 4, 3, 255, 255]);
        assert!(PackedIds::new(Vec::new(), 4).bytes().is_empty());
    }
}
