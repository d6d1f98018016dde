//! What every command shares about input and problems: problems go to
//! standard error as they are found and decide the exit code; inputs are
//! walked entry by entry, each entry's pages released after use, so no
//! command holds a whole library in memory.

use std::io::{self, Write};

use inlay_codeobj::container::Entry;
use inlay_codeobj::file::MappedFile;

/// Problems a command found in its input. Each is printed on standard error
/// (`inlay: WHAT`) when reported; any problem makes the command exit with 1,
/// even if the rest of the input was reported.
#[derive(Default)]
pub struct Problems {
    count: usize,
}

impl Problems {
    pub fn report(&mut self, what: impl std::fmt::Display) {
        // Standard error may be closed; the exit code still says what happened.
        let _ = writeln!(io::stderr().lock(), "inlay: {what}");
        self.count += 1;
    }

    pub fn any(&self) -> bool {
        self.count > 0
    }
}

/// An input file's bytes and name, and where its pages go after use.
pub struct Input<'a> {
    pub bytes: &'a [u8],
    pub name: String,
    /// The mapping to release walked entries from; `None` for built-in bytes.
    file: Option<&'a MappedFile>,
}

impl<'a> Input<'a> {
    pub fn file(file: &'a MappedFile, name: String) -> Self {
        Input {
            bytes: file.bytes(),
            name,
            file: Some(file),
        }
    }

    pub fn bytes(bytes: &'a [u8], name: &str) -> Self {
        Input {
            bytes,
            name: name.to_string(),
            file: None,
        }
    }

    /// Done with `entry` for now: its pages leave resident memory (see
    /// [`MappedFile::release`]), so walking a 1.3 GB library stays small.
    pub fn release(&self, entry: &Entry) {
        if let (Some(file), Some(offset)) = (self.file, entry.offset) {
            file.release(offset, entry.bytes.len() as u64);
        }
    }
}
