//! What a tool gets when a launch completes: its counters, its traces, the
//! globals of its hook module as that launch left them, what it kept when
//! it instrumented the kernel, and the virtual GPU's own counts.

use std::any::Any;
use std::collections::HashMap;
use std::sync::Arc;

use inlay_vgpu::{Memory, Stats};

use crate::insert::{Counter, TraceId};

/// A launch, as it ended, seen by one tool.
pub struct Outcome<'a> {
    /// Why the dispatch or its instrumentation failed, if it did.
    pub error: Option<String>,
    /// The virtual GPU's own counts of the dispatch that ran (the
    /// instrumented kernel when instrumented: hooks included).
    pub native: Option<&'a Stats>,
    pub(crate) part: Option<Part<'a>>,
}

/// This tool's part of the instrumented copy that ran.
pub(crate) struct Part<'a> {
    pub memory: &'a Memory,
    /// Device address of the counter buffer, and this tool's counters'
    /// slots in it.
    pub counters: u64,
    pub slots: &'a [usize],
    /// This tool's traces: (records address, capacity, cursor slot).
    pub traces: Vec<(u64, u32, usize)>,
    pub kept: Option<&'a Arc<dyn Any + Send + Sync>>,
    pub globals: Option<Globals<'a>>,
    /// Device address of the copy of each original instruction.
    pub copies: &'a [u64],
    /// Instructions the rewriter added to the kernel (all tools' hooks).
    pub added: usize,
}

/// The bytes a trace holds after a launch.
#[derive(Debug, Clone, Default)]
pub struct TraceData {
    /// Bytes the hooks claimed; past `capacity`, records were lost.
    pub claimed: u64,
    pub capacity: u64,
    /// The records kept (the first `min(claimed, capacity)` bytes).
    pub bytes: Vec<u8>,
}

impl<'a> Outcome<'a> {
    /// Whether the launch ran with this tool's hooks.
    pub fn instrumented(&self) -> bool {
        self.part.is_some()
    }

    fn read_u64(&self, slot: usize) -> Option<u64> {
        let p = self.part.as_ref()?;
        let mut b = [0u8; 8];
        p.memory
            .read_bytes(p.counters + 8 * slot as u64, &mut b)
            .ok()?;
        Some(u64::from_le_bytes(b))
    }

    /// The value of one of this tool's counters.
    pub fn counter(&self, c: Counter) -> Option<u64> {
        let slot = *self.part.as_ref()?.slots.get(c.0)?;
        self.read_u64(slot)
    }

    /// What a trace holds.
    pub fn trace(&self, t: TraceId) -> Option<TraceData> {
        let &(records, capacity, cursor) = self.part.as_ref()?.traces.get(t.0)?;
        let claimed = self.read_u64(cursor)?;
        let mut bytes = vec![0u8; claimed.min(u64::from(capacity)) as usize];
        let p = self.part.as_ref()?;
        p.memory.read_bytes(records, &mut bytes).ok()?;
        Some(TraceData {
            claimed,
            capacity: u64::from(capacity),
            bytes,
        })
    }

    /// Instructions the rewriter added to the copy that ran (static count,
    /// every tool's hooks).
    pub fn added_instructions(&self) -> Option<usize> {
        Some(self.part.as_ref()?.added)
    }

    /// What the tool kept when it instrumented the kernel.
    pub fn kept<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.part.as_ref()?.kept?.downcast_ref()
    }

    /// The globals of the tool's hook module as this launch left them.
    pub fn globals(&self) -> Option<&Globals<'a>> {
        self.part.as_ref()?.globals.as_ref()
    }

    /// How often the virtual GPU ran original instruction `i` in this
    /// dispatch (its copy in the instrumented code): (waves, lanes).
    pub fn native_at(&self, i: usize) -> Option<(u64, u64)> {
        let s = self.native?;
        let at = *self.part.as_ref()?.copies.get(i)?;
        Some((
            s.per_pc.get(&at).copied().unwrap_or(0),
            s.per_pc_lanes.get(&at).copied().unwrap_or(0),
        ))
    }
}

/// The global variables of one loaded instance of a tool's hook module.
#[derive(Clone)]
pub struct Globals<'a> {
    pub(crate) memory: &'a Memory,
    /// Name → (device address, size).
    pub(crate) vars: &'a HashMap<String, (u64, u64)>,
}

impl<'a> Globals<'a> {
    /// Device address and size of a global.
    pub fn address(&self, name: &str) -> Option<(u64, u64)> {
        self.vars.get(name).copied()
    }

    /// Names of the module's globals.
    pub fn names(&self) -> impl Iterator<Item = &'a str> {
        self.vars.keys().map(String::as_str)
    }

    fn range(&self, name: &str, offset: u64, len: usize) -> Result<u64, String> {
        let (addr, size) = self
            .address(name)
            .ok_or_else(|| format!("the hook module has no global {name}"))?;
        if offset.checked_add(len as u64).is_none_or(|end| end > size) {
            return Err(format!(
                "{len} bytes at offset {offset} are outside {name} ({size} bytes)"
            ));
        }
        Ok(addr + offset)
    }

    /// Reads `buf.len()` bytes of global `name` from byte `offset`.
    pub fn read(&self, name: &str, offset: u64, buf: &mut [u8]) -> Result<(), String> {
        let at = self.range(name, offset, buf.len())?;
        self.memory
            .read_bytes(at, buf)
            .map_err(|e| format!("reading {name}: {e}"))
    }

    /// Writes `bytes` into global `name` from byte `offset`.
    pub fn write(&self, name: &str, offset: u64, bytes: &[u8]) -> Result<(), String> {
        let at = self.range(name, offset, bytes.len())?;
        self.memory
            .write_bytes(at, bytes)
            .map_err(|e| format!("writing {name}: {e}"))
    }

    pub fn read_u64(&self, name: &str) -> Result<u64, String> {
        let mut b = [0u8; 8];
        self.read(name, 0, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    pub fn write_u64(&self, name: &str, v: u64) -> Result<(), String> {
        self.write(name, 0, &v.to_le_bytes())
    }
}
