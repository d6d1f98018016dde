//! Signals: create/destroy, every load/store/read-modify-write with each
//! memory order (and the HSA 1.0 names ROCr still exports), waits, signal
//! groups and the AMD extensions.
//!
//! Operations that return a value or nothing cannot report a bad handle:
//! as in ROCr, the process aborts (see [`misuse`]).

use crate::abi::*;
use crate::export;
use crate::state::{self, rt};
use inlay_runtime::signal::{Condition, Signal, WaitState};
use inlay_runtime::Status;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::Ordering::{self, AcqRel, Acquire, Relaxed, Release};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The signal behind `h`, for `function`, which cannot return a status.
fn sig(h: Handle, function: &str) -> Arc<Signal> {
    match rt().map(|rt| rt.signal(h)) {
        Ok(Ok(s)) => s,
        Ok(Err(_)) => misuse(
            function,
            format_args!("signal handle {h:#x} is not a signal (never created, or destroyed)"),
        ),
        Err(_) => misuse(
            function,
            format_args!("signal handle {h:#x} used while the runtime is not initialized"),
        ),
    }
}

/// A timeout hint in timestamp ticks (1 GHz); u64::MAX means none.
fn timeout(hint: u64) -> Option<Duration> {
    (hint != u64::MAX).then(|| Duration::from_nanos(hint))
}

/// The consumers as ROCr's `hsa_amd_signal_create` checks them: a list
/// without duplicates; the handles themselves are not validated (ROCr only
/// compares them with its CPU agents), so ones that are not agents are dropped.
fn consumers(n: u32, list: *const Handle) -> Result<Vec<inlay_runtime::agent::AgentId>, Status> {
    let rt = rt()?;
    let handles = read_array(list, n as usize)?;
    let unique: std::collections::BTreeSet<Handle> = handles.iter().copied().collect();
    if unique.len() != handles.len() {
        return Err(Status::InvalidArgument);
    }
    Ok(handles
        .iter()
        .filter_map(|&h| state::agent_id(&rt, h).ok())
        .collect())
}

fn create(
    initial: i64,
    n: u32,
    list: *const Handle,
    out: *mut Handle,
    gpu_only: bool,
) -> Result<(), Status> {
    let rt = rt()?;
    if out.is_null() || (n > 0 && list.is_null()) {
        return Err(Status::InvalidArgument);
    }
    let h = rt.signal_create(initial, consumers(n, list)?, gpu_only)?;
    put(out as *mut c_void, h)
}

fn wait(
    h: Handle,
    cond: u32,
    compare: i64,
    hint: u64,
    state: u32,
    o: Ordering,
    function: &str,
) -> i64 {
    let s = sig(h, function);
    let ws = if state == 1 {
        WaitState::Active
    } else {
        WaitState::Blocked
    };
    match Condition::from_raw(cond) {
        Some(c) => s.wait(c, compare, timeout(hint), ws, o),
        // ROCr: a condition it does not know never holds (CheckSignalCondition),
        // so the wait lasts until its timeout and returns the value then.
        None => {
            let start = std::time::Instant::now();
            while timeout(hint).is_none_or(|t| start.elapsed() < t) {
                let v = s.load(Relaxed);
                s.wait(
                    Condition::Ne,
                    v,
                    Some(Duration::from_millis(1)),
                    ws,
                    Relaxed,
                );
            }
            s.load(o)
        }
    }
}

/// Defines `hsa_signal_<op>_<order>` for each order given.
macro_rules! rmw {
    ($op:ident: $($name:ident = $o:expr),*) => {
        export! { $(
            fn $name(h: Handle, v: i64) -> () {
                sig(h, stringify!($name)).$op(v, $o)
            }
        )* }
    };
}

rmw!(add: hsa_signal_add_relaxed = Relaxed, hsa_signal_add_scacquire = Acquire, hsa_signal_add_screlease = Release,
     hsa_signal_add_scacq_screl = AcqRel, hsa_signal_add_acquire = Acquire, hsa_signal_add_release = Release, hsa_signal_add_acq_rel = AcqRel);
