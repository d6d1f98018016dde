//! The C ABI of `include/inlay/tool.h`: the `inlay_*` functions a tool
//! library calls (exported by the runtime library that links this crate),
//! the `#[repr(C)]` structures it reads, and the handles behind its opaque
//! pointers. [`crate::shared_lib`] loads tools and calls their callbacks.
//!
//! Every function checks its pointers, never unwinds into C (a panic
//! becomes a failure), and reports failures through `inlay_error()`.

use std::cell::{OnceCell, RefCell};
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::Mutex;

use inlay_isa::{Access, RegFile, Register};

use crate::kernel::{AddressOperand, Space};
use crate::{Arg, LaunchValue, Point};
use crate::{Globals, HookModule, Insertions, Kernel, Output, ToolOptions};

thread_local! {
    static ERROR: RefCell<CString> = RefCell::new(CString::default());
    /// What the tool gave `inlay_tool_error` during the callback running on
    /// this thread (callbacks of one tool may run on several at once).
    static TOOL_ERROR: RefCell<Option<String>> = const { RefCell::new(None) };
    /// Where `inlay_tool_print` writes during a callback.
    static OUTPUT: std::cell::Cell<*const Output> = const { std::cell::Cell::new(std::ptr::null()) };
}

fn fail(message: impl Into<String>) -> c_int {
    let m = CString::new(message.into().replace('\0', " ")).unwrap_or_default();
    ERROR.with(|e| *e.borrow_mut() = m);
    -1
}

/// Runs a tool callback `f`; with the message the tool gave
/// `inlay_tool_error` during it, if any.
pub(crate) fn with_tool_error<R>(f: impl FnOnce() -> R) -> (R, Option<String>) {
    TOOL_ERROR.with(|e| e.borrow_mut().take());
    let r = f();
    (r, TOOL_ERROR.with(|e| e.borrow_mut().take()))
}

/// Runs `f` with `out` as the output of `inlay_tool_print`.
pub(crate) fn with_output<R>(out: &Output, f: impl FnOnce() -> R) -> R {
    let before = OUTPUT.with(|o| o.replace(out as *const Output));
    let r = f();
    OUTPUT.with(|o| o.set(before));
    r
}

/// Runs `f`, turning a panic into a failure.
fn guard(f: impl FnOnce() -> Result<(), String>) -> c_int {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => fail(e),
        Err(_) => fail("internal error (panic) in the Inlay runtime"),
    }
}

/// A C string argument, or an error naming it.
///
/// # Safety
/// `p` is null or points to a NUL-terminated string.
unsafe fn text<'a>(p: *const c_char, what: &str) -> Result<&'a str, String> {
    if p.is_null() {
        return Err(format!("{what} is NULL"));
    }
    // SAFETY: the caller passes a NUL-terminated string (checked non-null).
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| format!("{what} is not UTF-8"))
}

// ---- Registers ------------------------------------------------------------

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CReg {
    pub file: u32,
    pub first: u32,
    pub count: u32,
    pub access: u32,
}

const FILES: [RegFile; 12] = [
    RegFile::Sgpr,
    RegFile::Vgpr,
    RegFile::Agpr,
    RegFile::Ttmp,
    RegFile::Vcc,
    RegFile::Exec,
    RegFile::M0,
    RegFile::Scc,
    RegFile::FlatScratch,
    RegFile::XnackMask,
    RegFile::Pc,
    RegFile::HwReg,
];

impl CReg {
    fn of(r: Option<Register>, access: u32) -> CReg {
        match r {
            Some(r) => CReg {
                file: FILES.iter().position(|f| *f == r.file).unwrap_or(0) as u32,
                first: u32::from(r.first),
                count: u32::from(r.count),
                access,
            },
            None => CReg::default(),
        }
    }

    fn register(&self) -> Result<Register, String> {
        let file = *FILES
            .get(self.file as usize)
            .ok_or_else(|| format!("register file {} does not exist", self.file))?;
        let first = u16::try_from(self.first).map_err(|_| "register number too large")?;
        match self.count {
            1 | 2 => Ok(Register::new(file, first, self.count as u8)),
            n => Err(format!("a hook argument is 1 or 2 registers, not {n}")),
        }
    }
}

