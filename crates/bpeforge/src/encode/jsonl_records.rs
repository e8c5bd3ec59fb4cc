//! JSON Lines files encoded in the core, a block of records at a time.
//!
//! A thread of its own reads (and decompresses) the file in blocks of whole
//! lines (`io/line_blocks.rs`), one block ahead; each call takes the next block,
//! reads its records in parallel, then encodes their texts in parallel as one
//! batch (`encode_batch_into`, as `encode_batch_to_arrays` does: the same
//! ids). The caller gets the block's ids with each document's end, and the
//! lines left for Python (bad records, and the few serde_json refuses but
//! Python reads), each with the document it comes before: Python reads
//! those, so its errors and its skipped records stay exactly as they were.
//!
//! Why: parsing the JSON in Python, one line at a time, held `bpeforge
//! encode` of JSON Lines to a third of what the encoder does on 2 cores.
//! Memory stays bounded: a block read ahead, a block's texts and its ids.

use std::panic::resume_unwind;
use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver};
use std::thread::JoinHandle;

use crate::encode::{ids_buffer, Encoder};
use crate::error::Error;
use crate::io::jsonl::{read_block, LineForPython};
use crate::io::line_blocks::{LineBlock, LineBlocks};

/// Bytes of JSON a block (at least: a block ends with a line). Blocks of
/// 1, 2 and 4 MiB ran `bpeforge encode` of 100 MB of Gutenberg's JSON Lines
/// to Megatron files as fast (1.0-1.1 s on 2 threads), with a peak RSS of
/// 125, 142 and 170 MiB: a block is held several times over (read ahead,
/// read, its texts, its ids, NumPy's copies). A block is a few milliseconds
/// of work, so Ctrl-C is seen between calls at once.
pub const RECORDS_BLOCK_BYTES: usize = 1 << 20;

/// Runs of lines a block is cut into for each thread: a worker that is done
/// takes another, so a run of long lines does not leave the other waiting.
const PARTS_PER_THREAD: usize = 4;

/// A JSON Lines file whose records' `field` is encoded a block at a time (`next_block`).
pub struct JsonlRecords {
    field: String,
    blocks: Option<Receiver<Result<LineBlock, Error>>>,
    reader: Option<JoinHandle<()>>,
}

/// One block's documents: their ids, where each one's end in `ids`, the bytes of their texts, and the lines
/// left for Python, in line order.
#[derive(Debug, Default)]
pub struct EncodedRecords {
    pub ids: Vec<u32>,
    pub ends: Vec<usize>,
    pub text_bytes: u64,
    pub for_python: Vec<LineForPython>,
}

impl JsonlRecords {
    /// Open `path` (plain or compressed: an error now names it) and start reading it in blocks of about
    /// `block_bytes`.
    pub fn open(path: &Path, field: &str, block_bytes: usize) -> Result<Self, Error> {
        let mut lines = LineBlocks::open(path)?;
        // One block ahead: the reader reads the next while this one is encoded.
        let (to_encoder, blocks) = sync_channel(1);
        let read = move || {
            while let Some(next) = lines.next_block(block_bytes).transpose() {
                let failed = next.is_err();
                // The receiver is gone when the caller stopped early.
                if to_encoder.send(next).is_err() || failed {
                    return;
                }
            }
        };
        let reader = std::thread::Builder::new()
            .name("bpeforge-jsonl-read".into())
            .spawn(read)
            .map_err(|err| Error::InvalidArgument(format!("cannot start the JSON Lines reader thread: {err}")))?;
        Ok(Self { field: field.to_string(), blocks: Some(blocks), reader: Some(reader) })
    }

