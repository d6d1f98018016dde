//! Tools in shared libraries (`include/inlay/tool.h`): loaded with
//! `dlopen` into the program's process, found by their `inlay_tool_init`,
//! and called through the callbacks they export.

use std::ffi::{c_char, c_int, c_void, CString};

use crate::capi::{with_output, with_tool_error, CLaunchEnd, KernelHandle, LaunchC, ToolHandle};
use crate::{
    Globals, HookModule, Insertions, Kernel, Launch, LoadedCode, Outcome, Output, Tool, ToolOptions,
};

/// Whether a `--tool` value names a library rather than a built-in tool.
pub fn is_path(spec: &str) -> bool {
    spec.contains('/') || spec.ends_with(".so") || spec.contains(".so.")
}

type Init = unsafe extern "C" fn(*const c_void) -> c_int;
type AtLoad = unsafe extern "C" fn(*const c_void, *const c_char, *const c_void, usize);
type AtLaunch = unsafe extern "C" fn(*const c_void, *const c_void) -> c_int;
type Instrument = unsafe extern "C" fn(*const c_void, *const c_void) -> c_int;
type AtHooksLoad = unsafe extern "C" fn(*const c_void, *const c_void);
type AtLaunchEnd = unsafe extern "C" fn(*const c_void, *const c_void, *const CLaunchEnd);
type AtTerm = unsafe extern "C" fn(*const c_void);

/// A tool library's callbacks (all but init optional).
struct Callbacks {
    at_load: Option<AtLoad>,
    at_launch: Option<AtLaunch>,
    instrument: Option<Instrument>,
    at_hooks_load: Option<AtHooksLoad>,
    at_launch_end: Option<AtLaunchEnd>,
    at_term: Option<AtTerm>,
}

pub struct SharedLibTool {
    /// Boxed: C holds its address for the tool's life.
    handle: Box<ToolHandle>,
    hooks: Option<HookModule>,
    cb: Callbacks,
    finished: std::sync::atomic::AtomicBool,
}

// SAFETY: the library's callbacks are documented (tool.h) to be callable
// from several threads at once; the handle's own state is behind mutexes.
unsafe impl Send for SharedLibTool {}
// SAFETY: as above.
unsafe impl Sync for SharedLibTool {}

fn take<T>(m: &std::sync::Mutex<Option<T>>) -> Option<T> {
    m.lock().unwrap_or_else(|e| e.into_inner()).take()
}

fn dl_error() -> String {
    // SAFETY: dlerror returns null or a NUL-terminated message.
    let e = unsafe { libc::dlerror() };
    if e.is_null() {
        "unknown dynamic loader error".into()
    } else {
        // SAFETY: non-null, NUL-terminated (dlerror's contract).
        unsafe { std::ffi::CStr::from_ptr(e) }
            .to_string_lossy()
            .into_owned()
    }
}

/// Makes the library holding this code (the runtime) global, so that a
/// tool library's undefined `inlay_*` references resolve to it even when
/// the program loaded the runtime with `RTLD_LOCAL`.
fn make_runtime_global() {
    let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
    let here = make_runtime_global as *const c_void;
    // SAFETY: dladdr fills `info` for an address of this process's code.
    let found = unsafe { libc::dladdr(here, info.as_mut_ptr()) };
    if found == 0 {
        return;
    }
    // SAFETY: dladdr succeeded, so `info` is initialised.
    let info = unsafe { info.assume_init() };
    if !info.dli_fname.is_null() {
        // SAFETY: dli_fname is the loaded object's NUL-terminated path;
        // RTLD_NOLOAD only changes the flags of an object already loaded.
        unsafe {
            libc::dlopen(
                info.dli_fname,
                libc::RTLD_NOW | libc::RTLD_NOLOAD | libc::RTLD_GLOBAL,
            )
        };
    }
}