fn access_bits(a: Access) -> u32 {
    let mut b = 0;
    if a.reads() {
        b |= 1;
    }
    if a.writes() {
        b |= 2;
    }
    if matches!(
        a,
        Access::CondRead | Access::CondWrite | Access::ReadCondWrite
    ) {
        b |= 4;
    }
    b
}

// ---- The kernel view ----------------------------------------------------------

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CAddressOperand {
    pub space: u32,
    pub vector_base: CReg,
    pub scalar_base: CReg,
    pub scalar_offset: CReg,
    pub offset: i64,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CInstr {
    pub index: u32,
    pub function: u32,
    pub block: u32,
    pub size: u32,
    pub address: u64,
    pub opcode: *const c_char,
    pub mnemonic: *const c_char,
    pub text: *const c_char,
    pub flags: u32,
    pub num_regs: u32,
    pub regs: *const CReg,
    pub has_address_operand: c_int,
    pub address_operand: CAddressOperand,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CFunction {
    pub name: *const c_char,
    pub is_kernel: c_int,
    pub entry: u64,
    pub first_block: u32,
    pub num_blocks: u32,
    pub first_instr: u32,
    pub num_instrs: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CBlock {
    pub function: u32,
    pub first_instr: u32,
    pub num_instrs: u32,
    pub ends_wave: c_int,
    pub returns: c_int,
    pub num_succs: u32,
    pub succs: *const u32,
}

/// The C structures of a kernel, built on first use; they point into the
/// vectors and strings kept here.
struct View {
    instrs: Vec<CInstr>,
    functions: Vec<CFunction>,
    blocks: Vec<CBlock>,
    _regs: Vec<Vec<CReg>>,
    _succs: Vec<Vec<u32>>,
    _strings: Vec<CString>,
}

fn cstring(s: &str) -> CString {
    CString::new(s.replace('\0', " ")).unwrap_or_default()
}

impl View {
    fn new(k: &Kernel<'_>) -> View {
        let mut strings = Vec::new();
        let mut keep = |s: &str| {
            let c = cstring(s);
            let p = c.as_ptr();
            strings.push(c);
            p
        };
        let mut regs = Vec::new();
        let mut instrs = Vec::with_capacity(k.instruction_count());
        for ins in k.instructions() {
            let r: Vec<CReg> = ins
                .registers()
                .into_iter()
                .map(|(reg, a)| CReg::of(Some(reg), access_bits(a)))
                .collect();
            let addr = ins.address_operand();
            let space = |a: &AddressOperand| match a.space {
                Space::Flat => 0,
                Space::Global => 1,
                Space::Scratch => 2,
                Space::Buffer => 3,
                Space::Image => 4,
                Space::Scalar => 5,
                Space::Lds => 6,
            };
            instrs.push(CInstr {
                index: ins.index as u32,
                function: ins.function() as u32,
                block: ins.block() as u32,
                size: ins.size() as u32,
                address: ins.addr(),
                opcode: keep(ins.opcode()),
                mnemonic: keep(ins.mnemonic()),
                text: keep(&ins.text()),
                flags: ins.class().0,
                num_regs: r.len() as u32,
                regs: r.as_ptr(),
                has_address_operand: c_int::from(addr.is_some()),
                address_operand: CAddressOperand {
                    space: addr.as_ref().map_or(0, space),
                    vector_base: CReg::of(addr.and_then(|a| a.vector_base), 1),
                    scalar_base: CReg::of(addr.and_then(|a| a.scalar_base), 1),
                    scalar_offset: CReg::of(addr.and_then(|a| a.scalar_offset), 1),
                    offset: addr.map_or(0, |a| a.offset),
                },
            });
            regs.push(r);
        }
        let functions = k
            .functions()
            .map(|f| {
                let b = f.blocks();
                let i = f.instructions();
                CFunction {
                    name: f.name().map_or(std::ptr::null(), &mut keep),
                    is_kernel: c_int::from(f.is_kernel()),
                    entry: f.entry(),
                    first_block: b.start as u32,
                    num_blocks: b.len() as u32,
                    first_instr: i.start as u32,
                    num_instrs: i.len() as u32,
                }
            })
            .collect();
        let mut succs = Vec::new();
        let blocks = k
            .blocks()
            .map(|b| {
                let s: Vec<u32> = b.successors().iter().map(|&s| s as u32).collect();
                let i = b.instructions();
                let c = CBlock {
                    function: b.function() as u32,
                    first_instr: i.start as u32,
                    num_instrs: i.len() as u32,
                    ends_wave: c_int::from(b.ends_wave()),
                    returns: c_int::from(b.returns()),
                    num_succs: s.len() as u32,
                    succs: s.as_ptr(),
                };
                succs.push(s);
                c
            })
            .collect();
        View {
            instrs,
            functions,
            blocks,
            _regs: regs,
            _succs: succs,
            _strings: strings,
        }
    }
}

/// What `inlay_kernel_t *` points to during `inlay_instrument`.
pub struct KernelHandle<'a> {
    kernel: &'a Kernel<'a>,
    at: RefCell<&'a mut Insertions>,
    name: CString,
    view: OnceCell<View>,
}

// The handle is used on the thread that runs the callback only.
impl<'a> KernelHandle<'a> {
    pub(crate) fn new(kernel: &'a Kernel<'a>, at: &'a mut Insertions) -> Self {
        KernelHandle {
            kernel,
            at: RefCell::new(at),
            name: cstring(kernel.name()),
            view: OnceCell::new(),
        }
    }

    fn view(&self) -> &View {
        self.view.get_or_init(|| View::new(self.kernel))
    }
}

/// # Safety
/// `k` is null or the handle the runtime passed to `inlay_instrument`.
unsafe fn kernel<'a>(k: *const c_void) -> Option<&'a KernelHandle<'a>> {
    // SAFETY: the runtime created `k` as a `KernelHandle` that lives for the
    // whole callback; C code may only use it during that callback.
    unsafe { k.cast::<KernelHandle<'a>>().as_ref() }
}

/// # Safety
/// `k` is the handle the runtime passed to `inlay_instrument`.
#[no_mangle]
pub unsafe extern "C" fn inlay_kernel_name(k: *const c_void) -> *const c_char {
    // SAFETY: per this function's contract.
    unsafe { kernel(k) }.map_or(std::ptr::null(), |k| k.name.as_ptr())
}

/// # Safety
/// `k` is the handle the runtime passed to `inlay_instrument`.
#[no_mangle]
pub unsafe extern "C" fn inlay_kernel_object(k: *const c_void) -> u64 {
    // SAFETY: per this function's contract.
    unsafe { kernel(k) }.map_or(0, |k| k.kernel.object())
}

/// # Safety
/// `k` is the handle the runtime passed to `inlay_instrument`.
#[no_mangle]
pub unsafe extern "C" fn inlay_kernel_instr_count(k: *const c_void) -> u32 {
    // SAFETY: per this function's contract.
    unsafe { kernel(k) }.map_or(0, |k| k.kernel.instruction_count() as u32)
}

/// # Safety
/// `k` is the handle the runtime passed to `inlay_instrument`.
#[no_mangle]
pub unsafe extern "C" fn inlay_kernel_instr(k: *const c_void, i: u32) -> *const CInstr {
    // SAFETY: per this function's contract.
    let Some(k) = (unsafe { kernel(k) }) else {
        return std::ptr::null();
    };
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        k.view()
            .instrs
            .get(i as usize)
            .map_or(std::ptr::null(), |c| c as *const CInstr)
    }))
    .unwrap_or(std::ptr::null())
}

