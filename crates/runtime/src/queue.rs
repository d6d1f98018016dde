//! AQL queues: an `amd_queue_t` and a ring of 64-byte packets in host memory,
//! and one packet-processor thread per queue that takes packets in order.
//!
//! The processor runs each packet to completion before looking at the next,
//! so every packet behaves as if its barrier bit were set; that is allowed
//! (the bit only forbids overlapping) and keeps ordering obvious.

use crate::device::{DispatchError, KernelDispatch};
use crate::signal::{Condition, Signal, WaitState};
use crate::status::Status;
use crate::Shared;
use inlay_vgpu::Watch;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{JoinHandle, ThreadId};
use std::time::Duration;

/// `hsa_packet_type_t` values.
pub const PACKET_VENDOR_SPECIFIC: u8 = 0;
pub const PACKET_INVALID: u8 = 1;
pub const PACKET_KERNEL_DISPATCH: u8 = 2;
pub const PACKET_BARRIER_AND: u8 = 3;
pub const PACKET_AGENT_DISPATCH: u8 = 4;
pub const PACKET_BARRIER_OR: u8 = 5;

/// Size of `amd_queue_t` and the offsets of the fields we keep live in it.
pub const AMD_QUEUE_SIZE: u64 = 256;
const OFF_WRITE_INDEX: u64 = 56;
const OFF_READ_INDEX: u64 = 120;
pub const PACKET_SIZE: u64 = 64;

/// How often an idle or blocked processor looks again without a wake-up.
const POLL: Duration = Duration::from_millis(5);

pub type ErrorCallback = Arc<dyn Fn(Status, u64) + Send + Sync>;

/// One queue. `addr` is the `hsa_queue_t*` callers hold.
pub struct Queue {
    pub addr: u64,
    pub ring: u64,
    pub size: u32,
    pub id: u64,
    pub doorbell: u64,
    doorbell_signal: Arc<Signal>,
    stop: AtomicBool,
    active: AtomicBool,
    /// Whether packets stamp their completion signal with start and end
    /// times (`hsa_amd_profiling_set_profiler_enabled`).
    profiling: AtomicBool,
    thread: Mutex<Option<(JoinHandle<()>, ThreadId)>>,
    pub(crate) on_error: Option<ErrorCallback>,
}

fn atomic_u64(addr: u64) -> &'static AtomicU64 {
    // SAFETY: callers pass fields of a live amd_queue_t, 8-byte aligned; the
    // queue outlives every use (the processor thread is joined before the
    // memory is freed, and the C layer validates queue pointers first).
    unsafe { AtomicU64::from_ptr(addr as *mut u64) }
}

impl Queue {
    pub fn write_index(&self) -> &AtomicU64 {
        atomic_u64(self.addr + OFF_WRITE_INDEX)
    }

    pub fn read_index(&self) -> &AtomicU64 {
        atomic_u64(self.addr + OFF_READ_INDEX)
    }

    /// Turns timestamps on completion signals on or off.
    pub fn set_profiling(&self, on: bool) {
        self.profiling.store(on, Ordering::Release);
    }

    /// False once the queue hit an error; it processes nothing after that.
    pub fn is_active(&self) -> bool {
        self.active.load(Ordering::Acquire)
    }

    fn header(&self, index: u64) -> &AtomicU16 {
        let slot = self.ring + (index % self.size as u64) * PACKET_SIZE;
        // SAFETY: the slot lies in the ring (index taken modulo the size) and is 64-byte aligned.
        unsafe { AtomicU16::from_ptr(slot as *mut u16) }
    }

    fn packet(&self, index: u64) -> [u8; 64] {
        let slot = self.ring + (index % self.size as u64) * PACKET_SIZE;
        let mut p = [0u8; 64];
        // SAFETY: the slot is 64 bytes inside the ring; the producer published it
        // by storing the header with release, which we loaded with acquire.
        unsafe { std::ptr::copy_nonoverlapping(slot as *const u8, p.as_mut_ptr(), 64) };
        p
    }
}

