//! Appending hundreds of megabytes of ids to an open file, without copying
//! them through the page cache where the system allows.
//!
//! A plain `write` copies the ids into the page cache, and that copy was a
//! quarter of a `bpeforge encode` run on a VM. So on Linux the ids go to the
//! file with `O_DIRECT`: staged in a page-aligned buffer (`O_DIRECT` wants
//! aligned memory, sizes and offsets) and written a few MiB at a time; the last
//! partial page is written through the page cache at the end. Anything else
//! (another system, an offset not on a page boundary, a file system that
//! refuses `O_DIRECT`, as tmpfs may) takes plain writes: the bytes in the file
//! are the same either way.

use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};

/// `O_DIRECT`'s alignment: the page size, a multiple of every block size.
const PAGE: usize = 4096;
/// Pages staged before a direct write: 4 MiB, the uint32 ids of about 15
/// chunks of 256 KiB of English (`encode/files.rs` keeps enough chunks in
/// flight to go on encoding while this is written).
const STAGED_PAGES: usize = 1024;

#[derive(Clone, Copy)]
#[repr(C, align(4096))]
struct Page([u8; PAGE]);

/// Appends to a file from a given offset; `finish` writes what is staged.
pub struct Appender {
    file: File,
    /// `Some` while writing with `O_DIRECT`: the staged pages, and how many of
    /// their bytes are filled.
    direct: Option<(Vec<Page>, usize)>,
    /// Where the next byte goes.
    offset: u64,
    appended: u64,
}

impl Appender {
    /// An appender to the file open as `fd` (which stays open and owned by the
    /// caller), writing from byte `offset` on.
    ///
    /// # Safety
    /// `fd` must be an open file descriptor, writable, for as long as the
    /// appender lives.
    pub unsafe fn for_fd(fd: i32, offset: u64) -> io::Result<Self> {
        let (mut file, staged) = match offset.is_multiple_of(PAGE as u64).then(|| open_direct(fd)).flatten() {
            Some(direct) => (direct, Some((vec![Page([0; PAGE]); STAGED_PAGES], 0))),
            // SAFETY: the caller keeps `fd` open while this runs; the clone is ours.
            None => (File::from(unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) }.try_clone_to_owned()?), None),
        };
        file.seek(SeekFrom::Start(offset))?;
        Ok(Self { file, direct: staged, offset, appended: 0 })
    }

    /// Whether the bytes go past the page cache.
    pub fn is_direct(&self) -> bool {
        self.direct.is_some()
    }

    pub fn append(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        self.appended += bytes.len() as u64;
        if self.direct.is_none() {
            self.offset += bytes.len() as u64;
            return self.file.write_all(bytes);
        }
        while !bytes.is_empty() {
            bytes = self.stage(bytes);
            if self.direct.as_ref().is_some_and(|(_, filled)| *filled == STAGED_PAGES * PAGE) {
                self.write_staged_pages()?;
            }
        }
        Ok(())
    }

    /// Copy what fits of `bytes` into the current staged page; the rest.
    fn stage<'b>(&mut self, bytes: &'b [u8]) -> &'b [u8] {
        let Some((pages, filled)) = &mut self.direct else { return bytes };
        let (page, at) = (*filled / PAGE, *filled % PAGE);
        let take = (PAGE - at).min(bytes.len());
        pages[page].0[at..at + take].copy_from_slice(&bytes[..take]);
        *filled += take;
        &bytes[take..]
    }

    /// Write the whole pages staged, with `O_DIRECT`, and keep the rest.
    fn write_staged_pages(&mut self) -> io::Result<()> {
        let Some((pages, filled)) = &mut self.direct else { return Ok(()) };
        let whole = *filled / PAGE;
        match self.file.write_all(as_bytes(&pages[..whole])) {
            Ok(()) => {}
            // A file system that takes `O_DIRECT` at open and refuses it at write (EINVAL).
            Err(error) if error.kind() == io::ErrorKind::InvalidInput => return self.continue_plain(),
            Err(error) => return Err(error),
        }
        self.offset += (whole * PAGE) as u64;
        let rest = *filled % PAGE;
        pages.copy_within(whole..whole + (rest > 0) as usize, 0);
        *filled = rest;
        Ok(())
    }

    /// Plain writes from now on: what is staged is written plainly, from
    /// where it begins (over anything a failed direct write left).
    fn continue_plain(&mut self) -> io::Result<()> {
        let Some((pages, filled)) = self.direct.take() else { return Ok(()) };
        clear_direct(&self.file)?;
        self.file.seek(SeekFrom::Start(self.offset))?;
        self.file.write_all(&as_bytes(&pages)[..filled])?;
        self.offset += filled as u64;
        Ok(())
    }

    /// Write everything staged; returns the bytes appended in all. The last
    /// partial page goes plainly (`O_DIRECT` would write the whole page).
    pub fn finish(mut self) -> io::Result<u64> {
        self.write_staged_pages()?;
        self.continue_plain()?;
        Ok(self.appended)
    }
}