/// # Safety
/// `k` is the handle the runtime passed to `inlay_instrument`.
#[no_mangle]
pub unsafe extern "C" fn inlay_kernel_function_count(k: *const c_void) -> u32 {
    // SAFETY: per this function's contract.
    unsafe { kernel(k) }.map_or(0, |k| k.kernel.functions().len() as u32)
}

/// # Safety
/// `k` is the handle the runtime passed to `inlay_instrument`.
#[no_mangle]
pub unsafe extern "C" fn inlay_kernel_function(k: *const c_void, i: u32) -> *const CFunction {
    // SAFETY: per this function's contract.
    let Some(k) = (unsafe { kernel(k) }) else {
        return std::ptr::null();
    };
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        k.view()
            .functions
            .get(i as usize)
            .map_or(std::ptr::null(), |c| c as *const CFunction)
    }))
    .unwrap_or(std::ptr::null())
}

/// # Safety
/// `k` is the handle the runtime passed to `inlay_instrument`.
#[no_mangle]
pub unsafe extern "C" fn inlay_kernel_block_count(k: *const c_void) -> u32 {
    // SAFETY: per this function's contract.
    unsafe { kernel(k) }.map_or(0, |k| k.kernel.blocks().len() as u32)
}

/// # Safety
/// `k` is the handle the runtime passed to `inlay_instrument`.
#[no_mangle]
pub unsafe extern "C" fn inlay_kernel_block(k: *const c_void, i: u32) -> *const CBlock {
    // SAFETY: per this function's contract.
    let Some(k) = (unsafe { kernel(k) }) else {
        return std::ptr::null();
    };
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        k.view()
            .blocks
            .get(i as usize)
            .map_or(std::ptr::null(), |c| c as *const CBlock)
    }))
    .unwrap_or(std::ptr::null())
}