impl SharedLibTool {
    /// Loads the library at `path` and runs its `inlay_tool_init`.
    pub fn load(path: &str, options: ToolOptions<'_>) -> Result<SharedLibTool, String> {
        let file = std::path::Path::new(path);
        let meta = std::fs::metadata(file).map_err(|e| format!("tool {path}: {e}"))?;
        if !meta.is_file() {
            return Err(format!("tool {path}: not a file"));
        }
        let cpath = CString::new(path).map_err(|_| format!("tool {path}: NUL in the path"))?;
        make_runtime_global();
        // SAFETY: dlopen of a path; the library's constructors run, as with
        // any library a program loads.
        let lib = unsafe { libc::dlopen(cpath.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if lib.is_null() {
            return Err(format!("tool {path}: cannot load it: {}", dl_error()));
        }
        let sym = |name: &str| -> *mut c_void {
            let n = CString::new(name).unwrap_or_default();
            // SAFETY: `lib` is a live handle from dlopen; `n` is NUL-terminated.
            unsafe { libc::dlsym(lib, n.as_ptr()) }
        };
        let init = sym("inlay_tool_init");
        if init.is_null() {
            return Err(format!(
                "tool {path} is not an Inlay tool: it exports no inlay_tool_init (see include/inlay/tool.h)"
            ));
        }
        // SAFETY: each symbol, when present, has the type tool.h declares
        // for it (a tool that defines them otherwise breaks its contract).
        let (init, cb) = unsafe {
            let f = |name| {
                let p = sym(name);
                (!p.is_null()).then_some(p)
            };
            (
                std::mem::transmute::<*mut c_void, Init>(init),
                Callbacks {
                    at_load: f("inlay_at_code_object_load")
                        .map(|p| std::mem::transmute::<*mut c_void, AtLoad>(p)),
                    at_launch: f("inlay_at_launch")
                        .map(|p| std::mem::transmute::<*mut c_void, AtLaunch>(p)),
                    instrument: f("inlay_instrument")
                        .map(|p| std::mem::transmute::<*mut c_void, Instrument>(p)),
                    at_hooks_load: f("inlay_at_hooks_load")
                        .map(|p| std::mem::transmute::<*mut c_void, AtHooksLoad>(p)),
                    at_launch_end: f("inlay_at_launch_end")
                        .map(|p| std::mem::transmute::<*mut c_void, AtLaunchEnd>(p)),
                    at_term: f("inlay_at_term")
                        .map(|p| std::mem::transmute::<*mut c_void, AtTerm>(p)),
                },
            )
        };
        let handle = Box::new(ToolHandle::new(options.tool(), options.checking()));
        let hp = handle.as_ref() as *const ToolHandle as *const c_void;
        // SAFETY: `init` is the tool's inlay_tool_init; `hp` lives as long
        // as the tool.
        let (status, why) =
            with_tool_error(|| handle.with_options(&options, || unsafe { init(hp) }));
        if status != 0 {
            let why = why.unwrap_or_else(|| format!("it returned {status}"));
            return Err(format!("tool {path}: {why}"));
        }
        let hooks = take(&handle.hooks);
        Ok(SharedLibTool {
            handle,
            hooks,
            cb,
            finished: std::sync::atomic::AtomicBool::new(false),
        })
    }

    fn handle(&self) -> *const c_void {
        self.handle.as_ref() as *const ToolHandle as *const c_void
    }
}

impl Tool for SharedLibTool {
    fn name(&self) -> &str {
        &self.handle.name
    }

    fn hook_module(&self) -> Option<&HookModule> {
        self.hooks.as_ref()
    }

    fn code_object_loaded(&self, code: &LoadedCode, out: &Output) {
        let Some(f) = self.cb.at_load else { return };
        let name = CString::new(code.name.replace('\0', " ")).unwrap_or_default();
        // SAFETY: the callback's declared type; the pointers live for the call.
        with_output(out, || unsafe {
            f(
                self.handle(),
                name.as_ptr(),
                code.bytes.as_ptr().cast(),
                code.bytes.len(),
            )
        });
    }

    fn before_launch(&self, launch: &Launch, out: &Output) -> bool {
        let Some(f) = self.cb.at_launch else {
            return true;
        };
        let l = LaunchC::new(launch);
        // SAFETY: the callback's declared type; `l` lives for the call.
        with_output(out, || unsafe {
            f(self.handle(), (&l.c as *const crate::capi::CLaunch).cast()) != 0
        })
    }

    fn instrument(
        &self,
        kernel: &Kernel<'_>,
        at: &mut Insertions,
        out: &Output,
    ) -> Result<(), String> {
        let Some(f) = self.cb.instrument else {
            return Ok(());
        };
        let k = KernelHandle::new(kernel, at);
        let kp = (&k as *const KernelHandle<'_>).cast::<c_void>();
        // SAFETY: the callback's declared type; `k` lives for the call.
        let (status, why) =
            with_tool_error(|| with_output(out, || unsafe { f(self.handle(), kp) }));
        if status == 0 {
            return Ok(());
        }
        Err(why.unwrap_or_else(|| format!("inlay_instrument returned {status}")))
    }

    fn hooks_loaded(&self, globals: &Globals<'_>, out: &Output) {
        let Some(f) = self.cb.at_hooks_load else {
            return;
        };
        let g = (globals as *const Globals<'_>).cast::<c_void>();
        // SAFETY: the callback's declared type; `globals` lives for the call.
        with_output(out, || unsafe { f(self.handle(), g) });
    }

    fn after_launch(&self, launch: &Launch, o: &Outcome<'_>, out: &Output) {
        let Some(f) = self.cb.at_launch_end else {
            return;
        };
        let l = LaunchC::new(launch);
        let error = o
            .error
            .as_deref()
            .map(|e| CString::new(e.replace('\0', " ")).unwrap_or_default());
        let end = CLaunchEnd {
            instrumented: c_int::from(o.instrumented()),
            error: error.as_ref().map_or(std::ptr::null(), |e| e.as_ptr()),
            globals: o
                .globals()
                .map_or(std::ptr::null(), |g| (g as *const Globals<'_>).cast()),
        };
        // SAFETY: the callback's declared type; `l`, `end` and what they
        // point to live for the call.
        with_output(out, || unsafe {
            f(
                self.handle(),
                (&l.c as *const crate::capi::CLaunch).cast(),
                &end,
            )
        });
    }

    fn finish(&self, out: &Output) {
        if self
            .finished
            .swap(true, std::sync::atomic::Ordering::AcqRel)
        {
            return;
        }
        if let Some(f) = self.cb.at_term {
            // SAFETY: the callback's declared type.
            with_output(out, || unsafe { f(self.handle()) });
        }
    }
}
