//! The tool API — how instrumentation tools see a program's kernels, ask
//! for hooks and read what the hooks left — and the host that runs tools
//! inside the HSA runtime, with the built-in tools written on it.
//!
//! A [`Tool`] gets callbacks:
//! - [`Tool::code_object_loaded`] when an executable is frozen;
//! - [`Tool::before_launch`] before each kernel launch: whether this launch
//!   runs with the tool's hooks;
//! - [`Tool::instrument`] the first time a launch of a kernel runs with the
//!   tool's hooks: the tool walks the kernel ([`Kernel`]: functions, blocks,
//!   instructions with their facts) and says where its hooks go
//!   ([`Insertions`]: calls to compiled hooks with arguments, counters,
//!   trace records). The instrumented copy is cached, so a tool pays for
//!   it once per kernel; the requests of every tool attached go into one
//!   copy;
//! - [`Tool::hooks_loaded`] when a copy loads its own instance of the tool's
//!   hook module (initialise globals there);
//! - [`Tool::after_launch`] when the launch completed (or failed), with an
//!   [`Outcome`]: the tool's counters and traces, its hook module's globals,
//!   the virtual GPU's own counts to compare with.
//!
//! Tools written in C or C++ are shared libraries using `include/inlay/tool.h`
//! ([`shared_lib`], [`capi`]); tools written in Rust implement [`Tool`].
//! Built-in tools: [`instr_count`], [`opcode_hist`], [`mem_trace`],
//! [`kernel_args`]. [`attach`] builds the tools `inlay run --tool` names.

mod buffers;
pub mod capi;
mod copy;
mod counting;
mod host;
mod insert;
pub mod instr_count;
mod kernel;
pub mod kernel_args;
pub mod mem_trace;
pub mod opcode_hist;
mod options;
mod outcome;
mod output;
pub mod shared_lib;

pub use counting::{Counting, Executed, LaneRecord, Records};
pub use host::{Host, MAX_TOOLS};
pub use inlay_instrument::hooks::{Arg, HookModule, LaunchValue, Placement, Point};
pub use insert::{Counter, Insertions, TraceId};
pub use kernel::{classify, AddressOperand, BlockView, Class, FunctionView, Instr, Kernel, Space};
pub use options::{Options, ToolOptions, HOST_KEYS};
pub use outcome::{Globals, Outcome, TraceData};
pub use output::Output;

pub use inlay_runtime::intercept::LoadedCode;

use inlay_codeobj::metadata::KernelArg;

/// One kernel launch as tools see it.
#[derive(Debug, Clone)]
pub struct Launch {
    /// Launches seen so far in this process, from 0.
    pub index: u64,
    /// Kernel name (as in the code object; C++ names mangled).
    pub kernel: String,
    /// The kernel object dispatched (identifies the kernel in this process).
    pub kernel_object: u64,
    /// Dimensions of the launch (1 to 3).
    pub dimensions: u8,
    /// Work-items per dimension and work-items per workgroup (1 in unused
    /// dimensions).
    pub grid: [u32; 3],
    pub workgroup: [u32; 3],
    /// The kernel-argument segment as the caller filled it, and its address.
    pub kernarg: Vec<u8>,
    pub kernarg_address: u64,
    /// The kernel's arguments from its metadata (explicit and hidden).
    pub args: Vec<KernelArg>,
}

impl Launch {
    /// Workgroups per dimension.
    pub fn groups(&self) -> [u32; 3] {
        [0, 1, 2].map(|d| self.grid[d].div_ceil(self.workgroup[d].max(1)))
    }
}

/// A tool. Callbacks may run on several threads at once (one per queue).
pub trait Tool: Send + Sync {
    fn name(&self) -> &str;

    /// The code object holding the tool's hooks, if it calls any.
    fn hook_module(&self) -> Option<&HookModule> {
        None
    }

    /// A code object was loaded (its executable frozen).
    fn code_object_loaded(&self, code: &LoadedCode, out: &Output) {
        let _ = (code, out);
    }

    /// Whether this launch runs with the tool's hooks.
    fn before_launch(&self, launch: &Launch, out: &Output) -> bool {
        let _ = (launch, out);
        true
    }

    /// Where the tool's hooks go in `kernel`; asked once per kernel. An
    /// error leaves the kernel uninstrumented (and is reported).
    fn instrument(
        &self,
        kernel: &Kernel<'_>,
        at: &mut Insertions,
        out: &Output,
    ) -> Result<(), String>;

