//! Opening input files as read-only memory maps, so that a large file (a 1.3 GB
//! ROCm library) costs only the pages that parsers actually touch.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use crate::{Error, Result};

/// A read-only input file: memory-mapped when it is a regular file, read into
/// memory otherwise (a pipe such as `/dev/stdin` cannot be mapped).
pub struct MappedFile {
    path: PathBuf,
    contents: Contents,
}

enum Contents {
    Mapped(Mmap),
    Read(Vec<u8>),
}

impl MappedFile {
    /// Opens `path` read-only. Errors name the path and the I/O failure.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let cannot = |what: &str, e: &dyn std::fmt::Display| {
            Error::new(format!("cannot {what} {}: {e}", path.display()))
        };
        let mut file = File::open(&path).map_err(|e| cannot("open", &e))?;
        let kind = file.metadata().map_err(|e| cannot("read", &e))?.file_type();
        if kind.is_dir() {
            return Err(cannot("read", &"it is a directory"));
        }
        if !kind.is_file() {
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes)
                .map_err(|e| cannot("read", &e))?;
            return Ok(MappedFile {
                path,
                contents: Contents::Read(bytes),
            });
        }
        // SAFETY: the map is read-only and lives no longer than `self`. Inputs are
        // treated as immutable; if another process truncated the file while it is
        // mapped, reads past the new end would fault (SIGBUS). That is the accepted
        // cost of mapping instead of reading gigabytes into memory.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| cannot("map", &e))?;
        // Parsers jump between headers, symbol tables and notes scattered over the
        // file; the kernel's default read-ahead would page in far more than they touch.
        // Only a hint: if it fails, reading is merely slower, never wrong.
        #[cfg(unix)]
        let _ = map.advise(memmap2::Advice::Random);
        Ok(MappedFile {
            path,
            contents: Contents::Mapped(map),
        })
    }

    /// The whole file's bytes.
    pub fn bytes(&self) -> &[u8] {
        match &self.contents {
            Contents::Mapped(map) => map,
            Contents::Read(bytes) => bytes,
        }
    }

    /// Says that `len` bytes from `offset` will not be needed again soon: the
    /// pages holding them leave this process's resident memory (they stay in
    /// the page cache, and reading them again maps them back). Walking a whole
    /// library entry by entry and releasing each entry after use keeps resident
    /// memory at the size of one entry instead of the library's. Out-of-range
    /// requests are ignored; so are failures (it is only a hint).
    pub fn release(&self, offset: u64, len: u64) {
        #[cfg(unix)]
        if let Contents::Mapped(map) = &self.contents {
            let (Ok(offset), Ok(len)) = (usize::try_from(offset), usize::try_from(len)) else {
                return;
            };
            if len == 0 || offset.checked_add(len).is_none_or(|end| end > map.len()) {
                return;
            }
            // SAFETY: MADV_DONTNEED on a read-only shared file mapping only drops
            // page-table entries: the next read of those bytes faults the same
            // contents back in from the page cache, so every slice borrowed from
            // the map stays valid and keeps its contents.
            let _ = unsafe {
                map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, offset, len)
            };
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file name without directories, for human-readable locations.
    pub fn name(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| self.path.display().to_string())
    }
}

impl std::ops::Deref for MappedFile {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.bytes()
    }
}
