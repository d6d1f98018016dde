//! One instrumented copy of a kernel: the requests of several tools merged
//! into one plan (their calls to compiled hooks, their counters and traces
//! laid out in buffers of the copy's own), rewritten by the engine, and
//! loaded beside the original with an instance of each tool's hook module.

use std::collections::HashMap;
use std::sync::Arc;

use inlay_codeobj::{CodeObject, KernelDescriptor};
use inlay_instrument::hooks::{implicit_args_block, HookCall, HookModule};
use inlay_instrument::rewrite::{rewrite, Plan};
use inlay_instrument::{emit, Analysis};
use inlay_loader::{AgentRef, Executable, SymbolKind};
use inlay_runtime::device::{Device, KernelDispatch};
use inlay_runtime::intercept::LoadedCode;
use inlay_vgpu::Memory;

use crate::buffers::{self, Buffers};
use crate::insert::Insertions;

/// The kernel a copy is of, and where it goes.
pub(crate) struct Target<'a> {
    pub memory: &'a Arc<Memory>,
    pub device: &'a Arc<dyn Device>,
    pub kernel: &'a str,
    /// Its code object, as loaded.
    pub code: &'a LoadedCode,
    /// Every code object of its executable (calls and data reach them).
    pub executable: &'a [Arc<LoadedCode>],
}

/// One tool's part of a copy's plan.
pub(crate) struct Request<'a> {
    /// The tool's index among those attached, and its name.
    pub tool: usize,
    pub name: &'a str,
    pub insertions: Arc<Insertions>,
    pub module: Option<&'a HookModule>,
}

/// An instrumented copy of a kernel, loaded and ready to dispatch.
pub(crate) struct Copy {
    pub(crate) object: u64,
    memory: Arc<Memory>,
    device: Arc<dyn Device>,
    /// The device's id of its code.
    code_id: u64,
    /// The hooks' u64 counters and trace cursors, zeroed before each
    /// dispatch.
    pub(crate) counters: u64,
    pub(crate) slots: usize,
    /// Each trace: (records address, capacity, cursor slot).
    pub(crate) traces: Vec<(u64, u32, usize)>,
    /// Per tool with hooks in it, by tool index: its part.
    pub(crate) parts: Vec<(usize, ToolPart)>,
    /// Device address of the copy of every original instruction.
    pub(crate) copies: Vec<u64>,
    pub(crate) added: usize,
    /// The implicit-argument block to fill before each dispatch, when the
    /// kernel has none its hooks can use.
    pub(crate) implicit_args: Option<u64>,
    /// Tools of the set it was built for whose hooks could not be placed
    /// (left out so that the others' run), and why.
    pub(crate) left_out: Vec<(usize, String)>,
    /// Keeps the copy's code objects loaded.
    _executable: Executable,
}

