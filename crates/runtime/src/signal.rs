//! HSA signals: a 64-bit value that threads update atomically and wait on.
//!
//! Waiting uses a mutex and condvar per signal. Writers only take the mutex
//! when someone waits (`waiters` > 0), so unwatched signals cost one atomic.
//! Both sides use SeqCst on `value`/`waiters`, which rules out a lost wake-up:
//! either the writer sees the waiter and notifies under the lock, or the waiter,
//! checking under the lock, sees the new value.

use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

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

/// One signal.
pub struct Signal {
    value: AtomicI64,
    waiters: AtomicUsize,
    lock: Mutex<()>,
    cv: Condvar,
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

impl Signal {
    pub fn new(
        initial: i64,
        notifier: Arc<Notifier>,
        consumers: Vec<crate::agent::AgentId>,
    ) -> Self {
        Self {
            value: AtomicI64::new(initial),
            waiters: AtomicUsize::new(0),
            lock: Mutex::new(()),
            cv: Condvar::new(),
            notifier,
            consumers,
        }
    }

    /// The address of the value, for `hsa_amd_signal_value_pointer`.
    pub fn value_ptr(&self) -> *const i64 {
        self.value.as_ptr()
    }

    pub fn load(&self, o: Ordering) -> i64 {
        self.value.load(load_order(o))
    }

    fn changed(&self) {
        std::sync::atomic::fence(Ordering::SeqCst);
        if self.waiters.load(Ordering::SeqCst) > 0 {
            drop(self.lock.lock().unwrap_or_else(|e| e.into_inner()));
            self.cv.notify_all();
        }
        if self.notifier.watched.load(Ordering::SeqCst) > 0 {
            self.notifier.notify();
        }
    }

    pub fn store(&self, v: i64, o: Ordering) {
        self.value.store(v, store_order(o));
        self.changed();
    }

    /// A store that wakes nobody (`hsa_signal_silent_store_*`).
    pub fn silent_store(&self, v: i64, o: Ordering) {
        self.value.store(v, store_order(o));
    }

    pub fn exchange(&self, v: i64, o: Ordering) -> i64 {
        let old = self.value.swap(v, o);
        self.changed();
        old
    }

    /// Compare and swap; returns the value observed before.
    pub fn cas(&self, expected: i64, v: i64, o: Ordering) -> i64 {
        let fail = load_order(o);
        let old = match self.value.compare_exchange(expected, v, o, fail) {
            Ok(old) | Err(old) => old,
        };
        if old == expected {
            self.changed();
        }
        old
    }

    pub fn add(&self, v: i64, o: Ordering) {
        self.value.fetch_add(v, o);
        self.changed();
    }

    pub fn sub(&self, v: i64, o: Ordering) {
        self.value.fetch_sub(v, o);
        self.changed();
    }

    pub fn and(&self, v: i64, o: Ordering) {
        self.value.fetch_and(v, o);
        self.changed();
    }

    pub fn or(&self, v: i64, o: Ordering) {
        self.value.fetch_or(v, o);
        self.changed();
    }

    pub fn xor(&self, v: i64, o: Ordering) {
        self.value.fetch_xor(v, o);
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
        self.waiters.fetch_add(1, Ordering::SeqCst);
        let mut guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let result = loop {
            let v = self.value.load(Ordering::SeqCst);
            if cond.holds(v, compare) {
                break v;
            }
            let slice = match deadline {
                None => Duration::from_millis(100),
                Some(d) => {
                    let now = Instant::now();
                    if now >= d {
                        break v;
                    }
                    (d - now).min(Duration::from_millis(100))
                }
            };
            guard = self
                .cv
                .wait_timeout(guard, slice)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        };
        drop(guard);
        self.waiters.fetch_sub(1, Ordering::SeqCst);
        if o != Ordering::Relaxed {
            std::sync::atomic::fence(Ordering::Acquire);
        }
        result
    }
}

/// Live signals by handle. Handles are never reused, so a stale handle is
/// reported as invalid instead of reaching a newer signal.
pub struct SignalTable {
    map: std::sync::RwLock<std::collections::HashMap<u64, Arc<Signal>>>,
    next: std::sync::atomic::AtomicU64,
}

/// Handles start here and step by 64, so they look like aligned addresses
/// without being any (nothing may dereference a handle).
const HANDLE_BASE: u64 = 0x5167_0000_0000;

impl Default for SignalTable {
    fn default() -> Self {
        Self {
            map: Default::default(),
            next: std::sync::atomic::AtomicU64::new(1),
        }
    }
}

impl SignalTable {
    pub fn insert(&self, s: Arc<Signal>) -> u64 {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let handle = HANDLE_BASE + n * 64;
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
        Arc::new(Signal::new(v, Arc::new(Notifier::default()), vec![]))
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
}
