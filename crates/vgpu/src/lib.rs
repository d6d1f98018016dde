//! The virtual gfx90a GPU.
//!
//! Device memory shares one 64-bit address space with the host, and every
//! allocation is recorded so that each access a kernel makes can be checked
//! (see [`memory`]). On top of it: a code object is loaded and predecoded
//! once ([`program`]), dispatched as a grid of workgroups ([`device`]) whose
//! waves of 64 lanes ([`wave`], [`valu`], [`vmem`]) run on host threads;
//! a faulting kernel ends its dispatch with a [`fault::FaultReport`].

pub mod memory;

pub mod access;
pub mod device;
pub mod fault;
pub mod inst;
pub mod kernarg;
pub mod program;
pub mod valu;
pub mod vmem;
pub mod wave;
pub mod workgroup;

pub use device::{Device, Stats};
pub use fault::{FaultKind, FaultReport};
pub use memory::{Allocation, Fault, MemKind, Memory};
pub use program::{LoadError, Program};
