//! A copy's counters and traces: where each tool's live in the buffers the
//! host allocates for the copy, and the engine's built-in hooks that feed
//! them.
//!
//! One buffer of u64 slots holds every counter and every trace's cursor;
//! each trace has its own buffer of records. A counter that only one
//! counting hook feeds is shared with any other tool's counter fed the same
//! way at the same instruction (`instr-count` and `opcode-hist` together
//! count each instruction once).

use std::collections::{HashMap, HashSet};

use inlay_instrument::rewrite::{Hook, Trace, LANE_RECORD};
use inlay_instrument::InstId;
use inlay_vgpu::{MemKind, Memory};

use crate::insert::{Builtin, Insertions};

/// Where the tools' counters and traces go in one copy.
pub(crate) struct Layout {
    /// u64 slots of the counter buffer: counters and trace cursors.
    pub slots: usize,
    /// Each trace: (capacity in bytes, cursor slot).
    pub traces: Vec<(u32, usize)>,
    /// Per tool, in the order given: the slot of each of its counters, and
    /// the index (into `traces`) of each of its traces.
    pub tools: Vec<(Vec<usize>, Vec<usize>)>,
}

pub(crate) fn layout(requests: &[&Insertions]) -> Layout {
    let mut slots = 0usize;
    let mut all_traces = Vec::new();
    let mut tools = Vec::new();
    let mut shared: HashMap<(InstId, bool), usize> = HashMap::new();
    for r in requests {
        // What feeds each counter: shareable if one counting hook alone.
        let mut feeds: Vec<Vec<Builtin>> = vec![Vec::new(); r.counters];
        let mut at: Vec<InstId> = vec![0; r.counters];
        for &(i, b) in &r.builtins {
            if let Builtin::Count { counter, .. } | Builtin::Add { counter, .. } = b {
                feeds[counter.0].push(b);
                at[counter.0] = i;
            }
        }
        let mut counters = Vec::with_capacity(r.counters);
        for (f, &i) in feeds.iter().zip(&at) {
            let mut new_slot = || {
                slots += 1;
                slots - 1
            };
            counters.push(match f.as_slice() {
                [Builtin::Count { lanes, .. }] => {
                    *shared.entry((i, *lanes)).or_insert_with(new_slot)
                }
                _ => new_slot(),
            });
        }
        let mut traces = Vec::with_capacity(r.traces.len());
        for &capacity in &r.traces {
            slots += 1;
            all_traces.push((capacity.max(LANE_RECORD), slots - 1));
            traces.push(all_traces.len() - 1);
        }
        tools.push((counters, traces));
    }
    Layout {
        slots,
        traces: all_traces,
        tools,
    }
}

/// The built-in hooks of every tool, aimed at their counters and traces
/// in `buffers` (a shared counter fed once).
pub(crate) fn hooks(
    requests: &[&Insertions],
    l: &Layout,
    buffers: &Buffers<'_>,
) -> Vec<(InstId, Hook)> {
    let mut hooks = Vec::new();
    let mut fed = HashSet::new();
    for (r, (counters, traces)) in requests.iter().zip(&l.tools) {
        let offset = |c: crate::Counter| 8 * counters[c.0] as u32;
        let trace = |t: crate::TraceId| {
            let (records, capacity, cursor) = buffers.traces[traces[t.0]];
            Trace {
                cursor: 8 * cursor as u32,
                records,
                capacity,
            }
        };
        for &(i, b) in &r.builtins {
            let hook = match b {
                Builtin::Count { counter, lanes } => {
                    if !fed.insert((i, lanes, offset(counter))) {
                        continue;
                    }
                    let offset = offset(counter);
                    match lanes {
                        true => Hook::CountLanes { offset },
                        false => Hook::Count { offset },
                    }
                }
                Builtin::Add { counter, value } => Hook::Add {
                    offset: offset(counter),
                    value,
                },
                Builtin::Record {
                    trace: t,
                    id,
                    value,
                } => Hook::Record {
                    trace: trace(t),
                    id,
                    value,
                },
                Builtin::RecordLanes {
                    trace: t,
                    id,
                    value,
                } => Hook::RecordLanes {
                    trace: trace(t),
                    id,
                    value,
                },
            };
            hooks.push((i, hook));
        }
    }
    hooks
}

/// Device memory for a copy's counter buffer and trace records, freed when
/// dropped unless kept.
pub(crate) struct Buffers<'a> {
    memory: &'a Memory,
    pub counters: u64,
    /// Each trace: (records address, capacity, cursor slot).
    pub traces: Vec<(u64, u32, usize)>,
    kept: bool,
}

impl<'a> Buffers<'a> {
    pub fn new(memory: &'a Memory, l: &Layout) -> Result<Self, String> {
        let counters = memory
            .alloc((8 * l.slots.max(1)) as u64, 8, MemKind::Device, 0)
            .map_err(|e| e.to_string())?;
        let mut b = Buffers {
            memory,
            counters,
            traces: Vec::new(),
            kept: false,
        };
        for &(capacity, cursor) in &l.traces {
            let records = memory
                .alloc(u64::from(capacity), 8, MemKind::Device, 0)
                .map_err(|e| e.to_string())?;
            b.traces.push((records, capacity, cursor));
        }
        Ok(b)
    }

    /// Keeps the memory (the copy now owns it): the counter buffer and the
    /// traces.
    pub fn keep(mut self) -> (u64, Vec<(u64, u32, usize)>) {
        self.kept = true;
        (self.counters, std::mem::take(&mut self.traces))
    }
}

impl Drop for Buffers<'_> {
    fn drop(&mut self) {
        if !self.kept {
            let _ = self.memory.free(self.counters);
            for &(r, _, _) in &self.traces {
                let _ = self.memory.free(r);
            }
        }
    }
}
