//! The vocabulary file the encoding examples read: a line with the vocab
//! size, then `id hex` lines, then `lefthex righthex` merge lines (written
//! from Python with `bpeforge.io`).

use bpeforge::Vocabulary;

pub fn read_vocabulary(path: &str) -> Vocabulary {
    let tables = std::fs::read_to_string(path).expect("tables file");
    let mut lines = tables.lines();
    let size: usize = lines.next().expect("size line").parse().expect("size");
    let mut entries = Vec::new();
    for line in lines.by_ref().take(size) {
        let (id, bytes) = line.split_once(' ').expect("id hex");
        entries.push((id.parse().expect("id"), hex(bytes)));
    }
    let merges: Vec<(Vec<u8>, Vec<u8>)> =
        lines.map(|l| l.split_once(' ').expect("pair")).map(|(a, b)| (hex(a), hex(b))).collect();
    Vocabulary::new(entries, &merges).expect("vocab")
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex")).collect()
}
