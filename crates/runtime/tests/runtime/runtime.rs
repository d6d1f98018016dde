//! The Rust API end to end: pools, queues with barrier packets, copies.

use inlay_runtime::agent::{CPU, GPU};
use inlay_runtime::memory::PointerType;
use inlay_runtime::queue::{PACKET_BARRIER_AND, PACKET_KERNEL_DISPATCH};
use inlay_runtime::{Runtime, Status};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

fn write_packet(ring: u64, slot: u64, header: u16, body: &[(usize, u64)]) {
    let base = ring + slot * 64;
    for &(off, v) in body {
        // SAFETY: test writes inside the queue's ring.
        unsafe { ((base + off as u64) as *mut u64).write(v) };
    }
    // SAFETY: the header is the first u16 of the slot.
    unsafe { std::sync::atomic::AtomicU16::from_ptr(base as *mut u16) }
        .store(header, Ordering::Release);
}

#[test]
fn barrier_and_waits_for_its_dependency_then_completes() {
    let rt = Runtime::new();
    let q = rt.queue_create(GPU, 64, 0, u32::MAX, None).unwrap();
    let dep = rt.signal_create(1, vec![], false).unwrap();
    let done = rt.signal_create(1, vec![], false).unwrap();
    let w = q.write_index().fetch_add(1, Ordering::AcqRel);
    write_packet(
        q.ring,
        w,
        PACKET_BARRIER_AND as u16,
        &[(8, dep), (56, done)],
    );
    rt.signal(q.doorbell)
        .unwrap()
        .store(w as i64, Ordering::Release);
    std::thread::sleep(std::time::Duration::from_millis(30));
    assert_eq!(
        rt.signal(done).unwrap().load(Ordering::Acquire),
        1,
        "barrier ran before its dependency"
    );
    rt.signal(dep).unwrap().store(0, Ordering::Release);
    let s = rt.signal(done).unwrap();
    assert_eq!(
        s.wait(
            inlay_runtime::signal::Condition::Eq,
            0,
            Some(std::time::Duration::from_secs(5)),
            inlay_runtime::signal::WaitState::Blocked,
            Ordering::Acquire
        ),
        0
    );
    assert_eq!(q.read_index().load(Ordering::Acquire), 1);
    rt.queue_destroy(q.addr).unwrap();
    assert_eq!(rt.queue_destroy(q.addr), Err(Status::InvalidQueue));
    rt.shut_down();
}

