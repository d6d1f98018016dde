//! Errors of every parser in this crate: what went wrong and at which byte offset.

use std::fmt;

/// A parse or write error. `offset` is the byte offset in the input being parsed
/// (for nested containers, the offset inside the innermost buffer named by `context`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct Error {
    /// Byte offset in the input where the problem was found, if one applies.
    pub offset: Option<u64>,
    /// What was wrong, e.g. "section header table extends past end of file (needs 4096 bytes, file has 1000)".
    pub what: String,
    /// Where we were, outermost first, e.g. ["bundle entry 3 (hipv4-amdgcn-amd-amdhsa--gfx90a)", "ELF"].
    pub context: Vec<String>,
}

impl Error {
    pub fn at(offset: u64, what: impl Into<String>) -> Self {
        Error {
            offset: Some(offset),
            what: what.into(),
            context: Vec::new(),
        }
    }

    pub fn new(what: impl Into<String>) -> Self {
        Error {
            offset: None,
            what: what.into(),
            context: Vec::new(),
        }
    }

    /// Adds an outer context (the caller's view) to this error.
    pub fn within(mut self, context: impl Into<String>) -> Self {
        self.context.insert(0, context.into());
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in &self.context {
            write!(f, "{c}: ")?;
        }
        if let Some(offset) = self.offset {
            write!(f, "at offset {offset:#x}: ")?;
        }
        f.write_str(&self.what)
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
