//! Opening input files as read-only memory maps, so that a large file (a 1.3 GB
//! ROCm library) costs only the pages that parsers actually touch.

use std::fs::File;
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use crate::{Error, Result};

/// A read-only memory-mapped input file.
pub struct MappedFile {
    path: PathBuf,
    map: Mmap,
}

impl MappedFile {
    /// Maps `path` read-only. Errors name the path and the I/O failure.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let file = File::open(&path)
            .map_err(|e| Error::new(format!("cannot open {}: {e}", path.display())))?;
        // SAFETY: the map is read-only and lives no longer than `self`. Inputs are
        // treated as immutable; if another process truncated the file while it is
        // mapped, reads past the new end would fault (SIGBUS). That is the accepted
        // cost of mapping instead of reading gigabytes into memory.
        let map = unsafe { Mmap::map(&file) }
            .map_err(|e| Error::new(format!("cannot map {}: {e}", path.display())))?;
        // Parsers jump between headers, symbol tables and notes scattered over the
        // file; the kernel's default read-ahead would page in far more than they touch.
        // Only a hint: if it fails, reading is merely slower, never wrong.
        #[cfg(unix)]
        let _ = map.advise(memmap2::Advice::Random);
        Ok(MappedFile { path, map })
    }

    /// The whole file's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.map
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
        &self.map
    }
}
