//! The runtime's interceptor: keeps the kernels of frozen executables,
//! builds instrumented copies when a tool asks (once per kernel and way of
//! instrumenting), swaps them in per dispatch and hands the counts and
//! records back.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use inlay_codeobj::CodeObject;
use inlay_instrument::counting::{self, Form};
use inlay_instrument::rewrite::{
    has_address, rewrite, Hook, LaneValue, Plan, Trace, Value, LANE_RECORD, SCALAR_RECORD,
};
use inlay_instrument::{analyse, emit};
use inlay_loader::{AgentRef, Executable, SymbolKind};
use inlay_runtime::device::{Device, DispatchError, KernelDispatch};
use inlay_runtime::intercept::{Interceptor, LoadedCode};
use inlay_vgpu::{MemKind, Memory, Stats};

use crate::{Counting, Executed, Instrument, LaneRecord, Launch, Outcome, Output, Records, Tool};

/// A kernel of a frozen executable.
#[derive(Clone)]
struct KernelRef {
    name: String,
    code: Arc<LoadedCode>,
    /// Every code object of its executable (calls and data reach them).
    executable: Arc<Vec<Arc<LoadedCode>>>,
    /// Its arguments and kernel-argument segment size, from the metadata
    /// (read once, when its executable was frozen).
    args: Arc<Vec<inlay_codeobj::metadata::KernelArg>>,
    kernarg_size: usize,
}

