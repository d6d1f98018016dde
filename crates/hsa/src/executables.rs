//! Code object readers, executables, their symbols and the AMD loader
//! extension, over `inlay-loader`.
//!
//! Kernels and variables are presented as ROCr presents them (kernels are
//! named `<name>.kd`). Device functions — functions without a descriptor,
//! local ones included — are symbols of kind HSA_SYMBOL_KIND_INDIRECT_FUNCTION
//! whose INDIRECT_FUNCTION_OBJECT is their loaded address; their size is the
//! Inlay attribute [`SYMBOL_INFO_INDIRECT_FUNCTION_SIZE`] (include/inlay_hsa_ext.h).

use crate::abi::*;
use crate::export;
use crate::state::{self, rt};
use inlay_codeobj::TargetId;
use inlay_loader::{
    AgentRef, CodeObjectId, ErrorKind, Executable, LoadError, SymbolId, SymbolKind,
    VariableAllocation,
};
use inlay_runtime::device::Device;
use inlay_runtime::intercept::LoadedCode;
use inlay_runtime::{Runtime, Status};
use std::collections::HashMap;
use std::ffi::{c_char, c_void};
use std::sync::{Arc, Mutex, MutexGuard};

/// `INLAY_EXECUTABLE_SYMBOL_INFO_INDIRECT_FUNCTION_SIZE`: size in bytes of a
/// device function's code (`uint64_t`). In the AMD range, unused by ROCr.
pub const SYMBOL_INFO_INDIRECT_FUNCTION_SIZE: u32 = 0xA100;

// Handle encodings. Readers and executables: a tag in bits 32..48 plus a
// counter. Symbols and loaded code objects: a tag in bits 48..64, the
// executable's counter in bits 24..48 and index + 1 below.
const READER_TAG: u64 = 0x4A72_0000_0000;
const EXEC_TAG: u64 = 0x4A65_0000_0000;
const SYMBOL_TAG: u64 = 0x4A73 << 48;
const LCO_TAG: u64 = 0x4A6C << 48;
const MAX_COUNTER: u64 = (1 << 24) - 1;

struct Reader {
    bytes: Arc<[u8]>,
    uri: String,
}

struct Exec {
    exe: Executable,
    profile: u32,
    rounding: u32,
    /// Variables defined read-only by the host (their segment is READONLY).
    readonly: Vec<SymbolId>,
    /// The device running its kernels since freeze, and its id for the code.
    code: Option<(Arc<dyn Device>, u64)>,
}

impl Drop for Exec {
    fn drop(&mut self) {
        if let Some((device, id)) = self.code.take() {
            device.remove_code(id);
        }
    }
}

/// Freezes `exec` (linking its code objects) and hands their code to the
/// device, which predecodes it once, so its kernels can be dispatched.
fn freeze(rt: &Runtime, exec: Handle) -> Result<(), Status> {
    let loaded = with(|r| {
        let e = r.exec(exec)?;
        e.exe.freeze().map_err(fail)?;
        let mut regions = Vec::new();
        let mut loaded = Vec::new();
        for co in e.exe.code_objects() {
            let region = co.code_region();
            regions.extend(region.clone());
            loaded.push(LoadedCode {
                region,
                bytes: co.storage.clone(),
                load_delta: co.load_delta,
                kernels: co
                    .kernel_objects()
                    .map(|(name, kd)| (name.to_string(), kd))
                    .collect(),
                name: co.name.clone(),
            });
        }
        let device = rt.device();
        let id = device.add_code(&regions).map_err(|why| {
            if std::env::var_os("INLAY_LOG").is_some() {
                eprintln!("inlay: freeze: {why}");
            }
            Status::InvalidCodeObject
        })?;
        e.code = Some((device, id));
        Ok(loaded)
    })?;
    // Outside the registry: instrumentation may load code objects of its own.
    rt.executable_frozen(&loaded);
    Ok(())
}

#[derive(Default)]
struct Registry {
    counter: u64,
    readers: HashMap<u64, Reader>,
    executables: HashMap<u64, Exec>,
}

static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);

