//! The encoder's piece caches, pre-token -> ids, so repeats are not merged
//! again: a thread's own table (`piece_table` for packed pieces,
//! `long_pieces` for longer ones), the cache shared by threads and kept across
//! calls (`shared`, with `shared_long` for its long pieces), and the tokens
//! a thread's table starts with (`seeds`, chosen among the tokens that encode
//! to themselves: `whole_tokens`).

pub(crate) mod huge_pieces;
pub(crate) mod long_pieces;
pub(crate) mod piece_table;
pub(crate) mod seeds;
pub(crate) mod shared;
pub(crate) mod shared_long;
pub(crate) mod whole_tokens;
