//! Running kernels instrumented with calls to compiled hooks: the original
//! on the virtual GPU, the instrumented copy and the hook module loaded
//! beside it by the loader (calls resolved at freeze), one program for all.
#![allow(dead_code)]

use std::sync::Arc;

use inlay_codeobj::CodeObject;
use inlay_instrument::hooks::HookModule;
use inlay_instrument::rewrite::{rewrite, Plan, RewriteError, Rewritten};
use inlay_instrument::{emit, Analysis};
use inlay_loader::{AgentRef, Executable, SymbolKind};
use inlay_vgpu::{Device, Memory, Program};

/// The test hook module (fixtures/src/hooks_test.hip).
pub fn hook_module() -> HookModule {
    let bytes = super::fixture(5, "hooks_test");
    HookModule::new("hooks_test.hsaco", Arc::from(bytes)).expect("hook module")
}

/// A device over memory the loader shares.
pub fn device() -> (Arc<Memory>, Device) {
    let mem = Arc::new(Memory::new());
    let dev = Device::with_memory(mem.clone(), 2);
    (mem, dev)
}

/// An instrumented kernel loaded beside its original and its hook modules.
pub struct Loaded {
    pub rw: Rewritten,
    pub program: Program,
    pub exe: Executable,
}

impl Loaded {
    /// Before a dispatch: fills the implicit-argument block the
    /// instrumented code object carries, if it has one.
    pub fn prepare(&self, dev: &Device, kernel: &str, grid: [u32; 3], wg: [u32; 3]) {
        if self.rw.implicit_args.is_some() {
            let dims = if grid[2] > 1 {
                3
            } else if grid[1] > 1 {
                2
            } else {
                1
            };
            let block = inlay_instrument::hooks::implicit_args_block(grid, wg, dims);
            dev.write(self.variable(&emit::implicit_args_name(kernel)), &block)
                .expect("implicit arguments");
        }
    }

    /// Device address of a variable of the loaded hook modules (or the
    /// instrumented code object).
    pub fn variable(&self, name: &str) -> u64 {
        let id = self
            .exe
            .symbol(name, Some(1))
            .unwrap_or_else(|| panic!("no symbol {name}"));
        match &self.exe.get(id).expect("symbol").kind {
            SymbolKind::Variable(v) => v.address,
            k => panic!("{name} is a {k:?}"),
        }
    }
}

/// Rewrites `kernel` with `plan`, emits it, loads it and the plan's hook
/// modules into one executable, freezes it, and makes one program of it and
/// the original.
pub fn instrument(
    mem: &Arc<Memory>,
    co: &CodeObject<'_>,
    kernel: &str,
    an: &Analysis,
    original: &Program,
    plan: &Plan,
) -> Result<Loaded, RewriteError> {
    let kd = co.kernel(kernel).expect("kernel").descriptor;
    let rw = rewrite(an, original.image.expect("image"), &kd, plan)?;
    let bytes = emit::code_object(co, kernel, rw.clone()).expect("emit");
    if let Ok(dir) = std::env::var("INLAY_TEST_DUMP") {
        let _ = std::fs::write(format!("{dir}/{kernel}.inlay.hsaco"), &bytes);
    }
    let agent = AgentRef {
        key: 1,
        target: co.target,
    };
    let mut exe = Executable::new(mem.clone());
    exe.load(&agent, &bytes, Some("instrumented"))
        .expect("load instrumented");
    for m in &plan.modules {
        exe.load(&agent, m.bytes(), Some(m.name()))
            .expect("load hook module");
    }
    exe.freeze().unwrap_or_else(|e| panic!("freeze: {e}"));
    let mut regions = original.code_regions().to_vec();
    regions.extend(exe.code_objects().iter().filter_map(|c| c.code_region()));
    let mut program = Program::from_memory(mem, &regions).expect("program");
    // Code read from memory has no metadata: the kernel's arguments, so a
    // dispatch fills the hidden ones, come from the original's.
    let args = original
        .kernel(kernel)
        .map(|k| k.args.clone())
        .unwrap_or_default();
    if let Some(k) = program.kernels.get_mut(&emit::instrumented_name(kernel)) {
        k.args = args;
    }
    Ok(Loaded { rw, program, exe })
}

/// An AQL packet for a launch, in device memory with its kernel arguments
/// (hidden ones filled as ROCclr fills them) and a queue: dispatching it
/// twice gives both runs the same launch pointers.
pub fn packet(
    dev: &Device,
    md: &inlay_codeobj::metadata::KernelMetadata,
    l: &super::Launch,
    private_segment_size: u32,
) -> inlay_vgpu::Packet {
    let queue = dev.upload(&[0u8; 256]).expect("queue");
    let mut kernarg = l.args.clone();
    kernarg.resize(kernarg.len().max(8), 0);
    let hidden = inlay_vgpu::kernarg::Hidden {
        grid: l.grid,
        wg_size: l.wg,
        queue_ptr: queue,
    };
    inlay_vgpu::kernarg::fill_hidden(&md.args, &hidden, &mut kernarg);
    let kernarg = dev.upload(&kernarg).expect("kernarg");
    let dims: u16 = if l.grid[2] > 1 {
        3
    } else if l.grid[1] > 1 {
        2
    } else {
        1
    };
    let mut raw = [0u8; 64];
    raw[0..2].copy_from_slice(&2u16.to_le_bytes()); // kernel dispatch
    raw[2..4].copy_from_slice(&dims.to_le_bytes());
    for d in 0..3 {
        raw[4 + 2 * d..6 + 2 * d].copy_from_slice(&(l.wg[d] as u16).to_le_bytes());
        raw[12 + 4 * d..16 + 4 * d].copy_from_slice(&l.grid[d].to_le_bytes());
    }
    raw[24..28].copy_from_slice(&private_segment_size.to_le_bytes());
    raw[40..48].copy_from_slice(&kernarg.to_le_bytes());
    let address = dev.upload(&raw).expect("packet");
    inlay_vgpu::Packet::from_bytes(raw, address, queue, 1)
}
