//! The virtual gfx90a GPU.
//!
//! Device memory shares one 64-bit address space with the host, and every
//! allocation is recorded so that each access a kernel makes can be checked
//! (see [`memory`]). On top of it: a code object is loaded and predecoded
//! once ([`program`]), dispatched as a grid of workgroups ([`device`]) whose
//! waves of 64 lanes ([`wave`], [`valu`], [`vmem`]) run on host threads;
//! a faulting kernel ends its dispatch with a [`fault::FaultReport`].
//!
//! ```
//! use inlay_vgpu::{kernarg::Args, Device};
//! let dev = Device::new();
//! let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/gfx90a/v5/vector_add.hsaco");
//! let program = dev.load(&std::fs::read(path).unwrap()).unwrap();
//! let a = dev.upload_u32(&[1.0f32.to_bits(); 100]).unwrap();
//! let c = dev.upload_u32(&[0; 100]).unwrap();
//! let args = Args::new().ptr(a).ptr(a).ptr(c).u32(100);
//! // 100 work-items in workgroups of 64: the second workgroup is partial.
//! let stats = dev.dispatch(&program, "vector_add", [100, 1, 1], [64, 1, 1], args.as_bytes()).unwrap();
//! assert_eq!(dev.download_u32(c, 100).unwrap(), vec![2.0f32.to_bits(); 100]);
//! assert_eq!(stats.waves, 2);
//! ```

pub mod memory;

pub mod access;
pub mod device;
pub mod fault;
pub mod fpmode;
pub mod gws;
pub mod inst;
pub mod kernarg;
mod lanesel;
pub mod program;
pub mod valu;
pub mod vmem;
pub mod wave;
pub mod workgroup;

pub use device::{Device, Interrupt, Packet, Stats};
pub use fault::{FaultKind, FaultReport};
pub use memory::{Allocation, Fault, MemKind, Memory};
pub use program::{CodeRegion, LoadError, Program};
pub use workgroup::{Probe, ProbeHit, Watch};