rmw!(sub: hsa_signal_subtract_relaxed = Relaxed, hsa_signal_subtract_scacquire = Acquire, hsa_signal_subtract_screlease = Release,
     hsa_signal_subtract_scacq_screl = AcqRel, hsa_signal_subtract_acquire = Acquire, hsa_signal_subtract_release = Release, hsa_signal_subtract_acq_rel = AcqRel);
rmw!(and: hsa_signal_and_relaxed = Relaxed, hsa_signal_and_scacquire = Acquire, hsa_signal_and_screlease = Release,
     hsa_signal_and_scacq_screl = AcqRel, hsa_signal_and_acquire = Acquire, hsa_signal_and_release = Release, hsa_signal_and_acq_rel = AcqRel);
rmw!(or: hsa_signal_or_relaxed = Relaxed, hsa_signal_or_scacquire = Acquire, hsa_signal_or_screlease = Release,
     hsa_signal_or_scacq_screl = AcqRel, hsa_signal_or_acquire = Acquire, hsa_signal_or_release = Release, hsa_signal_or_acq_rel = AcqRel);
rmw!(xor: hsa_signal_xor_relaxed = Relaxed, hsa_signal_xor_scacquire = Acquire, hsa_signal_xor_screlease = Release,
     hsa_signal_xor_scacq_screl = AcqRel, hsa_signal_xor_acquire = Acquire, hsa_signal_xor_release = Release, hsa_signal_xor_acq_rel = AcqRel);
rmw!(store: hsa_signal_store_relaxed = Relaxed, hsa_signal_store_screlease = Release, hsa_signal_store_release = Release);
rmw!(silent_store: hsa_signal_silent_store_relaxed = Relaxed, hsa_signal_silent_store_screlease = Release);

macro_rules! load {
    ($($name:ident = $o:expr),*) => {
        export! { $( fn $name(h: Handle) -> i64 { sig(h, stringify!($name)).load($o) } )* }
    };
}
load!(
    hsa_signal_load_relaxed = Relaxed,
    hsa_signal_load_scacquire = Acquire,
    hsa_signal_load_acquire = Acquire
);

macro_rules! exchange {
    ($($name:ident = $o:expr),*) => {
        export! { $( fn $name(h: Handle, v: i64) -> i64 { sig(h, stringify!($name)).exchange(v, $o) } )* }
    };
}
exchange!(
    hsa_signal_exchange_relaxed = Relaxed,
    hsa_signal_exchange_scacquire = Acquire,
    hsa_signal_exchange_screlease = Release,
    hsa_signal_exchange_scacq_screl = AcqRel,
    hsa_signal_exchange_acquire = Acquire,
    hsa_signal_exchange_release = Release,
    hsa_signal_exchange_acq_rel = AcqRel
);

macro_rules! cas {
    ($($name:ident = $o:expr),*) => {
        export! { $( fn $name(h: Handle, expected: i64, v: i64) -> i64 { sig(h, stringify!($name)).cas(expected, v, $o) } )* }
    };
}
cas!(
    hsa_signal_cas_relaxed = Relaxed,
    hsa_signal_cas_scacquire = Acquire,
    hsa_signal_cas_screlease = Release,
    hsa_signal_cas_scacq_screl = AcqRel,
    hsa_signal_cas_acquire = Acquire,
    hsa_signal_cas_release = Release,
    hsa_signal_cas_acq_rel = AcqRel
);

macro_rules! waits {
    ($($name:ident = $o:expr),*) => {
        export! { $(
            fn $name(h: Handle, cond: u32, compare: i64, hint: u64, state: u32) -> i64 {
                wait(h, cond, compare, hint, state, $o, stringify!($name))
            }
        )* }
    };
}
waits!(
    hsa_signal_wait_relaxed = Relaxed,
    hsa_signal_wait_scacquire = Acquire,
    hsa_signal_wait_acquire = Acquire
);

// ---- signal groups ----------------------------------------------------------

