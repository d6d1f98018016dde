//! The HSA runtime core behind Inlay's `libhsa-runtime64.so.1`, as a Rust API.
//!
//! A [`Runtime`] owns a CPU agent and the virtual gfx90a agent, their memory
//! pools, the signal table, AQL queues with their packet processors, async
//! copies and the async signal handler thread. Errors are [`Status`] values
//! with the numbers of `hsa_status_t`, so the C layer passes them on as is.

pub mod agent;
pub mod device;
mod fault;
pub mod hostmem;
pub mod intercept;
pub mod memory;
pub mod pool;
pub mod queue;
pub mod signal;
pub mod status;

use agent::{Agent, AgentId};
use device::{Device, VirtualGpu};
use inlay_vgpu::{Fault, MemKind, Memory};
use pool::{Pool, PoolId, Segment};
use queue::{ErrorCallback, Queue};
use signal::{Condition, Notifier, Signal, SignalTable};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub use status::{Result, Status};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// An event for the handlers registered with `hsa_amd_register_system_event_handler`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SystemEvent {
    /// A device access faulted: `address` is the faulting address.
    MemoryFault {
        agent: AgentId,
        address: u64,
        fault: Fault,
    },
}

/// A system event handler: returns true if it handled the event (in C, the
/// handler returned `HSA_STATUS_SUCCESS`), which keeps a memory fault from
/// ending the process.
pub type EventHandler = Arc<dyn Fn(&SystemEvent) -> bool + Send + Sync>;
/// An async signal handler: gets the value; returns true to stay registered.
pub type SignalHandler = Box<dyn FnMut(i64) -> bool + Send>;

struct AsyncHandler {
    signal: Arc<Signal>,
    cond: Condition,
    value: i64,
    handler: SignalHandler,
}

/// State the packet processors and background threads share with the runtime.
pub(crate) struct Shared {
    memory: Arc<Memory>,
    signals: SignalTable,
    notifier: Arc<Notifier>,
    device: RwLock<Arc<dyn Device>>,
    handlers: Mutex<Vec<AsyncHandler>>,
    events: Mutex<Vec<EventHandler>>,
    interceptors: RwLock<Vec<intercept::SharedInterceptor>>,
    stopping: AtomicBool,
    /// The fallback time zero of the system and GPU clocks, should CLOCK_MONOTONIC be unreadable.
    epoch: Instant,
    /// Whether async copies record their start and end on their completion
    /// signal (`hsa_amd_profiling_async_copy_enable`).
    copy_profiling: AtomicBool,
    /// Locked and shared host memory the GPU may reach (see [`memory`]).
    host: memory::HostMemory,
    /// Time limit of each kernel dispatch in nanoseconds (0: none).
    dispatch_timeout_ns: AtomicU64,
    messages: fault::Messages,
}

