//! HSA signals: `amd_signal_t` structures in device memory, whose 64-bit
//! value host threads and kernels update atomically and wait on.
//!
//! A signal's handle is the address of its `amd_signal_t` (64 bytes, as in
//! ROCr's `amd_hsa_signal.h`): kernels dereference it, as HIP's hostcall
//! does (`global_atomic_add_x2` at handle + 8, then the event mailbox and
//! `s_sendmsg`). The memory is an allocation in the table, so the GPU's
//! accesses are checked like any other; when the signal is destroyed and the
//! last reference to it is gone, the allocation is retired: its address is
//! never handed out again, so a stale handle never reaches a newer signal.
//!
//! Waiting: a waiter spins briefly, then sleeps on the runtime's
//! [`Notifier`]. Host writes wake it when someone watches; kernels wake it
//! through the interrupt an interrupt signal's writer raises (the runtime
//! turns every `s_sendmsg MSG_INTERRUPT` into a notification); a sleeping
//! waiter also looks again every few milliseconds, so a GPU write without
//! an interrupt is still seen. Both sides use SeqCst on the value and the
//! watcher count, which rules out a lost wake-up: either the writer sees
//! the watcher and notifies, or the watcher, checking after it registered,
//! sees the new value.

use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use inlay_vgpu::{MemKind, Memory};

/// `hsa_signal_condition_t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Condition {
    Eq = 0,
    Ne = 1,
    Lt = 2,
    Gte = 3,
}

impl Condition {
    pub fn from_raw(v: u32) -> Option<Self> {
        Some(match v {
            0 => Self::Eq,
            1 => Self::Ne,
            2 => Self::Lt,
            3 => Self::Gte,
            _ => return None,
        })
    }

    pub fn holds(self, value: i64, compare: i64) -> bool {
        match self {
            Self::Eq => value == compare,
            Self::Ne => value != compare,
            Self::Lt => value < compare,
            Self::Gte => value >= compare,
        }
    }
}

/// `hsa_wait_state_t`: whether a waiter may sleep or should spin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitState {
    Blocked = 0,
    Active = 1,
}

/// Wakes the async-handler thread when a watched signal changes.
#[derive(Default)]
pub struct Notifier {
    watched: AtomicUsize,
    generation: Mutex<u64>,
    cv: Condvar,
}

impl Notifier {
    fn lock(&self) -> MutexGuard<'_, u64> {
        self.generation.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn notify(&self) {
        *self.lock() += 1;
        self.cv.notify_all();
    }

    /// Waits until a notification newer than `seen`, or `timeout`. Returns the generation.
    pub fn wait_after(&self, seen: u64, timeout: Duration) -> u64 {
        let g = self.lock();
        if *g != seen {
            return *g;
        }
        let (g, _) = self
            .cv
            .wait_timeout(g, timeout)
            .unwrap_or_else(|e| e.into_inner());
        *g
    }

    pub fn generation(&self) -> u64 {
        *self.lock()
    }

    pub fn watch(&self, delta: isize) {
        if delta >= 0 {
            self.watched.fetch_add(delta as usize, Ordering::SeqCst);
        } else {
            self.watched
                .fetch_sub(delta.unsigned_abs(), Ordering::SeqCst);
        }
    }
}

/// How long a BLOCKED wait polls before it sleeps.
const SPIN_BEFORE_BLOCKING: Duration = Duration::from_micros(50);
/// The longest a sleeping waiter goes without looking at the value.
const LOOK_AGAIN: Duration = Duration::from_millis(2);

/// `amd_signal_t` field offsets and values.
pub const AMD_SIGNAL_SIZE: u64 = 64;
const OFF_KIND: u64 = 0;
const OFF_VALUE: u64 = 8;
const OFF_MAILBOX: u64 = 16;
const OFF_EVENT_ID: u64 = 24;
const OFF_START_TS: u64 = 32;
const OFF_END_TS: u64 = 40;
const AMD_SIGNAL_KIND_USER: i64 = 1;
/// The allocation tag of signal memory (its owner, for diagnostics).
pub const SIGNAL_TAG: u64 = 0x5167;