// ---- Insertion ----------------------------------------------------------------

/// Applies `f` to the kernel's insertions.
///
/// # Safety
/// `k` is null or the handle the runtime passed to `inlay_instrument`.
unsafe fn insert(
    k: *const c_void,
    f: impl FnOnce(&KernelHandle<'_>, &mut Insertions) -> Result<(), String>,
) -> c_int {
    // SAFETY: per this function's contract.
    let Some(k) = (unsafe { kernel(k) }) else {
        return fail("the kernel handle is NULL");
    };
    guard(|| {
        let mut at =
            k.at.try_borrow_mut()
                .map_err(|_| "insertion from inside another insertion")?;
        f(k, &mut at)
    })
}

/// # Safety
/// `k` is the handle the runtime passed to `inlay_instrument`; `hook` a
/// NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn inlay_insert_call(
    k: *const c_void,
    instr: u32,
    point: c_int,
    hook: *const c_char,
    flags: u32,
) -> c_int {
    // SAFETY: `hook` per this function's contract.
    let hook = match unsafe { text(hook, "the hook name") } {
        Ok(h) => h,
        Err(e) => return fail(e),
    };
    let i = instr as usize;
    // SAFETY: per this function's contract.
    unsafe {
        insert(k, |_, at| {
            let point = match point {
                0 => Point::Before(i),
                1 => Point::After(i),
                2 => Point::Entry,
                3 => Point::Exits,
                p => return Err(format!("point {p} is not an inlay_point_t")),
            };
            if flags & !1 != 0 {
                return Err(format!("unknown flags {flags:#x}"));
            }
            at.call(point, hook, &[], flags & 1 != 0)
        })
    }
}

/// # Safety
/// `k` is the handle the runtime passed to `inlay_instrument`.
unsafe fn add_arg(k: *const c_void, arg: Result<Arg, String>) -> c_int {
    // SAFETY: per this function's contract.
    unsafe { insert(k, |_, at| at.add_arg(arg?)) }
}

/// # Safety
/// `k` is the handle the runtime passed to `inlay_instrument`.
#[no_mangle]
pub unsafe extern "C" fn inlay_add_call_arg_u32(k: *const c_void, v: u32) -> c_int {
    // SAFETY: per this function's contract.
    unsafe { add_arg(k, Ok(Arg::Const32(v))) }
}

/// # Safety
/// `k` is the handle the runtime passed to `inlay_instrument`.
#[no_mangle]
pub unsafe extern "C" fn inlay_add_call_arg_u64(k: *const c_void, v: u64) -> c_int {
    // SAFETY: per this function's contract.
    unsafe { add_arg(k, Ok(Arg::Const64(v))) }
}

/// # Safety
/// `k` is the handle the runtime passed to `inlay_instrument`.
#[no_mangle]
pub unsafe extern "C" fn inlay_add_call_arg_reg(k: *const c_void, r: CReg) -> c_int {
    // SAFETY: per this function's contract.
    unsafe { add_arg(k, r.register().map(Arg::Value)) }
}

/// # Safety
/// `k` is the handle the runtime passed to `inlay_instrument`.
#[no_mangle]
pub unsafe extern "C" fn inlay_add_call_arg_reg_ref(k: *const c_void, r: CReg) -> c_int {
    // SAFETY: per this function's contract.
    unsafe { add_arg(k, r.register().map(Arg::Reference)) }
}

/// # Safety
/// `k` is the handle the runtime passed to `inlay_instrument`.
#[no_mangle]
pub unsafe extern "C" fn inlay_add_call_arg_mem_addr(k: *const c_void) -> c_int {
    // SAFETY: per this function's contract.
    unsafe { add_arg(k, Ok(Arg::Address)) }
}