impl Shared {
    fn device(&self) -> Arc<dyn Device> {
        self.device
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub(crate) fn interceptors(&self) -> Vec<intercept::SharedInterceptor> {
        self.interceptors
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Diagnostics for problems the C caller can only see as a status.
    fn log(&self, msg: &str) {
        if std::env::var_os("INLAY_LOG").is_some() {
            eprintln!("inlay: {msg}");
        }
    }

    /// Hands `ev` to every system event handler; true if one handled it.
    fn report(&self, ev: SystemEvent) -> bool {
        let handlers: Vec<EventHandler> = lock(&self.events).clone();
        let mut handled = false;
        for h in handlers {
            handled |= h(&ev);
        }
        handled
    }

    fn dispatch_timeout(&self) -> Option<Duration> {
        match self.dispatch_timeout_ns.load(Ordering::Relaxed) {
            0 => None,
            ns => Some(Duration::from_nanos(ns)),
        }
    }

    /// The system timestamp and the GPU's, which stamps dispatches and
    /// copies (emulated time: how long the virtual GPU took): nanoseconds of
    /// CLOCK_MONOTONIC, the clock ROCclr's host side reads (Os::timeNanos),
    /// so hipEventElapsedTime between a host-stamped and a GPU-stamped
    /// event means something.
    pub(crate) fn now(&self) -> u64 {
        monotonic_ns().unwrap_or_else(|| self.epoch.elapsed().as_nanos() as u64)
    }

    /// Before a dispatch: host ranges the host unmapped leave the table.
    pub(crate) fn drop_unmapped_host_ranges(&self) {
        self.host.drop_unmapped(&self.memory, |m| self.log(m));
    }
}

/// Reads a time limit in seconds as `INLAY_DISPATCH_TIMEOUT` gives it: a
/// decimal number such as `2.5`; `0` means no limit.
pub fn parse_timeout(text: &str) -> std::result::Result<Option<Duration>, String> {
    let secs: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds (e.g. 2.5)"))?;
    if secs == 0.0 {
        return Ok(None);
    }
    Duration::try_from_secs_f64(secs)
        .ok()
        .filter(|d| !d.is_zero())
        .map(Some)
        .ok_or_else(|| format!("`{text}` is not a positive number of seconds"))
}

/// CLOCK_MONOTONIC in nanoseconds (None if the clock cannot be read).
fn monotonic_ns() -> Option<u64> {
    #[repr(C)]
    struct Timespec {
        sec: i64,
        nsec: i64,
    }
    extern "C" {
        fn clock_gettime(clock: i32, tp: *mut Timespec) -> i32;
    }
    const CLOCK_MONOTONIC: i32 = 1;
    let mut t = Timespec { sec: 0, nsec: 0 };
    // SAFETY: `t` is a writable struct timespec (two 64-bit fields on
    // x86-64 Linux); clock_gettime writes only it.
    let ok = unsafe { clock_gettime(CLOCK_MONOTONIC, &mut t) } == 0;
    let ns = u64::try_from(t.sec).ok()?.checked_mul(1_000_000_000)?;
    ok.then(|| ns + t.nsec as u64)
}

/// The thunk's huge-page size (see [`Runtime::allocate`]).
const HUGE_PAGE: u64 = 2 << 20;

/// One side of a rectangular copy (`hsa_pitched_ptr_t`): bytes per row and
/// per slice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pitched {
    pub base: u64,
    pub pitch: u64,
    pub slice: u64,
}

/// One runtime instance: agents, pools, signals, queues.
pub struct Runtime {
    shared: Arc<Shared>,
    agents: Vec<Agent>,
    pools: Vec<Pool>,
    queues: Mutex<HashMap<u64, Arc<Queue>>>,
    access: Mutex<HashMap<u64, Vec<AgentId>>>,
    next_queue_id: AtomicU64,
    handler_thread: Mutex<Option<JoinHandle<()>>>,
}

impl Default for Runtime {
    fn default() -> Self {
        Self::new()
    }
}

impl Runtime {
    pub fn new() -> Self {
        let memory = Arc::new(Memory::new());
        // INLAY_THREADS: host threads running workgroups (default: all cores).
        let threads = std::env::var("INLAY_THREADS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let notifier = Arc::new(Notifier::default());
        // A kernel's interrupt wakes whoever waits on a signal (it updated one).
        let wake = notifier.clone();
        let gpu: Arc<dyn Device> = Arc::new(VirtualGpu::new(
            memory.clone(),
            threads,
            Arc::new(move |_| wake.notify()),
        ));
        Self {
            shared: Arc::new(Shared {
                memory,
                signals: SignalTable::default(),
                notifier,
                device: RwLock::new(gpu),
                handlers: Mutex::new(Vec::new()),
                events: Mutex::new(Vec::new()),
                interceptors: RwLock::new(Vec::new()),
                stopping: AtomicBool::new(false),
                epoch: Instant::now(),
                copy_profiling: AtomicBool::new(false),
                host: memory::HostMemory::default(),
                dispatch_timeout_ns: AtomicU64::new(0),
                messages: fault::Messages::from_env(),
            }),
            agents: vec![agent::host_cpu(), agent::virtual_gfx90a()],
            pools: pool::standard_pools(),
            queues: Mutex::new(HashMap::new()),
            access: Mutex::new(HashMap::new()),
            next_queue_id: AtomicU64::new(0),
            handler_thread: Mutex::new(None),
        }
    }

    /// Replaces what runs kernel dispatches (the virtual GPU plugs in here).
    pub fn set_device(&self, device: Arc<dyn Device>) {
        *self
            .shared
            .device
            .write()
            .unwrap_or_else(|e| e.into_inner()) = device;
    }

    /// Ends every kernel dispatch that runs longer than `limit` with a
    /// queue error (`HSA_STATUS_ERROR_EXCEPTION`) and a report; None: no limit.
    pub fn set_dispatch_timeout(&self, limit: Option<Duration>) {
        let ns = limit.map_or(0, |d| d.as_nanos().clamp(1, u64::MAX as u128) as u64);
        self.shared.dispatch_timeout_ns.store(ns, Ordering::Relaxed);
    }

    /// What runs dispatches.
    pub fn device(&self) -> Arc<dyn Device> {
        self.shared.device()
    }

    pub fn memory(&self) -> &Arc<Memory> {
        &self.shared.memory
    }

    // ---- agents, pools -------------------------------------------------

    pub fn agents(&self) -> &[Agent] {
        &self.agents
    }

    pub fn agent(&self, id: AgentId) -> Result<&Agent> {
        self.agents.get(id.0 as usize).ok_or(Status::InvalidAgent)
    }

    pub fn pools(&self) -> &[Pool] {
        &self.pools
    }

    pub fn pool(&self, id: PoolId) -> Result<&Pool> {
        self.pools
            .get(id.0 as usize)
            .ok_or(Status::InvalidMemoryPool)
    }

    pub fn agent_pools(&self, agent: AgentId) -> impl Iterator<Item = &Pool> {
        self.pools.iter().filter(move |p| p.owner == agent)
    }

    /// HSA_SYSTEM_INFO_TIMESTAMP: CLOCK_MONOTONIC in nanoseconds (1 GHz).
    pub fn timestamp(&self) -> u64 {
        self.shared.now()
    }

    /// `hsa_amd_profiling_async_copy_enable`: later async copies record
    /// their start and end on their completion signal.
    pub fn profile_copies(&self, enable: bool) {
        self.shared.copy_profiling.store(enable, Ordering::Release);
    }

    // ---- memory ----------------------------------------------------------

    pub fn allocate(&self, pool: PoolId, size: u64) -> Result<u64> {
        let p = self.pool(pool)?;
        if !p.alloc_allowed || p.segment != Segment::Global {
            return Err(Status::InvalidAllocation);
        }
        if size == 0 {
            return Err(Status::InvalidArgument);
        }
        if size > p.alloc_max_size {
            return Err(Status::InvalidAllocation);
        }
        // Round up to the granule as ROCr does, so whole pages are ours.
        let rounded = size
            .checked_add(p.granule - 1)
            .ok_or(Status::InvalidAllocation)?
            / p.granule
            * p.granule;
        // The kernel driver's thunk places allocations of 2 MiB or more on
        // 2 MiB boundaries (its huge-page size), and device code relies on
        // it: the device-side malloc of ROCm's device libraries finds a
        // slab's header by rounding a pointer down to 2 MiB.
        let align = if rounded >= HUGE_PAGE {
            HUGE_PAGE
        } else {
            p.alignment
        };
        let base = self
            .shared
            .memory
            .alloc(rounded, align, p.kind, u64::from(pool.0))
            .map_err(|f| match f {
                Fault::OutOfMemory { .. } => Status::OutOfResources,
                _ => Status::InvalidAllocation,
            })?;
        self.shared.host.allocated(base, size);
        self.shared.log(&format!(
            "allocated {base:#x}+{size:#x} from pool {}",
            pool.0
        ));
        Ok(base)
    }

    /// Frees an allocation by its base address; null is nothing to free
    /// (ROCr's `Runtime::FreeMemory`: an address it did not allocate is
    /// INVALID_ALLOCATION).
    pub fn free(&self, ptr: u64) -> Result<()> {
        if ptr == 0 {
            return Ok(());
        }
        match self.shared.memory.find(ptr) {
            Some(a)
                if a.base == ptr
                    && !matches!(a.kind, MemKind::Runtime | MemKind::Locked | MemKind::Svm) => {}
            _ => return Err(Status::InvalidAllocation),
        }
        self.shared
            .memory
            .free(ptr)
            .map_err(|_| Status::InvalidAllocation)?;
        lock(&self.access).remove(&ptr);
        self.shared.host.freed(ptr);
        Ok(())
    }

    /// Grants agents access to an allocation (`hsa_amd_agents_allow_access`)
    /// given by its base address, as ROCr's `Runtime::AllowAccess` looks it
    /// up; anything else is INVALID_ALLOCATION.
    pub fn allow_access(&self, agents: &[AgentId], ptr: u64) -> Result<()> {
        if agents.is_empty() {
            return Err(Status::InvalidArgument);
        }
        for a in agents {
            self.agent(*a)?;
        }
        let alloc = self
            .shared
            .memory
            .find(ptr)
            .filter(|a| a.base == ptr)
            .ok_or(Status::InvalidAllocation)?;
        let mut access = lock(&self.access);
        let list = access.entry(alloc.base).or_default();
        for a in agents {
            if !list.contains(a) {
                list.push(*a);
            }
        }
        Ok(())
    }

    /// Checks a range a host caller wants us to touch: inside one live
    /// allocation, or host memory outside every block we know that is mapped.
    fn check_range(&self, addr: u64, len: u64, write: bool) -> Result<()> {
        let memory = &self.shared.memory;
        memory
            .check_host(addr, len)
            .map_err(|_| Status::InvalidArgument)?;
        if len > 0 && memory.find(addr).is_none() && !hostmem::mapped(addr, len, write) {
            return Err(Status::InvalidArgument);
        }
        Ok(())
    }

    /// Synchronous copy (`hsa_memory_copy`).
    pub fn copy(&self, dst: u64, src: u64, size: u64) -> Result<()> {
        self.check_range(dst, size, true)?;
        self.check_range(src, size, false)?;
        self.shared
            .memory
            .copy_host(dst, src, size)
            .map_err(|_| Status::InvalidArgument)
    }

    /// Fills `count` 32-bit words (`hsa_amd_memory_fill`). As in ROCr's
    /// `Runtime::FillMemory`, the words must lie inside one allocation the
    /// runtime knows; anything else is INVALID_ALLOCATION.
    pub fn fill(&self, dst: u64, value: u32, count: u64) -> Result<()> {
        if count == 0 {
            return Ok(());
        }
        let len = count.checked_mul(4).ok_or(Status::InvalidAllocation)?;
        self.shared
            .memory
            .check(dst, len)
            .map_err(|_| Status::InvalidAllocation)?;
        self.shared
            .memory
            .fill_u32(dst, value, count)
            .map_err(|_| Status::InvalidAllocation)
    }

    /// Copies once every dependency is 0, then decrements `completion` by 1.
    pub fn async_copy(
        &self,
        dst: u64,
        src: u64,
        size: u64,
        deps: Vec<Arc<Signal>>,
        completion: Arc<Signal>,
    ) -> Result<()> {
        self.check_range(dst, size, true)?;
        self.check_range(src, size, false)?;
        let shared = self.shared.clone();
        self.after(deps, move || {
            let start = shared.now();
            // The ranges were valid at submission; the caller may have freed
            // one since. Then it is a fault to report, never a wild write.
            let copied = shared.memory.copy_host(dst, src, size);
            if shared.copy_profiling.load(Ordering::Acquire) {
                completion.set_times(start, shared.now());
            }
            if let Err(fault) = copied {
                let what = format!(
                    "async copy of {size} bytes from {src:#x} to {dst:#x} faulted: {fault}"
                );
                shared.log(&what);
                fault::memory_fault(&shared, dst, fault, &what);
            }
            completion.sub(1, Ordering::AcqRel);
        })
    }

    /// `hsa_amd_memory_async_copy_rect`: copies a `range` (x in bytes, y
    /// rows, z slices) between two pitched layouts once every dependency is
    /// 0, then decrements `completion`. Checked as ROCr's SDMA path checks:
    /// dword-aligned bases, pitches and slices, rows inside their pitch,
    /// rows inside their slice, slices given when more than one is copied.
    #[allow(clippy::too_many_arguments)]
    pub fn async_copy_rect(
        &self,
        dst: Pitched,
        dst_offset: [u32; 3],
        src: Pitched,
        src_offset: [u32; 3],
        range: [u32; 3],
        deps: Vec<Arc<Signal>>,
        completion: Arc<Signal>,
    ) -> Result<()> {
        let bad = Err(Status::InvalidArgument);
        for p in [&dst, &src] {
            if p.base % 4 != 0 || p.pitch % 4 != 0 || p.slice % 4 != 0 || p.pitch == 0 {
                return bad;
            }
        }
        let [x, y, z] = range.map(u64::from);
        for (p, o) in [(&src, src_offset), (&dst, dst_offset)] {
            if u64::from(o[0]) + x > p.pitch {
                return bad;
            }
            if p.slice != 0 && u64::from(o[1]) + y > p.slice / p.pitch {
                return bad;
            }
        }
        if z > 1 && (src.slice == 0 || dst.slice == 0) {
            return bad;
        }
        // Where row (r, s) of the range starts in each layout.
        let at = |p: &Pitched, o: [u32; 3], r: u64, s: u64| -> Option<u64> {
            let slice = (u64::from(o[2]) + s).checked_mul(p.slice)?;
            let row = (u64::from(o[1]) + r).checked_mul(p.pitch)?;
            p.base
                .checked_add(slice)?
                .checked_add(row)?
                .checked_add(u64::from(o[0]))
        };
        // The whole span of each side must be one allocation or host memory.
        for (p, o, write) in [(&src, src_offset, false), (&dst, dst_offset, true)] {
            let first = at(p, o, 0, 0).ok_or(Status::InvalidArgument)?;
            let last = at(p, o, y.saturating_sub(1), z.saturating_sub(1))
                .and_then(|a| a.checked_add(x))
                .ok_or(Status::InvalidArgument)?;
            self.check_range(first, last - first, write)?;
        }
        let shared = self.shared.clone();
        self.after(deps, move || {
            let start = shared.now();
            for s in 0..z {
                for r in 0..y {
                    let (Some(d), Some(from)) = (at(&dst, dst_offset, r, s), at(&src, src_offset, r, s))
                    else {
                        continue;
                    };
                    if let Err(fault) = shared.memory.copy_host(d, from, x) {
                        let what = format!(
                            "rectangular copy of a {x}-byte row from {from:#x} to {d:#x} faulted: {fault}"
                        );
                        shared.log(&what);
                        fault::memory_fault(&shared, d, fault, &what);
                    }
                }
            }
            if shared.copy_profiling.load(Ordering::Acquire) {
                completion.set_times(start, shared.now());
            }
            completion.sub(1, Ordering::AcqRel);
        })
    }

    /// Runs `work` once every signal of `deps` is 0 (not at all if the
    /// runtime shuts down first): at once, in the caller, when they already
    /// are, as a DMA engine with nothing queued starts at once; else on a
    /// background thread. Starting at once matters, not only for speed:
    /// ROCclr's staged copies refill their staging buffer for the next row
    /// as soon as the previous row's copy is submitted, which real SDMA has
    /// long read by then; a copy left waiting for a thread copied the next
    /// row's data instead.
    fn after(&self, deps: Vec<Arc<Signal>>, work: impl FnOnce() + Send + 'static) -> Result<()> {
        if deps.iter().all(|d| d.load(Ordering::Acquire) == 0) {
            work();
            return Ok(());
        }
        let shared = self.shared.clone();
        std::thread::Builder::new()
            .name("inlay-copy".into())
            .spawn(move || {
                for d in &deps {
                    loop {
                        let v = d.wait(
                            Condition::Eq,
                            0,
                            Some(Duration::from_millis(50)),
                            signal::WaitState::Blocked,
                            Ordering::Acquire,
                        );
                        if v == 0 {
                            break;
                        }
                        if shared.stopping.load(Ordering::Acquire) {
                            return;
                        }
                    }
                }
                work();
            })
            .map(|_| ())
            .map_err(|_| Status::OutOfResources)
    }

    // ---- signals ---------------------------------------------------------

    /// Creates a signal; returns its handle (the address of its
    /// `amd_signal_t`). As in ROCr, it is an interrupt signal (kernels can
    /// wake its host waiters) unless `gpu_only` or no consumer is a CPU.
    pub fn signal_create(
        &self,
        initial: i64,
        consumers: Vec<AgentId>,
        gpu_only: bool,
    ) -> Result<u64> {
        for c in &consumers {
            self.agent(*c)?;
        }
        let interrupt = !gpu_only && (consumers.is_empty() || consumers.contains(&agent::CPU));
        let s = Signal::new(
            self.shared.memory.clone(),
            initial,
            self.shared.notifier.clone(),
            consumers,
            interrupt,
        )
        .map_err(|_| Status::OutOfResources)?;
        Ok(self.shared.signals.insert(Arc::new(s)))
    }

    /// The signal behind a handle: a null handle is INVALID_ARGUMENT and
    /// any other unknown one INVALID_SIGNAL, as ROCr's `Signal::Convert` has it.
    pub fn signal(&self, handle: u64) -> Result<Arc<Signal>> {
        if handle == 0 {
            return Err(Status::InvalidArgument);
        }
        self.shared.signals.get(handle).ok_or(Status::InvalidSignal)
    }

    pub fn signal_destroy(&self, handle: u64) -> Result<()> {
        // A queue's doorbell goes with its queue: ROCr's DoorbellSignal
        // ignores a destroy (`doDestroySignal`), and so do we.
        if lock(&self.queues).values().any(|q| q.doorbell == handle) {
            return Ok(());
        }
        self.shared
            .signals
            .remove(handle)
            .map(|_| ())
            .ok_or(Status::InvalidSignal)
    }

    /// Calls `handler` on a background thread once `cond(value of signal, value)` holds.
    pub fn signal_async_handler(
        &self,
        handle: u64,
        cond: Condition,
        value: i64,
        handler: SignalHandler,
    ) -> Result<()> {
        let signal = self.signal(handle)?;
        self.ensure_handler_thread()?;
        lock(&self.shared.handlers).push(AsyncHandler {
            signal,
            cond,
            value,
            handler,
        });
        self.shared.notifier.watch(1);
        self.shared.notifier.notify();
        Ok(())
    }

    fn ensure_handler_thread(&self) -> Result<()> {
        let mut t = lock(&self.handler_thread);
        if t.is_some() {
            return Ok(());
        }
        let shared = self.shared.clone();
        let h = std::thread::Builder::new()
            .name("inlay-signal-handlers".into())
            .spawn(move || run_handlers(&shared))
            .map_err(|_| Status::OutOfResources)?;
        *t = Some(h);
        Ok(())
    }

    pub fn register_event_handler(&self, handler: EventHandler) {
        lock(&self.shared.events).push(handler);
    }

    /// Adds an interceptor (instrumentation): it sees frozen executables and
    /// every kernel dispatch from now on.
    pub fn add_interceptor(&self, i: intercept::SharedInterceptor) {
        self.shared
            .interceptors
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .push(i);
    }

    /// Tells the interceptors that an executable was frozen.
    pub fn executable_frozen(&self, code: &[intercept::LoadedCode]) {
        for i in self.shared.interceptors() {
            i.executable_frozen(code);
        }
    }

    /// Hands an event to every registered system event handler; true if
    /// one of them handled it.
    pub fn report_event(&self, ev: SystemEvent) -> bool {
        self.shared.report(ev)
    }

    // ---- queues ----------------------------------------------------------

    /// Creates an AQL queue on `agent` with `size` packets (a power of two),
    /// checking its arguments in ROCr's order and with ROCr's statuses
    /// (`hsa_queue_create` in hsa.cpp, then `GpuAgent::QueueCreate`).
    /// `private_segment_size` is per work-item; `u32::MAX` means the default.
    pub fn queue_create(
        &self,
        agent: AgentId,
        size: u32,
        queue_type: u32,
        private_segment_size: u32,
        on_error: Option<ErrorCallback>,
    ) -> Result<Arc<Queue>> {
        // HSA_QUEUE_TYPE_MULTI, _SINGLE, _COOPERATIVE.
        if size == 0 || !size.is_power_of_two() || queue_type > 2 {
            return Err(Status::InvalidArgument);
        }
        let a = self.agent(agent)?;
        if a.queues_max == 0 {
            // CpuAgent::QueueCreate: no packet processor on the CPU.
            return Err(Status::Error);
        }
        if size > a.queue_max_size {
            return Err(Status::OutOfResources);
        }
        if size < a.queue_min_size {
            return Err(Status::InvalidArgument);
        }
        // Most scratch a work-item may have (GpuAgent::QueueCreate).
        if private_segment_size != u32::MAX && private_segment_size > 262_128 {
            return Err(Status::OutOfResources);
        }
        if lock(&self.queues).len() >= a.queues_max as usize {
            return Err(Status::OutOfResources);
        }
        let mem = &self.shared.memory;
        let oom = |_| Status::OutOfResources;
        let addr = mem
            .alloc(queue::AMD_QUEUE_SIZE, 64, MemKind::Runtime, 0)
            .map_err(oom)?;
        let ring = match mem.alloc(
            u64::from(size) * queue::PACKET_SIZE,
            4096,
            MemKind::Runtime,
            0,
        ) {
            Ok(r) => r,
            Err(_) => {
                let _ = mem.free(addr);
                return Err(Status::OutOfResources);
            }
        };
        let id = self.next_queue_id.fetch_add(1, Ordering::Relaxed);
        let q = match queue::start(
            self.shared.clone(),
            addr,
            ring,
            size,
            id,
            queue_type,
            on_error,
        ) {
            Ok(q) => q,
            Err(e) => {
                let _ = mem.free(ring);
                let _ = mem.free(addr);
                return Err(e);
            }
        };
        lock(&self.queues).insert(addr, q.clone());
        Ok(q)
    }

    pub fn queue(&self, addr: u64) -> Result<Arc<Queue>> {
        lock(&self.queues)
            .get(&addr)
            .cloned()
            .ok_or(Status::InvalidQueue)
    }

    pub fn queue_destroy(&self, addr: u64) -> Result<()> {
        let q = lock(&self.queues)
            .remove(&addr)
            .ok_or(Status::InvalidQueue)?;
        self.retire_queue(&q);
        Ok(())
    }

    fn retire_queue(&self, q: &Queue) {
        queue::stop(q);
        self.shared.signals.remove(q.doorbell);
        let _ = self.shared.memory.free(q.ring);
        let _ = self.shared.memory.free(q.addr);
    }

    /// Stops every queue and background thread. The runtime is unusable after.
    pub fn shut_down(&self) {
        self.shared.stopping.store(true, Ordering::Release);
        let queues: Vec<Arc<Queue>> = lock(&self.queues).drain().map(|(_, q)| q).collect();
        for q in queues {
            self.retire_queue(&q);
        }
        self.shared.notifier.notify();
        if let Some(h) = lock(&self.handler_thread).take() {
            if h.thread().id() != std::thread::current().id() {
                let _ = h.join();
            }
        }
    }
}

/// The async handler loop: calls each handler whose condition holds, outside
/// the lock (a handler may register new handlers), and keeps those that ask.
fn run_handlers(shared: &Shared) {
    let mut seen = shared.notifier.generation();
    while !shared.stopping.load(Ordering::Acquire) {
        let ready: Vec<(AsyncHandler, i64)> = {
            let mut hs = lock(&shared.handlers);
            let mut ready = Vec::new();
            let mut i = 0;
            while i < hs.len() {
                let v = hs[i].signal.load(Ordering::Acquire);
                if hs[i].cond.holds(v, hs[i].value) {
                    ready.push((hs.swap_remove(i), v));
                } else {
                    i += 1;
                }
            }
            ready
        };
        for (mut h, v) in ready {
            let keep = h.handler.as_mut()(v);
            if keep {
                lock(&shared.handlers).push(h);
            } else {
                shared.notifier.watch(-1);
            }
        }
        seen = shared.notifier.wait_after(seen, Duration::from_millis(20));
    }
}