fn registry() -> MutexGuard<'static, Option<Registry>> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `f` on the registry (created on first use).
fn with<T>(f: impl FnOnce(&mut Registry) -> Result<T, Status>) -> Result<T, Status> {
    let mut g = registry();
    f(g.get_or_insert_with(Registry::default))
}

impl Registry {
    fn next(&mut self) -> Result<u64, Status> {
        if self.counter >= MAX_COUNTER {
            return Err(Status::OutOfResources);
        }
        self.counter += 1;
        Ok(self.counter)
    }

    fn exec(&mut self, h: Handle) -> Result<&mut Exec, Status> {
        self.executables
            .get_mut(&h.wrapping_sub(EXEC_TAG))
            .ok_or(Status::InvalidExecutable)
    }

    fn reader(&self, h: Handle) -> Result<&Reader, Status> {
        self.readers
            .get(&h.wrapping_sub(READER_TAG))
            .ok_or(Status::InvalidCodeObjectReader)
    }

    /// The executable and symbol a symbol handle names.
    fn symbol(&self, h: Handle) -> Result<(u64, &Exec, SymbolId), Status> {
        let (n, i) = split(h, SYMBOL_TAG).ok_or(Status::InvalidExecutableSymbol)?;
        let e = self
            .executables
            .get(&n)
            .ok_or(Status::InvalidExecutableSymbol)?;
        let id = SymbolId(i);
        e.exe.get(id).ok_or(Status::InvalidExecutableSymbol)?;
        Ok((n, e, id))
    }

    fn loaded(&self, h: Handle) -> Result<(u64, &Exec, CodeObjectId), Status> {
        let (n, i) = split(h, LCO_TAG).ok_or(Status::InvalidArgument)?;
        let e = self.executables.get(&n).ok_or(Status::InvalidArgument)?;
        let id = CodeObjectId(i);
        e.exe.code_object(id).ok_or(Status::InvalidArgument)?;
        Ok((n, e, id))
    }
}

fn split(h: Handle, tag: u64) -> Option<(u64, usize)> {
    if h & (0xffff << 48) != tag {
        return None;
    }
    let n = (h >> 24) & MAX_COUNTER;
    let i = (h & MAX_COUNTER).checked_sub(1)?;
    Some((n, i as usize))
}

fn symbol_handle(n: u64, id: SymbolId) -> Handle {
    SYMBOL_TAG | (n << 24) | (id.0 as u64 + 1)
}

fn lco_handle(n: u64, id: CodeObjectId) -> Handle {
    LCO_TAG | (n << 24) | (id.0 as u64 + 1)
}

fn status_of(e: &LoadError) -> Status {
    match e.kind {
        ErrorKind::InvalidCodeObject => Status::InvalidCodeObject,
        ErrorKind::IncompatibleTarget => Status::IncompatibleArguments,
        ErrorKind::Frozen => Status::FrozenExecutable,
        ErrorKind::AlreadyDefined => Status::VariableAlreadyDefined,
        ErrorKind::Undefined => Status::VariableUndefined,
        ErrorKind::OutOfResources => Status::OutOfResources,
    }
}

/// Turns a loader error into its status, telling the user why when asked
/// (INLAY_LOG=1): a status code alone does not say which symbol is missing.
fn fail(e: LoadError) -> Status {
    if std::env::var_os("INLAY_LOG").is_some() {
        eprintln!("inlay-hsa: loader: {e}");
    }
    status_of(&e)
}

/// The loader's view of a GPU agent handle.
/// The agent code is loaded for. An agent without an ISA (the CPU) supports
/// no code object: ROCr's loader answers INCOMPATIBLE_ARGUMENTS
/// (`IsaSupportedByAgent` fails in `ExecutableImpl::LoadCodeObject`).
fn agent_ref(rt: &Runtime, h: Handle) -> Result<AgentRef, Status> {
    let a = rt.agent(state::agent_id(rt, h)?)?;
    let isa = a.isa.as_ref().ok_or(Status::IncompatibleArguments)?;
    let target: TargetId = isa.name.parse().map_err(|_| Status::InvalidAgent)?;
    Ok(AgentRef { key: h, target })
}