/// # Safety
/// `k` is the handle the runtime passed to `inlay_instrument`.
#[no_mangle]
pub unsafe extern "C" fn inlay_add_call_arg_kernarg_dword(k: *const c_void, offset: u32) -> c_int {
    // SAFETY: per this function's contract.
    unsafe { add_arg(k, Ok(Arg::Launch(LaunchValue::KernargDword(offset)))) }
}

/// # Safety
/// `k` is the handle the runtime passed to `inlay_instrument`.
#[no_mangle]
pub unsafe extern "C" fn inlay_add_call_arg_launch(k: *const c_void, v: c_int) -> c_int {
    let value = match v {
        0..=2 => Ok(LaunchValue::GridSize(v as u8)),
        3..=5 => Ok(LaunchValue::WorkgroupSize(v as u8 - 3)),
        6..=8 => Ok(LaunchValue::WorkgroupId(v as u8 - 6)),
        9 => Ok(LaunchValue::KernargPtr),
        10 => Ok(LaunchValue::DispatchPtr),
        11..=13 => Ok(LaunchValue::WorkitemId(v as u8 - 11)),
        _ => Err(format!("{v} is not an inlay_launch_value_t")),
    };
    // SAFETY: per this function's contract.
    unsafe { add_arg(k, value.map(Arg::Launch)) }
}

// ---- The tool ------------------------------------------------------------------

/// What `inlay_tool_t *` points to: the runtime's side of one tool library.
pub struct ToolHandle {
    pub(crate) name: String,
    pub(crate) checking: bool,
    /// The options, during `inlay_tool_init` only.
    options: Mutex<Option<OptionsRef>>,
    /// Option values handed out (the tool may keep the pointers).
    values: Mutex<Vec<CString>>,
    pub(crate) hooks: Mutex<Option<HookModule>>,
}

/// The tool's options while `inlay_tool_init` runs.
struct OptionsRef(*const ToolOptions<'static>);
// SAFETY: set and used only while `inlay_tool_init` runs, on one thread,
// and cleared before the options it points to go away.
unsafe impl Send for OptionsRef {}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl ToolHandle {
    pub(crate) fn new(name: &str, checking: bool) -> ToolHandle {
        ToolHandle {
            name: name.to_string(),
            checking,
            options: Mutex::new(None),
            values: Mutex::new(Vec::new()),
            hooks: Mutex::new(None),
        }
    }

    /// Runs `f` (the tool's init) with `options` readable through
    /// `inlay_tool_option`.
    pub(crate) fn with_options<R>(&self, options: &ToolOptions<'_>, f: impl FnOnce() -> R) -> R {
        let p = (options as *const ToolOptions<'_>).cast::<ToolOptions<'static>>();
        *lock(&self.options) = Some(OptionsRef(p));
        let r = f();
        *lock(&self.options) = None;
        r
    }
}

/// # Safety
/// `t` is null or the handle the runtime passed to the tool.
unsafe fn tool<'a>(t: *const c_void) -> Option<&'a ToolHandle> {
    // SAFETY: the runtime created `t` as a boxed `ToolHandle` that lives as
    // long as the tool is loaded.
    unsafe { t.cast::<ToolHandle>().as_ref() }
}

/// # Safety
/// `t` is the handle passed to `inlay_tool_init`; `key` a NUL-terminated
/// string.
#[no_mangle]
pub unsafe extern "C" fn inlay_tool_option(t: *const c_void, key: *const c_char) -> *const c_char {
    // SAFETY: per this function's contract.
    let (Some(t), Ok(key)) = (unsafe { tool(t) }, unsafe { text(key, "the key") }) else {
        fail("inlay_tool_option: NULL tool or key");
        return std::ptr::null();
    };
    let options = lock(&t.options);
    let Some(OptionsRef(p)) = options.as_ref() else {
        fail("inlay_tool_option is only available in inlay_tool_init");
        return std::ptr::null();
    };
    // SAFETY: `p` points to the options `with_options` was given, which
    // outlive the init call during which it is set.
    let value = unsafe { &**p }.get(key);
    match value {
        None => std::ptr::null(),
        Some(v) => {
            let c = cstring(v);
            let ptr = c.as_ptr();
            lock(&t.values).push(c);
            ptr
        }
    }
}

/// # Safety
/// `t` is the tool's handle; `message` a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn inlay_tool_error(t: *const c_void, message: *const c_char) {
    // SAFETY: per this function's contract.
    if let (Some(t), Ok(m)) = (unsafe { tool(t) }, unsafe { text(message, "the message") }) {
        let _ = t;
        TOOL_ERROR.with(|e| *e.borrow_mut() = Some(m.to_string()));
    }
}

/// # Safety
/// `t` is the tool's handle.
#[no_mangle]
pub unsafe extern "C" fn inlay_tool_checking(t: *const c_void) -> c_int {
    // SAFETY: per this function's contract.
    unsafe { tool(t) }.map_or(0, |t| c_int::from(t.checking))
}

/// # Safety
/// `t` is the tool's handle; `bytes` points to `size` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn inlay_tool_hooks(
    t: *const c_void,
    bytes: *const c_void,
    size: usize,
) -> c_int {
    // SAFETY: per this function's contract.
    let Some(t) = (unsafe { tool(t) }) else {
        return fail("the tool handle is NULL");
    };
    if bytes.is_null() || size == 0 {
        return fail("inlay_tool_hooks: no code object (NULL or 0 bytes)");
    }
    // SAFETY: the caller gives `size` readable bytes at `bytes`.
    let data = unsafe { std::slice::from_raw_parts(bytes.cast::<u8>(), size) }.to_vec();
    guard(|| {
        let m =
            HookModule::new(&format!("of {}", t.name), data.into()).map_err(|e| e.to_string())?;
        *lock(&t.hooks) = Some(m);
        Ok(())
    })
}

