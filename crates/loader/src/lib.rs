//! The loader: puts AMDGPU code objects into device memory the way ROCr does,
//! but links across code objects and treats device functions as symbols.
//!
//! An [`Executable`] holds any number of code objects per agent. Loading one
//! checks its target ID against the agent's, copies its `PT_LOAD` segments
//! into one allocation (layout kept) and records its symbols. Relocations are
//! applied at [`Executable::freeze`], when every code object is present, so
//! code objects may reference each other in any load order.
//!
//! Modules: `memory` (where segments go), `image` (what a code object brings,
//! read once from the ELF), `reloc` (relocation arithmetic), `executable`.
//!
//! ```no_run
//! use std::sync::Arc;
//! use inlay_loader::{AgentRef, Executable};
//! let memory = Arc::new(inlay_vgpu::memory::Memory::new());
//! let agent = AgentRef { key: 1, target: "gfx90a".parse().unwrap() };
//! let mut exe = Executable::new(memory);
//! let bytes = std::fs::read("fixtures/gfx90a/v5/vector_add.hsaco").unwrap();
//! exe.load(&agent, &bytes, None).unwrap();
//! exe.freeze().unwrap();
//! let kernel = exe.symbol("vector_add", Some(agent.key)).unwrap();
//! ```

mod error;
mod executable;
mod image;
pub mod memory;
mod names;
pub mod reloc;

pub use error::{ErrorKind, LoadError};
pub use executable::{
    AgentRef, CodeObjectId, Executable, FunctionInfo, KernelInfo, LoadedCodeObject, Symbol,
    SymbolId, SymbolKind, VariableAllocation, VariableInfo,
};
pub use memory::DeviceMemory;