fn first_gpu(rt: &Runtime) -> Result<Handle, Status> {
    rt.agents()
        .iter()
        .find(|a| a.is_gpu())
        .map(|a| state::agent_handle(a.id))
        .ok_or(Status::InvalidAgent)
}

fn new_reader(bytes: Vec<u8>, uri: String, out: *mut Handle) -> Result<(), Status> {
    if out.is_null() {
        return Err(Status::InvalidArgument);
    }
    let h = with(|r| {
        let n = r.next()?;
        r.readers.insert(
            n,
            Reader {
                bytes: bytes.into(),
                uri,
            },
        );
        Ok(READER_TAG + n)
    })?;
    put(out as *mut c_void, h)
}

/// Reads `size` bytes at `offset` of an open file (`size` 0: to the end).
/// The file is reopened through /proc so the caller's descriptor (its
/// position, its ownership) is left alone, and a closed one is just an error.
fn read_fd(fd: i32, offset: u64, size: usize) -> Result<(Vec<u8>, String), Status> {
    use std::os::unix::fs::FileExt;
    // ROCr (CodeObjectReaderImpl::SetFile): -1 is an argument error, any
    // other descriptor it cannot seek is an invalid file.
    if fd == -1 {
        return Err(Status::InvalidArgument);
    }
    if fd < 0 {
        return Err(Status::InvalidFile);
    }
    let proc_path = format!("/proc/self/fd/{fd}");
    let file = std::fs::File::open(&proc_path).map_err(|_| Status::InvalidFile)?;
    let len = file.metadata().map_err(|_| Status::InvalidFile)?.len();
    let end = if size == 0 {
        len
    } else {
        offset.saturating_add(size as u64)
    };
    if offset >= len || end > len {
        return Err(Status::InvalidFile);
    }
    let mut bytes = vec![0u8; (end - offset) as usize];
    file.read_exact_at(&mut bytes, offset)
        .map_err(|_| Status::InvalidFile)?;
    let path = std::fs::read_link(&proc_path)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| format!("fd{fd}"));
    let uri = if offset == 0 && size == 0 {
        format!("file://{path}")
    } else {
        format!("file://{path}#offset={offset}&size={}", bytes.len())
    };
    Ok((bytes, uri))
}

fn load(
    exec: Handle,
    agent: Option<Handle>,
    reader: Handle,
    lco: *mut Handle,
) -> Result<(), Status> {
    let rt = rt()?;
    // ROCr's order: the executable, the reader, then (in the loader) the agent.
    with(|r| {
        r.exec(exec)?;
        r.reader(reader).map(|_| ())
    })?;
    let agent = match agent {
        Some(a) => agent_ref(&rt, a)?,
        None => agent_ref(&rt, first_gpu(&rt)?)?,
    };
    let h = with(|r| {
        let (bytes, uri) = {
            let rd = r.reader(reader)?;
            (rd.bytes.clone(), rd.uri.clone())
        };
        let n = exec.wrapping_sub(EXEC_TAG);
        let e = r.exec(exec)?;
        let id = e.exe.load_shared(&agent, bytes, Some(&uri)).map_err(fail)?;
        Ok(lco_handle(n, id))
    })?;
    if !lco.is_null() {
        put(lco as *mut c_void, h)?;
    }
    Ok(())
}

/// Finds a symbol as ROCr names them: kernels by `<name>.kd`, everything else by its name.
fn find_symbol(e: &Exec, name: &str, agent: Option<Handle>) -> Option<SymbolId> {
    let want_kernel = name.ends_with(".kd");
    let plain = name.strip_suffix(".kd").unwrap_or(name);
    let id = e.exe.symbol(plain, agent)?;
    let is_kernel = matches!(e.exe.get(id)?.kind, SymbolKind::Kernel(_));
    (is_kernel == want_kernel).then_some(id)
}