/// # Safety
/// `t` is the tool's handle; `path` a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn inlay_tool_hooks_file(t: *const c_void, path: *const c_char) -> c_int {
    // SAFETY: per this function's contract.
    let (Some(t), path) = (unsafe { tool(t) }, unsafe { text(path, "the path") }) else {
        return fail("the tool handle is NULL");
    };
    guard(|| {
        let path = path?;
        let data = std::fs::read(path).map_err(|e| format!("hook module {path}: {e}"))?;
        *lock(&t.hooks) = Some(HookModule::new(path, data.into()).map_err(|e| e.to_string())?);
        Ok(())
    })
}

/// # Safety
/// `line` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn inlay_tool_print(_t: *const c_void, line: *const c_char) {
    // SAFETY: per this function's contract.
    let Ok(line) = (unsafe { text(line, "the line") }) else {
        return;
    };
    let line = line.strip_suffix('\n').unwrap_or(line);
    let out = OUTPUT.with(|o| o.get());
    // SAFETY: set by `with_output` to an Output that outlives the callback
    // during which it is set; null otherwise.
    match unsafe { out.as_ref() } {
        Some(o) => o.line(line),
        None => eprintln!("{line}"),
    }
}

#[no_mangle]
pub extern "C" fn inlay_error() -> *const c_char {
    ERROR.with(|e| e.borrow().as_ptr())
}

// ---- Launches and globals ----------------------------------------------------------

#[repr(C)]
pub struct CLaunch {
    pub index: u64,
    pub kernel: *const c_char,
    pub kernel_demangled: *const c_char,
    pub kernel_object: u64,
    pub dimensions: u32,
    pub grid: [u32; 3],
    pub workgroup: [u32; 3],
    pub kernarg: *const c_void,
    pub kernarg_size: usize,
    pub kernarg_address: u64,
}

#[repr(C)]
pub struct CLaunchEnd {
    pub instrumented: c_int,
    pub error: *const c_char,
    pub globals: *const c_void,
}

/// A launch as C sees it, with the strings it points to.
pub(crate) struct LaunchC {
    pub c: CLaunch,
    _strings: [CString; 2],
}

impl LaunchC {
    pub(crate) fn new(l: &crate::Launch) -> LaunchC {
        let strings = [cstring(&l.kernel), cstring(&crate::display_name(&l.kernel))];
        LaunchC {
            c: CLaunch {
                index: l.index,
                kernel: strings[0].as_ptr(),
                kernel_demangled: strings[1].as_ptr(),
                kernel_object: l.kernel_object,
                dimensions: u32::from(l.dimensions),
                grid: l.grid,
                workgroup: l.workgroup,
                kernarg: l.kernarg.as_ptr().cast(),
                kernarg_size: l.kernarg.len(),
                kernarg_address: l.kernarg_address,
            },
            _strings: strings,
        }
    }
}