#[test]
fn dispatch_without_emulator_reports_through_the_error_callback() {
    let rt = Runtime::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let q = rt
        .queue_create(
            GPU,
            64,
            0,
            u32::MAX,
            Some(Arc::new(move |st, _| s2.lock().unwrap().push(st))),
        )
        .unwrap();
    let header = PACKET_KERNEL_DISPATCH as u16;
    // setup = 1 dimension, 64x1x1 workgroup, grid 64x1x1, null kernel object.
    write_packet(
        q.ring,
        0,
        header,
        &[(0, 1 << 16 | 64 << 32), (8, 1 | 1 << 32), (16, 1 | 1 << 32)],
    );
    // SAFETY: grid x is the u32 at offset 12 of the slot.
    unsafe { ((q.ring + 12) as *mut u32).write(64) };
    rt.signal(q.doorbell).unwrap().store(0, Ordering::Release);
    for _ in 0..200 {
        if !seen.lock().unwrap().is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // ROCr's AqlQueue::ExceptionHandler: "invalid (or NULL) code".
    assert_eq!(*seen.lock().unwrap(), vec![Status::InvalidCodeObject]);
    assert!(!q.is_active());
    rt.shut_down();
}

#[test]
fn pools_allocate_and_pointer_info_names_the_owner() {
    let rt = Runtime::new();
    let gpu_pool = rt.agent_pools(GPU).next().unwrap().id;
    let p = rt.allocate(gpu_pool, 100).unwrap();
    let info = rt.pointer_info(p + 10);
    // ROCr reports the size asked for, not the granule it rounded to.
    assert_eq!(
        (
            info.kind,
            info.agent_base,
            info.host_base,
            info.size,
            info.owner
        ),
        (PointerType::Hsa, p, p, 100, Some(GPU))
    );
    rt.allow_access(&[CPU], p).unwrap();
    assert!(rt.pointer_info(p).accessible.contains(&CPU));
    rt.fill(p, 7, 1024).unwrap();
    // ROCr's Runtime::FillMemory and FreeMemory: INVALID_ALLOCATION past
    // the end and for what is no longer allocated.
    assert_eq!(rt.fill(p, 7, 1025), Err(Status::InvalidAllocation));
    rt.free(p).unwrap();
    assert_eq!(rt.free(p), Err(Status::InvalidAllocation));
    assert_eq!(rt.pointer_info(p).kind, PointerType::Unknown);
}

/// Submits one packet (`header`, 64-bit words at byte offsets) to a fresh queue
/// and returns what its error callback reported, the read index afterwards and
/// the completion signal's value.
fn submit_one(rt: &Runtime, header: u16, body: &[(usize, u64)]) -> (Vec<Status>, u64, i64) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let q = rt
        .queue_create(
            GPU,
            64,
            0,
            u32::MAX,
            Some(Arc::new(move |st, _| s2.lock().unwrap().push(st))),
        )
        .unwrap();
    let done = rt.signal_create(1, vec![], false).unwrap();
    let mut words = body.to_vec();
    if !words.iter().any(|&(off, _)| off == 56) {
        words.push((56, done));
    }
    let w = q.write_index().fetch_add(1, Ordering::AcqRel);
    write_packet(q.ring, w, header, &words);
    rt.signal(q.doorbell)
        .unwrap()
        .store(w as i64, Ordering::Release);
    let completion = rt.signal(done).unwrap();
    for _ in 0..2000 {
        if !seen.lock().unwrap().is_empty() || completion.load(Ordering::Acquire) == 0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let read = q.read_index().load(Ordering::Acquire);
    let value = rt.signal(done).unwrap().load(Ordering::Acquire);
    rt.queue_destroy(q.addr).unwrap();
    let statuses = seen.lock().unwrap().clone();
    (statuses, read, value)
}

/// What is wrong, the header, the packet's words, the status expected.
type Case = (&'static str, u16, Vec<(usize, u64)>, Status);

#[test]
fn malformed_packets_are_refused_before_they_run() {
    let rt = Runtime::new();
    let barrier = PACKET_BARRIER_AND as u16 | 1 << 8;
    let dispatch = PACKET_KERNEL_DISPATCH as u16 | 1 << 8;
    // A dispatch: 1 dimension, 64x1x1 workgroup, grid 1x1x1, kernel object
    // and kernargs at aligned (made-up) addresses.
    let d = |edits: &[(usize, u64)]| {
        let mut w = vec![
            (0, 1 << 16 | 64 << 32 | 1 << 48),
            (8, 1 | 1 << 32),
            (16, 1 | 1 << 32),
            (24, 0),
            (32, 0x7000_0000_0040),
            (40, 0x7000_0001_0000),
            (48, 0),
        ];
        for &(off, v) in edits {
            w.retain(|&(o, _)| o != off);
            w.push((off, v));
        }
        w
    };
    let unknown_signal = 0x1234_5678;
    let cases: Vec<Case> = vec![
        (
            "reserved header bits",
            barrier | 1 << 13,
            vec![],
            Status::InvalidPacketFormat,
        ),
        (
            "fence scope 3",
            barrier | 3 << 9,
            vec![],
            Status::InvalidPacketFormat,
        ),
        (
            "vendor-specific type",
            0,
            vec![],
            Status::InvalidPacketFormat,
        ),
        (
            "agent-dispatch type",
            4,
            vec![],
            Status::InvalidPacketFormat,
        ),
        (
            "barrier reserved field",
            barrier,
            vec![(0, 7 << 32)],
            Status::InvalidPacketFormat,
        ),
        (
            "barrier reserved2",
            barrier,
            vec![(48, 1)],
            Status::InvalidPacketFormat,
        ),
        (
            "unknown dependency",
            barrier,
            vec![(16, unknown_signal)],
            Status::InvalidSignal,
        ),
        (
            "unknown completion",
            barrier,
            vec![(56, unknown_signal)],
            Status::InvalidSignal,
        ),
        (
            "reserved setup bits",
            dispatch,
            d(&[(0, 1 << 16 | 1 << 20 | 64 << 32 | 1 << 48)]),
            Status::InvalidPacketFormat,
        ),
        (
            "zero grid",
            dispatch,
            d(&[(16, 1 << 32)]),
            Status::InvalidPacketFormat,
        ),
        (
            "null kernel object",
            dispatch,
            d(&[(32, 0)]),
            Status::InvalidCodeObject,
        ),
        (
            "misaligned kernel object",
            dispatch,
            d(&[(32, 0x7000_0000_0044)]),
            Status::InvalidCodeObject,
        ),
        (
            "misaligned kernarg",
            dispatch,
            d(&[(40, 0x7000_0001_0008)]),
            Status::InvalidPacketFormat,
        ),
        (
            "dispatch reserved2",
            dispatch,
            d(&[(48, 5)]),
            Status::InvalidPacketFormat,
        ),
    ];
    for (what, header, body, want) in cases {
        let (statuses, read, value) = submit_one(&rt, header, &body);
        assert_eq!(statuses, vec![want], "{what}");
        assert_eq!(read, 0, "{what}: the packet was consumed");
        assert_eq!(value, 1, "{what}: the completion signal moved");
    }
    // The unedited barrier packet is accepted and completes.
    let (statuses, read, value) = submit_one(&rt, barrier, &[]);
    assert!(statuses.is_empty(), "{statuses:?}");
    assert_eq!((read, value), (1, 0));
    rt.shut_down();
}

#[test]
fn dispatch_time_limits_are_decimal_seconds() {
    use inlay_runtime::parse_timeout;
    use std::time::Duration;
    assert_eq!(parse_timeout("2.5"), Ok(Some(Duration::from_millis(2500))));
    assert_eq!(parse_timeout(" 30 "), Ok(Some(Duration::from_secs(30))));
    assert_eq!(parse_timeout("0"), Ok(None));
    for bad in ["soon", "", "-1", "inf", "NaN", "1e-12", "2.5s"] {
        assert!(parse_timeout(bad).is_err(), "{bad:?} accepted");
    }
}

/// Copies `n` bytes at `src` (an agent address) to fresh GPU memory and
/// returns them: what the GPU sees there.
fn read_as_gpu(rt: &Runtime, src: u64, n: usize) -> Vec<u8> {
    let pool = rt.agent_pools(GPU).next().unwrap().id;
    let dst = rt.allocate(pool, n as u64).unwrap();
    let done = rt.signal_create(1, vec![], false).unwrap();
    rt.async_copy(dst, src, n as u64, vec![], rt.signal(done).unwrap())
        .unwrap();
    let s = rt.signal(done).unwrap();
    let left = s.wait(
        inlay_runtime::signal::Condition::Eq,
        0,
        Some(std::time::Duration::from_secs(5)),
        inlay_runtime::signal::WaitState::Blocked,
        Ordering::Acquire,
    );
    assert_eq!(left, 0, "copy from {src:#x} did not finish");
    // SAFETY: `dst` is a live allocation of at least `n` bytes.
    let bytes = unsafe { std::slice::from_raw_parts(dst as *const u8, n) }.to_vec();
    rt.free(dst).unwrap();
    rt.signal_destroy(done).unwrap();
    bytes
}

/// ROCclr pins the whole pages around a host buffer, and pins them again
/// with a larger size while an earlier pin of the same first page is held.
/// Both succeed in ROCr (the thunk registers each (address, size) on its
/// own, with its own agent address), and must here, where the runtime's
/// own small allocations share pages with the host heap: when pinning
/// fails, ROCclr 5.2's fallback for hipMemcpy2D writes rows to the wrong
/// addresses.
#[test]
fn whole_page_locks_succeed_beside_runtime_memory_and_at_two_sizes() {
    let rt = Runtime::new();
    const PAGE: u64 = 4096;
    // Interrupt signals are 72-byte runtime allocations from the host heap:
    // among many, some straddle a page boundary, so that page starts inside
    // runtime memory and holds host heap bytes after it.
    let signals: Vec<u64> = (0..1000)
        .map(|i| rt.signal_create(i, vec![], false).unwrap())
        .collect();
    let straddling = signals
        .iter()
        .find(|&&s| s % PAGE > PAGE - 72)
        .copied()
        .expect("no interrupt signal straddles a page boundary among 1000");
    let page = straddling.next_multiple_of(PAGE);
    // A signal wholly inside that page: the GPU must read its value through the alias.
    let inside = signals
        .iter()
        .copied()
        .find(|&s| s >= page && s + 16 <= page + PAGE);
    let agent = rt
        .lock_host(page, PAGE, true, inlay_runtime::pool::FLAG_COARSE_GRAINED)
        .expect("locking a host page that starts inside runtime memory");
    assert_ne!(agent, page, "locked memory gets its own agent address");
    if let Some(s) = inside {
        let got = read_as_gpu(&rt, agent + (s - page) + 8, 8);
        let value = rt.signal(s).unwrap().load(Ordering::Acquire);
        assert_eq!(got, value.to_le_bytes(), "signal {s:#x} through the alias");
    }

    // The same first page at two sizes: two registrations, two addresses,
    // the same bytes.
    let host = vec![0x5au8; 4 * PAGE as usize];
    let first = (host.as_ptr() as u64).next_multiple_of(PAGE);
    let small = rt
        .lock_host(first, PAGE, true, inlay_runtime::pool::FLAG_COARSE_GRAINED)
        .unwrap();
    let large = rt
        .lock_host(
            first,
            2 * PAGE,
            true,
            inlay_runtime::pool::FLAG_COARSE_GRAINED,
        )
        .expect("locking a larger range at an address already locked");
    assert_ne!(small, large);
    assert_eq!(read_as_gpu(&rt, small, 64), vec![0x5a; 64]);
    assert_eq!(read_as_gpu(&rt, large + PAGE, 64), vec![0x5a; 64]);
    // The same (address, size) again is counted, as the thunk counts it.
    assert_eq!(
        rt.lock_host(first, PAGE, true, inlay_runtime::pool::FLAG_COARSE_GRAINED),
        Ok(small)
    );
    // Unlocking an address locked at two sizes: the thunk finds no single
    // registration there, and ROCr succeeds leaving both in place.
    rt.unlock_host(first).unwrap();
    assert_eq!(rt.pointer_info(large + PAGE).kind, PointerType::Locked);
    assert_eq!(rt.pointer_info(small).kind, PointerType::Locked);

    rt.unlock_host(page).unwrap();
    assert_eq!(rt.pointer_info(agent).kind, PointerType::Unknown);
    for s in signals {
        rt.signal_destroy(s).unwrap();
    }
    rt.shut_down();
}