fn get_symbol(
    exec: Handle,
    name: *const c_char,
    agent: Option<Handle>,
    out: *mut Handle,
) -> Result<(), Status> {
    rt()?;
    let name = read_cstr(name)?;
    if out.is_null() {
        return Err(Status::InvalidArgument);
    }
    // ROCr does not check the agent: a symbol of an unknown one is not found.
    let h = with(|r| {
        let n = exec.wrapping_sub(EXEC_TAG);
        let e = r.exec(exec)?;
        let id = find_symbol(e, name, agent).ok_or(Status::InvalidSymbolName)?;
        Ok(symbol_handle(n, id))
    })?;
    put(out as *mut c_void, h)
}

/// The symbol handles of an executable that `keep` accepts, collected so
/// callbacks run without our lock held (they may call back into us).
fn symbol_handles(
    exec: Handle,
    keep: impl Fn(&inlay_loader::Symbol) -> bool,
) -> Result<Vec<Handle>, Status> {
    with(|r| {
        let n = exec.wrapping_sub(EXEC_TAG);
        let e = r.exec(exec)?;
        Ok(e.exe
            .symbols()
            .iter()
            .enumerate()
            .filter(|(_, s)| keep(s))
            .map(|(i, _)| symbol_handle(n, SymbolId(i)))
            .collect())
    })
}

/// Status a callback returned: success continues, anything else ends the walk.
fn walk(handles: Vec<Handle>, mut call: impl FnMut(Handle) -> HsaStatus) -> Result<(), Status> {
    for h in handles {
        let st = call(h);
        if st != SUCCESS {
            return Err(crate::unsupported::status_from_code(st));
        }
    }
    Ok(())
}

fn define(
    exec: Handle,
    agent: Option<Handle>,
    name: *const c_char,
    addr: *mut c_void,
    readonly: bool,
) -> Result<(), Status> {
    rt()?;
    // ROCr checks neither the agent nor the address
    // (`ExecutableImpl::DefineAgentExternalVariable`).
    let name = read_cstr(name)?;
    with(|r| {
        let e = r.exec(exec)?;
        let id = e
            .exe
            .define_variable(agent, name, addr as u64, readonly)
            .map_err(fail)?;
        if readonly {
            e.readonly.push(id);
        }
        Ok(())
    })
}

fn put_bytes(out: *mut c_void, s: &str) -> Result<(), Status> {
    if out.is_null() {
        return Err(Status::InvalidArgument);
    }
    // SAFETY: non-null; the caller sized the buffer from the matching *_LENGTH attribute.
    unsafe { std::ptr::copy_nonoverlapping(s.as_ptr(), out as *mut u8, s.len()) };
    Ok(())
}

fn symbol_info(sym: Handle, attr: u32, value: *mut c_void) -> Result<(), Status> {
    rt()?;
    with(|r| {
        let (_, e, id) = r.symbol(sym)?;
        let s = e.exe.get(id).ok_or(Status::InvalidExecutableSymbol)?;
        let name = match s.kind {
            SymbolKind::Kernel(_) => format!("{}.kd", s.name),
            _ => s.name.clone(),
        };
        // Locals are visible in their code object only: module linkage, named by it.
        let module = match (s.local, s.code_object.and_then(|c| e.exe.code_object(c))) {
            (true, Some(co)) => co.name.clone(),
            _ => String::new(),
        };
        let linkage = if s.local { 0u32 } else { 1u32 };
        match (attr, &s.kind) {
            (0, SymbolKind::Variable(_)) => put(value, 0u32),
            (0, SymbolKind::Kernel(_)) => put(value, 1u32),
            (0, SymbolKind::Function(_)) => put(value, 2u32),
            (1, _) => put(value, name.len() as u32),
            (2, _) => put_bytes(value, &name),
            (3, _) => put(value, module.len() as u32),
            (4, _) => put_bytes(value, &module),
            (5, _) => put(value, linkage),
            (17, _) => put(value, true),
            (20, _) => put(value, s.agent.ok_or(Status::InvalidArgument)?),
            (21, SymbolKind::Variable(v)) => put(value, v.address),
            (6, SymbolKind::Variable(v)) => put(
                value,
                match v.allocation {
                    VariableAllocation::Agent => 0u32,
                    VariableAllocation::Program => 1u32,
                },
            ),
            (7, SymbolKind::Variable(_)) => put(value, u32::from(e.readonly.contains(&id))),
            (8, SymbolKind::Variable(v)) => put(value, u32::try_from(v.align).unwrap_or(u32::MAX)),
            (9, SymbolKind::Variable(v)) => put(value, u32::try_from(v.size).unwrap_or(u32::MAX)),
            (10, SymbolKind::Variable(v)) => put(value, v.is_const),
            (22, SymbolKind::Kernel(k)) => put(value, k.object),
            (11, SymbolKind::Kernel(k)) => put(value, k.kernarg_size),
            (12, SymbolKind::Kernel(k)) => put(value, k.kernarg_align),
            (13, SymbolKind::Kernel(k)) => put(value, k.group_segment_size),
            (14, SymbolKind::Kernel(k)) => put(value, k.private_segment_size),
            (15, SymbolKind::Kernel(k)) => put(value, k.dynamic_callstack),
            (18, SymbolKind::Kernel(_)) => put(value, 0u32),
            (23, SymbolKind::Function(f)) => put(value, f.address),
            (16, SymbolKind::Function(_)) => put(value, 0u32),
            (SYMBOL_INFO_INDIRECT_FUNCTION_SIZE, SymbolKind::Function(f)) => put(value, f.size),
            _ => Err(Status::InvalidArgument),
        }
    })
}