static GROUPS: Mutex<Option<HashMap<u64, Vec<Handle>>>> = Mutex::new(None);
static NEXT_GROUP: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(0x4A73_0000_0001);

fn groups() -> std::sync::MutexGuard<'static, Option<HashMap<u64, Vec<Handle>>>> {
    GROUPS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Waits until any of `signals` satisfies its condition; returns its index
/// and value. Scanning a condition that is not one (None) ends the wait
/// unsatisfied, as in ROCr's Signal::WaitMultiple.
fn wait_any(
    signals: &[Arc<Signal>],
    conds: &[Option<Condition>],
    values: &[i64],
    o: Ordering,
    limit: Option<Duration>,
) -> Option<(usize, i64)> {
    let deadline = limit.and_then(|d| std::time::Instant::now().checked_add(d));
    loop {
        for (i, s) in signals.iter().enumerate() {
            let v = s.load(o);
            match conds[i] {
                None => return None,
                Some(c) if c.holds(v, values[i]) => return Some((i, v)),
                Some(_) => {}
            }
        }
        if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            return None;
        }
        // Sleep briefly on the first; a change to any other is seen within the slice.
        let first = &signals[0];
        let v = first.load(Relaxed);
        first.wait(
            Condition::Ne,
            v,
            Some(Duration::from_micros(500)),
            WaitState::Blocked,
            Relaxed,
        );
    }
}

fn resolve(handles: &[Handle]) -> Result<Vec<Arc<Signal>>, Status> {
    let rt = rt()?;
    handles.iter().map(|&h| rt.signal(h)).collect()
}

