//! GPT-2's table between bytes and the printable chars byte-level BPE spells
//! them with (`Ġ` is the space byte): a `tokenizer.json` writes every token of
//! a byte-level vocabulary in these chars.

/// The char each byte is written as.
pub fn byte_chars() -> [char; 256] {
    let mut chars = ['\0'; 256];
    let mut next_free = 256u32;
    for byte in 0..=255u8 {
        let printable = matches!(byte, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
        let code = if printable {
            u32::from(byte)
        } else {
            next_free += 1;
            next_free - 1
        };
        chars[usize::from(byte)] = char::from_u32(code).expect("a code point under 324");
    }
    chars
}

/// Char -> byte for the 256 chars of `byte_chars` (all under U+0144).
pub struct ByteTable {
    bytes: [Option<u8>; 324],
}

impl ByteTable {
    pub fn new() -> Self {
        let mut bytes = [None; 324];
        for (byte, ch) in byte_chars().iter().enumerate() {
            bytes[*ch as usize] = Some(byte as u8);
        }
        Self { bytes }
    }

    pub fn byte(&self, ch: char) -> Option<u8> {
        self.bytes.get(ch as usize).copied().flatten()
    }

    /// The bytes `text` spells, or `None` when a char of it is not one of the 256.
    pub fn decode(&self, text: &str) -> Option<Vec<u8>> {
        text.chars().map(|ch| self.byte(ch)).collect()
    }
}

impl Default for ByteTable {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hf_byte_level_spells_space_and_newline_as_gpt2_does() {
        let chars = byte_chars();
        assert_eq!(chars[usize::from(b' ')], 'Ġ');
        assert_eq!(chars[usize::from(b'\n')], 'Ċ');
        assert_eq!(chars[usize::from(b'a')], 'a');
        let table = ByteTable::new();
        assert_eq!(table.decode("ĠhelloĊ"), Some(b" hello\n".to_vec()));
        assert_eq!(table.decode("▁"), None);
    }
}
