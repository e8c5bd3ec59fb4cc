//! A text of a batch as a worker takes it: its UTF-8 borrowed, or made by the
//! worker that takes it.
//!
//! Why the second: the Python binding gets the UTF-8 of a long `str` that is
//! not ASCII by converting it. Made before the workers start, those
//! conversions ran on one thread whatever the thread count (a 2-thread batch
//! of new texts ran 1.6x as fast as one thread); made by the worker that takes
//! the text, one worker converts while the other encodes (1.7-1.8x).

use crate::error::Error;

pub trait BatchText: Sync {
    /// About its bytes of UTF-8: what the workers' shares are cut by.
    fn weight(&self) -> usize;

    /// Its UTF-8: borrowed, or made into `buffer` (the worker's, reused from
    /// one text to the next).
    fn utf8<'a>(&'a self, buffer: &'a mut String) -> Result<&'a str, Error>;
}

impl<T: AsRef<str> + Sync> BatchText for T {
    fn weight(&self) -> usize {
        self.as_ref().len()
    }

    fn utf8<'a>(&'a self, _: &'a mut String) -> Result<&'a str, Error> {
        Ok(self.as_ref())
    }
}