type SymbolCb = Option<extern "C" fn(Handle, Handle, *mut c_void) -> HsaStatus>;
type AgentSymbolCb = Option<extern "C" fn(Handle, Handle, Handle, *mut c_void) -> HsaStatus>;

export! {
    fn hsa_code_object_reader_create_from_memory(co: *const c_void, size: usize, reader: *mut Handle) -> HsaStatus {
        status((|| {
            rt()?;
            let bytes = read_array(co as *const u8, size)?;
            if bytes.is_empty() {
                return Err(Status::InvalidArgument);
            }
            let uri = format!("memory://{}#offset={:#x}&size={size}", std::process::id(), co as u64);
            new_reader(bytes.to_vec(), uri, reader)
        })())
    }
    fn hsa_code_object_reader_create_from_file(file: i32, reader: *mut Handle) -> HsaStatus {
        status((|| {
            rt()?;
            if reader.is_null() {
                return Err(Status::InvalidArgument);
            }
            let (bytes, uri) = read_fd(file, 0, 0)?;
            new_reader(bytes, uri, reader)
        })())
    }
    fn hsa_code_object_reader_destroy(reader: Handle) -> HsaStatus {
        status(rt().and_then(|_| with(|r| {
            r.readers.remove(&reader.wrapping_sub(READER_TAG)).map(|_| ()).ok_or(Status::InvalidCodeObjectReader)
        })))
    }
    fn hsa_executable_create(profile: u32, state: u32, _options: *const c_char, exec: *mut Handle) -> HsaStatus {
        status((|| {
            let rt = rt()?;
            // Only the unfrozen start state makes sense for a loader-built executable.
            if exec.is_null() || profile > 1 || state != 0 {
                return Err(Status::InvalidArgument);
            }
            create(rt.memory().clone(), profile, 0, exec)
        })())
    }
    fn hsa_executable_create_alt(profile: u32, rounding: u32, _options: *const c_char, exec: *mut Handle) -> HsaStatus {
        status((|| {
            let rt = rt()?;
            if exec.is_null() || profile > 1 || rounding > 2 {
                return Err(Status::InvalidArgument);
            }
            create(rt.memory().clone(), profile, rounding, exec)
        })())
    }
    fn hsa_executable_destroy(exec: Handle) -> HsaStatus {
        status(rt().and_then(|_| {
            // Dropped outside the lock: freeing device memory needs no registry.
            let e = with(|r| r.executables.remove(&exec.wrapping_sub(EXEC_TAG)).ok_or(Status::InvalidExecutable))?;
            drop(e);
            Ok(())
        }))
    }
    fn hsa_executable_load_agent_code_object(exec: Handle, agent: Handle, reader: Handle, _options: *const c_char, lco: *mut Handle) -> HsaStatus {
        status(load(exec, Some(agent), reader, lco))
    }
    fn hsa_executable_load_program_code_object(exec: Handle, reader: Handle, _options: *const c_char, lco: *mut Handle) -> HsaStatus {
        // Code objects hold GPU code: a program code object is loaded for the GPU.
        status(load(exec, None, reader, lco))
    }
    fn hsa_executable_freeze(exec: Handle, _options: *const c_char) -> HsaStatus {
        status(rt().and_then(|rt| freeze(&rt, exec)))
    }
    fn hsa_executable_get_info(exec: Handle, attr: u32, value: *mut c_void) -> HsaStatus {
        status(rt().and_then(|_| with(|r| {
            let e = r.exec(exec)?;
            match attr {
                1 => put(value, e.profile),
                2 => put(value, u32::from(e.exe.is_frozen())),
                3 => put(value, e.rounding),
                _ => Err(Status::InvalidArgument),
            }
        })))
    }
    fn hsa_executable_validate(exec: Handle, result: *mut u32) -> HsaStatus {
        status(rt().and_then(|_| with(|r| r.exec(exec).map(|_| ())))
            .and_then(|_| put(result as *mut c_void, 0u32)))
    }
    fn hsa_executable_validate_alt(exec: Handle, _options: *const c_char, result: *mut u32) -> HsaStatus {
        status(rt().and_then(|_| with(|r| r.exec(exec).map(|_| ())))
            .and_then(|_| put(result as *mut c_void, 0u32)))
    }
    fn hsa_executable_get_symbol_by_name(exec: Handle, name: *const c_char, agent: *const Handle, sym: *mut Handle) -> HsaStatus {
        // SAFETY: a non-null agent pointer points at the caller's hsa_agent_t.
        let agent = (!agent.is_null()).then(|| unsafe { agent.read_unaligned() });
        status(get_symbol(exec, name, agent, sym))
    }
    fn hsa_executable_get_symbol(exec: Handle, _module: *const c_char, name: *const c_char, agent: Handle, _cc: i32, sym: *mut Handle) -> HsaStatus {
        status(get_symbol(exec, name, Some(agent), sym))
    }
    fn hsa_executable_iterate_symbols(exec: Handle, cb: SymbolCb, data: *mut c_void) -> HsaStatus {
        status((|| {
            rt()?;
            let cb = cb.ok_or(Status::InvalidArgument)?;
            let handles = symbol_handles(exec, |_| true)?;
            walk(handles, |s| cb(exec, s, data))
        })())
    }
    fn hsa_executable_iterate_agent_symbols(exec: Handle, agent: Handle, cb: AgentSymbolCb, data: *mut c_void) -> HsaStatus {
        status((|| {
            let rt = rt()?;
            state::agent_id(&rt, agent)?;
            let cb = cb.ok_or(Status::InvalidArgument)?;
            let handles = symbol_handles(exec, |s| s.agent == Some(agent))?;
            walk(handles, |s| cb(exec, agent, s, data))
        })())
    }
    fn hsa_executable_iterate_program_symbols(exec: Handle, cb: SymbolCb, data: *mut c_void) -> HsaStatus {
        status((|| {
            rt()?;
            let cb = cb.ok_or(Status::InvalidArgument)?;
            let handles = symbol_handles(exec, |s| s.agent.is_none())?;
            walk(handles, |s| cb(exec, s, data))
        })())
    }
    fn hsa_executable_symbol_get_info(sym: Handle, attr: u32, value: *mut c_void) -> HsaStatus {
        status(symbol_info(sym, attr, value))
    }
    fn hsa_executable_agent_global_variable_define(exec: Handle, agent: Handle, name: *const c_char, addr: *mut c_void) -> HsaStatus {
        status(define(exec, Some(agent), name, addr, false))
    }
    fn hsa_executable_global_variable_define(exec: Handle, name: *const c_char, addr: *mut c_void) -> HsaStatus {
        status(define(exec, None, name, addr, false))
    }
    fn hsa_executable_readonly_variable_define(exec: Handle, agent: Handle, name: *const c_char, addr: *mut c_void) -> HsaStatus {
        status(define(exec, Some(agent), name, addr, true))
    }
}