/// Builds the queue structure in `mem` (already allocated, zeroed) and starts its processor.
#[allow(clippy::too_many_arguments)]
pub(crate) fn start(
    shared: Arc<Shared>,
    addr: u64,
    ring: u64,
    size: u32,
    id: u64,
    queue_type: u32,
    on_error: Option<ErrorCallback>,
) -> Result<Arc<Queue>, Status> {
    let doorbell_signal = Signal::new(
        shared.memory.clone(),
        -1,
        shared.notifier.clone(),
        vec![],
        false,
    )
    .map_err(|_| Status::OutOfResources)?;
    let doorbell_signal = Arc::new(doorbell_signal);
    let doorbell = shared.signals.insert(doorbell_signal.clone());
    let write = |off: u64, bytes: &[u8]| {
        // SAFETY: `addr` is a fresh, zeroed AMD_QUEUE_SIZE-byte allocation owned by this queue.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), (addr + off) as *mut u8, bytes.len())
        }
    };
    write(0, &queue_type.to_le_bytes());
    write(4, &1u32.to_le_bytes()); // HSA_QUEUE_FEATURE_KERNEL_DISPATCH
    write(8, &ring.to_le_bytes());
    write(16, &doorbell.to_le_bytes());
    write(24, &size.to_le_bytes());
    write(32, &id.to_le_bytes());
    for i in 0..size as u64 {
        let slot = ring + i * PACKET_SIZE;
        // SAFETY: the slot is inside the fresh ring allocation.
        unsafe { AtomicU16::from_ptr(slot as *mut u16) }
            .store(PACKET_INVALID as u16, Ordering::Relaxed);
    }
    let q = Arc::new(Queue {
        addr,
        ring,
        size,
        id,
        doorbell,
        doorbell_signal,
        stop: AtomicBool::new(false),
        active: AtomicBool::new(true),
        profiling: AtomicBool::new(false),
        thread: Mutex::new(None),
        on_error,
    });
    let worker = q.clone();
    let spawned = std::thread::Builder::new()
        .name(format!("inlay-queue-{id}"))
        .spawn(move || process(&shared, &worker));
    match spawned {
        Ok(h) => {
            let tid = h.thread().id();
            *q.thread.lock().unwrap_or_else(|e| e.into_inner()) = Some((h, tid));
        }
        Err(_) => q.active.store(false, Ordering::Release),
    }
    Ok(q)
}

/// Stops processing for good without waiting (`hsa_queue_inactivate`).
pub fn inactivate(q: &Queue) {
    q.active.store(false, Ordering::Release);
    q.stop.store(true, Ordering::Release);
    q.doorbell_signal.store(i64::MIN, Ordering::Release);
}

/// Stops the processor and waits for it (unless called from it, e.g. from the error callback).
pub(crate) fn stop(q: &Queue) {
    q.stop.store(true, Ordering::Release);
    q.doorbell_signal.store(i64::MIN, Ordering::Release);
    let taken = q.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some((h, tid)) = taken {
        if tid != std::thread::current().id() {
            let _ = h.join();
        }
    }
}

