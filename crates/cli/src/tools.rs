//! `inlay run --tool … --tool-opt …`: the tool list and options, checked
//! before the program starts.
//!
//! The check is the runtime's own: `inlay` loads the runtime library it is
//! about to give the program and calls its `inlay_tools_check`, which
//! builds the tools exactly as the program's `hsa_init` will (loading tool
//! libraries and running their `inlay_tool_init` in checking mode) and
//! refuses unknown tools, unknown option keys and bad values. So a typo
//! ends `inlay run` with a clear message instead of surfacing as
//! `HSA_STATUS_ERROR_INVALID_ARGUMENT` inside the program.

use std::ffi::{c_char, c_int, CString};
use std::path::Path;

/// What the program's runtime receives: `INLAY_TOOL` and `INLAY_TOOL_OPTS`.
pub struct ToolEnv {
    pub tools: String,
    pub options: String,
}

/// Checks `--tool` and `--tool-opt` values; `None` if no tool is attached.
pub fn tool_env(
    tools: &[String],
    options: &[String],
    runtime: &Path,
) -> Result<Option<ToolEnv>, String> {
    if tools.is_empty() {
        return match options.first() {
            Some(o) => Err(format!("--tool-opt {o} given without --tool")),
            None => Ok(None),
        };
    }
    if let Some(bad) = options.iter().find(|o| !o.contains('=') || o.contains(';')) {
        return Err(format!(
            "--tool-opt {bad}: expected KEY=VALUE or TOOL:KEY=VALUE (without ';')"
        ));
    }
    let mut specs = Vec::new();
    for t in tools {
        if t.contains(',') {
            return Err(format!(
                "--tool {t}: a tool name or path cannot contain ','"
            ));
        }
        // A library goes to the program by absolute path: the program may
        // change directory before it calls hsa_init.
        if t.contains('/') || t.ends_with(".so") || t.contains(".so.") {
            let p = Path::new(t)
                .canonicalize()
                .map_err(|e| format!("--tool {t}: {e}"))?;
            specs.push(p.to_string_lossy().into_owned());
        } else {
            specs.push(t.clone());
        }
    }
    let env = ToolEnv {
        tools: specs.join(","),
        options: options.join(";"),
    };
    check(&env, runtime)?;
    Ok(Some(env))
}

type Check = unsafe extern "C" fn(*const c_char, *const c_char, *mut c_char, usize) -> c_int;

/// Runs the runtime library's `inlay_tools_check` on `env`.
fn check(env: &ToolEnv, runtime: &Path) -> Result<(), String> {
    let path = CString::new(runtime.as_os_str().as_encoded_bytes())
        .map_err(|_| "the runtime's path contains NUL")?;
    let tools = CString::new(env.tools.as_str()).map_err(|_| "a tool name contains NUL")?;
    let options = CString::new(env.options.as_str()).map_err(|_| "a tool option contains NUL")?;
    // SAFETY: loads our own runtime library (global, so that tool libraries
    // it loads resolve their inlay_* references to it); it has no
    // constructors that start anything.
    let lib = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
    if lib.is_null() {
        return Err(format!(
            "cannot load the runtime {} to check the tools",
            runtime.display()
        ));
    }
    let name = c"inlay_tools_check";
    // SAFETY: `lib` is a live handle; `name` is NUL-terminated.
    let f = unsafe { libc::dlsym(lib, name.as_ptr()) };
    if f.is_null() {
        return Err(format!(
            "the runtime {} has no inlay_tools_check (an older build?)",
            runtime.display()
        ));
    }
    // SAFETY: the runtime defines inlay_tools_check with this signature
    // (crates/tools/src/capi.rs).
    let f = unsafe { std::mem::transmute::<*mut libc::c_void, Check>(f) };
    let mut error = vec![0u8; 4096];
    // SAFETY: NUL-terminated strings and a buffer of the size given.
    let status = unsafe {
        f(
            tools.as_ptr(),
            options.as_ptr(),
            error.as_mut_ptr().cast(),
            error.len(),
        )
    };
    if status == 0 {
        return Ok(());
    }
    let end = error.iter().position(|&b| b == 0).unwrap_or(error.len());
    Err(String::from_utf8_lossy(&error[..end]).into_owned())
}