fn create(
    memory: Arc<inlay_vgpu::memory::Memory>,
    profile: u32,
    rounding: u32,
    out: *mut Handle,
) -> Result<(), Status> {
    let h = with(|r| {
        let n = r.next()?;
        let exe = Executable::new(memory);
        r.executables.insert(
            n,
            Exec {
                exe,
                profile,
                rounding,
                readonly: Vec::new(),
                code: None,
            },
        );
        Ok(EXEC_TAG + n)
    })?;
    put(out as *mut c_void, h)
}

// ---- AMD loader extension (the table lives in system.rs) -------------------

/// The executable and loaded code object holding device address `addr`.
fn locate(addr: u64) -> Option<(Handle, Handle)> {
    let g = registry();
    let r = g.as_ref()?;
    r.executables.iter().find_map(|(n, e)| {
        let (id, _) = e.exe.find_address(addr)?;
        Some((EXEC_TAG + n, lco_handle(*n, id)))
    })
}

pub fn query_host_address(device: u64) -> Option<u64> {
    // One address space: a loaded byte's host address is its device address.
    locate(device).map(|_| device)
}

pub fn query_executable(device: u64) -> Option<Handle> {
    locate(device).map(|(e, _)| e)
}

/// `hsa_ven_amd_loader_segment_descriptor_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct SegmentDescriptor {
    agent: Handle,
    executable: Handle,
    storage_type: u32,
    storage_base: u64,
    storage_size: usize,
    storage_offset: usize,
    segment_base: u64,
    segment_size: usize,
}