/// One tool's share of a copy.
pub(crate) struct ToolPart {
    /// Counter slot of each of the tool's counters.
    pub(crate) slots: Vec<usize>,
    /// Index into `Copy::traces` of each of the tool's traces.
    pub(crate) traces: Vec<usize>,
    pub(crate) requests: Arc<Insertions>,
    /// Its hook module instance's globals: name → (address, size).
    pub(crate) globals: Option<HashMap<String, (u64, u64)>>,
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

impl Copy {
    /// Readies a copy for a dispatch: counters and trace cursors zeroed,
    /// the implicit-argument block (if it has its own) filled.
    pub(crate) fn ready(&self, d: &KernelDispatch) -> Result<(), String> {
        let zeros = vec![0u8; 8 * self.slots];
        self.memory
            .write_bytes(self.counters, &zeros)
            .map_err(|e| e.to_string())?;
        if let Some(at) = self.implicit_args {
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

/// Builds the copy of a kernel with the hooks `requests` ask for (None if
/// they ask for nothing).
pub(crate) fn build(
    k: &Target<'_>,
    analysis: &Analysis,
    descriptor: &KernelDescriptor,
    requests: Vec<Request<'_>>,
) -> Result<Option<Copy>, String> {
    if requests.iter().all(|r| r.insertions.is_empty()) {
        return Ok(None);
    }
    let (calls, modules, module_of) = calls(&requests)?;
    let all: Vec<&Insertions> = requests.iter().map(|r| r.insertions.as_ref()).collect();
    let layout = buffers::layout(&all);
    let buffers = Buffers::new(k.memory, &layout)?;
    let plan = Plan {
        counters: buffers.counters,
        hooks: buffers::hooks(&all, &layout, &buffers),
        calls,
        modules,
        ..Plan::default()
    };
    let co = CodeObject::parse(&k.code.bytes).map_err(|e| e.to_string())?;
    let mut rw =
        rewrite(analysis, k.code.load_delta, descriptor, &plan).map_err(|e| e.to_string())?;
    // (What is read of it after the code object is written.)
    let (block, added) = (rw.implicit_args, rw.added);
    let new_offset = std::mem::take(&mut rw.new_offset);
    let bytes = emit::code_object(&co, k.kernel, rw).map_err(|e| e.to_string())?;
    let loaded = load(k, &co, &bytes, &plan.modules)?;
    let implicit_args = match block {
        None => None,
        Some(_) => Some(
            loaded
                .implicit_args
                .ok_or("the instrumented code object has no implicit-argument block to fill")?,
        ),
    };
    let parts = requests
        .into_iter()
        .zip(layout.tools)
        .zip(module_of)
        .map(|((r, (slots, traces)), module)| {
            let globals = module.map(|m| loaded.globals[m].clone());
            let part = ToolPart {
                slots,
                traces,
                requests: r.insertions,
                globals,
            };
            (r.tool, part)
        })
        .collect();
    let copies = new_offset.iter().map(|&off| loaded.entry + off).collect();
    let (counters, traces) = buffers.keep();
    Ok(Some(Copy {
        object: loaded.object,
        memory: k.memory.clone(),
        device: k.device.clone(),
        code_id: loaded.code_id,
        counters,
        slots: layout.slots,
        traces,
        parts,
        copies,
        added,
        implicit_args,
        left_out: Vec::new(),
        _executable: loaded.executable,
    }))
}

/// The calls of every tool, each naming its tool's hook module, whose
/// hooks must exist. Also the modules, and each tool's module index.
#[allow(clippy::type_complexity)]
fn calls(
    requests: &[Request<'_>],
) -> Result<(Vec<HookCall>, Vec<HookModule>, Vec<Option<usize>>), String> {
    let mut calls = Vec::new();
    let mut modules = Vec::new();
    let mut module_of = Vec::new();
    for r in requests {
        let Some(module) = r.module else {
            if let Some(c) = r.insertions.calls.first() {
                return Err(format!(
                    "{}: calls hook {} but gave no hook module",
                    r.name, c.hook
                ));
            }
            module_of.push(None);
            continue;
        };
        for c in &r.insertions.calls {
            // The hook must exist. (Its argument count is not checked:
            // the engine's count of argument registers read is an
            // upper estimate where lanes are switched off.)
            module
                .hook(&c.hook)
                .map_err(|e| format!("{}: {e}", r.name))?;
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

/// Loads the instrumented code object, with an instance of each hook
/// module its calls reach, beside the original; the device gets one
/// program for all, so calls from the rewritten code into the
/// original's functions and into the hooks land.
fn load(
    k: &Target<'_>,
    co: &CodeObject<'_>,
    bytes: &[u8],
    modules: &[HookModule],
) -> Result<Loaded, String> {
    let agent = AgentRef {
        key: 1,
        target: co.target,
    };
    let mut exe = Executable::new(k.memory.clone());
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
    let name = emit::instrumented_name(k.kernel);
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
    let implicit = emit::implicit_args_name(k.kernel);
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
    // The original's code is in the copy's program (the copy calls its
    // functions), but not its kernels: the device maps a descriptor to the
    // program registered last, and dropping this copy (a trial build of
    // one tool's hooks is dropped at once) would then leave the original
    // kernels undispatchable.
    let mut regions: Vec<_> = k
        .executable
        .iter()
        .filter_map(|c| c.region.clone())
        .map(|mut r| {
            r.kernels.clear();
            r
        })
        .collect();
    regions.extend(exe.code_objects().iter().filter_map(|c| c.code_region()));
    let code_id = k.device.add_code(&regions)?;
    Ok(Loaded {
        executable: exe,
        object,
        entry,
        code_id,
        globals,
        implicit_args,
    })
}