/// The pages' bytes, in order.
fn as_bytes(pages: &[Page]) -> &[u8] {
    // SAFETY: `Page` is `repr(C)` around a byte array, so a slice of pages is
    // `len * PAGE` initialized bytes with no padding, valid as long as `pages`.
    unsafe { std::slice::from_raw_parts(pages.as_ptr().cast::<u8>(), std::mem::size_of_val(pages)) }
}

/// The file of `fd` opened again (a description of its own, so that its
/// offset and flags are not the caller's), writable, with `O_DIRECT`; `None`
/// where that is not possible.
#[cfg(target_os = "linux")]
fn open_direct(fd: i32) -> Option<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().write(true).custom_flags(libc::O_DIRECT).open(format!("/proc/self/fd/{fd}")).ok()
}

#[cfg(not(target_os = "linux"))]
fn open_direct(_fd: i32) -> Option<File> {
    None
}

/// Take `O_DIRECT` off `file` (a description of our own: `open_direct`).
#[cfg(target_os = "linux")]
fn clear_direct(file: &File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    // SAFETY: F_GETFL/F_SETFL on an open descriptor we own change only its
    // status flags.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_DIRECT) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn clear_direct(_file: &File) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::fd::AsRawFd;

    /// The bytes `appends` leave in a file that already holds `before`; with
    /// `plain_after`, the appender turns to plain writes after that many
    /// appends, as it does when a file system refuses a direct write.
    fn appended_file(
        before: &[u8],
        appends: &[Vec<u8>],
        dir: &std::path::Path,
        plain_after: Option<usize>,
    ) -> (Vec<u8>, bool) {
        let path = dir.join(format!("out-{}-{}", before.len(), appends.len()));
        std::fs::write(&path, before).unwrap();
        let file = std::fs::OpenOptions::new().read(true).write(true).open(&path).unwrap();
        // SAFETY: `file` stays open until the appender is done.
        let mut appender = unsafe { Appender::for_fd(file.as_raw_fd(), before.len() as u64) }.unwrap();
        let direct = appender.is_direct();
        for (i, part) in appends.iter().enumerate() {
            if plain_after == Some(i) {
                appender.continue_plain().unwrap();
            }
            appender.append(part).unwrap();
        }
        let total: usize = appends.iter().map(Vec::len).sum();
        assert_eq!(appender.finish().unwrap(), total as u64);
        let mut got = Vec::new();
        File::open(&path).unwrap().read_to_end(&mut got).unwrap();
        (got, direct)
    }

    #[test]
    fn the_file_holds_exactly_what_was_appended() {
        let dir = std::env::temp_dir().join(format!("bpeforge-append-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let part = |n: usize, seed: usize| (0..n).map(|i| (i * 31 + seed) as u8).collect::<Vec<u8>>();
        let cases: Vec<(Vec<u8>, Vec<Vec<u8>>)> = vec![
            (part(PAGE, 1), vec![]),
            (part(PAGE, 2), vec![part(10, 3)]),
            (part(PAGE, 4), vec![part(PAGE * STAGED_PAGES + 17, 5), part(3 * PAGE, 6), part(1, 7)]),
            (part(PAGE * 2, 8), (0..300).map(|i| part(i * 97 % 40_000, i)).collect()),
            // Not on a page boundary: plain writes.
            (part(100, 9), vec![part(PAGE * 3 + 5, 10), part(7, 11)]),
        ];
        let mut directs = Vec::new();
        for (before, appends) in &cases {
            let expected: Vec<u8> = before.iter().chain(appends.iter().flatten()).copied().collect();
            for plain_after in [None, Some(1), Some(appends.len() / 2)] {
                let (got, direct) = appended_file(before, appends, &dir, plain_after);
                assert!(got == expected, "{} bytes before, {} appends, {plain_after:?}", before.len(), appends.len());
                directs.push(direct);
            }
        }
        assert!(!directs[12], "an offset off a page boundary is written plainly");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
