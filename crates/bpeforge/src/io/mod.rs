//! Files in and out: opening (possibly compressed) inputs, reading them in
//! chunks cut where the result cannot change, JSON Lines records, planning
//! byte-range shards, and appending ids to an output file.

pub(crate) mod append_file;
pub(crate) mod chunking;
pub(crate) mod input;
pub(crate) mod jsonl;
pub(crate) mod line_blocks;
pub(crate) mod packed_ids;
pub(crate) mod shards;