/// One signal.
pub struct Signal {
    /// Address of the `amd_signal_t`: the handle.
    addr: u64,
    memory: Arc<Memory>,
    notifier: Arc<Notifier>,
    /// Agents allowed to wait on it (empty: all), recorded for `get_info`-style queries.
    pub consumers: Vec<crate::agent::AgentId>,
}

/// Load orderings that Rust allows for a load.
fn load_order(o: Ordering) -> Ordering {
    match o {
        Ordering::Relaxed => Ordering::Relaxed,
        _ => Ordering::Acquire,
    }
}

/// Store orderings that Rust allows for a store.
fn store_order(o: Ordering) -> Ordering {
    match o {
        Ordering::Relaxed => Ordering::Relaxed,
        _ => Ordering::Release,
    }
}

static NEXT_EVENT_ID: AtomicU32 = AtomicU32::new(1);

impl Signal {
    /// A signal with `initial` as value, in new device memory. An interrupt
    /// signal has an event mailbox (right after the `amd_signal_t`) and an
    /// event id, as ROCr's interrupt signals do; a kernel that updates the
    /// signal writes the id there and raises an interrupt.
    pub fn new(
        memory: Arc<Memory>,
        initial: i64,
        notifier: Arc<Notifier>,
        consumers: Vec<crate::agent::AgentId>,
        interrupt: bool,
    ) -> Result<Self, inlay_vgpu::Fault> {
        let size = if interrupt {
            AMD_SIGNAL_SIZE + 8
        } else {
            AMD_SIGNAL_SIZE
        };
        let addr = memory.alloc(size, 64, MemKind::Runtime, SIGNAL_TAG)?;
        let s = Signal {
            addr,
            memory,
            notifier,
            consumers,
        };
        s.word(OFF_KIND)
            .store(AMD_SIGNAL_KIND_USER as u64, Ordering::Relaxed);
        s.value().store(initial, Ordering::Relaxed);
        if interrupt {
            let id = NEXT_EVENT_ID.fetch_add(1, Ordering::Relaxed);
            s.word(OFF_MAILBOX)
                .store(addr + AMD_SIGNAL_SIZE, Ordering::Relaxed);
            s.word(OFF_EVENT_ID).store(u64::from(id), Ordering::Relaxed);
        }
        Ok(s)
    }

    /// The handle: where the `amd_signal_t` is.
    pub fn handle(&self) -> u64 {
        self.addr
    }

    fn word(&self, off: u64) -> &AtomicU64 {
        // SAFETY: the signal's allocation is live while `self` is (it is
        // retired in Drop), 64-aligned and at least AMD_SIGNAL_SIZE bytes;
        // kernels reach it only through checked atomics.
        unsafe { AtomicU64::from_ptr((self.addr + off) as *mut u64) }
    }

    fn value(&self) -> &AtomicI64 {
        // SAFETY: as in `word`; the value is an 8-aligned int64 at offset 8.
        unsafe { AtomicI64::from_ptr((self.addr + OFF_VALUE) as *mut i64) }
    }

    /// The address of the value, for `hsa_amd_signal_value_pointer`.
    pub fn value_ptr(&self) -> *const i64 {
        (self.addr + OFF_VALUE) as *const i64
    }

    /// Start and end timestamps of the packet it completed, when profiling.
    pub fn times(&self) -> (u64, u64) {
        (
            self.word(OFF_START_TS).load(Ordering::Acquire),
            self.word(OFF_END_TS).load(Ordering::Acquire),
        )
    }

    /// Records the timestamps of the packet or copy this signal completes.
    pub fn set_times(&self, start: u64, end: u64) {
        self.word(OFF_START_TS).store(start, Ordering::Release);
        self.word(OFF_END_TS).store(end, Ordering::Release);
    }

    pub fn load(&self, o: Ordering) -> i64 {
        self.value().load(load_order(o))
    }

    fn changed(&self) {
        std::sync::atomic::fence(Ordering::SeqCst);
        if self.notifier.watched.load(Ordering::SeqCst) > 0 {
            self.notifier.notify();
        }
    }

    pub fn store(&self, v: i64, o: Ordering) {
        self.value().store(v, store_order(o));
        self.changed();
    }

