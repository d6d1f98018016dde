//! The runtime's interceptor: keeps the kernels of frozen executables, asks
//! each tool where its hooks go in a kernel (once per kernel and tool),
//! merges the requests of every tool that wants a launch instrumented into
//! one instrumented copy (cached per kernel and set of tools), swaps it in
//! per dispatch and hands each tool its part of the results.
//!
//! Concurrency: a copy's counters, traces and hook-module globals serve one
//! dispatch at a time; a dispatch whose copies are all in flight (on other
//! queues) gets a new copy. Nothing is locked while a kernel is analysed or
//! rewritten, nor while tools run their callbacks, so a tool reading its
//! results after one launch never holds up launches on other queues.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use inlay_codeobj::{CodeObject, KernelDescriptor};
use inlay_instrument::hooks::{implicit_args_block, HookCall, HookModule};
use inlay_instrument::rewrite::{rewrite, Hook, Plan, Trace};
use inlay_instrument::{analyse, emit, Analysis};
use inlay_loader::{AgentRef, Executable, SymbolKind};
use inlay_runtime::device::{Device, DispatchError, KernelDispatch};
use inlay_runtime::intercept::{Interceptor, LoadedCode};
use inlay_vgpu::{MemKind, Memory, Stats};

use crate::insert::{Builtin, Insertions};
use crate::outcome::{Globals, Part};
use crate::{Kernel, Launch, Outcome, Output, Tool};

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

/// A kernel lifted once, and each tool's requests for it (asked the
/// first time a launch of it runs with that tool's hooks).
struct Prepared {
    analysis: Analysis,
    descriptor: KernelDescriptor,
    requests: Vec<OnceLock<Result<Arc<Insertions>, String>>>,
}

/// Tools whose hooks a copy has, as a bit set of their indices.
type ToolSet = u64;

/// A kernel's preparation, done once by whichever dispatch gets there first.
type Preparation = Arc<OnceLock<Result<Arc<Prepared>, String>>>;

/// What a kernel gets for a set of tools.
enum Built {
    /// Instrumented copies (a dispatch in flight uses one at a time).
    Copies(Vec<Arc<Copy>>),
    /// The tools asked for nothing in this kernel: it runs as it is.
    Nothing,
    /// It cannot be instrumented this way (said once, not retried).
    Failed(String),
}

/// An instrumented copy of a kernel, loaded and ready to dispatch.
struct Copy {
    object: u64,
    memory: Arc<Memory>,
    device: Arc<dyn Device>,
    code_id: u64,
    /// The hooks' u64 counters and trace cursors, zeroed before each
    /// dispatch.
    counters: u64,
    slots: usize,
    /// Each trace: (records address, capacity, cursor slot).
    traces: Vec<(u64, u32, usize)>,
    /// Per tool with hooks in it, by tool index: its part.
    parts: Vec<(usize, ToolPart)>,
    /// Device address of the copy of every original instruction.
    copies: Vec<u64>,
    added: usize,
    /// The implicit-argument block to fill before each dispatch, when the
    /// kernel has none its hooks can use.
    implicit_args: Option<u64>,
    /// Tools of the set it was built for whose hooks could not be placed
    /// (left out so that the others' run), and why.
    left_out: Vec<(usize, String)>,
    /// Keeps the copy's code objects loaded.
    _executable: Executable,
}

/// One tool's share of a copy.
struct ToolPart {
    /// Counter slot of each of the tool's counters.
    slots: Vec<usize>,
    /// Index into `Copy::traces` of each of the tool's traces.
    traces: Vec<usize>,
    requests: Arc<Insertions>,
    /// Its hook module instance's globals: name → (address, size).
    globals: Option<HashMap<String, (u64, u64)>>,
}

impl Drop for Copy {
    fn drop(&mut self) {
        self.device.remove_code(self.code_id);
        let _ = self.memory.free(self.counters);
        for &(records, _, _) in &self.traces {
            let _ = self.memory.free(records);
        }
    }
}

struct Active {
    launch: Launch,
    /// Tools that wanted this launch instrumented.
    wanted: ToolSet,
    copy: Option<Arc<Copy>>,
    error: Option<String>,
}