/// An instrumented copy of a kernel, loaded and ready to dispatch.
struct Instrumented {
    object: u64,
    /// The hooks' u64 counters (a trace's cursor is the first), zeroed
    /// before each dispatch.
    counters: u64,
    slots: usize,
    /// A trace's records and its capacity in bytes (0 without a trace).
    records: u64,
    capacity: u32,
    readback: Readback,
    /// Every original instruction (address, opcode) and the device address
    /// of its copy in the instrumented code.
    copies: Vec<(u64, &'static str, u64)>,
    added: usize,
    /// Keeps the copy's code object loaded.
    _executable: Executable,
}

/// What an instrumented copy's hooks leave, and how to read it.
enum Readback {
    /// Counters (per wave, or per lane): every original instruction's
    /// executions as a linear form of them and the wave count.
    Counts {
        lanes: bool,
        counts: Vec<(u64, &'static str, Form)>,
    },
    /// Lane records; those with id `n` come from instruction `sites[n - 1]`
    /// (address, opcode).
    Lanes { sites: Vec<(u64, &'static str)> },
    /// Records of one value per wave.
    Values,
}

struct Active {
    launch: Launch,
    instrumented: Option<Arc<Instrumented>>,
    error: Option<String>,
}

#[derive(Default)]
struct State {
    kernels: HashMap<u64, KernelRef>,
    /// Instrumented copies per kernel and way of instrumenting. Each has
    /// its own counters, so a copy serves one dispatch at a time: a dispatch
    /// of a kernel whose copies are all in flight (on other queues) gets a
    /// new one.
    built: HashMap<(u64, Instrument), Vec<Arc<Instrumented>>>,
    /// Dispatches in flight by (queue, packet id).
    active: HashMap<(u64, u64), Active>,
    launches: u64,
}

pub struct Host {
    memory: Arc<Memory>,
    device: Arc<dyn Device>,
    tools: Vec<Box<dyn Tool>>,
    out: Output,
    state: Mutex<State>,
}

impl Host {
    pub fn new(
        memory: Arc<Memory>,
        device: Arc<dyn Device>,
        tools: Vec<Box<dyn Tool>>,
        out: Output,
    ) -> Host {
        Host {
            memory,
            device,
            tools,
            out,
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn launch(&self, k: &KernelRef, d: &KernelDispatch, index: u64) -> Launch {
        let mut kernarg = vec![0u8; k.kernarg_size.min(64 * 1024)];
        if self
            .memory
            .read_bytes(d.kernarg_address, &mut kernarg)
            .is_err()
        {
            kernarg.clear();
        }
        let dims = d.dimensions.clamp(1, 3) as usize;
        let mut grid = [1; 3];
        let mut workgroup = [1; 3];
        for i in 0..dims {
            grid[i] = d.grid_size[i];
            workgroup[i] = u32::from(d.workgroup_size[i]);
        }
        Launch {
            index,
            kernel: k.name.clone(),
            grid,
            workgroup,
            kernarg,
            args: k.args.as_ref().clone(),
        }
    }

    /// Lifts, rewrites, writes and loads the instrumented copy of `k`.
    fn build(&self, k: &KernelRef, how: Instrument) -> Result<Instrumented, String> {
        let co = CodeObject::parse(&k.code.bytes).map_err(|e| e.to_string())?;
        let an = analyse(&co, &k.name).map_err(|e| e.to_string())?;
        let prog = &an.program;
        let op = |i: usize| {
            prog.insts[i]
                .inst
                .opcode()
                .map_or("<invalid>", |o| o.name())
        };
        // Where hooks go (and what each makes), counter slots, trace bytes.
        let (sites, make, slots, capacity, readback): (Vec<usize>, Make, usize, u32, Readback) =
            match how {
                Instrument::Count(c) => {
                    let (starts, forms) = counting_sites(prog, c);
                    let counts = prog
                        .insts
                        .iter()
                        .zip(forms)
                        .enumerate()
                        .map(|(i, (ins, f))| (ins.addr, op(i), f))
                        .collect();
                    let n = starts.len();
                    let readback = Readback::Counts {
                        lanes: c.lanes,
                        counts,
                    };
                    (starts, Make::Count { lanes: c.lanes }, n, 0, readback)
                }
                Instrument::MemoryTrace { capacity } => {
                    let sites: Vec<usize> = (0..prog.insts.len())
                        .filter(|&i| has_address(&prog.insts[i].inst))
                        .collect();
                    let at = sites.iter().map(|&i| (prog.insts[i].addr, op(i))).collect();
                    let capacity = capacity.max(LANE_RECORD);
                    (
                        sites,
                        Make::Addresses,
                        1,
                        capacity,
                        Readback::Lanes { sites: at },
                    )
                }
                Instrument::Arguments => {
                    let entry = prog
                        .functions
                        .first()
                        .and_then(|f| prog.inst_at(0, f.entry))
                        .ok_or("the kernel has no entry instruction")?;
                    let dwords = argument_dwords(&k.args, k.kernarg_size);
                    // Every wave records every dword; room for 256 waves'
                    // worth, so the first waves' records all fit.
                    let capacity = (dwords.len() as u32 * SCALAR_RECORD * 256).max(4096);
                    let sites = vec![entry; dwords.len()];
                    (
                        sites,
                        Make::Arguments(dwords),
                        1,
                        capacity,
                        Readback::Values,
                    )
                }
            };
        let counters = self
            .memory
            .alloc((8 * slots.max(1)) as u64, 8, MemKind::Device, 0)
            .map_err(|e| e.to_string())?;
        let records = match capacity {
            0 => Ok(0),
            c => self.memory.alloc(u64::from(c), 8, MemKind::Device, 0),
        };
        let records = match records {
            Ok(r) => r,
            Err(e) => {
                let _ = self.memory.free(counters);
                return Err(e.to_string());
            }
        };
        let trace = Trace {
            cursor: 0,
            records,
            capacity,
        };
        let hooks = sites
            .iter()
            .enumerate()
            .map(|(n, &i)| (i, make.hook(n, trace)))
            .collect();
        let kd = co
            .kernel(&k.name)
            .ok_or_else(|| format!("no kernel {}", k.name))?
            .descriptor;
        let result = (|| {
            let plan = Plan {
                counters,
                hooks,
                dead_registers_only: false,
                all_branches_long: false,
                ..Plan::default()
            };
            let rw = rewrite(&an, k.code.load_delta, &kd, &plan).map_err(|e| e.to_string())?;
            let bytes = emit::code_object(&co, &k.name, &rw).map_err(|e| e.to_string())?;
            let (executable, object, entry) = self.load(k, &co, &bytes)?;
            let copies = prog
                .insts
                .iter()
                .zip(&rw.new_offset)
                .enumerate()
                .map(|(i, (ins, &off))| (ins.addr, op(i), entry + off))
                .collect();
            Ok(Instrumented {
                object,
                counters,
                slots,
                records,
                capacity,
                readback,
                copies,
                added: rw.added,
                _executable: executable,
            })
        })();
        if result.is_err() {
            let _ = self.memory.free(counters);
            if records != 0 {
                let _ = self.memory.free(records);
            }
        }
        result
    }

    /// Loads the instrumented code object beside the original; the device
    /// gets one program for both, so calls from the rewritten code into the
    /// original's functions land.
    fn load(
        &self,
        k: &KernelRef,
        co: &CodeObject<'_>,
        bytes: &[u8],
    ) -> Result<(Executable, u64, u64), String> {
        let agent = AgentRef {
            key: 1,
            target: co.target,
        };
        let mut exe = Executable::new(self.memory.clone());
        exe.load(
            &agent,
            bytes,
            Some(&format!("{} (instrumented)", k.code.name)),
        )
        .map_err(|e| e.to_string())?;
        exe.freeze().map_err(|e| e.to_string())?;
        let name = emit::instrumented_name(&k.name);
        let (object, entry) = exe
            .symbol(&name, Some(agent.key))
            .and_then(|id| exe.get(id))
            .and_then(|s| match &s.kind {
                SymbolKind::Kernel(info) => Some((info.object, info.entry?)),
                _ => None,
            })
            .ok_or_else(|| format!("the instrumented code object has no kernel {name}"))?;
        let mut regions: Vec<_> = k
            .executable
            .iter()
            .filter_map(|c| c.region.clone())
            .collect();
        regions.extend(exe.code_objects().iter().filter_map(|c| c.code_region()));
        self.device.add_code(&regions)?;
        Ok((exe, object, entry))
    }

    fn executed(
        &self,
        ins: &Instrumented,
        counts: &[(u64, &'static str, Form)],
        waves: u64,
    ) -> Executed {
        let counters = read_u64s(&self.memory, ins.counters, ins.slots).unwrap_or_default();
        Executed {
            per_instruction: counts
                .iter()
                .map(|(addr, op, f)| (*addr, *op, f.eval(&counters, waves)))
                .collect(),
            added_instructions: ins.added,
        }
    }

    /// The records a trace holds after a dispatch.
    fn records(&self, ins: &Instrumented) -> Records {
        let claimed = read_u64s(&self.memory, ins.counters, 1)
            .ok()
            .and_then(|c| c.first().copied())
            .unwrap_or(0);
        let size = match ins.readback {
            Readback::Lanes { .. } => LANE_RECORD,
            _ => SCALAR_RECORD,
        } as usize;
        let kept = (claimed.min(u64::from(ins.capacity)) as usize) / size * size;
        let mut bytes = vec![0u8; kept];
        if self.memory.read_bytes(ins.records, &mut bytes).is_err() {
            bytes.clear();
        }
        let u32_at =
            |r: &[u8], at: usize| u32::from_le_bytes(r[at..at + 4].try_into().unwrap_or_default());
        let u64_at =
            |r: &[u8], at: usize| u64::from_le_bytes(r[at..at + 8].try_into().unwrap_or_default());
        let mut out = Records {
            claimed,
            capacity: u64::from(ins.capacity),
            ..Records::default()
        };
        for r in bytes.chunks_exact(size) {
            let id = u32_at(r, 0);
            match &ins.readback {
                Readback::Lanes { sites } => {
                    let Some(&(addr, opcode)) =
                        (id as usize).checked_sub(1).and_then(|n| sites.get(n))
                    else {
                        continue;
                    };
                    out.lanes.push(LaneRecord {
                        addr,
                        opcode,
                        exec: u64_at(r, 8),
                        values: std::array::from_fn(|l| u64_at(r, 16 + 8 * l)),
                    });
                }
                _ => out.values.push((id, u64_at(r, 8))),
            }
        }
        out
    }
}

/// What each hook of a copy does, by its index among the copy's hooks.
enum Make {
    Count {
        lanes: bool,
    },
    Addresses,
    /// Records argument dword `dwords[n]`, with id `dwords[n]`.
    Arguments(Vec<u32>),
}

impl Make {
    fn hook(&self, n: usize, trace: Trace) -> Hook {
        let offset = 8 * n as u32;
        match self {
            Make::Count { lanes: true } => Hook::CountLanes { offset },
            Make::Count { lanes: false } => Hook::Count { offset },
            Make::Addresses => Hook::RecordLanes {
                trace,
                id: n as u32 + 1,
                value: LaneValue::Address,
            },
            Make::Arguments(dwords) => Hook::Record {
                trace,
                id: dwords[n],
                value: Value::KernArg(4 * dwords[n]),
            },
        }
    }
}

/// Where counting hooks go and each instruction's count in terms of them.
fn counting_sites(
    prog: &inlay_instrument::lift::Program,
    how: Counting,
) -> (Vec<usize>, Vec<Form>) {
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

/// Dword indices of the kernel-argument segment that explicit arguments
/// occupy (within its size).
pub(crate) fn argument_dwords(
    args: &[inlay_codeobj::metadata::KernelArg],
    size: usize,
) -> Vec<u32> {
    let mut d: Vec<u32> = args
        .iter()
        .filter(|a| !a.value_kind.starts_with("hidden_"))
        .flat_map(|a| a.offset / 4..(a.offset + a.size).div_ceil(4))
        .filter(|&d| (4 * d as usize) < size)
        .map(|d| d as u32)
        .collect();
    d.sort_unstable();
    d.dedup();
    d
}

/// The virtual GPU's own counts (waves, or lanes) of the instrumented
/// dispatch at the copies of the original instructions (those at `only`,
/// if given): what the hooks must have counted.
fn native_executed(
    b: &Instrumented,
    s: &Stats,
    lanes: bool,
    only: Option<&[(u64, &'static str)]>,
) -> Executed {
    let counts = if lanes { &s.per_pc_lanes } else { &s.per_pc };
    Executed {
        per_instruction: b
            .copies
            .iter()
            .filter(|c| only.is_none_or(|o| o.iter().any(|x| x.0 == c.0)))
            .map(|&(addr, op, copy)| (addr, op, counts.get(&copy).copied().unwrap_or(0)))
            .collect(),
        added_instructions: b.added,
    }
}

fn read_u64s(mem: &Memory, addr: u64, n: usize) -> Result<Vec<u64>, inlay_vgpu::Fault> {
    let mut b = vec![0u8; 8 * n];
    mem.read_bytes(addr, &mut b)?;
    Ok(b.chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()))
        .collect())
}

impl Interceptor for Host {
    fn executable_frozen(&self, code: &[LoadedCode]) {
        let all: Arc<Vec<Arc<LoadedCode>>> = Arc::new(code.iter().cloned().map(Arc::new).collect());
        let mut refs = Vec::new();
        for c in all.iter() {
            let co = CodeObject::parse(&c.bytes).ok();
            for (name, object) in &c.kernels {
                let md = co
                    .as_ref()
                    .and_then(|co| co.metadata.as_ref())
                    .and_then(|m| m.kernels.iter().find(|km| &km.name == name));
                let k = KernelRef {
                    name: name.clone(),
                    code: c.clone(),
                    executable: all.clone(),
                    args: Arc::new(md.map(|m| m.args.clone()).unwrap_or_default()),
                    kernarg_size: md.and_then(|m| m.kernarg_segment_size).unwrap_or(0) as usize,
                };
                refs.push((*object, k));
            }
        }
        self.state().kernels.extend(refs);
        for c in code {
            for t in &self.tools {
                t.code_object_loaded(c, &self.out);
            }
        }
    }

    fn before_dispatch(&self, d: &KernelDispatch) -> Option<u64> {
        let mut st = self.state();
        let k = st.kernels.get(&d.kernel_object)?;
        let index = st.launches;
        let launch = self.launch(k, d, index);
        let want = self
            .tools
            .iter()
            .find_map(|t| t.before_launch(&launch, &self.out));
        let k = k.clone();
        st.launches += 1;
        let mut active = Active {
            launch,
            instrumented: None,
            error: None,
        };
        if let Some(how) = want {
            let key = (d.kernel_object, how);
            // A copy no dispatch in flight uses (the map and `active` hold
            // the only references of an idle one).
            let idle = st
                .built
                .get(&key)
                .and_then(|copies| copies.iter().find(|c| Arc::strong_count(c) == 1).cloned());
            let built = match idle {
                Some(b) => Ok(b),
                None => self.build(&k, how).map(Arc::new),
            };
            match built {
                Ok(b) => {
                    let copies = st.built.entry(key).or_default();
                    if !copies.iter().any(|c| Arc::ptr_eq(c, &b)) {
                        copies.push(b.clone());
                    }
                    let zeros = vec![0u8; 8 * b.slots];
                    let _ = self.memory.write_bytes(b.counters, &zeros);
                    active.instrumented = Some(b);
                }
                Err(e) => {
                    self.out.line(&format!(
                        "inlay: cannot instrument {}: {e}; running it as it is",
                        active.launch.kernel
                    ));
                    active.error = Some(e);
                }
            }
        }
        let object = active.instrumented.as_ref().map(|b| b.object);
        st.active.insert((d.queue, d.packet_id), active);
        object
    }

    fn after_dispatch(&self, d: &KernelDispatch, outcome: &Result<Option<Stats>, DispatchError>) {
        let Some(a) = self.state().active.remove(&(d.queue, d.packet_id)) else {
            return;
        };
        let mut o = Outcome {
            error: a.error,
            ..Outcome::default()
        };
        match outcome {
            Ok(stats) => {
                o.native = stats.clone();
                if let Some(b) = &a.instrumented {
                    match &b.readback {
                        Readback::Counts { lanes, counts } => {
                            let waves = counting::waves(a.launch.grid, a.launch.workgroup);
                            o.executed = Some(self.executed(b, counts, waves));
                            o.native_executed =
                                stats.as_ref().map(|s| native_executed(b, s, *lanes, None));
                        }
                        Readback::Lanes { sites } => {
                            o.records = Some(self.records(b));
                            o.native_executed = stats
                                .as_ref()
                                .map(|s| native_executed(b, s, true, Some(sites)));
                        }
                        Readback::Values => o.records = Some(self.records(b)),
                    }
                }
            }
            Err(e) => {
                o.error = Some(e.message.clone());
                // Records made before the failure (the faulting access's
                // own among them) are still worth having.
                if let Some(b) = a
                    .instrumented
                    .as_ref()
                    .filter(|b| !matches!(b.readback, Readback::Counts { .. }))
                {
                    o.records = Some(self.records(b));
                }
            }
        }
        for t in &self.tools {
            t.after_launch(&a.launch, &o, &self.out);
        }
    }
}