    /// A store that wakes nobody (`hsa_signal_silent_store_*`).
    pub fn silent_store(&self, v: i64, o: Ordering) {
        self.value().store(v, store_order(o));
    }

    pub fn exchange(&self, v: i64, o: Ordering) -> i64 {
        let old = self.value().swap(v, o);
        self.changed();
        old
    }

    /// Compare and swap; returns the value observed before.
    pub fn cas(&self, expected: i64, v: i64, o: Ordering) -> i64 {
        let fail = load_order(o);
        let old = match self.value().compare_exchange(expected, v, o, fail) {
            Ok(old) | Err(old) => old,
        };
        if old == expected {
            self.changed();
        }
        old
    }

    pub fn add(&self, v: i64, o: Ordering) {
        self.value().fetch_add(v, o);
        self.changed();
    }

    pub fn sub(&self, v: i64, o: Ordering) {
        self.value().fetch_sub(v, o);
        self.changed();
    }

    pub fn and(&self, v: i64, o: Ordering) {
        self.value().fetch_and(v, o);
        self.changed();
    }

    pub fn or(&self, v: i64, o: Ordering) {
        self.value().fetch_or(v, o);
        self.changed();
    }

    pub fn xor(&self, v: i64, o: Ordering) {
        self.value().fetch_xor(v, o);
        self.changed();
    }

    /// Waits until `cond(value, compare)` holds or `timeout` passes (None: no limit).
    /// Returns the value last observed, as `hsa_signal_wait_*` does.
    pub fn wait(
        &self,
        cond: Condition,
        compare: i64,
        timeout: Option<Duration>,
        state: WaitState,
        o: Ordering,
    ) -> i64 {
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        // Spin first: most waits in a packet pipeline end within
        // microseconds, and waking a blocked thread costs more than that.
        // ACTIVE waits keep polling (yielding the core now and then) until
        // the deadline; BLOCKED ones sleep after a short spin.
        let spin_for = match state {
            WaitState::Active => timeout.unwrap_or(Duration::MAX),
            _ => SPIN_BEFORE_BLOCKING,
        };
        let start = Instant::now();
        let mut n = 0u32;
        loop {
            let v = self.load(o);
            if cond.holds(v, compare) {
                return v;
            }
            n = n.wrapping_add(1);
            if n.is_multiple_of(64) {
                let spent = start.elapsed();
                if spent >= spin_for {
                    if state == WaitState::Active {
                        return v;
                    }
                    break;
                }
                // Past the first spin, give the core to whoever will
                // set the signal (the packet processor may share it).
                if spent >= SPIN_BEFORE_BLOCKING {
                    std::thread::yield_now();
                }
            }
            std::hint::spin_loop();
        }
        self.notifier.watch(1);
        let result = loop {
            let seen = self.notifier.generation();
            let v = self.value().load(Ordering::SeqCst);
            if cond.holds(v, compare) {
                break v;
            }
            let slice = match deadline {
                None => LOOK_AGAIN,
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        break v;
                    }
                    (d - now).min(LOOK_AGAIN)
                }
            };
            self.notifier.wait_after(seen, slice);
        };
        self.notifier.watch(-1);
        if o != Ordering::Relaxed {
            std::sync::atomic::fence(Ordering::Acquire);
        }
        result
    }
}

impl Drop for Signal {
    fn drop(&mut self) {
        // Never reused: a stale handle keeps pointing at retired memory.
        let _ = self.memory.retire(self.addr);
    }
}

/// Live signals by handle (the address of their `amd_signal_t`).
#[derive(Default)]
pub struct SignalTable {
    map: std::sync::RwLock<std::collections::HashMap<u64, Arc<Signal>>>,
}

impl SignalTable {
    pub fn insert(&self, s: Arc<Signal>) -> u64 {
        let handle = s.handle();
        self.map
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(handle, s);
        handle
    }

