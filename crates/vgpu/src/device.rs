//! The device: memory, loading, and dispatch of a grid of workgroups over
//! host threads, with native statistics and fault reports.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use inlay_isa::Opcode;
use rayon::prelude::*;

use crate::fault::{FaultKind, FaultReport};
use crate::kernarg::{fill_hidden, Hidden};
use crate::memory::{Fault, MemKind, Memory};
use crate::program::{CodeRegion, KernelInfo, LoadError, Program};
use crate::workgroup::{Launch, Probe, Probes, Watch, WaveFault};

/// LDS per workgroup on gfx90a.
pub const MAX_LDS: u32 = 64 * 1024;
/// Most workgroups one dispatch may have.
pub const MAX_WORKGROUPS: u64 = 1 << 40;
/// Most kernel-argument bytes.
pub const MAX_KERNARG: u64 = 64 * 1024;
/// Most scratch bytes per lane (each wave holds 64 lanes of it in host memory).
pub const MAX_SCRATCH: u32 = 128 * 1024;
/// Default watchdog: instructions one wave may execute in a dispatch.
pub const DEFAULT_BUDGET: u64 = 1 << 30;
/// The compute units and waves per compute unit the runtime reports for
/// the virtual GPU (those of an MI210), which HIP's cooperative launch
/// sizes its grids by.
pub const COMPUTE_UNITS: u32 = 104;
pub const WAVES_PER_CU: u32 = 32;
/// Most waves a dispatch whose workgroups wait for each other (GWS) may
/// have: all of them must be resident at once, as on the hardware.
pub const MAX_RESIDENT_WAVES: u64 = COMPUTE_UNITS as u64 * WAVES_PER_CU as u64;
/// Instructions a wave of such a dispatch runs before the next one's turn.
const TIME_SLICE: u64 = 1 << 12;

/// Native counts of one dispatch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Wave instructions executed.
    pub instructions: u64,
    /// By opcode name (as inlay-isa names it, without encoding suffix).
    pub per_opcode: BTreeMap<&'static str, u64>,
    /// By instruction device address (subtract [`Program::load_base_of`]
    /// for the offset in its code object).
    pub per_pc: BTreeMap<u64, u64>,
    /// Thread instructions: each wave instruction counts the lanes EXEC
    /// enabled when it issued. In total and by instruction device address.
    pub lane_instructions: u64,
    pub per_pc_lanes: BTreeMap<u64, u64>,
    pub workgroups: u64,
    pub waves: u64,
    /// Wall time of the dispatch (not part of equality-relevant counts).
    pub wall: Duration,
}

impl Stats {
    /// `per_pc` keyed by the offset of each instruction in its code object,
    /// comparable between devices that placed `program` at different addresses.
    pub fn per_offset(&self, program: &Program) -> BTreeMap<u64, u64> {
        self.per_pc
            .iter()
            .map(|(&a, &c)| (a - program.load_base_of(a).unwrap_or(0), c))
            .collect()
    }

    /// Wave instructions per second of wall time, in millions.
    pub fn mips(&self) -> f64 {
        self.instructions as f64 / self.wall.as_secs_f64().max(1e-9) / 1e6
    }
}

/// Receives the interrupts kernels raise with `s_sendmsg MSG_INTERRUPT`
/// (the byte they put in M0), on the thread running the wave.
pub type Interrupt = dyn Fn(u32) + Send + Sync;

pub struct Device {
    mem: Arc<Memory>,
    interrupt: RwLock<Option<Arc<Interrupt>>>,
    registry: RwLock<Registry>,
    next_program_id: AtomicU64,
    pool: rayon::ThreadPool,
    budget: u64,
    next_dispatch_id: AtomicU64,
    gws: crate::gws::Gws,
}

impl Default for Device {
    fn default() -> Self {
        Self::new()
    }
}

impl Device {
    /// A device running workgroups on all host cores.
    pub fn new() -> Device {
        Self::with_threads(0)
    }

    /// A device running workgroups on `threads` host threads (0: all cores).
    pub fn with_threads(threads: usize) -> Device {
        Self::with_memory(Arc::new(Memory::new()), threads)
    }