#[derive(Default)]
struct State {
    kernels: HashMap<u64, KernelRef>,
    prepared: HashMap<u64, Preparation>,
    /// Copies per kernel and set of tools; a failed build is remembered so
    /// that it is reported once and not retried every launch.
    copies: HashMap<(u64, ToolSet), Built>,
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
    finished: std::sync::Once,
}

/// Most tools attached at once (a copy records its tools in a u64).
pub const MAX_TOOLS: usize = 64;

impl Host {
    pub fn new(
        memory: Arc<Memory>,
        device: Arc<dyn Device>,
        mut tools: Vec<Box<dyn Tool>>,
        out: Output,
    ) -> Host {
        tools.truncate(MAX_TOOLS);
        Host {
            memory,
            device,
            tools,
            out,
            state: Mutex::new(State::default()),
            finished: std::sync::Once::new(),
        }
    }

    /// Tells every tool the runtime is done (once: at shutdown, or at
    /// process exit for programs that never shut the runtime down).
    pub fn finish(&self) {
        self.finished.call_once(|| {
            for t in &self.tools {
                t.finish(&self.out);
            }
        });
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
            kernel_object: d.kernel_object,
            dimensions: dims as u8,
            grid,
            workgroup,
            kernarg,
            kernarg_address: d.kernarg_address,
            args: k.args.as_ref().clone(),
        }
    }

    /// The kernel lifted (once; concurrent callers wait for the first).
    fn prepared(&self, object: u64, k: &KernelRef) -> Result<Arc<Prepared>, String> {
        let cell = self.state().prepared.entry(object).or_default().clone();
        cell.get_or_init(|| {
            let co = CodeObject::parse(&k.code.bytes).map_err(|e| e.to_string())?;
            let analysis = analyse(&co, &k.name).map_err(|e| e.to_string())?;
            let descriptor = co
                .kernel(&k.name)
                .ok_or_else(|| format!("no kernel {}", k.name))?
                .descriptor;
            Ok(Arc::new(Prepared {
                analysis,
                descriptor,
                requests: (0..self.tools.len()).map(|_| OnceLock::new()).collect(),
            }))
        })
        .clone()
    }

    /// Tool `t`'s requests for the kernel (asked once).
    fn requests(
        &self,
        object: u64,
        p: &Prepared,
        k: &KernelRef,
        t: usize,
    ) -> Result<Arc<Insertions>, String> {
        p.requests[t]
            .get_or_init(|| {
                let kernel = Kernel {
                    name: &k.name,
                    object,
                    code_object: &k.code.name,
                    analysis: &p.analysis,
                    args: &k.args,
                    kernarg_size: k.kernarg_size,
                };
                let mut at = Insertions::new(p.analysis.program.insts.len());
                self.tools[t]
                    .instrument(&kernel, &mut at, &self.out)
                    .map_err(|e| format!("{}: {e}", self.tools[t].name()))?;
                Ok(Arc::new(at))
            })
            .clone()
    }

    /// Builds the copy of `k` with the hooks of the tools in `set`.
    /// Builds the copy of `k` with the hooks of the tools in `set` (None if
    /// they ask for nothing in it).
    fn build(&self, object: u64, k: &KernelRef, set: ToolSet) -> Result<Option<Copy>, String> {
        let p = self.prepared(object, k)?;
        let tools: Vec<usize> = (0..self.tools.len())
            .filter(|t| set >> t & 1 != 0)
            .collect();
        let mut requests = Vec::new();
        for &t in &tools {
            requests.push((t, self.requests(object, &p, k, t)?));
        }
        if requests.iter().all(|(_, r)| r.is_empty()) {
            return Ok(None);
        }
        let (calls, modules, module_of) = self.calls(&requests)?;
        // Counter slots: identical counting hooks of several tools share
        // one; traces get a cursor slot each.
        let mut slots = 0usize;
        let mut shared: HashMap<(usize, bool), usize> = HashMap::new();
        let mut parts: Vec<(usize, ToolPart)> = Vec::new();
        let mut trace_caps: Vec<(u32, usize)> = Vec::new();
        let mut builtins: Vec<(usize, Builtin, usize)> = Vec::new();
        for (t, r) in &requests {
            let mut tool_slots: Vec<Option<usize>> = vec![None; r.counters];
            // A counter fed only by one kind of counting hook at one
            // instruction may be shared with another tool's.
            let mut feeds: HashMap<usize, Vec<(usize, Builtin)>> = HashMap::new();
            for &(i, b) in &r.builtins {
                if let Builtin::Count { counter, .. } | Builtin::Add { counter, .. } = b {
                    feeds.entry(counter.0).or_default().push((i, b));
                }
            }
            for (c, slot) in tool_slots.iter_mut().enumerate() {
                let key = match feeds.get(&c).map(Vec::as_slice) {
                    Some([(i, Builtin::Count { lanes, .. })]) => Some((*i, *lanes)),
                    _ => None,
                };
                *slot = Some(match key.and_then(|k| shared.get(&k).copied()) {
                    Some(s) => s,
                    None => {
                        slots += 1;
                        if let Some(key) = key {
                            shared.insert(key, slots - 1);
                        }
                        slots - 1
                    }
                });
            }
            let tool_slots: Vec<usize> = tool_slots.into_iter().flatten().collect();
            let mut tool_traces = Vec::new();
            for &cap in &r.traces {
                slots += 1;
                trace_caps.push((cap, slots - 1));
                tool_traces.push(trace_caps.len() - 1);
            }
            for &(i, b) in &r.builtins {
                builtins.push((i, b, parts.len()));
            }
            parts.push((
                *t,
                ToolPart {
                    slots: tool_slots,
                    traces: tool_traces,
                    requests: r.clone(),
                    globals: None,
                },
            ));
        }
        let allocations = Allocations::new(&self.memory, slots, &trace_caps)?;
        let trace = |part: usize, t: usize| {
            let g = parts[part].1.traces[t];
            let (records, capacity, cursor) = allocations.traces[g];
            Trace {
                cursor: 8 * cursor as u32,
                records,
                capacity,
            }
        };
        let mut hooks = Vec::with_capacity(builtins.len());
        let mut counted = std::collections::HashSet::new();
        for &(i, b, part) in &builtins {
            let slot = |c: crate::insert::Counter| 8 * parts[part].1.slots[c.0] as u32;
            hooks.push((
                i,
                match b {
                    Builtin::Count { counter, lanes } => {
                        // A shared counter is fed once.
                        if !counted.insert((i, lanes, slot(counter))) {
                            continue;
                        }
                        if lanes {
                            Hook::CountLanes {
                                offset: slot(counter),
                            }
                        } else {
                            Hook::Count {
                                offset: slot(counter),
                            }
                        }
                    }
                    Builtin::Add { counter, value } => Hook::Add {
                        offset: slot(counter),
                        value,
                    },
                    Builtin::Record {
                        trace: t,
                        id,
                        value,
                    } => Hook::Record {
                        trace: trace(part, t.0),
                        id,
                        value,
                    },
                    Builtin::RecordLanes {
                        trace: t,
                        id,
                        value,
                    } => Hook::RecordLanes {
                        trace: trace(part, t.0),
                        id,
                        value,
                    },
                },
            ));
        }
        let co = CodeObject::parse(&k.code.bytes).map_err(|e| e.to_string())?;
        let plan = Plan {
            counters: allocations.counters,
            hooks,
            calls,
            modules,
            ..Plan::default()
        };
        let rw = rewrite(&p.analysis, k.code.load_delta, &p.descriptor, &plan)
            .map_err(|e| e.to_string())?;
        let bytes = emit::code_object(&co, &k.name, &rw).map_err(|e| e.to_string())?;
        let loaded = self.load(k, &co, &bytes, &plan.modules)?;
        for (part, module) in parts.iter_mut().zip(&module_of) {
            part.1.globals = module.map(|m| loaded.globals[m].clone());
        }
        let implicit_args =
            match rw.implicit_args {
                None => None,
                Some(_) => Some(loaded.implicit_args.ok_or(
                    "the instrumented code object has no implicit-argument block to fill",
                )?),
            };
        let copies = rw
            .new_offset
            .iter()
            .map(|&off| loaded.entry + off)
            .collect();
        let (counters, traces) = allocations.keep();
        Ok(Some(Copy {
            object: loaded.object,
            memory: self.memory.clone(),
            device: self.device.clone(),
            code_id: loaded.code_id,
            counters,
            slots,
            traces,
            parts,
            copies,
            added: rw.added,
            implicit_args,
            left_out: Vec::new(),
            _executable: loaded.executable,
        }))
    }

    /// The copy with the hooks of `set`, or, if they cannot all be placed,
    /// with the hooks of the tools whose hooks can be placed on their own:
    /// one tool's unplaceable hook does not take the others' away.
    fn build_best(&self, object: u64, k: &KernelRef, set: ToolSet) -> Result<Option<Copy>, String> {
        let all = self.build(object, k, set);
        if all.is_ok() || set.count_ones() < 2 {
            return all;
        }
        let mut fine = 0;
        let mut left_out = Vec::new();
        for t in (0..self.tools.len()).filter(|t| set >> t & 1 != 0) {
            match self.build(object, k, 1 << t) {
                Ok(_) => fine |= 1 << t,
                Err(e) => left_out.push((t, e)),
            }
        }
        if fine == 0 || fine == set {
            return all;
        }
        let mut c = self.build(object, k, fine)?;
        for (t, e) in &left_out {
            self.out.line(&format!(
                "inlay: cannot instrument {} for {}: {e}; running it without that tool's hooks",
                crate::display_name(&k.name),
                self.tools[*t].name()
            ));
        }
        if let Some(c) = &mut c {
            c.left_out = left_out;
        }
        Ok(c)
    }

    /// The calls of every tool, each naming its tool's hook module, whose
    /// hooks must exist. Also the modules, and each tool's module index.
    #[allow(clippy::type_complexity)]
    fn calls(
        &self,
        requests: &[(usize, Arc<Insertions>)],
    ) -> Result<(Vec<HookCall>, Vec<HookModule>, Vec<Option<usize>>), String> {
        let mut calls = Vec::new();
        let mut modules = Vec::new();
        let mut module_of = Vec::new();
        for (t, r) in requests {
            let tool = &self.tools[*t];
            let Some(module) = tool.hook_module() else {
                if let Some(c) = r.calls.first() {
                    return Err(format!(
                        "{}: calls hook {} but gave no hook module",
                        tool.name(),
                        c.hook
                    ));
                }
                module_of.push(None);
                continue;
            };
            for c in &r.calls {
                // The hook must exist. (Its argument count is not checked:
                // the engine's count of argument registers read is an
                // upper estimate where lanes are switched off.)
                module
                    .hook(&c.hook)
                    .map_err(|e| format!("{}: {e}", tool.name()))?;
                calls.push(HookCall {
                    module: modules.len(),
                    ..c.clone()
                });
            }
            module_of.push(Some(modules.len()));
            modules.push(module.clone());
        }
        Ok((calls, modules, module_of))
    }

    /// Loads the instrumented code object, with an instance of each hook
    /// module its calls reach, beside the original; the device gets one
    /// program for all, so calls from the rewritten code into the
    /// original's functions and into the hooks land.
    fn load(
        &self,
        k: &KernelRef,
        co: &CodeObject<'_>,
        bytes: &[u8],
        modules: &[HookModule],
    ) -> Result<Loaded, String> {
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
        let mut ids = Vec::new();
        for m in modules {
            let id = exe
                .load_shared(
                    &agent,
                    m.bytes().clone(),
                    Some(&format!("hook module {}", m.name())),
                )
                .map_err(|e| e.to_string())?;
            ids.push(id);
        }
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
        let variable = |id: inlay_loader::SymbolId| {
            let s = exe.get(id)?;
            match &s.kind {
                SymbolKind::Variable(v) => Some((s, v.address, v.size)),
                _ => None,
            }
        };
        let implicit = emit::implicit_args_name(&k.name);
        let implicit_args = exe
            .variables()
            .iter()
            .filter_map(|&id| variable(id))
            .find(|(s, _, _)| s.name == implicit)
            .map(|(_, a, _)| a);
        let globals = ids
            .iter()
            .map(|&m| {
                exe.variables()
                    .iter()
                    .filter_map(|&id| variable(id))
                    .filter(|(s, _, _)| s.code_object == Some(m))
                    .map(|(s, a, size)| (s.name.clone(), (a, size)))
                    .collect()
            })
            .collect();
        let mut regions: Vec<_> = k
            .executable
            .iter()
            .filter_map(|c| c.region.clone())
            .collect();
        regions.extend(exe.code_objects().iter().filter_map(|c| c.code_region()));
        let code_id = self.device.add_code(&regions)?;
        Ok(Loaded {
            executable: exe,
            object,
            entry,
            code_id,
            globals,
            implicit_args,
        })
    }

    /// A copy of `k` with the hooks of `set` that no dispatch in flight
    /// uses, built if there is none; None if the tools ask for nothing in
    /// `k`.
    fn copy_for(
        &self,
        object: u64,
        k: &KernelRef,
        set: ToolSet,
    ) -> Result<Option<Arc<Copy>>, String> {
        {
            let st = self.state();
            match st.copies.get(&(object, set)) {
                Some(Built::Failed(e)) => return Err(e.clone()),
                Some(Built::Nothing) => return Ok(None),
                Some(Built::Copies(copies)) => {
                    // The map and `active` hold the only references of an idle copy.
                    if let Some(c) = copies.iter().find(|c| Arc::strong_count(c) == 1) {
                        return Ok(Some(c.clone()));
                    }
                }
                None => {}
            }
        }
        let built = self.build_best(object, k, set).map(|c| c.map(Arc::new));
        let mut st = self.state();
        let entry = st
            .copies
            .entry((object, set))
            .or_insert_with(|| Built::Copies(Vec::new()));
        match (&built, entry) {
            (Ok(Some(c)), Built::Copies(list)) => list.push(c.clone()),
            (Ok(None), slot) => *slot = Built::Nothing,
            // The kernel cannot be instrumented this way: say so once, and
            // run it as it is from now on. (A failure after copies were
            // built, such as memory running out, fails this launch only.)
            (Err(e), slot) if matches!(&*slot, Built::Copies(l) if l.is_empty()) => {
                self.out.line(&format!(
                    "inlay: cannot instrument {}: {e}; running it as it is",
                    crate::display_name(&k.name)
                ));
                *slot = Built::Failed(e.clone());
            }
            _ => {}
        }
        drop(st);
        if let Ok(Some(c)) = &built {
            self.globals_loaded(c);
        }
        built
    }

    /// Tells each tool with a hook module in a new copy that its instance
    /// of the module is loaded.
    fn globals_loaded(&self, c: &Copy) {
        for (t, part) in &c.parts {
            if let Some(vars) = &part.globals {
                let g = Globals {
                    memory: &self.memory,
                    vars,
                };
                self.tools[*t].hooks_loaded(&g, &self.out);
            }
        }
    }

    /// Readies a copy for a dispatch: counters and trace cursors zeroed,
    /// the implicit-argument block (if it has its own) filled.
    fn ready(&self, c: &Copy, d: &KernelDispatch) -> Result<(), String> {
        let zeros = vec![0u8; 8 * c.slots];
        self.memory
            .write_bytes(c.counters, &zeros)
            .map_err(|e| e.to_string())?;
        if let Some(at) = c.implicit_args {
            let dims = d.dimensions.clamp(1, 3);
            let mut grid = [1; 3];
            let mut wg = [1; 3];
            for i in 0..dims as usize {
                grid[i] = d.grid_size[i];
                wg[i] = u32::from(d.workgroup_size[i]);
            }
            let block = implicit_args_block(grid, wg, dims);
            self.memory
                .write_bytes(at, &block)
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

/// An instrumented code object loaded with its hook modules.
struct Loaded {
    executable: Executable,
    /// The kernel object and entry address of the instrumented kernel.
    object: u64,
    entry: u64,
    /// The device's id of its code.
    code_id: u64,
    /// Each module's globals: name → (address, size).
    globals: Vec<HashMap<String, (u64, u64)>>,
    /// The implicit-argument block the host fills, if it has one.
    implicit_args: Option<u64>,
}

/// Device memory for a copy's counters and traces, freed unless kept.
struct Allocations<'a> {
    memory: &'a Memory,
    counters: u64,
    traces: Vec<(u64, u32, usize)>,
    kept: bool,
}

impl<'a> Allocations<'a> {
    fn new(memory: &'a Memory, slots: usize, traces: &[(u32, usize)]) -> Result<Self, String> {
        let counters = memory
            .alloc((8 * slots.max(1)) as u64, 8, MemKind::Device, 0)
            .map_err(|e| e.to_string())?;
        let mut a = Allocations {
            memory,
            counters,
            traces: Vec::new(),
            kept: false,
        };
        for &(cap, cursor) in traces {
            let cap = cap.max(inlay_instrument::rewrite::LANE_RECORD);
            let records = memory
                .alloc(u64::from(cap), 8, MemKind::Device, 0)
                .map_err(|e| e.to_string())?;
            a.traces.push((records, cap, cursor));
        }
        Ok(a)
    }

    fn keep(mut self) -> (u64, Vec<(u64, u32, usize)>) {
        self.kept = true;
        (self.counters, std::mem::take(&mut self.traces))
    }
}

impl Drop for Allocations<'_> {
    fn drop(&mut self) {
        if !self.kept {
            let _ = self.memory.free(self.counters);
            for &(r, _, _) in &self.traces {
                let _ = self.memory.free(r);
            }
        }
    }
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
        {
            let mut st = self.state();
            for (object, _) in &refs {
                // A kernel object reused by a new executable is a new kernel.
                st.prepared.remove(object);
                st.copies.retain(|(o, _), _| o != object);
            }
            st.kernels.extend(refs);
        }
        for c in code {
            for t in &self.tools {
                t.code_object_loaded(c, &self.out);
            }
        }
    }

    fn before_dispatch(&self, d: &KernelDispatch) -> Option<u64> {
        let (k, index) = {
            let mut st = self.state();
            let k = st.kernels.get(&d.kernel_object)?.clone();
            st.launches += 1;
            (k, st.launches - 1)
        };
        let launch = self.launch(&k, d, index);
        let wanted = self
            .tools
            .iter()
            .enumerate()
            .filter(|(_, t)| t.before_launch(&launch, &self.out))
            .fold(0u64, |s, (i, _)| s | 1 << i);
        let mut active = Active {
            launch,
            wanted,
            copy: None,
            error: None,
        };
        if wanted != 0 {
            match self
                .copy_for(d.kernel_object, &k, wanted)
                .and_then(|c| match c {
                    Some(c) => self.ready(&c, d).map(|_| Some(c)),
                    None => Ok(None),
                }) {
                Ok(c) => active.copy = c,
                Err(e) => active.error = Some(e),
            }
        }
        let object = active.copy.as_ref().map(|c| c.object);
        self.state().active.insert((d.queue, d.packet_id), active);
        object
    }

    fn after_dispatch(&self, d: &KernelDispatch, outcome: &Result<Option<Stats>, DispatchError>) {
        let Some(a) = self.state().active.remove(&(d.queue, d.packet_id)) else {
            return;
        };
        let (native, dispatch_error) = match outcome {
            Ok(stats) => (stats.as_ref(), None),
            Err(e) => (None, Some(e.message.clone())),
        };
        for (t, tool) in self.tools.iter().enumerate() {
            let part = a.copy.as_ref().and_then(|c| {
                let (_, p) = c.parts.iter().find(|(i, _)| *i == t)?;
                Some(Part {
                    memory: &self.memory,
                    counters: c.counters,
                    slots: &p.slots,
                    traces: p.traces.iter().map(|&g| c.traces[g]).collect(),
                    kept: p.requests.kept.as_ref(),
                    globals: p.globals.as_ref().map(|vars| Globals {
                        memory: &self.memory,
                        vars,
                    }),
                    copies: &c.copies,
                    added: c.added,
                })
            });
            let left_out = a
                .copy
                .as_ref()
                .and_then(|c| c.left_out.iter().find(|(i, _)| *i == t))
                .map(|(_, e)| e.clone());
            let error = match (&dispatch_error, &a.error) {
                (Some(e), _) => Some(e.clone()),
                (None, Some(e)) if a.wanted >> t & 1 != 0 => Some(e.clone()),
                _ => left_out,
            };
            let o = Outcome {
                error,
                native,
                part,
            };
            tool.after_launch(&a.launch, &o, &self.out);
        }
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        self.finish();
    }
}