fn process(shared: &Shared, q: &Queue) {
    loop {
        if q.stop.load(Ordering::Acquire) {
            return;
        }
        let bell = q.doorbell_signal.load(Ordering::Acquire);
        let read = q.read_index().load(Ordering::Acquire);
        let header = q.header(read).load(Ordering::Acquire);
        if header as u8 == PACKET_INVALID {
            q.doorbell_signal.wait(
                Condition::Ne,
                bell,
                Some(POLL),
                WaitState::Blocked,
                Ordering::Acquire,
            );
            continue;
        }
        let packet = q.packet(read);
        let completion = u64::from_le_bytes(packet[56..64].try_into().unwrap_or_default());
        let start = shared.now();
        let outcome = check_packet(shared, header, &packet).and_then(|()| match header as u8 {
            PACKET_KERNEL_DISPATCH => dispatch(shared, q, read, &packet),
            PACKET_BARRIER_AND => barrier(shared, q, &packet, true),
            PACKET_BARRIER_OR => barrier(shared, q, &packet, false),
            _ => Err(DispatchError::new(
                Status::InvalidPacketFormat,
                format!(
                    "packet type {} is not supported on a GPU queue",
                    header as u8
                ),
            )),
        });
        if let Err(e) = outcome {
            // A queue torn down mid-packet just ends it, as hardware queue
            // teardown does: nothing reported, the completion signal left alone.
            if q.stop.load(Ordering::Acquire) || e.stopped() {
                return;
            }
            // The queue processes nothing more; the packet stays unconsumed.
            q.active.store(false, Ordering::Release);
            crate::fault::queue_error(shared, q, read, &e);
            return;
        }
        q.header(read)
            .store(PACKET_INVALID as u16, Ordering::Release);
        q.read_index().store(read + 1, Ordering::Release);
        if completion != 0 {
            match shared.signals.get(completion) {
                Some(s) => {
                    if q.profiling.load(Ordering::Acquire) {
                        s.set_times(start, shared.now());
                    }
                    s.sub(1, Ordering::AcqRel)
                }
                None => {
                    q.active.store(false, Ordering::Release);
                    let e = DispatchError::new(
                        Status::InvalidSignal,
                        format!(
                            "completion signal {completion:#x} was destroyed while the packet ran"
                        ),
                    );
                    crate::fault::queue_error(shared, q, read, &e);
                    return;
                }
            }
        }
    }
}

/// Checks what every packet must satisfy before it runs: the header's
/// reserved bits and fence scopes, the reserved fields and alignments of the
/// packet type, and a completion signal that exists (so a packet never runs
/// and then finds it cannot report completion). Nothing is consumed on error.
fn check_packet(shared: &Shared, header: u16, p: &[u8; 64]) -> Result<(), DispatchError> {
    let bad = |m: String| Err(DispatchError::new(Status::InvalidPacketFormat, m));
    // Bits 0-7 type, 8 barrier, 9-10 acquire scope, 11-12 release scope, 13-15 reserved.
    if header >> 13 != 0 {
        return bad(format!("reserved header bits set ({header:#06x})"));
    }
    if (header >> 9) & 3 == 3 || (header >> 11) & 3 == 3 {
        return bad(format!("fence scope 3 does not exist ({header:#06x})"));
    }
    match header as u8 {
        PACKET_KERNEL_DISPATCH => {
            let setup = u16_at(p, 2);
            if setup >> 2 != 0 {
                return bad(format!("reserved setup bits set ({setup:#06x})"));
            }
            if u16_at(p, 10) != 0 || u64_at(p, 48) != 0 {
                return bad("reserved fields of a dispatch packet are not zero".into());
            }
            let kernarg = u64_at(p, 40);
            if !kernarg.is_multiple_of(16) {
                return bad(format!(
                    "kernarg_address {kernarg:#x} is not 16-byte aligned"
                ));
            }
        }
        PACKET_BARRIER_AND | PACKET_BARRIER_OR
            if u16_at(p, 2) != 0 || u32_at(p, 4) != 0 || u64_at(p, 48) != 0 =>
        {
            return bad("reserved fields of a barrier packet are not zero".into());
        }
        _ => {}
    }
    let completion = u64_at(p, 56);
    if completion != 0 && shared.signals.get(completion).is_none() {
        return Err(DispatchError::new(
            Status::InvalidSignal,
            format!("completion signal {completion:#x} does not exist"),
        ));
    }
    Ok(())
}

fn u16_at(p: &[u8; 64], off: usize) -> u16 {
    u16::from_le_bytes([p[off], p[off + 1]])
}
fn u32_at(p: &[u8; 64], off: usize) -> u32 {
    u32::from_le_bytes([p[off], p[off + 1], p[off + 2], p[off + 3]])
}
fn u64_at(p: &[u8; 64], off: usize) -> u64 {
    u64::from(u32_at(p, off)) | (u64::from(u32_at(p, off + 4)) << 32)
}