    /// A device over `mem`, shared with a runtime that allocates in it.
    pub fn with_memory(mem: Arc<Memory>, threads: usize) -> Device {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .or_else(|_| rayon::ThreadPoolBuilder::new().num_threads(1).build());
        let pool = match pool {
            Ok(p) => p,
            // A pool of one thread only fails if the OS refuses threads at all.
            Err(e) => panic!("cannot start a worker thread: {e}"),
        };
        Device {
            mem,
            interrupt: RwLock::new(None),
            registry: RwLock::new(Registry::default()),
            next_program_id: AtomicU64::new(1),
            pool,
            budget: DEFAULT_BUDGET,
            next_dispatch_id: AtomicU64::new(1),
            gws: Default::default(),
        }
    }

    /// Sends the interrupts of later dispatches to `handler`.
    pub fn set_interrupt(&self, handler: Arc<Interrupt>) {
        *self.interrupt.write().unwrap_or_else(|e| e.into_inner()) = Some(handler);
    }

    fn interrupt(&self) -> Option<Arc<Interrupt>> {
        self.interrupt
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Sets the watchdog: instructions one wave may execute per dispatch.
    pub fn set_watchdog(&mut self, budget: u64) {
        self.budget = budget;
    }

    pub fn threads(&self) -> usize {
        self.pool.current_num_threads()
    }

    pub fn memory(&self) -> &Memory {
        &self.mem
    }

    /// Allocates zeroed device memory.
    pub fn alloc(&self, size: u64) -> Result<u64, Fault> {
        self.mem.alloc(size, 256, MemKind::Device, 0)
    }

    pub fn free(&self, addr: u64) -> Result<(), Fault> {
        self.mem.free(addr).map(|_| ())
    }

    /// Copies host bytes to device memory.
    pub fn write(&self, addr: u64, data: &[u8]) -> Result<(), Fault> {
        self.mem.write_bytes(addr, data)
    }

    /// Copies device memory to host bytes.
    pub fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), Fault> {
        self.mem.read_bytes(addr, out)
    }

    /// Allocates and fills a buffer of 32-bit words.
    pub fn upload_u32(&self, data: &[u32]) -> Result<u64, Fault> {
        let bytes: Vec<u8> = data.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.upload(&bytes)
    }

    /// Allocates and fills a buffer.
    pub fn upload(&self, bytes: &[u8]) -> Result<u64, Fault> {
        let a = self.alloc(bytes.len().max(1) as u64)?;
        self.write(a, bytes)?;
        Ok(a)
    }

