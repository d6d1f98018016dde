//! What the built-in tools share: counting every instruction with counting
//! hooks (`instr-count`, `opcode-hist`), and reading trace records
//! (`mem-trace`, `kernel-args`).

use inlay_instrument::counting::{self, Form};
use inlay_instrument::lift::Program;
use inlay_instrument::rewrite::{LANE_RECORD, SCALAR_RECORD};

use crate::{Counter, Insertions, Kernel, Launch, Outcome, TraceData};

/// How to count executions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Counting {
    /// A hook before every instruction, or before every basic block.
    pub per_block: bool,
    /// Count lanes enabled by EXEC (per thread) instead of waves.
    pub lanes: bool,
}

/// Executions of every instruction of a kernel and the device functions
/// it calls (per wave, or lanes, as [`Counting::lanes`] says).
#[derive(Debug, Clone, Default)]
pub struct Executed {
    /// (address in its code object, opcode name, executions).
    pub per_instruction: Vec<(u64, &'static str, u64)>,
}

impl Executed {
    pub fn total(&self) -> u64 {
        self.per_instruction.iter().map(|e| e.2).sum()
    }
}

/// What a counting tool keeps with a kernel: each instruction's count as a
/// linear form of its counters.
struct CountPlan {
    how: Counting,
    counters: Vec<Counter>,
    /// Per instruction: (address, opcode, count).
    per_instruction: Vec<(u64, &'static str, Form)>,
}

/// Puts counting hooks into `kernel` as `how` says.
pub(crate) fn instrument(
    kernel: &Kernel<'_>,
    at: &mut Insertions,
    how: Counting,
) -> Result<(), String> {
    let prog = &kernel.analysis().program;
    let (starts, forms) = sites(prog, how);
    let mut counters = Vec::with_capacity(starts.len());
    for &i in &starts {
        let c = at.counter();
        at.count(i, c, how.lanes)?;
        counters.push(c);
    }
    let per_instruction = kernel
        .instructions()
        .zip(forms)
        .map(|(ins, f)| (ins.addr(), ins.opcode(), f))
        .collect();
    at.keep(CountPlan {
        how,
        counters,
        per_instruction,
    });
    Ok(())
}

/// What the hooks counted in a launch, and what the virtual GPU counted
/// at the same instructions (the oracle), if the launch was instrumented.
pub(crate) fn executed(launch: &Launch, o: &Outcome<'_>) -> Option<(Executed, Option<Executed>)> {
    let plan = o.kept::<CountPlan>()?;
    let values: Vec<u64> = plan
        .counters
        .iter()
        .map(|&c| o.counter(c))
        .collect::<Option<_>>()?;
    let waves = counting::waves(launch.grid, launch.workgroup);
    let hooks = Executed {
        per_instruction: plan
            .per_instruction
            .iter()
            .map(|(addr, op, f)| (*addr, *op, f.eval(&values, waves)))
            .collect(),
    };
    let native = o.native.map(|_| Executed {
        per_instruction: plan
            .per_instruction
            .iter()
            .enumerate()
            .map(|(i, &(addr, op, _))| {
                let (w, l) = o.native_at(i).unwrap_or_default();
                (addr, op, if plan.how.lanes { l } else { w })
            })
            .collect(),
    });
    Some((hooks, native))
}

/// Where counting hooks go and each instruction's count in terms of them.
fn sites(prog: &Program, how: Counting) -> (Vec<usize>, Vec<Form>) {
    if how.per_block && !how.lanes {
        // Waves: hooks on the blocks the flow equations cannot solve.
        let plan = counting::plan(prog);
        let starts = plan
            .measured
            .iter()
            .map(|&b| prog.blocks[b].insts.start)
            .collect();
        let forms = prog
            .insts
            .iter()
            .map(|ins| plan.forms[ins.block].clone())
            .collect();
        return (starts, forms);
    }
    // Every instruction, or every region of constant EXEC.
    let starts = if how.per_block {
        counting::lane_region_starts(prog)
    } else {
        (0..prog.insts.len()).collect()
    };
    let mut forms = vec![Form::default(); prog.insts.len()];
    for (k, &s) in starts.iter().enumerate() {
        let end = starts
            .get(k + 1)
            .copied()
            .filter(|&e| e > s && e <= prog.blocks[prog.insts[s].block].insts.end)
            .unwrap_or(prog.blocks[prog.insts[s].block].insts.end);
        for f in &mut forms[s..end] {
            *f = Form {
                waves: 0,
                terms: vec![(k, 1)],
            };
        }
    }
    (starts, forms)
}

/// What recording hooks wrote in one launch.
#[derive(Debug, Clone, Default)]
pub struct Records {
    /// Records of one value per lane, in the order they were claimed.
    pub lanes: Vec<LaneRecord>,
    /// Records of one value per wave: (id, value).
    pub values: Vec<(u32, u64)>,
    /// Bytes the hooks claimed, and the trace's capacity: records past it
    /// were lost.
    pub claimed: u64,
    pub capacity: u64,
}

/// One wave's values at one instruction.
#[derive(Debug, Clone)]
pub struct LaneRecord {
    /// The record's id (what the hook was given).
    pub id: u32,
    /// Lanes enabled; the values of the others are not meaningful.
    pub exec: u64,
    pub values: [u64; 64],
}

impl LaneRecord {
    /// Values of the enabled lanes.
    pub fn enabled(&self) -> impl Iterator<Item = u64> + '_ {
        (0..64)
            .filter(|l| self.exec >> l & 1 != 0)
            .map(|l| self.values[l])
    }
}

fn u32_at(r: &[u8], at: usize) -> u32 {
    r.get(at..at + 4)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u32::from_le_bytes)
}

fn u64_at(r: &[u8], at: usize) -> u64 {
    r.get(at..at + 8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

impl Records {
    /// The records of a trace of per-lane records (`record_lanes`).
    pub fn lanes(t: &TraceData) -> Records {
        let mut out = Records {
            claimed: t.claimed,
            capacity: t.capacity,
            ..Records::default()
        };
        for r in t.bytes.chunks_exact(LANE_RECORD as usize) {
            out.lanes.push(LaneRecord {
                id: u32_at(r, 0),
                exec: u64_at(r, 8),
                values: std::array::from_fn(|l| u64_at(r, 16 + 8 * l)),
            });
        }
        out
    }

    /// The records of a trace of per-wave records (`record`).
    pub fn values(t: &TraceData) -> Records {
        Records {
            claimed: t.claimed,
            capacity: t.capacity,
            values: t
                .bytes
                .chunks_exact(SCALAR_RECORD as usize)
                .map(|r| (u32_at(r, 0), u64_at(r, 8)))
                .collect(),
            ..Records::default()
        }
    }
}
