//! The virtual gfx90a GPU.
//!
//! For now only its memory: device memory shares one 64-bit address space with
//! the host, and every allocation is recorded so that each access a kernel makes
//! can be checked (see [`memory`]). The emulator proper comes later.

pub mod memory;

pub use memory::{Allocation, Fault, MemKind, Memory};