    /// The next block's records encoded in parallel on the current rayon pool; `None` after the last. A read
    /// error (a truncated stream) is returned at the block it stopped.
    pub fn next_block(&mut self, encoder: &Encoder) -> Result<Option<EncodedRecords>, Error> {
        let Some(blocks) = &self.blocks else { return Ok(None) };
        let block = match blocks.recv() {
            Ok(block) => block?,
            Err(_) => {
                self.finish();
                return Ok(None);
            }
        };
        let parts = rayon::current_num_threads() * PARTS_PER_THREAD;
        let mut records = read_block(&block, &self.field, parts);
        drop(block);
        let texts = records.texts();
        let mut encoded = EncodedRecords { text_bytes: records.text_bytes(), ..EncodedRecords::default() };
        if !texts.is_empty() {
            encoded.ids = ids_buffer(encoded.text_bytes as usize);
            encoded.ends.reserve(texts.len());
            encoder.encode_batch_into(&texts, None, &mut encoded.ids, &mut encoded.ends)?;
        }
        encoded.for_python = std::mem::take(&mut records.for_python);
        Ok(Some(encoded))
    }

    /// The reader has ended: it sent its last block, or it panicked, which is raised here (never a file
    /// silently cut short).
    fn finish(&mut self) {
        self.blocks = None;
        if let Some(reader) = self.reader.take() {
            reader.join().unwrap_or_else(|panic| resume_unwind(panic));
        }
    }
}

impl Drop for JsonlRecords {
    /// Stopped early (an error, Ctrl-C): the reader, blocked handing its next block over, sees the receiver
    /// gone and ends.
    fn drop(&mut self) {
        self.blocks = None;
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bpe::vocab::Vocabulary;

    fn encoder() -> Encoder {
        let mut entries: Vec<(u32, Vec<u8>)> = (0..=255u8).map(|b| (b as u32, vec![b])).collect();
        entries.extend([(256, b" t".to_vec()), (257, b"<|e|>".to_vec())]);
        let vocab = Vocabulary::new(entries, &[(b" ".to_vec(), b"t".to_vec())]).unwrap();
        Encoder::new(vocab, &["<|e|>".to_string()], crate::Pattern::Gpt2).unwrap()
    }

    #[test]
    fn blocks_give_each_records_ids_in_order_and_leave_bad_lines_in_place() {
        let encoder = encoder();
        let texts: Vec<String> =
            (0..500).map(|i| format!("doc {i} t<|e|>t  \u{3000}é {}", "x".repeat(i % 37))).collect();
        let mut lines: Vec<String> = texts.iter().map(|text| serde_json::json!({ "text": text }).to_string()).collect();
        lines.insert(100, "{\"text\": 3}".into());
        lines.insert(300, String::new());
        let dir = std::env::temp_dir().join(format!("bpeforge-jsonl-records-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r.jsonl");
        std::fs::write(&path, lines.join("\n")).unwrap();
        let expected: Vec<Vec<u32>> = texts.iter().map(|text| encoder.encode(text).unwrap()).collect();
        for (threads, block_bytes) in [(1, 1), (2, 700), (2, 1 << 20)] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            let mut records = JsonlRecords::open(&path, "text", block_bytes).unwrap();
            let (mut got, mut for_python, mut bytes) = (Vec::new(), Vec::new(), 0);
            while let Some(block) = pool.install(|| records.next_block(&encoder)).unwrap() {
                for line in block.for_python {
                    for_python.push((got.len() + line.before, line.number, line.line));
                }
                let mut start = 0;
                for end in block.ends {
                    got.push(block.ids[start..end].to_vec());
                    start = end;
                }
                bytes += block.text_bytes;
            }
            assert_eq!(got, expected, "threads {threads}, blocks of {block_bytes}");
            assert_eq!(for_python, [(100, 101, b"{\"text\": 3}".to_vec())]);
            assert_eq!(bytes, texts.iter().map(|text| text.len() as u64).sum::<u64>());
            assert!(records.next_block(&encoder).unwrap().is_none(), "the end stays the end");
        }
        // Dropped with blocks still to read: the reader ends, nothing hangs.
        let mut records = JsonlRecords::open(&path, "text", 1).unwrap();
        records.next_block(&encoder).unwrap().unwrap();
        drop(records);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_missing_file_is_an_error_that_names_it() {
        let err = JsonlRecords::open(Path::new("/nonexistent/r.jsonl"), "text", 1).err().unwrap();
        assert!(err.to_string().contains("/nonexistent/r.jsonl"), "{err}");
    }
}
