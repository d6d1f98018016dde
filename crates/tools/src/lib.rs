//! Tools that instrument kernels as a program runs, and the host that runs
//! them inside the HSA runtime.
//!
//! A [`Tool`] sees each kernel launch ([`Launch`]) and says whether and how
//! to instrument it ([`Instrument`]); the [`Host`] (the runtime's
//! interceptor) lifts the kernel, rewrites it with hooks, writes the
//! rewritten kernel into a copy of its code object, loads that beside the
//! original, and runs it instead for that dispatch. When the dispatch
//! completes the tool gets what the hooks counted ([`Executed`]) or recorded
//! ([`Records`]), and the virtual GPU's own counts of the same dispatch
//! ([`inlay_vgpu::Stats`]) to compare with.
//!
//! Tools: [`instr_count`] (instructions per wave or per thread, hooks per
//! instruction or per basic block), [`opcode_hist`], [`mem_trace`] (the
//! address every lane accesses), [`kernel_args`] (argument values as the
//! kernel reads them).

mod host;
pub mod instr_count;
pub mod kernel_args;
pub mod mem_trace;
pub mod opcode_hist;
mod output;

pub use host::Host;
pub use output::Output;

use inlay_codeobj::metadata::KernelArg;

/// One kernel launch as tools see it.
#[derive(Debug, Clone)]
pub struct Launch {
    /// Launches seen so far in this process, from 0.
    pub index: u64,
    /// Kernel name (as in the code object; C++ names mangled).
    pub kernel: String,
    /// Work-items per dimension and work-items per workgroup.
    pub grid: [u32; 3],
    pub workgroup: [u32; 3],
    /// The kernel-argument segment as the caller filled it.
    pub kernarg: Vec<u8>,
    /// The kernel's arguments from its metadata (explicit and hidden).
    pub args: Vec<KernelArg>,
}

impl Launch {
    /// Workgroups per dimension.
    pub fn groups(&self) -> [u32; 3] {
        [0, 1, 2].map(|d| self.grid[d].div_ceil(self.workgroup[d].max(1)))
    }
}

/// How a tool wants a launch instrumented.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Instrument {
    /// Count executions.
    Count(Counting),
    /// Record the address each enabled lane accesses at every FLAT and
    /// GLOBAL instruction (of the kernel and the functions it calls), in a
    /// trace of `capacity` bytes ([`Records::lanes`]).
    MemoryTrace { capacity: u32 },
    /// Record, once per wave at the kernel's entry, every dword of its
    /// explicit arguments as the kernel reads them ([`Records::values`],
    /// by dword index).
    Arguments,
}

/// How to count executions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Counting {
    /// A hook before every instruction, or before every basic block.
    pub per_block: bool,
    /// Count lanes enabled by EXEC (per thread) instead of waves.
    pub lanes: bool,
}

/// What the hooks of an instrumented launch counted: executions of every
/// instruction of the kernel and the device functions it calls (per wave, or
/// lanes, as [`Counting::lanes`] says).
#[derive(Debug, Clone, Default)]
pub struct Executed {
    /// (address in its code object, opcode name, executions).
    pub per_instruction: Vec<(u64, &'static str, u64)>,
    /// Instructions the rewriter added (static).
    pub added_instructions: usize,
}

impl Executed {
    pub fn total(&self) -> u64 {
        self.per_instruction.iter().map(|e| e.2).sum()
    }
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
    /// The instruction's address in its code object, and its opcode.
    pub addr: u64,
    pub opcode: &'static str,
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

/// How a launch ended.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// The hooks' counts, if the launch was instrumented to count.
    pub executed: Option<Executed>,
    /// What the hooks recorded, if the launch was instrumented to record.
    pub records: Option<Records>,
    /// The virtual GPU's own counts of the same original instructions in
    /// that dispatch (executions of their copies in the instrumented code,
    /// per wave or per lane as the hooks count; per lane for memory
    /// traces): the oracle the hooks' counts must equal.
    pub native_executed: Option<Executed>,
    /// The virtual GPU's own counts of the dispatch that ran (the
    /// instrumented kernel when instrumented: hooks included).
    pub native: Option<inlay_vgpu::Stats>,
    /// Why the dispatch or its instrumentation failed.
    pub error: Option<String>,
}

/// A tool: callbacks at code object load, before a launch, after it.
pub trait Tool: Send + Sync {
    fn name(&self) -> &'static str;

    /// A code object was loaded (its executable frozen).
    fn code_object_loaded(&self, code: &inlay_runtime::intercept::LoadedCode, out: &Output) {
        let _ = (code, out);
    }

    /// A kernel is about to run: instrument it (and how) or not.
    fn before_launch(&self, launch: &Launch, out: &Output) -> Option<Instrument>;

    /// The launch completed (or failed).
    fn after_launch(&self, launch: &Launch, outcome: &Outcome, out: &Output);
}

/// A built-in tool by name, configured by `KEY=VALUE` options.
pub fn by_name(name: &str, options: &[(String, String)]) -> Result<Box<dyn Tool>, String> {
    match name {
        "instr-count" => Ok(Box::new(instr_count::InstrCount::new(options)?)),
        "opcode-hist" => Ok(Box::new(opcode_hist::OpcodeHist::new(options)?)),
        "kernel-args" => Ok(Box::new(kernel_args::KernelArgs::new(options)?)),
        "mem-trace" => Ok(Box::new(mem_trace::MemTrace::new(options)?)),
        _ => Err(format!(
            "no tool named {name} (tools: instr-count, opcode-hist, mem-trace, kernel-args)"
        )),
    }
}

/// Parses `INLAY_TOOL_OPTS`-style options: `KEY=VALUE` separated by `;`.
pub fn parse_options(s: &str) -> Result<Vec<(String, String)>, String> {
    s.split(';')
        .filter(|p| !p.trim().is_empty())
        .map(|p| {
            p.split_once('=')
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .ok_or_else(|| format!("tool option '{p}' is not KEY=VALUE"))
        })
        .collect()
}

/// Kernel name for people: demangled C++ names, others as they are; the
/// kernels HIP's runtime (ROCclr) runs for its own copies and fills are
/// marked as such, so they are not taken for the program's.
pub fn display_name(kernel: &str) -> String {
    let name = cpp_demangle::Symbol::new(kernel)
        .ok()
        .and_then(|s| s.demangle(&Default::default()).ok())
        .unwrap_or_else(|| kernel.to_string());
    if is_runtime_blit(kernel) {
        format!("{name} [ROCclr blit kernel]")
    } else {
        name
    }
}

/// Whether `kernel` is one of ROCclr's blit kernels (`__amd_rocclr_copyBuffer`,
/// `__amd_rocclr_fillBufferAligned`, ...), which HIP compiles at start-up and
/// launches for copies, fills and other runtime work.
pub fn is_runtime_blit(kernel: &str) -> bool {
    kernel.starts_with("__amd_rocclr_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_are_named_as_people_know_them() {
        assert_eq!(
            display_name("_Z10block_sumsPKfPfi"),
            "block_sums(float const*, float*, int)"
        );
        assert_eq!(display_name("vector_add"), "vector_add");
        assert_eq!(
            display_name("__amd_rocclr_copyBuffer"),
            "__amd_rocclr_copyBuffer [ROCclr blit kernel]"
        );
    }
}
