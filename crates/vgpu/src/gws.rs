//! GWS (global wave sync): the device's 64 resources that `ds_gws_*`
//! instructions use as barriers and semaphores across the waves of a
//! dispatch, and across dispatches (ROCclr initialises resource 0 with a
//! dispatch of its own before a cooperative launch, whose `grid.sync()` is
//! `ds_gws_barrier`).
//!
//! A GWS instruction names resource `(offset + M0[21:16]) % 64` and takes
//! its value from `data0` of the wave's first active lane. Following
//! LLVM's description of the intrinsics: `ds_gws_init(v)` sets a resource
//! up; `ds_gws_barrier(v)` releases once `v + 1` waves have arrived (then
//! the resource is ready for the next round); `ds_gws_sema_v` adds one to
//! a semaphore, `ds_gws_sema_br(v)` adds `v`, `ds_gws_sema_p` waits until
//! it can take one, and `ds_gws_sema_release_all` lets every wave waiting
//! on it go. A wave that must wait keeps its program counter on the
//! instruction and retries it; only dispatches that run all their
//! workgroups at once can wait (`Device` runs programs with such
//! instructions that way).

use std::sync::Mutex;

/// Resources on the device.
pub const RESOURCES: usize = 64;

#[derive(Clone, Copy, Debug, Default)]
struct Resource {
    /// Waves at the barrier since it last released.
    arrived: u32,
    /// Barrier releases so far: a waiting wave watches it change.
    releases: u64,
    /// The semaphore's count.
    count: u64,
    /// `ds_gws_sema_release_all` so far.
    release_all: u64,
}

/// What a wave that could not complete a GWS instruction waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GwsWait {
    /// Resource `id`'s barrier to release (from release count `seen`).
    Barrier { id: u8, seen: u64 },
    /// A unit of semaphore `id`, or a release-all after `seen`.
    Sema { id: u8, seen: u64 },
}

/// The device's GWS resources.
#[derive(Debug)]
pub struct Gws {
    res: Mutex<[Resource; RESOURCES]>,
}

impl Default for Gws {
    fn default() -> Self {
        Gws {
            res: Mutex::new([Resource::default(); RESOURCES]),
        }
    }
}

impl Gws {
    fn with<R>(&self, id: u8, f: impl FnOnce(&mut Resource) -> R) -> R {
        let mut r = self.res.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut r[id as usize % RESOURCES])
    }

    /// `ds_gws_init`: a fresh barrier, and a semaphore holding `value`.
    pub fn init(&self, id: u8, value: u32) {
        self.with(id, |r| {
            r.arrived = 0;
            r.count = value as u64;
        });
    }

    /// A wave arrives at barrier `id` of `value + 1` waves: None when it is
    /// the last (the barrier releases), else what it waits for.
    pub fn barrier(&self, id: u8, value: u32) -> Option<GwsWait> {
        self.with(id, |r| {
            r.arrived += 1;
            if r.arrived > value {
                r.arrived = 0;
                r.releases += 1;
                None
            } else {
                Some(GwsWait::Barrier {
                    id,
                    seen: r.releases,
                })
            }
        })
    }

    /// `ds_gws_sema_v` (`n` = 1) and `ds_gws_sema_br` (`n` = data0).
    pub fn sema_add(&self, id: u8, n: u32) {
        self.with(id, |r| r.count += n as u64);
    }

    /// `ds_gws_sema_p`: None when it took a unit, else what it waits for.
    pub fn sema_p(&self, id: u8) -> Option<GwsWait> {
        self.with(id, |r| {
            if r.count > 0 {
                r.count -= 1;
                None
            } else {
                Some(GwsWait::Sema {
                    id,
                    seen: r.release_all,
                })
            }
        })
    }

    pub fn release_all(&self, id: u8) {
        self.with(id, |r| r.release_all += 1);
    }

    /// Whether a wave waiting for `w` may go on now (taking a semaphore
    /// unit if that is what it waits for).
    pub fn ready(&self, w: GwsWait) -> bool {
        match w {
            GwsWait::Barrier { id, seen } => self.with(id, |r| r.releases != seen),
            GwsWait::Sema { id, seen } => self.with(id, |r| {
                if r.release_all != seen {
                    true
                } else if r.count > 0 {
                    r.count -= 1;
                    true
                } else {
                    false
                }
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn barrier_releases_on_the_last_arrival_and_rearms() {
        let g = Gws::default();
        g.init(0, 2);
        let a = g.barrier(0, 2).expect("waits");
        let b = g.barrier(0, 2).expect("waits");
        assert!(!g.ready(a));
        assert_eq!(g.barrier(0, 2), None);
        assert!(g.ready(a) && g.ready(b));
        // The next round needs three arrivals again.
        assert!(g.barrier(0, 2).is_some());
    }

    #[test]
    fn semaphore_counts_and_release_all() {
        let g = Gws::default();
        g.init(5, 0);
        let w = g.sema_p(5).expect("waits");
        g.sema_add(5, 2);
        assert!(g.ready(w));
        assert_eq!(g.sema_p(5), None);
        let w = g.sema_p(5).expect("waits");
        g.release_all(5);
        assert!(g.ready(w));
    }
}