    /// Reads `n` 32-bit words.
    pub fn download_u32(&self, addr: u64, n: usize) -> Result<Vec<u32>, Fault> {
        let mut b = vec![0u8; n * 4];
        self.read(addr, &mut b)?;
        Ok(b.chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }

    /// Reads `n` 64-bit words.
    pub fn download_u64(&self, addr: u64, n: usize) -> Result<Vec<u64>, Fault> {
        let mut b = vec![0u8; n * 8];
        self.read(addr, &mut b)?;
        Ok(b.chunks_exact(8)
            .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect())
    }

    /// Loads a code object into device memory and predecodes it.
    pub fn load(&self, code_object: &[u8]) -> Result<Program, LoadError> {
        Program::load(&self.mem, code_object)
    }

    /// Frees the image [`Device::load`] placed for `program`.
    pub fn unload(&self, program: Program) -> Result<(), Fault> {
        match program.image {
            Some(base) => self.free(base),
            None => Ok(()),
        }
    }

    /// Makes the kernels of code objects already in device memory
    /// dispatchable by descriptor address through [`Device::dispatch_packet`];
    /// returns an id for [`Device::unregister`]. The code is predecoded once,
    /// by the first dispatch that needs it, so registering a large code
    /// object costs nothing until one of its kernels runs.
    pub fn register(&self, regions: Vec<CodeRegion>) -> u64 {
        let id = self.next_program_id.fetch_add(1, Ordering::Relaxed);
        let entry = Arc::new(Registered {
            regions,
            program: std::sync::OnceLock::new(),
        });
        let mut r = self.registry.write().unwrap_or_else(|e| e.into_inner());
        for region in &entry.regions {
            for (name, kd) in &region.kernels {
                r.by_descriptor.insert(*kd, (entry.clone(), name.clone()));
            }
        }
        r.programs.insert(id, entry);
        id
    }

    /// Forgets registered code (its memory belongs to whoever placed it).
    pub fn unregister(&self, id: u64) {
        let mut r = self.registry.write().unwrap_or_else(|e| e.into_inner());
        if let Some(entry) = r.programs.remove(&id) {
            r.by_descriptor.retain(|_, (e, _)| !Arc::ptr_eq(e, &entry));
        }
    }

    /// Runs `kernel` over `grid` work-items in workgroups of `wg` work-items.
    /// `args` are the explicit kernel arguments; hidden ones are filled in.
    pub fn dispatch(
        &self,
        program: &Program,
        kernel: &str,
        grid: [u32; 3],
        wg: [u32; 3],
        args: &[u8],
    ) -> Result<Stats, Box<FaultReport>> {
        self.dispatch_with(program, kernel, grid, wg, args, None, Watch::default())
    }

    /// [`Device::dispatch`], ended early by `watch` (a fault of kind
    /// `Stopped` or `TimeLimit`).
    pub fn dispatch_watched(
        &self,
        program: &Program,
        kernel: &str,
        grid: [u32; 3],
        wg: [u32; 3],
        args: &[u8],
        watch: Watch<'_>,
    ) -> Result<Stats, Box<FaultReport>> {
        self.dispatch_with(program, kernel, grid, wg, args, None, watch)
    }

    /// [`Device::dispatch`], showing waves to `probe` before and after the
    /// instructions it names (the oracle of instrumentation tests).
    pub fn dispatch_probed(
        &self,
        program: &Program,
        kernel: &str,
        grid: [u32; 3],
        wg: [u32; 3],
        args: &[u8],
        probe: Option<&Probe<'_>>,
    ) -> Result<Stats, Box<FaultReport>> {
        self.dispatch_with(program, kernel, grid, wg, args, probe, Watch::default())
    }

    #[allow(clippy::too_many_arguments)]
    fn dispatch_with(
        &self,
        program: &Program,
        kernel: &str,
        grid: [u32; 3],
        wg: [u32; 3],
        args: &[u8],
        probe: Option<&Probe<'_>>,
        watch: Watch<'_>,
    ) -> Result<Stats, Box<FaultReport>> {
        let probes = probe.map(|p| Probes::new(program, p));
        let k = program
            .kernel(kernel)
            .ok_or_else(|| refuse(kernel, format!("no kernel named {kernel}")))?;
        check_launch(k, grid, wg, 0, 0)?;
        let setup = self
            .setup(k, grid, wg, args)
            .map_err(|f| refuse(kernel, format!("device memory: {f}")))?;
        let interrupt = self.interrupt();
        let launch = Launch {
            program,
            mem: &self.mem,
            kernel: k,
            grid,
            wg_size: wg,
            dispatch_ptr: setup.packet,
            queue_ptr: setup.queue,
            kernarg_ptr: setup.kernarg,
            dispatch_id: self.next_dispatch_id.fetch_add(1, Ordering::Relaxed),
            lds_size: k.descriptor.group_segment_fixed_size,
            priv_size: k.descriptor.private_segment_fixed_size,
            budget: self.budget,
            interrupt: interrupt.as_deref(),
            probe: probes.as_ref(),
            watch: watch.arm(),
            gws: &self.gws,
            slice: u64::MAX,
        };
        let result = self.run(&launch);
        for a in [setup.packet, setup.queue, setup.kernarg] {
            let _ = self.mem.free(a);
        }
        result
    }

    /// Runs an AQL kernel-dispatch packet whose `kernel_object` is the
    /// descriptor of a kernel in a registered program. The kernel arguments
    /// (hidden ones included) are the caller's, at `kernarg_address`.
    /// `watch` may end it early (a fault of kind `Stopped` or `TimeLimit`).
    pub fn dispatch_packet(&self, p: &Packet, watch: Watch<'_>) -> Result<Stats, Box<FaultReport>> {
        let unknown = || {
            Box::new(FaultReport {
                kind: FaultKind::UnknownKernel {
                    kernel_object: p.kernel_object,
                },
                ..*refuse("", String::new())
            })
        };
        let (entry, name) = {
            let r = self.registry.read().unwrap_or_else(|e| e.into_inner());
            r.by_descriptor
                .get(&p.kernel_object)
                .cloned()
                .ok_or_else(unknown)?
        };
        let program = entry
            .program
            .get_or_init(|| {
                Program::from_memory(&self.mem, &entry.regions).map_err(|e| e.to_string())
            })
            .as_ref()
            .map_err(|why| refuse(&name, format!("cannot predecode its code: {why}")))?;
        let k = program.kernel(&name).ok_or_else(unknown)?;
        self.run_packet(program, k, p, None, watch)
    }

    /// Runs `kernel` of `program` from a packet the caller placed in
    /// device memory (its address is the dispatch pointer; its kernel
    /// arguments, hidden ones included, are the caller's), showing waves to
    /// `probe`. Two dispatches of one packet see the same launch pointers,
    /// which instrumentation tests compare runs by.
    pub fn dispatch_program(
        &self,
        program: &Program,
        kernel: &str,
        p: &Packet,
        probe: Option<&Probe<'_>>,
    ) -> Result<Stats, Box<FaultReport>> {
        let k = program
            .kernel(kernel)
            .ok_or_else(|| refuse(kernel, format!("no kernel named {kernel}")))?;
        self.run_packet(program, k, p, probe, Watch::default())
    }

    fn run_packet(
        &self,
        program: &Program,
        k: &KernelInfo,
        p: &Packet,
        probe: Option<&Probe<'_>>,
        watch: Watch<'_>,
    ) -> Result<Stats, Box<FaultReport>> {
        let name = &k.name;
        let probes = probe.map(|pr| Probes::new(program, pr));
        let lds_size = k
            .descriptor
            .group_segment_fixed_size
            .max(p.group_segment_size);
        let priv_size = k
            .descriptor
            .private_segment_fixed_size
            .max(p.private_segment_size);
        check_launch(k, p.grid, p.workgroup, lds_size, priv_size)?;
        // The dispatch pointer is the packet in its queue slot, which stays
        // valid until the dispatch completes; without one, the kernel gets a copy.
        let copy = if p.address == 0 {
            let a = self
                .mem
                .alloc(64, 64, MemKind::Runtime, 0)
                .map_err(|f| refuse(name, format!("device memory: {f}")))?;
            let _ = self.mem.write_bytes(a, &p.raw);
            Some(a)
        } else {
            None
        };
        let interrupt = self.interrupt();
        let launch = Launch {
            program,
            mem: &self.mem,
            kernel: k,
            grid: p.grid,
            wg_size: p.workgroup,
            dispatch_ptr: copy.unwrap_or(p.address),
            queue_ptr: p.queue,
            kernarg_ptr: p.kernarg_address,
            dispatch_id: p.dispatch_id,
            lds_size,
            priv_size,
            budget: self.budget,
            interrupt: interrupt.as_deref(),
            probe: probes.as_ref(),
            watch: watch.arm(),
            gws: &self.gws,
            slice: u64::MAX,
        };
        let result = self.run(&launch);
        if let Some(a) = copy {
            let _ = self.mem.free(a);
        }
        result
    }

    fn setup(
        &self,
        k: &crate::program::KernelInfo,
        grid: [u32; 3],
        wg: [u32; 3],
        args: &[u8],
    ) -> Result<Setup, Fault> {
        let queue = self.mem.alloc(256, 64, MemKind::Runtime, 0)?;
        let size = (k.kernarg_size as usize).max(args.len()).max(8);
        let mut kernarg = vec![0u8; size];
        kernarg[..args.len()].copy_from_slice(args);
        let hidden = Hidden {
            grid,
            wg_size: wg,
            queue_ptr: queue,
        };
        fill_hidden(&k.args, &hidden, &mut kernarg);
        let ka = self.mem.alloc(size as u64, 64, MemKind::Kernarg, 0)?;
        self.mem.write_bytes(ka, &kernarg)?;
        // hsa_kernel_dispatch_packet_t, so the dispatch pointer is real.
        let mut p = [0u8; 64];
        let dims = if grid[2] > 1 {
            3u16
        } else if grid[1] > 1 {
            2
        } else {
            1
        };
        p[0..2].copy_from_slice(&2u16.to_le_bytes()); // HSA_PACKET_TYPE_KERNEL_DISPATCH
        p[2..4].copy_from_slice(&dims.to_le_bytes());
        for d in 0..3 {
            p[4 + 2 * d..6 + 2 * d].copy_from_slice(&(wg[d] as u16).to_le_bytes());
            p[12 + 4 * d..16 + 4 * d].copy_from_slice(&grid[d].to_le_bytes());
        }
        p[24..28].copy_from_slice(&k.descriptor.private_segment_fixed_size.to_le_bytes());
        p[28..32].copy_from_slice(&k.descriptor.group_segment_fixed_size.to_le_bytes());
        p[32..40].copy_from_slice(&k.descriptor_addr.to_le_bytes());
        p[40..48].copy_from_slice(&ka.to_le_bytes());
        let packet = self.mem.alloc(64, 64, MemKind::Runtime, 0)?;
        self.mem.write_bytes(packet, &p)?;
        Ok(Setup {
            packet,
            queue,
            kernarg: ka,
        })
    }

    fn run(&self, launch: &Launch<'_>) -> Result<Stats, Box<FaultReport>> {
        if launch.program.gws_waits {
            return self.run_resident(launch);
        }
        let start = Instant::now();
        let counts = [
            launch.grid[0].div_ceil(launch.wg_size[0]),
            launch.grid[1].div_ceil(launch.wg_size[1]),
            launch.grid[2].div_ceil(launch.wg_size[2]),
        ];
        let total = counts[0] as u64 * counts[1] as u64 * counts[2] as u64;
        let n_insts = launch.program.insts.len();
        // Workgroups after the lowest-numbered one that faulted are skipped;
        // those before it still run, so the report is always that of the
        // lowest-numbered faulting workgroup, whatever the thread schedule.
        let stop_after = AtomicU64::new(u64::MAX);
        // Set when the dispatch was stopped or ran out of time: no workgroup
        // starts after that, whatever its number.
        let halt = AtomicBool::new(false);
        let first_fault: Mutex<Option<(u64, [u32; 3], WaveFault)>> = Mutex::new(None);
        // A few chunks of consecutive workgroups per thread; each chunk builds
        // its accumulators (per-PC counts, LDS, wave register files) once.
        let chunk = (total / (self.pool.current_num_threads() as u64 * 8)).max(1);
        let run_chunk = |c: u64| {
            let mut pcs = vec![[0u64; 2]; n_insts];
            // Each host thread keeps its LDS and wave states (large register
            // files) from one dispatch to the next.
            let (mut lds, mut waves) = WORKSPACE.with(|w| std::mem::take(&mut *w.borrow_mut()));
            for n in c * chunk..((c + 1) * chunk).min(total) {
                if n > stop_after.load(Ordering::Relaxed) || halt.load(Ordering::Relaxed) {
                    break;
                }
                let wg = [
                    (n % counts[0] as u64) as u32,
                    (n / counts[0] as u64 % counts[1] as u64) as u32,
                    (n / (counts[0] as u64 * counts[1] as u64)) as u32,
                ];
                if let Err(f) = launch.run(wg, &mut lds, &mut waves, &mut pcs) {
                    stop_after.fetch_min(n, Ordering::Relaxed);
                    if matches!(f.exc.kind, FaultKind::Stopped | FaultKind::TimeLimit { .. }) {
                        halt.store(true, Ordering::Relaxed);
                    }
                    let mut slot = first_fault.lock().unwrap_or_else(|e| e.into_inner());
                    if slot.as_ref().is_none_or(|(m, _, _)| n < *m) {
                        *slot = Some((n, wg, f));
                    }
                    break;
                }
            }
            WORKSPACE.with(|w| *w.borrow_mut() = (lds, waves));
            pcs
        };
        let chunks = total.div_ceil(chunk);
        // One chunk runs here: handing it to a worker costs more than small
        // dispatches (an empty kernel) take.
        let per_pc = if chunks == 1 {
            run_chunk(0)
        } else {
            self.pool.install(|| {
                (0..chunks).into_par_iter().map(run_chunk).reduce(
                    || vec![[0u64; 2]; n_insts],
                    |mut a, b| {
                        a.iter_mut().zip(b).for_each(|(x, y)| {
                            x[0] += y[0];
                            x[1] += y[1];
                        });
                        a
                    },
                )
            })
        };
        let fault = first_fault.into_inner().unwrap_or_else(|e| e.into_inner());
        if let Some((_, wg, f)) = fault {
            return Err(Box::new(self.report(launch, wg, f)));
        }
        Ok(Self::stats(launch, counts, &per_pc, start))
    }

    /// A dispatch whose workgroups wait for each other (its program has GWS
    /// barriers or semaphores: cooperative launches, `grid.sync()`): all its
    /// workgroups run at once, interleaved on this thread, as the hardware
    /// keeps a cooperative grid resident; one larger than the device can
    /// keep resident is refused, as HIP refuses to launch it.
    fn run_resident(&self, launch: &Launch<'_>) -> Result<Stats, Box<FaultReport>> {
        let start = Instant::now();
        let counts = [
            launch.grid[0].div_ceil(launch.wg_size[0]),
            launch.grid[1].div_ceil(launch.wg_size[1]),
            launch.grid[2].div_ceil(launch.wg_size[2]),
        ];
        let total = counts[0] as u64 * counts[1] as u64 * counts[2] as u64;
        let waves_per_group =
            (launch.wg_size.iter().map(|&w| w as u64).product::<u64>()).div_ceil(64);
        if total.saturating_mul(waves_per_group) > MAX_RESIDENT_WAVES {
            return Err(refuse(
                &launch.kernel.name,
                format!(
                    "{total} workgroups of {waves_per_group} waves wait for each other (GWS), \
                     but at most {MAX_RESIDENT_WAVES} waves are resident \
                     ({COMPUTE_UNITS} compute units of {WAVES_PER_CU} waves)"
                ),
            ));
        }
        let groups: Vec<[u32; 3]> = (0..total)
            .map(|n| {
                [
                    (n % counts[0] as u64) as u32,
                    (n / counts[0] as u64 % counts[1] as u64) as u32,
                    (n / (counts[0] as u64 * counts[1] as u64)) as u32,
                ]
            })
            .collect();
        let resident = Launch {
            slice: TIME_SLICE,
            ..*launch
        };
        let mut per_pc = vec![[0u64; 2]; launch.program.insts.len()];
        resident
            .run_resident(&groups, &mut per_pc)
            .map_err(|(wg, f)| Box::new(self.report(launch, wg, f)))?;
        Ok(Self::stats(launch, counts, &per_pc, start))
    }

    /// The native counts of a finished dispatch.
    fn stats(launch: &Launch<'_>, counts: [u32; 3], per_pc: &[[u64; 2]], start: Instant) -> Stats {
        let total = counts[0] as u64 * counts[1] as u64 * counts[2] as u64;
        let mut stats = Stats {
            workgroups: total,
            wall: start.elapsed(),
            ..Stats::default()
        };
        stats.waves = (0..total)
            .map(|n| {
                let wg = [
                    (n % counts[0] as u64) as u32,
                    (n / counts[0] as u64 % counts[1] as u64) as u32,
                    (n / (counts[0] as u64 * counts[1] as u64)) as u32,
                ];
                let s = launch.actual_size(wg);
                (s[0] * s[1] * s[2]).div_ceil(64) as u64
            })
            .sum();
        for (idx, &[c, lanes]) in per_pc.iter().enumerate() {
            if c == 0 {
                continue;
            }
            let inst = &launch.program.insts[idx];
            stats.instructions += c;
            stats.lane_instructions += lanes;
            stats.per_pc.insert(inst.addr, c);
            stats.per_pc_lanes.insert(inst.addr, lanes);
            *stats
                .per_opcode
                .entry(Opcode(inst.opcode).name())
                .or_insert(0) += c;
        }
        stats
    }

    fn report(&self, launch: &Launch<'_>, wg: [u32; 3], f: WaveFault) -> FaultReport {
        let p = launch.program;
        let mut kind = f.exc.kind;
        let (pc, instruction) = match (p.insts.get(f.inst as usize), p.decoded.get(f.inst as usize))
        {
            (Some(i), Some(d)) => {
                if kind == FaultKind::Unimplemented && !d.is_valid() {
                    kind = FaultKind::IllegalInstruction;
                }
                (i.addr, inlay_isa::format::to_string(d))
            }
            _ => (0, String::from("<no instruction>")),
        };
        let nearest = match (&kind, f.exc.addr) {
            (FaultKind::Memory(_), Some(a)) => self.mem.nearest(a),
            _ => None,
        };
        FaultReport {
            kernel: launch.kernel.name.clone(),
            workgroup: wg,
            wave: f.wave,
            lane: f.exc.lane,
            pc,
            pc_offset: pc - p.load_base_of(pc).unwrap_or(0),
            instruction,
            address: f.exc.addr,
            nearest,
            kind,
        }
    }
}

/// A kernel-dispatch packet as the HSA packet processor hands it over.
#[derive(Clone, Debug)]
pub struct Packet {
    /// The 64 bytes of `hsa_kernel_dispatch_packet_t`.
    pub raw: [u8; 64],
    /// Where the packet is in device memory for the whole dispatch (its
    /// queue slot), or 0 to give the kernel a copy.
    pub address: u64,
    pub workgroup: [u32; 3],
    pub grid: [u32; 3],
    pub private_segment_size: u32,
    pub group_segment_size: u32,
    pub kernel_object: u64,
    pub kernarg_address: u64,
    /// Address of the `hsa_queue_t` (the queue pointer kernels may read).
    pub queue: u64,
    pub dispatch_id: u64,
}

impl Packet {
    /// Reads the fields of `hsa_kernel_dispatch_packet_t` (dimensions the
    /// packet does not use count as 1).
    pub fn from_bytes(raw: [u8; 64], address: u64, queue: u64, dispatch_id: u64) -> Packet {
        let u16_at = |o: usize| u16::from_le_bytes([raw[o], raw[o + 1]]);
        let u32_at = |o: usize| u32::from_le_bytes([raw[o], raw[o + 1], raw[o + 2], raw[o + 3]]);
        let u64_at = |o: usize| u64::from(u32_at(o)) | u64::from(u32_at(o + 4)) << 32;
        let dims = (u16_at(2) & 3) as usize;
        let mut workgroup = [1u32; 3];
        let mut grid = [1u32; 3];
        for d in 0..dims.min(3) {
            workgroup[d] = u32::from(u16_at(4 + 2 * d));
            grid[d] = u32_at(12 + 4 * d);
        }
        Packet {
            raw,
            address,
            workgroup,
            grid,
            private_segment_size: u32_at(24),
            group_segment_size: u32_at(28),
            kernel_object: u64_at(32),
            kernarg_address: u64_at(40),
            queue,
            dispatch_id,
        }
    }
}

/// A launch refused before it ran.
fn refuse(kernel: &str, why: String) -> Box<FaultReport> {
    Box::new(FaultReport {
        kernel: kernel.to_string(),
        workgroup: [0; 3],
        wave: 0,
        lane: None,
        pc: 0,
        pc_offset: 0,
        instruction: String::new(),
        address: None,
        nearest: None,
        kind: FaultKind::Launch(why),
    })
}

/// Rejects launches the device cannot run: empty or oversized grids and
/// workgroups, and more LDS, scratch, registers or arguments than it has.
fn check_launch(
    k: &KernelInfo,
    grid: [u32; 3],
    wg: [u32; 3],
    lds_size: u32,
    priv_size: u32,
) -> Result<(), Box<FaultReport>> {
    let no = |why: String| Err(refuse(&k.name, why));
    if grid.contains(&0) || wg.contains(&0) {
        return no("empty grid or workgroup".into());
    }
    let groups: u64 = (0..3).map(|d| grid[d].div_ceil(wg[d]) as u64).product();
    if groups > MAX_WORKGROUPS {
        return no(format!("{groups} workgroups (max {MAX_WORKGROUPS})"));
    }
    if k.kernarg_size > MAX_KERNARG {
        return no(format!("{} bytes of kernel arguments", k.kernarg_size));
    }
    let wg_items = wg[0] as u64 * wg[1] as u64 * wg[2] as u64;
    if wg_items > 1024 || wg.iter().any(|&w| w > 1024) {
        return no(format!("workgroup of {wg_items} work-items (max 1024)"));
    }
    let lds = lds_size.max(k.descriptor.group_segment_fixed_size);
    if lds > MAX_LDS {
        return no(format!("{lds} bytes of LDS (max {MAX_LDS})"));
    }
    let scratch = priv_size.max(k.descriptor.private_segment_fixed_size);
    if scratch > MAX_SCRATCH {
        return no(format!("{scratch} bytes of scratch per lane"));
    }
    if k.decoded.vgpr_count > 512 {
        return no(format!("{} VGPRs", k.decoded.vgpr_count));
    }
    Ok(())
}

thread_local! {
    /// LDS and wave states of the workgroups this thread runs, reused.
    static WORKSPACE: std::cell::RefCell<(Vec<u8>, Vec<crate::wave::Wave>)> =
        const { std::cell::RefCell::new((Vec::new(), Vec::new())) };
}

/// Code registered for dispatch by descriptor address, predecoded on first use.
struct Registered {
    regions: Vec<CodeRegion>,
    program: std::sync::OnceLock<Result<Program, String>>,
}

#[derive(Default)]
struct Registry {
    programs: HashMap<u64, Arc<Registered>>,
    by_descriptor: HashMap<u64, (Arc<Registered>, String)>,
}

struct Setup {
    packet: u64,
    queue: u64,
    kernarg: u64,
}