fn dispatch(shared: &Shared, q: &Queue, read: u64, p: &[u8; 64]) -> Result<(), DispatchError> {
    let setup = u16_at(p, 2);
    let d = KernelDispatch {
        queue: q.addr,
        address: q.ring + (read % u64::from(q.size)) * PACKET_SIZE,
        packet_id: read,
        dimensions: setup & 3,
        workgroup_size: [u16_at(p, 4), u16_at(p, 6), u16_at(p, 8)],
        grid_size: [u32_at(p, 12), u32_at(p, 16), u32_at(p, 20)],
        private_segment_size: u32_at(p, 24),
        group_segment_size: u32_at(p, 28),
        kernel_object: u64_at(p, 32),
        kernarg_address: u64_at(p, 40),
        raw: *p,
    };
    // The statuses ROCr reports for the packet processor's exception codes,
    // in the order its handler tests them (AqlQueue::ExceptionHandler):
    // EC_QUEUE_PACKET_DISPATCH_DIM_INVALID, _GROUP_SEGMENT_SIZE_INVALID,
    // _CODE_INVALID ("invalid (or NULL) code"), _WORK_GROUP_SIZE_INVALID.
    let bad = |status, m: String| Err(DispatchError::new(status, m));
    if !(1..=3).contains(&d.dimensions) {
        return bad(
            Status::IncompatibleArguments,
            format!("dispatch dimensions {} (must be 1, 2 or 3)", d.dimensions),
        );
    }
    if u64::from(d.group_segment_size) > crate::pool::GROUP_SEGMENT {
        return bad(
            Status::InvalidAllocation,
            format!(
                "group segment of {} bytes (most 64 KiB)",
                d.group_segment_size
            ),
        );
    }
    if d.kernel_object == 0 {
        return bad(
            Status::InvalidCodeObject,
            "kernel dispatch with a null kernel_object".into(),
        );
    }
    if !d.kernel_object.is_multiple_of(64) {
        return bad(
            Status::InvalidCodeObject,
            format!(
                "kernel_object {:#x} is not 64-byte aligned",
                d.kernel_object
            ),
        );
    }
    let wg: u32 = d.workgroup_size.iter().map(|&x| u32::from(x)).product();
    if wg == 0 || wg > 1024 {
        return bad(
            Status::InvalidArgument,
            format!("workgroup of {wg} work-items (1 to 1024)"),
        );
    }
    if d.grid_size.contains(&0) {
        return bad(Status::InvalidPacketFormat, "zero grid size".into());
    }
    shared.drop_unmapped_host_ranges();
    let device = shared.device();
    let interceptors = shared.interceptors();
    let mut d = d;
    for i in &interceptors {
        if let Some(object) = i.before_dispatch(&d) {
            d.kernel_object = object;
            d.raw[32..40].copy_from_slice(&object.to_le_bytes());
        }
    }
    let watch = Watch {
        stop: Some(&q.stop),
        time_limit: shared.dispatch_timeout(),
    };
    let outcome = device.dispatch(&d, watch);
    for i in &interceptors {
        i.after_dispatch(&d, &outcome);
    }
    outcome.map(|_| ())
}

/// Waits until all (AND) or any (OR) of the non-null dependency signals are 0.
fn barrier(shared: &Shared, q: &Queue, p: &[u8; 64], all: bool) -> Result<(), DispatchError> {
    let mut deps = Vec::new();
    for i in 0..5 {
        let h = u64_at(p, 8 + i * 8);
        if h == 0 {
            continue;
        }
        match shared.signals.get(h) {
            Some(s) => deps.push(s),
            None => {
                return Err(DispatchError::new(
                    Status::InvalidSignal,
                    format!("barrier packet names unknown signal {h:#x}"),
                ))
            }
        }
    }
    if deps.is_empty() {
        return Ok(());
    }
    let done = || {
        let zero = |s: &Arc<Signal>| s.load(Ordering::Acquire) == 0;
        if all {
            deps.iter().all(zero)
        } else {
            deps.iter().any(zero)
        }
    };
    shared.notifier.watch(1);
    let result = loop {
        let seen = shared.notifier.generation();
        if done() {
            break Ok(());
        }
        if q.stop.load(Ordering::Acquire) {
            break Err(DispatchError::new(Status::InvalidQueue, "queue destroyed"));
        }
        shared.notifier.wait_after(seen, POLL);
    };
    shared.notifier.watch(-1);
    result
}
