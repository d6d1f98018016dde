//! Read and write AMDGPU code objects (ELF64, code object v4–v6) and the containers that carry them.
//!
//! Layers, in the style of the `object` crate: raw `#[repr(C)]`-like layouts
//! (`descriptor`), a reader that borrows the input bytes (`CodeObject<'data>`),
//! containers that find code objects inside other files (`container`), and a
//! writer that builds new code objects (`write`).
//!
//! The `Serialize` types declare their fields in key order (names as
//! serialized): `inlay inspect --json` writes every object's keys sorted, and
//! members that come in order are written where they are instead of being
//! moved, with everything they hold, into order. Layouts and bit positions are
//! in the `parse`/`decode`/`to_bytes` functions, not in the declarations.

pub mod code_object;
pub mod descriptor;
pub mod elf;
pub mod error;
pub mod metadata;
pub mod reloc;
pub mod symbols;
pub mod target;
pub mod write;

pub use code_object::{CodeObject, Kernel};
pub use descriptor::KernelDescriptor;
pub use error::{Error, Result};
pub use metadata::Metadata;
pub use target::TargetId;
pub mod container;
pub mod file;
