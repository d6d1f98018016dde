//! AQL queues: create/destroy and the read/write index operations.
//!
//! Queue pointers are looked up in the runtime's table before use, so a
//! destroyed or made-up `hsa_queue_t*` is refused, never dereferenced.

use crate::abi::*;
use crate::export;
use crate::state::{self, rt};
use inlay_runtime::queue::Queue;
use inlay_runtime::Status;
use std::ffi::c_void;
use std::sync::atomic::Ordering::{self, AcqRel, Acquire, Relaxed, Release};
use std::sync::Arc;

type QueueCallback = Option<extern "C" fn(HsaStatus, *mut c_void, *mut c_void)>;

fn queue(q: *const c_void) -> Option<Arc<Queue>> {
    rt().ok()?.queue(q as u64).ok()
}

/// The queue behind `q`, for `function`, which cannot return a status (ROCr
/// dereferences whatever it is given, so a bad pointer ends the process).
fn queue_or_abort(q: *const c_void, function: &str) -> Arc<Queue> {
    queue(q).unwrap_or_else(|| {
        misuse(
            function,
            format_args!("{q:p} is not a queue (never created, or destroyed)"),
        )
    })
}

macro_rules! load_index {
    ($($name:ident = $field:ident, $o:expr);* $(;)?) => {
        export! { $( fn $name(q: *const c_void) -> u64 { queue_or_abort(q, stringify!($name)).$field().load($o) } )* }
    };
}
load_index!(
    hsa_queue_load_read_index_relaxed = read_index, Relaxed;
    hsa_queue_load_read_index_scacquire = read_index, Acquire;
    hsa_queue_load_read_index_acquire = read_index, Acquire;
    hsa_queue_load_write_index_relaxed = write_index, Relaxed;
    hsa_queue_load_write_index_scacquire = write_index, Acquire;
    hsa_queue_load_write_index_acquire = write_index, Acquire;
);

macro_rules! store_index {
    ($($name:ident = $field:ident, $o:expr);* $(;)?) => {
        export! { $( fn $name(q: *const c_void, v: u64) -> () { queue_or_abort(q, stringify!($name)).$field().store(v, $o) } )* }
    };
}
store_index!(
    hsa_queue_store_read_index_relaxed = read_index, Relaxed;
    hsa_queue_store_read_index_screlease = read_index, Release;
    hsa_queue_store_read_index_release = read_index, Release;
    hsa_queue_store_write_index_relaxed = write_index, Relaxed;
    hsa_queue_store_write_index_screlease = write_index, Release;
    hsa_queue_store_write_index_release = write_index, Release;
);

fn fail_order(o: Ordering) -> Ordering {
    if o == Release || o == Relaxed {
        Relaxed
    } else {
        Acquire
    }
}

macro_rules! write_index_rmw {
    ($($add:ident, $cas:ident = $o:expr);* $(;)?) => {
        export! { $(
            fn $add(q: *const c_void, v: u64) -> u64 { queue_or_abort(q, stringify!($add)).write_index().fetch_add(v, $o) }
            fn $cas(q: *const c_void, expected: u64, v: u64) -> u64 {
                match queue_or_abort(q, stringify!($cas)).write_index().compare_exchange(expected, v, $o, fail_order($o)) {
                    Ok(old) | Err(old) => old,
                }
            }
        )* }
    };
}
write_index_rmw!(
    hsa_queue_add_write_index_relaxed, hsa_queue_cas_write_index_relaxed = Relaxed;
    hsa_queue_add_write_index_scacquire, hsa_queue_cas_write_index_scacquire = Acquire;
    hsa_queue_add_write_index_screlease, hsa_queue_cas_write_index_screlease = Release;
    hsa_queue_add_write_index_scacq_screl, hsa_queue_cas_write_index_scacq_screl = AcqRel;
    hsa_queue_add_write_index_acquire, hsa_queue_cas_write_index_acquire = Acquire;
    hsa_queue_add_write_index_release, hsa_queue_cas_write_index_release = Release;
    hsa_queue_add_write_index_acq_rel, hsa_queue_cas_write_index_acq_rel = AcqRel;
);

export! {
    #[allow(clippy::too_many_arguments)]
    fn hsa_queue_create(
        agent: Handle,
        size: u32,
        queue_type: u32,
        callback: QueueCallback,
        data: *mut c_void,
        private_segment_size: u32,
        group_segment_size: u32,
        out: *mut *mut c_void,
    ) -> HsaStatus {
        status((|| {
            let rt = rt()?;
            // ROCr checks the out-pointer, size and type before the agent;
            // the group segment size is not checked at all.
            if out.is_null() || size == 0 || !size.is_power_of_two() || queue_type > 2 {
                return Err(Status::InvalidArgument);
            }
            let id = state::agent_id(&rt, agent)?;
            let _ = group_segment_size;
            let data = data as usize;
            let on_error = callback.map(|cb| {
                std::sync::Arc::new(move |st: Status, q: u64| cb(st.code(), q as *mut c_void, data as *mut c_void))
                    as inlay_runtime::queue::ErrorCallback
            });
            let q = rt.queue_create(id, size, queue_type, private_segment_size, on_error)?;
            put(out as *mut c_void, q.addr as *mut c_void)
        })())
    }

    fn hsa_soft_queue_create(region: Handle, size: u32, ty: u32, features: u32, doorbell: Handle, out: *mut *mut c_void) -> HsaStatus {
        // ROCr's checks, in its order; soft queues (processed by the
        // application) are then not offered.
        status((|| {
            let rt = rt()?;
            if out.is_null() || region == 0 || doorbell == 0 || size == 0 || !size.is_power_of_two() || ty > 1 || features == 0 {
                return Err(Status::InvalidArgument);
            }
            state::pool_id(&rt, region, Status::InvalidRegion)?;
            rt.signal(doorbell)?;
            Err(Status::InvalidQueueCreation)
        })())
    }

    fn hsa_queue_destroy(q: *mut c_void) -> HsaStatus {
        // ROCr: IS_BAD_PTR (INVALID_ARGUMENT), then IS_VALID (INVALID_QUEUE).
        status(rt().and_then(|rt| if q.is_null() { Err(Status::InvalidArgument) } else { rt.queue_destroy(q as u64) }))
    }

    fn hsa_queue_inactivate(q: *mut c_void) -> HsaStatus {
        // Inactivating stops processing for good; destroying later releases the memory.
        status(rt().and_then(|rt| if q.is_null() { Err(Status::InvalidArgument) } else { rt.queue(q as u64) })
            .map(|q| inlay_runtime::queue::inactivate(&q)))
    }

    fn hsa_amd_queue_cu_set_mask(q: *const c_void, count: u32, mask: *const u32) -> HsaStatus {
        status((|| {
            rt()?.queue(q as u64)?;
            // ROCr: a count of 0 resets the mask; otherwise whole dwords.
            if (count != 0 && mask.is_null()) || !count.is_multiple_of(32) {
                return Err(Status::InvalidArgument);
            }
            read_array(mask, (count / 32) as usize)?;
            Ok(())
        })())
    }

    fn hsa_amd_queue_set_priority(q: *mut c_void, priority: u32) -> HsaStatus {
        status((|| {
            let rt = rt()?;
            if q.is_null() {
                return Err(Status::InvalidArgument); // ROCr: IS_BAD_PTR(queue)
            }
            rt.queue(q as u64)?;
            if priority > 2 {
                return Err(Status::InvalidArgument);
            }
            Ok(())
        })())
    }
}
