//! `mem-trace`: the address every enabled lane accesses at every FLAT and
//! GLOBAL instruction of a launch (the kernel's and those of the device
//! functions it calls), recorded on the device by hooks before each such
//! instruction into a trace buffer.
//!
//! Per launch it prints the accesses in total and per instruction (lanes,
//! distinct 64-byte lines, address range), and checks each instruction's
//! lanes against the virtual GPU's own count. Options: `capacity=MIB`
//! sizes each trace (64 MiB, about 127,000 wave records, by default;
//! records past it are counted and reported lost); `dump=1` writes every
//! record (instruction, EXEC, the enabled lanes' addresses) as a JSON line
//! to the `json=` file.

use std::collections::{BTreeMap, HashSet};

use serde_json::json;

use inlay_instrument::rewrite::{has_address, LaneValue, LANE_RECORD};

use crate::{
    display_name, Insertions, Kernel, Launch, Outcome, Output, Records, Tool, ToolOptions, TraceId,
};

pub struct MemTrace {
    capacity: u32,
    dump: bool,
}

impl MemTrace {
    pub fn new(options: ToolOptions<'_>) -> Result<MemTrace, String> {
        let capacity = options.parse("capacity", "MiB, 1 to 4095", |v| {
            v.parse::<u32>().ok().filter(|&m| (1..4096).contains(&m))
        })?;
        Ok(MemTrace {
            capacity: capacity.unwrap_or(64) << 20,
            dump: options.flag("dump")?.unwrap_or(false),
        })
    }
}

/// What the tool keeps with a kernel: its trace, and the instructions
/// traced (index, address, opcode): record id `n` comes from `sites[n - 1]`.
struct Traced {
    trace: TraceId,
    sites: Vec<(usize, u64, &'static str)>,
}

/// What one instruction accessed.
#[derive(Default)]
struct Site {
    opcode: &'static str,
    lanes: u64,
    lines: HashSet<u64>,
    low: u64,
    high: u64,
}

impl Tool for MemTrace {
    fn name(&self) -> &str {
        "mem-trace"
    }

    fn instrument(
        &self,
        kernel: &Kernel<'_>,
        at: &mut Insertions,
        _out: &Output,
    ) -> Result<(), String> {
        let trace = at.trace(self.capacity);
        let mut sites = Vec::new();
        for ins in kernel.instructions() {
            if has_address(ins.instruction()) {
                sites.push((ins.index, ins.addr(), ins.opcode()));
                at.record_lanes(ins.index, trace, sites.len() as u32, LaneValue::Address)?;
            }
        }
        at.keep(Traced { trace, sites });
        Ok(())
    }

    fn after_launch(&self, launch: &Launch, o: &Outcome<'_>, out: &Output) {
        let name = display_name(&launch.kernel);
        // Records made before a failure (the faulting access's own among
        // them) are still worth having.
        let traced = o.kept::<Traced>();
        let records = traced
            .and_then(|t| o.trace(t.trace))
            .map(|t| Records::lanes(&t));
        let (Some(r), Some(traced)) = (&records, traced) else {
            let why = o.error.as_deref().unwrap_or("not instrumented");
            out.line(&format!(
                "mem-trace: kernel {} {name}: no trace ({why})",
                launch.index
            ));
            out.json(&json!({"tool": "mem-trace", "launch": launch.index, "kernel": launch.kernel, "error": why}));
            return;
        };
        let mut sites: BTreeMap<u64, Site> = BTreeMap::new();
        for rec in &r.lanes {
            let Some(&(_, addr, opcode)) = (rec.id as usize)
                .checked_sub(1)
                .and_then(|n| traced.sites.get(n))
            else {
                continue;
            };
            let s = sites.entry(addr).or_insert_with(|| Site {
                opcode,
                low: u64::MAX,
                ..Site::default()
            });
            for a in rec.enabled() {
                s.lanes += 1;
                s.lines.insert(a >> 6);
                s.low = s.low.min(a);
                s.high = s.high.max(a);
            }
            if self.dump {
                let addresses: Vec<u64> = rec.enabled().collect();
                out.json(&json!({
                    "tool": "mem-trace",
                    "launch": launch.index,
                    "pc": addr,
                    "opcode": opcode,
                    "exec": rec.exec,
                    "addresses": addresses,
                }));
            }
        }
        let lost = r.claimed > r.capacity;
        let lanes: u64 = sites.values().map(|s| s.lanes).sum();
        let lines: usize = sites
            .values()
            .flat_map(|s| s.lines.iter())
            .collect::<HashSet<_>>()
            .len();
        // The virtual GPU counts the lanes of every instruction: a complete
        // trace must have the same per instruction.
        let native: Option<Vec<(u64, u64)>> = o.native.map(|_| {
            traced
                .sites
                .iter()
                .map(|&(i, addr, _)| (addr, o.native_at(i).map_or(0, |n| n.1)))
                .collect()
        });
        let check = match (&native, lost) {
            _ if o.error.is_some() => format!(
                " (the dispatch failed; these are the accesses before: {})",
                o.error.as_deref().unwrap_or_default()
            ),
            (_, true) => format!(
                " (trace full: {} of {} records kept; raise capacity=)",
                r.lanes.len(),
                r.claimed / u64::from(LANE_RECORD)
            ),
            (Some(n), false) => {
                let differ = n
                    .iter()
                    .filter(|&&(addr, c)| sites.get(&addr).map_or(0, |s| s.lanes) != c)
                    .count();
                match differ {
                    0 => " (the virtual GPU counted the same lanes)".to_string(),
                    d => format!(
                        " (MISMATCH: the virtual GPU counted other lanes at {d} instructions)"
                    ),
                }
            }
            (None, false) => String::new(),
        };
        out.line(&format!(
            "mem-trace: kernel {} {name}: {} wave records, {lanes} lane accesses at {} instructions, {lines} distinct 64-byte lines{check}",
            launch.index,
            r.lanes.len(),
            sites.len(),
        ));
        for (addr, s) in &sites {
            out.line(&format!(
                "  {addr:#x} {}: {} lanes, {} lines, {:#x}..={:#x}",
                s.opcode,
                s.lanes,
                s.lines.len(),
                s.low,
                s.high
            ));
        }
        let per: Vec<_> = sites
            .iter()
            .map(|(addr, s)| {
                json!({"pc": addr, "opcode": s.opcode, "lanes": s.lanes, "lines": s.lines.len(), "low": s.low, "high": s.high})
            })
            .collect();
        out.json(&json!({
            "tool": "mem-trace",
            "launch": launch.index,
            "kernel": launch.kernel,
            "records": r.lanes.len(),
            "claimed_records": r.claimed / u64::from(LANE_RECORD),
            "lane_accesses": lanes,
            "lines": lines,
            "instructions": per,
            "error": o.error,
        }));
    }
}
