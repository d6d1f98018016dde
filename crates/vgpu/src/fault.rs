//! Faults: why a dispatch ended early, and where.
//!
//! Execution code returns a [`Exception`] (what went wrong, optionally the
//! address); the dispatcher adds the context (kernel, workgroup, wave, PC,
//! instruction text) and hands the caller a [`FaultReport`].

use std::fmt;
use std::time::Duration;

use crate::memory::{Allocation, Fault};

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
    /// The instruction is valid but the emulator does not implement it.
    Unimplemented,
    /// The word is not an instruction of the target (llvm-objdump lists it as `.long`).
    IllegalInstruction,
    /// `s_trap` with its immediate.
    Trap(u16),
    /// A wave ran more instructions than the watchdog allows.
    Watchdog { budget: u64 },
    /// The dispatch ran longer than its time limit.
    TimeLimit { limit: Duration },
    /// The dispatch was stopped from outside (its queue was torn down).
    Stopped,
    /// A branch or `s_setpc` to an address that is not an instruction.
    BadJump { target: u64 },
    /// The kernel object is not the descriptor of a loaded kernel.
    UnknownKernel { kernel_object: u64 },
    /// The dispatch could not start: bad sizes, resources.
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
            FaultKind::IllegalInstruction => write!(f, "illegal instruction (no gfx90a encoding)"),
            FaultKind::Trap(n) => write!(f, "s_trap {n}"),
            FaultKind::Watchdog { budget } => {
                write!(f, "watchdog: wave exceeded {budget} instructions")
            }
            FaultKind::TimeLimit { limit } => {
                write!(f, "time limit of {} s reached", limit.as_secs_f64())
            }
            FaultKind::Stopped => write!(f, "stopped: its queue was torn down"),
            FaultKind::BadJump { target } => write!(f, "jump to {target:#x}: not an instruction"),
            FaultKind::UnknownKernel { kernel_object } => write!(
                f,
                "dispatch refused: no loaded kernel has its descriptor at {kernel_object:#x}"
            ),
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
    /// The lane whose access faulted, for per-lane (vector) accesses.
    pub lane: Option<u32>,
}

impl Exception {
    pub fn new(kind: FaultKind) -> Self {
        Exception {
            kind,
            addr: None,
            lane: None,
        }
    }
    pub fn at(kind: FaultKind, addr: u64) -> Self {
        Exception {
            kind,
            addr: Some(addr),
            lane: None,
        }
    }
    /// Names the lane that faulted (the innermost site that knows it wins).
    #[cold]
    pub fn in_lane(mut self, lane: usize) -> Self {
        self.lane.get_or_insert(lane as u32);
        self
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
            lane: None,
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
    /// The lane whose access faulted (vector memory instructions).
    pub lane: Option<u32>,
    /// Address of the faulting instruction in device memory.
    pub pc: u64,
    /// Its offset in the code object (as llvm-objdump prints it).
    pub pc_offset: u64,
    /// Its text in LLVM syntax.
    pub instruction: String,
    pub address: Option<u64>,
    /// For a memory fault: the live allocation nearest the address (the
    /// buffer the kernel most likely meant).
    pub nearest: Option<Allocation>,
    pub kind: FaultKind,
}

impl fmt::Display for FaultReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "kernel {} workgroup ({}, {}, {}) wave {}",
            self.kernel, self.workgroup[0], self.workgroup[1], self.workgroup[2], self.wave,
        )?;
        if let Some(l) = self.lane {
            write!(f, " lane {l}")?;
        }
        write!(
            f,
            " pc {:#x} (offset {:#x}) `{}`: {}",
            self.pc, self.pc_offset, self.instruction, self.kind
        )?;
        if let Some(a) = self.address {
            write!(f, " (address {a:#x})")?;
        }
        if let (Some(a), Some(n)) = (self.address, &self.nearest) {
            write!(f, "; nearest allocation {}", Nearby(a, n))?;
        }
        Ok(())
    }
}

impl FaultReport {
    /// The report as indented lines for a person reading standard error:
    /// what happened, where (kernel, workgroup, wave, lane, PC), the
    /// instruction, and for memory faults the address and nearest allocation.
    pub fn detail(&self) -> String {
        let mut s = format!("kernel `{}`: {}\n", self.kernel, self.kind);
        if matches!(
            self.kind,
            FaultKind::Launch(_) | FaultKind::UnknownKernel { .. }
        ) {
            return s;
        }
        let w = self.workgroup;
        s += &format!(
            "  workgroup ({}, {}, {}) wave {}",
            w[0], w[1], w[2], self.wave
        );
        if let Some(l) = self.lane {
            s += &format!(" lane {l}");
        }
        s += &format!(
            "\n  pc {:#x} (offset {:#x} in its code object): {}\n",
            self.pc, self.pc_offset, self.instruction
        );
        if let Some(a) = self.address {
            s += &format!("  address {a:#x}");
            match &self.nearest {
                Some(n) => s += &format!(", nearest allocation {}\n", Nearby(a, n)),
                None => s += ", no allocation near it\n",
            }
        }
        s
    }
}

/// An allocation described relative to an address: where it is and how far.
struct Nearby<'a>(u64, &'a Allocation);

impl fmt::Display for Nearby<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (addr, a) = (self.0, self.1);
        write!(
            f,
            "{:#x}..{:#x} ({} bytes of {})",
            a.base,
            a.end(),
            a.size,
            a.kind.describe()
        )?;
        if addr < a.base {
            write!(f, ", {:#x} bytes below its start", a.base - addr)
        } else if addr >= a.end() {
            write!(f, ", {:#x} bytes past its end", addr - a.end())
        } else {
            write!(f, ", {:#x} bytes into it", addr - a.base)
        }
    }
}

impl std::error::Error for FaultReport {}
