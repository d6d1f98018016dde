//! The runtime's interceptor: keeps the kernels of frozen executables,
//! builds instrumented copies when a tool asks (once per kernel and way of
//! counting), swaps them in per dispatch and hands the counts back.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use inlay_codeobj::CodeObject;
use inlay_instrument::counting::{self, Form};
use inlay_instrument::rewrite::{rewrite, Hook, Plan};
use inlay_instrument::{analyse, emit};
use inlay_loader::{AgentRef, Executable, SymbolKind};
use inlay_runtime::device::{Device, DispatchError, KernelDispatch};
use inlay_runtime::intercept::{Interceptor, LoadedCode};
use inlay_vgpu::{MemKind, Memory, Stats};

use crate::{Counting, Executed, Launch, Outcome, Output, Tool};

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
    counters: u64,
    /// Counters (one per hook).
    hooks: usize,
    /// The hooks count lanes (thread instructions), not waves.
    lanes: bool,
    /// Every original instruction (address, opcode) and its executions as
    /// a linear form of the counters and the wave count.
    counts: Vec<(u64, &'static str, Form)>,
    /// Every original instruction (address, opcode) and the device address
    /// of its copy in the instrumented code.
    copies: Vec<(u64, &'static str, u64)>,
    added: usize,
    /// Keeps the copy's code object loaded.
    _executable: Executable,
}

struct Active {
    launch: Launch,
    instrumented: Option<Arc<Instrumented>>,
    error: Option<String>,
}

#[derive(Default)]
struct State {
    kernels: HashMap<u64, KernelRef>,
    /// Instrumented copies per kernel and way of counting. Each has its own
    /// counters, so a copy serves one dispatch at a time: a dispatch of a
    /// kernel whose copies are all in flight (on other queues) gets a new one.
    built: HashMap<(u64, Counting), Vec<Arc<Instrumented>>>,
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
    fn build(&self, k: &KernelRef, how: Counting) -> Result<Instrumented, String> {
        let co = CodeObject::parse(&k.code.bytes).map_err(|e| e.to_string())?;
        let an = analyse(&co, &k.name).map_err(|e| e.to_string())?;
        let prog = &an.program;
        let op = |i: usize| {
            prog.insts[i]
                .inst
                .opcode()
                .map_or("<invalid>", |o| o.name())
        };
        // Where hooks go, and each instruction's count in terms of them.
        let (starts, forms): (Vec<usize>, Vec<Form>) = if how.per_block && !how.lanes {
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
            (starts, forms)
        } else {
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
        };
        let counts = prog
            .insts
            .iter()
            .zip(forms)
            .enumerate()
            .map(|(i, (ins, f))| (ins.addr, op(i), f))
            .collect();
        let counters = self
            .memory
            .alloc((8 * starts.len().max(1)) as u64, 8, MemKind::Device, 0)
            .map_err(|e| e.to_string())?;
        let hooks = starts
            .iter()
            .enumerate()
            .map(|(n, &i)| {
                let offset = 8 * n as u32;
                let h = if how.lanes {
                    Hook::CountLanes { offset }
                } else {
                    Hook::Count { offset }
                };
                (i, h)
            })
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
            };
            let rw = rewrite(&an, k.code.load_delta, &kd, &plan).map_err(|e| e.to_string())?;
            let bytes = emit::code_object(&co, &k.name, &rw).map_err(|e| e.to_string())?;
            let (executable, object, entry) = self.load(k, &co, &bytes)?;
            let copies = prog
                .insts
                .iter()
                .zip(&rw.new_offset)
                .map(|(ins, &off)| {
                    let op = ins.inst.opcode().map_or("<invalid>", |o| o.name());
                    (ins.addr, op, entry + off)
                })
                .collect();
            Ok(Instrumented {
                object,
                counters,
                hooks: starts.len(),
                lanes: how.lanes,
                counts,
                copies,
                added: rw.added,
                _executable: executable,
            })
        })();
        if result.is_err() {
            let _ = self.memory.free(counters);
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

    fn executed(&self, ins: &Instrumented, waves: u64) -> Executed {
        let counters = read_u64s(&self.memory, ins.counters, ins.hooks).unwrap_or_default();
        Executed {
            per_instruction: ins
                .counts
                .iter()
                .map(|(addr, op, f)| (*addr, *op, f.eval(&counters, waves)))
                .collect(),
            added_instructions: ins.added,
        }
    }
}

/// The virtual GPU's own counts (waves, or lanes) of the instrumented
/// dispatch at the copies of the original instructions: what the hooks must
/// have counted.
fn native_executed(b: &Instrumented, s: &Stats, lanes: bool) -> Executed {
    let counts = if lanes { &s.per_pc_lanes } else { &s.per_pc };
    Executed {
        per_instruction: b
            .copies
            .iter()
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
                    let zeros = vec![0u8; 8 * b.hooks];
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
                    let waves = counting::waves(a.launch.grid, a.launch.workgroup);
                    o.executed = Some(self.executed(b, waves));
                    o.native_executed = stats.as_ref().map(|s| native_executed(b, s, b.lanes));
                }
            }
            Err(e) => o.error = Some(e.message.clone()),
        }
        for t in &self.tools {
            t.after_launch(&a.launch, &o, &self.out);
        }
    }
}