export! {
    fn hsa_signal_create(initial: i64, n: u32, consumers: *const Handle, out: *mut Handle) -> HsaStatus {
        status(create(initial, n, consumers, out, false))
    }

    fn hsa_amd_signal_create(initial: i64, n: u32, consumers: *const Handle, attributes: u64, out: *mut Handle) -> HsaStatus {
        // HSA_AMD_SIGNAL_AMD_GPU_ONLY (1) makes a signal without interrupt,
        // as in ROCr; IPC is a hint we do not act on; ROCr ignores bits it
        // does not know, and so do we.
        status(create(initial, n, consumers, out, attributes & 1 != 0))
    }

    fn hsa_signal_destroy(h: Handle) -> HsaStatus {
        // ROCr's Signal::Convert: a null handle is INVALID_ARGUMENT.
        status(rt().and_then(|rt| if h == 0 { Err(Status::InvalidArgument) } else { rt.signal_destroy(h) }))
    }

    fn hsa_amd_signal_value_pointer(h: Handle, out: *mut *const i64) -> HsaStatus {
        status((|| {
            let s = rt()?.signal(h)?;
            // The value lives in the signal's amd_signal_t, at handle + 8.
            put(out as *mut c_void, s.value_ptr())
        })())
    }

    fn hsa_amd_signal_async_handler(
        h: Handle,
        cond: u32,
        value: i64,
        handler: Option<extern "C" fn(i64, *mut c_void) -> bool>,
        arg: *mut c_void,
    ) -> HsaStatus {
        status((|| {
            let rt = rt()?;
            let handler = handler.ok_or(Status::InvalidArgument)?;
            // ROCr accepts a condition it does not know; it never holds, so
            // the handler is registered and never called.
            let Some(cond) = Condition::from_raw(cond) else {
                return rt.signal(h).map(|_| ());
            };
            let arg = arg as usize;
            rt.signal_async_handler(h, cond, value, Box::new(move |v| handler(v, arg as *mut c_void)))
        })())
    }

    fn hsa_amd_async_function(function: Option<extern "C" fn(*mut c_void)>, arg: *mut c_void) -> HsaStatus {
        status((|| {
            rt()?;
            let f = function.ok_or(Status::InvalidArgument)?;
            let arg = arg as usize;
            std::thread::Builder::new()
                .name("inlay-async".into())
                .spawn(move || f(arg as *mut c_void))
                .map(|_| ())
                .map_err(|_| Status::OutOfResources)
        })())
    }

    fn hsa_amd_signal_wait_any(
        count: u32,
        signals: *const Handle,
        conds: *const u32,
        values: *const i64,
        hint: u64,
        _state: u32,
        satisfying: *mut i64,
    ) -> u32 {
        // Returns the index of a satisfied signal, or u32::MAX on bad input.
        (|| -> Result<u32, Status> {
            let n = count as usize;
            if n == 0 {
                return Err(Status::InvalidArgument);
            }
            let rt = rt()?;
            let (handles, conds, values) = (read_array(signals, n)?, read_array(conds, n)?, read_array(values, n)?);
            // As ROCr: null and invalid signals are skipped, and UINT32_MAX
            // means none was left to wait on or none was satisfied in time.
            // (ROCr then pairs the k-th valid signal with conds[k], not with
            // its own condition; we keep each signal's own.)
            let (live, sigs): (Vec<usize>, Vec<Arc<Signal>>) =
                (0..n).filter_map(|i| rt.signal(handles[i]).ok().map(|s| (i, s))).unzip();
            if live.is_empty() {
                return Ok(u32::MAX);
            }
            let conds: Vec<Option<Condition>> = live.iter().map(|&i| Condition::from_raw(conds[i])).collect();
            let values: Vec<i64> = live.iter().map(|&i| values[i]).collect();
            let Some((k, v)) = wait_any(&sigs, &conds, &values, Acquire, timeout(hint)) else {
                return Ok(u32::MAX);
            };
            let i = live[k];
            if !satisfying.is_null() {
                put(satisfying as *mut c_void, v)?;
            }
            Ok(i as u32)
        })().unwrap_or(u32::MAX)
    }

    fn hsa_signal_group_create(n: u32, signals: *const Handle, _nc: u32, _consumers: *const Handle, out: *mut u64) -> HsaStatus {
        status((|| {
            rt()?;
            if n == 0 || out.is_null() {
                return Err(Status::InvalidArgument);
            }
            let handles = read_array(signals, n as usize)?.to_vec();
            resolve(&handles)?;
            let id = NEXT_GROUP.fetch_add(1, Relaxed);
            groups().get_or_insert_with(HashMap::new).insert(id, handles);
            put(out as *mut c_void, id)
        })())
    }

    fn hsa_signal_group_destroy(group: u64) -> HsaStatus {
        status(rt().and_then(|_| {
            groups().as_mut().and_then(|g| g.remove(&group)).map(|_| ()).ok_or(Status::InvalidSignalGroup)
        }))
    }

    fn hsa_signal_group_wait_any_relaxed(group: u64, conds: *const u32, values: *const i64, _state: u32, signal: *mut Handle, value: *mut i64) -> HsaStatus {
        status(group_wait(group, conds, values, signal, value, Relaxed))
    }

    fn hsa_signal_group_wait_any_scacquire(group: u64, conds: *const u32, values: *const i64, _state: u32, signal: *mut Handle, value: *mut i64) -> HsaStatus {
        status(group_wait(group, conds, values, signal, value, Acquire))
    }
}

fn group_wait(
    group: u64,
    conds: *const u32,
    values: *const i64,
    signal: *mut Handle,
    value: *mut i64,
    o: Ordering,
) -> Result<(), Status> {
    rt()?;
    let handles = groups()
        .as_ref()
        .and_then(|g| g.get(&group).cloned())
        .ok_or(Status::InvalidSignalGroup)?;
    if signal.is_null() || value.is_null() {
        return Err(Status::InvalidArgument);
    }
    let sigs = resolve(&handles)?;
    let n = handles.len();
    // ROCr would wait forever on a condition it does not know; we refuse it.
    let conds = read_array(conds, n)?
        .iter()
        .map(|&c| Condition::from_raw(c).map(Some))
        .collect::<Option<Vec<_>>>()
        .ok_or(Status::InvalidArgument)?;
    let (i, v) = wait_any(&sigs, &conds, read_array(values, n)?, o, None).ok_or(Status::Error)?;
    put(signal as *mut c_void, handles[i])?;
    put(value as *mut c_void, v)
}
