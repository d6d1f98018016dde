//! Loader errors: what went wrong, in which code object, and a kind a C ABI
//! maps to its status code.

use std::fmt;

/// The class of a loader error; each matches one HSA status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// Malformed or unloadable code object (HSA_STATUS_ERROR_INVALID_CODE_OBJECT).
    InvalidCodeObject,
    /// Code object built for another target (HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS).
    IncompatibleTarget,
    /// The executable is frozen (HSA_STATUS_ERROR_FROZEN_EXECUTABLE).
    Frozen,
    /// A name is defined twice (HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED).
    AlreadyDefined,
    /// An external symbol has no definition (HSA_STATUS_ERROR_VARIABLE_UNDEFINED).
    Undefined,
    /// Device memory could not be allocated (HSA_STATUS_ERROR_OUT_OF_RESOURCES).
    OutOfResources,
}

/// A loader error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    pub kind: ErrorKind,
    /// The code object concerned (its URI or "code object #n"), if any.
    pub code_object: Option<String>,
    pub what: String,
}

impl LoadError {
    pub fn new(kind: ErrorKind, code_object: Option<&str>, what: impl Into<String>) -> Self {
        LoadError {
            kind,
            code_object: code_object.map(str::to_string),
            what: what.into(),
        }
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(co) = &self.code_object {
            write!(f, "{co}: ")?;
        }
        f.write_str(&self.what)
    }
}

impl std::error::Error for LoadError {}
