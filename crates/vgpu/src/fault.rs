//! Faults: why a dispatch ended early, and where.
//!
//! Execution code returns a [`Exception`] (what went wrong, optionally the
//! address); the dispatcher adds the context (kernel, workgroup, wave, PC,
//! instruction text) and hands the caller a [`FaultReport`].

use std::fmt;

use crate::memory::Fault;

/// What went wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// A global/flat/SMEM access the allocation table refused.
    Memory(Fault),
    /// An LDS access outside the workgroup's LDS allocation.
    Lds { offset: u64, len: u64, size: u64 },
    /// A private (scratch) access outside the lane's private segment.
    Scratch { offset: u64, len: u64, size: u64 },
    /// An access that must be naturally aligned (atomics) was not.
    Misaligned { addr: u64, align: u64 },
    /// The instruction is not implemented by the emulator (or not valid).
    Unimplemented,
    /// `s_trap` with its immediate.
    Trap(u16),
    /// A wave ran more instructions than the watchdog allows.
    Watchdog { budget: u64 },
    /// A branch or `s_setpc` to an address that is not an instruction.
    BadJump { target: u64 },
    /// The dispatch could not start: unknown kernel, bad sizes, resources.
    Launch(String),
    /// Every wave left waits on a GWS barrier or semaphore, or a workgroup
    /// barrier, that nothing can release any more.
    Deadlock(String),
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FaultKind::Memory(m) => write!(f, "memory fault: {m}"),
            FaultKind::Lds { offset, len, size } => {
                write!(
                    f,
                    "LDS access of {len} bytes at {offset:#x} outside {size:#x} bytes"
                )
            }
            FaultKind::Scratch { offset, len, size } => write!(
                f,
                "scratch access of {len} bytes at {offset:#x} outside {size:#x} bytes per lane"
            ),
            FaultKind::Misaligned { addr, align } => {
                write!(f, "access at {addr:#x} is not {align}-byte aligned")
            }
            FaultKind::Unimplemented => write!(f, "instruction not implemented"),
            FaultKind::Trap(n) => write!(f, "s_trap {n}"),
            FaultKind::Watchdog { budget } => {
                write!(f, "watchdog: wave exceeded {budget} instructions")
            }
            FaultKind::BadJump { target } => write!(f, "jump to {target:#x}: not an instruction"),
            FaultKind::Launch(why) => write!(f, "dispatch refused: {why}"),
            FaultKind::Deadlock(why) => write!(f, "deadlock: {why}"),
        }
    }
}

/// A fault raised while executing one instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exception {
    pub kind: FaultKind,
    /// The address accessed, for memory faults.
    pub addr: Option<u64>,
}

impl Exception {
    pub fn new(kind: FaultKind) -> Self {
        Exception { kind, addr: None }
    }
    pub fn at(kind: FaultKind, addr: u64) -> Self {
        Exception {
            kind,
            addr: Some(addr),
        }
    }
}

impl From<Fault> for Exception {
    fn from(f: Fault) -> Self {
        let addr = match f {
            Fault::Unmapped { addr, .. }
            | Fault::OutOfBounds { addr, .. }
            | Fault::UseAfterFree { addr, .. }
            | Fault::InvalidFree { addr } => Some(addr),
            _ => None,
        };
        Exception {
            kind: FaultKind::Memory(f),
            addr,
        }
    }
}

/// The report a faulting dispatch ends with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultReport {
    pub kernel: String,
    pub workgroup: [u32; 3],
    /// Wave index within the workgroup.
    pub wave: u32,
    /// Address of the faulting instruction in device memory.
    pub pc: u64,
    /// Its offset in the code object (as llvm-objdump prints it).
    pub pc_offset: u64,
    /// Its text in LLVM syntax.
    pub instruction: String,
    pub address: Option<u64>,
    pub kind: FaultKind,
}

impl fmt::Display for FaultReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "kernel {} workgroup ({}, {}, {}) wave {} pc {:#x} (offset {:#x}) `{}`: {}",
            self.kernel,
            self.workgroup[0],
            self.workgroup[1],
            self.workgroup[2],
            self.wave,
            self.pc,
            self.pc_offset,
            self.instruction,
            self.kind
        )?;
        if let Some(a) = self.address {
            write!(f, " (address {a:#x})")?;
        }
        Ok(())
    }
}

impl std::error::Error for FaultReport {}
