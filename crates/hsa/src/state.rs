//! The process-wide runtime behind `hsa_init`/`hsa_shut_down` (reference
//! counted), and the handle encodings of agents, pools and ISAs.

use inlay_runtime::agent::AgentId;
use inlay_runtime::pool::PoolId;
use inlay_runtime::{Runtime, Status};
use std::sync::{Arc, Mutex, MutexGuard};

struct Global {
    runtime: Option<Arc<Runtime>>,
    refs: u64,
}

static GLOBAL: Mutex<Global> = Mutex::new(Global {
    runtime: None,
    refs: 0,
});

fn global() -> MutexGuard<'static, Global> {
    GLOBAL.lock().unwrap_or_else(|e| e.into_inner())
}

pub fn init() -> Result<(), Status> {
    let mut g = global();
    if g.refs == u64::MAX {
        return Err(Status::RefcountOverflow);
    }
    if g.runtime.is_none() {
        let rt = Arc::new(Runtime::new());
        set_dispatch_timeout(&rt)?;
        attach_tools(&rt)?;
        g.runtime = Some(rt);
    }
    g.refs += 1;
    Ok(())
}

/// Gives every kernel dispatch the time limit `INLAY_DISPATCH_TIMEOUT`
/// names (seconds, decimal; `inlay run --timeout` sets it). A value that is
/// not a time fails `hsa_init` with a message rather than running unlimited.
fn set_dispatch_timeout(rt: &Runtime) -> Result<(), Status> {
    let Some(text) = std::env::var_os("INLAY_DISPATCH_TIMEOUT").filter(|t| !t.is_empty()) else {
        return Ok(());
    };
    let limit = inlay_runtime::parse_timeout(&text.to_string_lossy()).map_err(|why| {
        eprintln!("inlay: INLAY_DISPATCH_TIMEOUT: {why}");
        Status::InvalidArgument
    })?;
    rt.set_dispatch_timeout(limit);
    Ok(())
}

/// Attaches the tools `INLAY_TOOL` names (comma-separated: built-in tools
/// by name, tool libraries by path), configured by `INLAY_TOOL_OPTS`
/// (`KEY=VALUE;...`, see [`inlay_tools::attach`]). This is how `inlay run
/// --tool` reaches a program's runtime; `inlay run` has checked the same
/// values already (`inlay_tools_check`), so a refusal here comes from a
/// program run by hand with bad values.
fn attach_tools(rt: &Arc<Runtime>) -> Result<(), Status> {
    let Some(names) = std::env::var("INLAY_TOOL").ok().filter(|s| !s.is_empty()) else {
        return Ok(());
    };
    let options = std::env::var("INLAY_TOOL_OPTS").unwrap_or_default();
    let (tools, out) = inlay_tools::attach(&names, &options).map_err(|why| {
        eprintln!("inlay: {why}");
        Status::InvalidArgument
    })?;
    let host = Arc::new(inlay_tools::Host::new(
        rt.memory().clone(),
        rt.device(),
        tools,
        out,
    ));
    // Tools hear of the end at shutdown (the host is dropped) or, for
    // programs that never shut the runtime down, when the process exits.
    let first = {
        let mut hosts = lock_hosts();
        hosts.push(Arc::downgrade(&host));
        hosts.len() == 1
    };
    if first {
        // SAFETY: registers a plain extern "C" function with no arguments.
        unsafe { libc::atexit(finish_tools) };
    }
    rt.add_interceptor(host);
    Ok(())
}

/// Tool hosts attached so far (weak: shutdown drops them).
static HOSTS: Mutex<Vec<std::sync::Weak<inlay_tools::Host>>> = Mutex::new(Vec::new());

fn lock_hosts() -> MutexGuard<'static, Vec<std::sync::Weak<inlay_tools::Host>>> {
    HOSTS.lock().unwrap_or_else(|e| e.into_inner())
}

extern "C" fn finish_tools() {
    let hosts: Vec<_> = lock_hosts().iter().filter_map(|h| h.upgrade()).collect();
    for h in hosts {
        // A tool's callback must not unwind into the C runtime's exit path.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| h.finish()));
    }
}

pub fn shut_down() -> Result<(), Status> {
    let rt = {
        let mut g = global();
        if g.refs == 0 {
            return Err(Status::NotInitialized);
        }
        g.refs -= 1;
        if g.refs > 0 {
            return Ok(());
        }
        g.runtime.take()
    };
    // Outside the lock: stopping joins threads whose callbacks may call into us.
    if let Some(rt) = rt {
        rt.shut_down();
    }
    Ok(())
}

/// The runtime, or NOT_INITIALIZED before `hsa_init`.
pub fn rt() -> Result<Arc<Runtime>, Status> {
    global().runtime.clone().ok_or(Status::NotInitialized)
}

// Handles: a tag in the high bits, index + 1 in the low bits, so zero and
// random values never decode.
const AGENT_TAG: u64 = 0x4A67_0000_0000;
const POOL_TAG: u64 = 0x4A70_0000_0000;
const ISA_TAG: u64 = 0x4A69_0000_0000;
const WAVEFRONT_TAG: u64 = 0x4A77_0000_0000;

pub fn agent_handle(id: AgentId) -> u64 {
    AGENT_TAG + u64::from(id.0) + 1
}

pub fn agent_id(rt: &Runtime, h: u64) -> Result<AgentId, Status> {
    let i = h.wrapping_sub(AGENT_TAG).wrapping_sub(1);
    if i < rt.agents().len() as u64 {
        Ok(AgentId(i as u32))
    } else {
        Err(Status::InvalidAgent)
    }
}

pub fn pool_handle(id: PoolId) -> u64 {
    POOL_TAG + u64::from(id.0) + 1
}

pub fn pool_id(rt: &Runtime, h: u64, invalid: Status) -> Result<PoolId, Status> {
    let i = h.wrapping_sub(POOL_TAG).wrapping_sub(1);
    if i < rt.pools().len() as u64 {
        Ok(PoolId(i as u32))
    } else {
        Err(invalid)
    }
}

/// The one ISA (gfx90a) and its one wavefront (64 lanes).
pub const ISA_GFX90A: u64 = ISA_TAG + 1;
pub const WAVEFRONT_64: u64 = WAVEFRONT_TAG + 1;