/// One descriptor per loaded code object (each is one allocation).
pub fn segment_descriptors() -> Vec<SegmentDescriptor> {
    let g = registry();
    let Some(r) = g.as_ref() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (n, e) in &r.executables {
        for co in e.exe.code_objects() {
            out.push(SegmentDescriptor {
                agent: co.agent,
                executable: EXEC_TAG + n,
                storage_type: 2, // memory: we keep a copy of the bytes
                storage_base: co.storage.as_ptr() as u64,
                storage_size: co.storage.len(),
                storage_offset: 0,
                segment_base: co.load_base,
                segment_size: co.load_size as usize,
            });
        }
    }
    out
}

pub fn loaded_code_objects(exec: Handle) -> Result<Vec<Handle>, Status> {
    with(|r| {
        let n = exec.wrapping_sub(EXEC_TAG);
        let e = r.exec(exec)?;
        Ok(e.exe
            .code_objects()
            .iter()
            .map(|c| lco_handle(n, c.id))
            .collect())
    })
}

pub fn executables() -> Vec<Handle> {
    registry()
        .as_ref()
        .map(|r| r.executables.keys().map(|n| EXEC_TAG + n).collect())
        .unwrap_or_default()
}

pub fn loaded_code_object_info(lco: Handle, attr: u32, value: *mut c_void) -> Result<(), Status> {
    with(|r| {
        let (n, e, id) = r.loaded(lco)?;
        let co = e.exe.code_object(id).ok_or(Status::InvalidArgument)?;
        match attr {
            1 => put(value, EXEC_TAG + n),
            2 => put(value, 2u32), // HSA_VEN_AMD_LOADER_LOADED_CODE_OBJECT_KIND_AGENT
            3 => put(value, co.agent),
            4 => put(value, 2u32), // storage type memory
            5 => put(value, co.storage.as_ptr() as u64),
            6 => put(value, co.storage.len() as u64),
            7 => Err(Status::InvalidArgument), // no file storage
            8 => put(value, co.load_delta as i64),
            9 => put(value, co.load_base),
            10 => put(value, co.load_size),
            11 => put(value, co.name.len() as u32),
            12 => put_bytes(value, &co.name),
            _ => Err(Status::InvalidArgument),
        }
    })
}

pub fn reader_from_file(
    fd: i32,
    offset: i64,
    size: usize,
    reader: *mut Handle,
) -> Result<(), Status> {
    if reader.is_null() || offset < 0 || size == 0 {
        return Err(Status::InvalidArgument);
    }
    let (bytes, uri) = read_fd(fd, offset as u64, size)?;
    new_reader(bytes, uri, reader)
}