    /// An instance of the tool's hook module was loaded with a new copy of
    /// some kernel: set up its globals.
    fn hooks_loaded(&self, globals: &Globals<'_>, out: &Output) {
        let _ = (globals, out);
    }

    /// The launch completed (or failed).
    fn after_launch(&self, launch: &Launch, outcome: &Outcome<'_>, out: &Output);

    /// The runtime is shutting down (or the process exiting).
    fn finish(&self, out: &Output) {
        let _ = out;
    }
}

/// Names of the built-in tools.
pub const BUILT_IN: [&str; 4] = ["instr-count", "opcode-hist", "mem-trace", "kernel-args"];

/// A built-in tool by name, or a tool in a shared library (a path: it
/// contains `/` or ends in `.so`), reading its options from `options`.
pub fn by_name(name: &str, options: ToolOptions<'_>) -> Result<Box<dyn Tool>, String> {
    match name {
        "instr-count" => Ok(Box::new(instr_count::InstrCount::new(options)?)),
        "opcode-hist" => Ok(Box::new(opcode_hist::OpcodeHist::new(options)?)),
        "kernel-args" => Ok(Box::new(kernel_args::KernelArgs::new(options)?)),
        "mem-trace" => Ok(Box::new(mem_trace::MemTrace::new(options)?)),
        path if shared_lib::is_path(path) => {
            Ok(Box::new(shared_lib::SharedLibTool::load(path, options)?))
        }
        _ => Err(format!(
            "no tool named {name} (tools: {}, or a tool library ./NAME.so)",
            BUILT_IN.join(", ")
        )),
    }
}

/// The name a tool is known by in options (`NAME:KEY=VALUE`): a built-in
/// tool's name, or a library's file name without `lib` and `.so`.
pub fn option_scope(spec: &str) -> String {
    if !shared_lib::is_path(spec) {
        return spec.to_string();
    }
    let file = std::path::Path::new(spec)
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let file = file.split(".so").next().unwrap_or_default();
    file.strip_prefix("lib").unwrap_or(file).to_string()
}

/// The tools `INLAY_TOOL`'s comma-separated list names, configured by
/// `INLAY_TOOL_OPTS` (`KEY=VALUE;...`, `TOOL:KEY=VALUE` for one tool;
/// `output=PATH` sends their text to a file instead of standard error,
/// `json=PATH` writes JSON Lines), and where they write. Every option must
/// be read by some tool: unknown ones are an error.
pub fn attach(tools: &str, options: &str) -> Result<(Vec<Box<dyn Tool>>, Output), String> {
    let (built, options) = configure(tools, options, false)?;
    let out = Output::new(options.host("output"), options.host("json"))?;
    Ok((built, out))
}

/// What [`attach`] does short of opening outputs: every tool named exists
/// and accepts its options, and no option is unknown. `inlay run` calls it
/// (through the runtime library, `inlay_tools_check`) before starting the
/// program.
pub fn check(tools: &str, options: &str) -> Result<(), String> {
    configure(tools, options, true).map(|_| ())
}

fn configure(
    tools: &str,
    options: &str,
    checking: bool,
) -> Result<(Vec<Box<dyn Tool>>, Options), String> {
    let mut options = Options::parse(options)?;
    options.checking = checking;
    let specs: Vec<&str> = tools
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    if specs.is_empty() {
        return Err("no tool named".into());
    }
    if specs.len() > MAX_TOOLS {
        return Err(format!("at most {MAX_TOOLS} tools at once"));
    }
    let scopes: Vec<String> = specs.iter().map(|s| option_scope(s)).collect();
    if let Some((i, s)) = scopes
        .iter()
        .enumerate()
        .find(|(i, s)| scopes[..*i].contains(s))
    {
        return Err(format!(
            "tool {} is named twice ({} and {})",
            s,
            specs[scopes.iter().position(|x| x == s).unwrap_or(0)],
            specs[i]
        ));
    }
    let built = specs
        .iter()
        .zip(&scopes)
        .map(|(spec, scope)| by_name(spec, options.for_tool(scope)))
        .collect::<Result<Vec<_>, _>>()?;
    for key in HOST_KEYS {
        options.host(key);
    }
    options.unused(&scopes)?;
    Ok((built, options))
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
