//! Read and write AMDGPU code objects (ELF64, code object v4–v6) and the containers that carry them.
//!
//! Layers, in the style of the `object` crate: raw `#[repr(C)]`-like layouts
//! (`descriptor`), a reader that borrows the input bytes (`CodeObject<'data>`),
//! containers that find code objects inside other files (`container`), and a
//! writer that builds new code objects (`write`).

pub mod error;

pub use error::{Error, Result};
pub mod container;
pub mod file;