/// # Safety
/// `g` is null or a globals handle the runtime passed to a callback.
unsafe fn globals<'a>(g: *const c_void) -> Option<&'a Globals<'a>> {
    // SAFETY: the runtime passes a `Globals` that lives for the callback.
    unsafe { g.cast::<Globals<'a>>().as_ref() }
}

/// # Safety
/// `g` is a globals handle from a callback; `name` a NUL-terminated
/// string; `dst` has room for `size` bytes.
#[no_mangle]
pub unsafe extern "C" fn inlay_globals_read(
    g: *const c_void,
    name: *const c_char,
    offset: usize,
    dst: *mut c_void,
    size: usize,
) -> c_int {
    // SAFETY: per this function's contract.
    let (Some(g), name) = (unsafe { globals(g) }, unsafe { text(name, "the name") }) else {
        return fail("the globals handle is NULL");
    };
    if dst.is_null() && size > 0 {
        return fail("inlay_globals_read: NULL destination");
    }
    guard(|| {
        let mut buf = vec![0u8; size];
        g.read(name?, offset as u64, &mut buf)?;
        // SAFETY: the caller gives room for `size` bytes at `dst`.
        unsafe { std::ptr::copy_nonoverlapping(buf.as_ptr(), dst.cast::<u8>(), size) };
        Ok(())
    })
}

/// # Safety
/// `g` is a globals handle from a callback; `name` a NUL-terminated
/// string; `src` holds `size` bytes.
#[no_mangle]
pub unsafe extern "C" fn inlay_globals_write(
    g: *const c_void,
    name: *const c_char,
    offset: usize,
    src: *const c_void,
    size: usize,
) -> c_int {
    // SAFETY: per this function's contract.
    let (Some(g), name) = (unsafe { globals(g) }, unsafe { text(name, "the name") }) else {
        return fail("the globals handle is NULL");
    };
    if src.is_null() && size > 0 {
        return fail("inlay_globals_write: NULL source");
    }
    guard(|| {
        let bytes = if size == 0 {
            &[][..]
        } else {
            // SAFETY: the caller gives `size` readable bytes at `src`.
            unsafe { std::slice::from_raw_parts(src.cast::<u8>(), size) }
        };
        g.write(name?, offset as u64, bytes)
    })
}

/// # Safety
/// `g` is a globals handle from a callback; `name` a NUL-terminated
/// string; `address` and `size` are null or writable.
#[no_mangle]
pub unsafe extern "C" fn inlay_globals_address(
    g: *const c_void,
    name: *const c_char,
    address: *mut u64,
    size: *mut usize,
) -> c_int {
    // SAFETY: per this function's contract.
    let (Some(g), name) = (unsafe { globals(g) }, unsafe { text(name, "the name") }) else {
        return fail("the globals handle is NULL");
    };
    guard(|| {
        let name = name?;
        let (a, s) = g
            .address(name)
            .ok_or_else(|| format!("the hook module has no global {name}"))?;
        // SAFETY: the caller gives writable (or null) pointers.
        unsafe {
            if let Some(p) = address.as_mut() {
                *p = a;
            }
            if let Some(p) = size.as_mut() {
                *p = s as usize;
            }
        }
        Ok(())
    })
}

// ---- Checking options before a program starts ----------------------------------

/// Checks that the tools `tools` names (as `INLAY_TOOL`) exist and accept
/// the options `options` (as `INLAY_TOOL_OPTS`), without starting them:
/// 0, or -1 with the reason in `error` (`size` bytes, NUL-terminated,
/// truncated if longer). `inlay run` calls it before starting the program.
///
/// # Safety
/// `tools` and `options` are NUL-terminated strings; `error` is null or
/// has room for `size` bytes.
#[no_mangle]
pub unsafe extern "C" fn inlay_tools_check(
    tools: *const c_char,
    options: *const c_char,
    error: *mut c_char,
    size: usize,
) -> c_int {
    // SAFETY: per this function's contract.
    let (tools, options) = unsafe { (text(tools, "the tools"), text(options, "the options")) };
    let r = guard(|| crate::check(tools?, options?));
    if r != 0 && !error.is_null() && size > 0 {
        let msg = ERROR.with(|e| e.borrow().as_bytes().to_vec());
        let n = msg.len().min(size - 1);
        // SAFETY: the caller gives room for `size` bytes at `error`.
        unsafe {
            std::ptr::copy_nonoverlapping(msg.as_ptr(), error.cast::<u8>(), n);
            *error.add(n) = 0;
        }
    }
    r
}