    pub fn get(&self, handle: u64) -> Option<Arc<Signal>> {
        self.map
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&handle)
            .cloned()
    }

    pub fn remove(&self, handle: u64) -> Option<Arc<Signal>> {
        self.map
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&handle)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sig(v: i64) -> Arc<Signal> {
        let memory = Arc::new(Memory::new());
        Arc::new(Signal::new(memory, v, Arc::new(Notifier::default()), vec![], true).unwrap())
    }

    #[test]
    fn arithmetic_and_bit_ops() {
        let s = sig(10);
        s.add(5, Ordering::Relaxed);
        s.sub(3, Ordering::AcqRel);
        assert_eq!(s.load(Ordering::Acquire), 12);
        s.and(0b1000, Ordering::Relaxed);
        s.or(0b0001, Ordering::Release);
        s.xor(0b1111, Ordering::Relaxed);
        assert_eq!(s.load(Ordering::Relaxed), 0b0110);
        assert_eq!(s.exchange(42, Ordering::AcqRel), 0b0110);
        assert_eq!(s.cas(41, 7, Ordering::Relaxed), 42);
        assert_eq!(s.cas(42, 7, Ordering::Relaxed), 42);
        assert_eq!(s.load(Ordering::Relaxed), 7);
    }

    #[test]
    fn wait_wakes_on_store_from_another_thread() {
        let s = sig(1);
        let t = {
            let s = s.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                s.store(0, Ordering::Release);
            })
        };
        let v = s.wait(
            Condition::Eq,
            0,
            None,
            WaitState::Blocked,
            Ordering::Acquire,
        );
        assert_eq!(v, 0);
        t.join().unwrap();
    }

    #[test]
    fn wait_times_out_with_current_value() {
        let s = sig(5);
        let start = Instant::now();
        let v = s.wait(
            Condition::Lt,
            5,
            Some(Duration::from_millis(30)),
            WaitState::Blocked,
            Ordering::Relaxed,
        );
        assert_eq!(v, 5);
        assert!(start.elapsed() >= Duration::from_millis(30));
    }

    #[test]
    fn the_handle_is_an_amd_signal_t_in_device_memory() {
        use inlay_vgpu::inst::Atomic;
        let memory = Arc::new(Memory::new());
        let notifier = Arc::new(Notifier::default());
        let s = Signal::new(memory.clone(), 42, notifier, vec![], true).unwrap();
        let h = s.handle();
        let word = |off: u64| {
            let mut b = [0u8; 8];
            memory.read_bytes(h + off, &mut b).unwrap();
            u64::from_le_bytes(b)
        };
        // amd_signal_t: kind USER, the value at +8, the mailbox and event id.
        assert_eq!(word(0), 1);
        assert_eq!(word(8), 42);
        assert_eq!(word(16), h + 64);
        assert_ne!(word(24), 0);
        assert_eq!(s.value_ptr() as u64, h + 8);
        // A kernel's atomic at handle + 8 (checked through the table) is the value.
        inlay_vgpu::access::atomic64(&memory, h + 8, Atomic::Add, 5, 0).unwrap();
        assert_eq!(s.load(Ordering::Acquire), 47);
        // Gone: the memory is retired and faults, and is never handed out again.
        drop(s);
        assert!(matches!(
            memory.check(h + 8, 8),
            Err(inlay_vgpu::Fault::UseAfterFree { .. })
        ));
        for _ in 0..100 {
            let other = Signal::new(
                memory.clone(),
                0,
                Arc::new(Notifier::default()),
                vec![],
                false,
            )
            .unwrap();
            assert_ne!(other.handle(), h);
        }
    }

    #[test]
    fn an_interrupt_wakes_a_waiter_the_host_did_not() {
        let memory = Arc::new(Memory::new());
        let notifier = Arc::new(Notifier::default());
        let s = Signal::new(memory.clone(), 1, notifier.clone(), vec![], true).unwrap();
        let h = s.handle();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            // What a kernel does: write the value, then raise the interrupt.
            memory.write_bytes(h + 8, &0i64.to_le_bytes()).unwrap();
            notifier.notify();
        });
        let start = Instant::now();
        let v = s.wait(
            Condition::Eq,
            0,
            Some(Duration::from_secs(20)),
            WaitState::Blocked,
            Ordering::Acquire,
        );
        assert_eq!(v, 0);
        assert!(start.elapsed() < Duration::from_secs(10));
        t.join().unwrap();
    }
}
