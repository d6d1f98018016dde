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
use inlay_instrument::{analyse, Analysis};
use inlay_runtime::device::{Device, DispatchError, KernelDispatch};
use inlay_runtime::intercept::{Interceptor, LoadedCode};
use inlay_vgpu::{Memory, Stats};

use crate::copy::{self, Copy, Request, Target};
use crate::insert::Insertions;
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

    /// Builds the copy of `k` with the hooks of the tools in `set` (None if
    /// they ask for nothing in it).
    fn build(&self, object: u64, k: &KernelRef, set: ToolSet) -> Result<Option<Copy>, String> {
        let p = self.prepared(object, k)?;
        let mut requests = Vec::new();
        for t in (0..self.tools.len()).filter(|t| set >> t & 1 != 0) {
            let tool = self.tools[t].as_ref();
            requests.push(Request {
                tool: t,
                name: tool.name(),
                insertions: self.requests(object, &p, k, t)?,
                module: tool.hook_module(),
            });
        }
        let target = Target {
            memory: &self.memory,
            device: &self.device,
            kernel: &k.name,
            code: &k.code,
            executable: &k.executable,
        };
        copy::build(&target, &p.analysis, &p.descriptor, requests)
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
                    Some(c) => c.ready(d).map(|_| Some(c)),
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
