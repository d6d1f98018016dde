//! One workgroup: its waves with their initial registers, its LDS, and the
//! cooperative scheduler that runs the waves on one host thread and releases
//! `s_barrier` when every wave still running has reached it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::fault::{Exception, FaultKind};
use crate::memory::Memory;
use crate::program::{KernelInfo, Program};
use crate::wave::{Env, Flow, Wave};

/// Instructions a wave runs between two looks at its [`Watch`] (and the
/// watchdog): rare enough to cost nothing per instruction, often enough
/// (well under a millisecond) that a stop takes effect at once.
pub const CHECK_EVERY: u64 = 1 << 16;

/// What may end a running dispatch from outside: a flag another thread
/// raises (its queue is torn down) and a time limit. Waves look at it every
/// [`CHECK_EVERY`] instructions, workgroups before they start.
#[derive(Clone, Copy, Debug, Default)]
pub struct Watch<'a> {
    pub stop: Option<&'a AtomicBool>,
    pub time_limit: Option<Duration>,
}

/// A [`Watch`] armed at the start of one dispatch.
#[derive(Clone, Copy, Debug, Default)]
pub struct Armed<'a> {
    stop: Option<&'a AtomicBool>,
    deadline: Option<(Instant, Duration)>,
}

impl<'a> Watch<'a> {
    /// Starts the clock of the time limit.
    pub fn arm(self) -> Armed<'a> {
        let now = Instant::now();
        Armed {
            stop: self.stop,
            deadline: self.time_limit.and_then(|l| Some((now.checked_add(l)?, l))),
        }
    }
}

impl Armed<'_> {
    /// Why the dispatch must end now, if it must.
    pub fn expired(&self) -> Option<FaultKind> {
        if self.stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
            return Some(FaultKind::Stopped);
        }
        match self.deadline {
            Some((at, limit)) if Instant::now() >= at => Some(FaultKind::TimeLimit { limit }),
            _ => None,
        }
    }
}

/// What every wave of a dispatch starts from.
#[derive(Clone, Copy)]
pub struct Launch<'a> {
    pub program: &'a Program,
    pub mem: &'a Memory,
    pub kernel: &'a KernelInfo,
    pub grid: [u32; 3],
    pub wg_size: [u32; 3],
    pub dispatch_ptr: u64,
    pub queue_ptr: u64,
    pub kernarg_ptr: u64,
    pub dispatch_id: u64,
    pub lds_size: u32,
    pub priv_size: u32,
    /// Instructions one wave may execute before the watchdog ends the dispatch.
    pub budget: u64,
    /// Where the waves' interrupts go.
    pub interrupt: Option<&'a crate::device::Interrupt>,
    /// Waves to show an observer before or after chosen instructions.
    pub probe: Option<&'a Probes<'a>>,
    /// What may end the dispatch from outside.
    pub watch: Armed<'a>,
    /// The device's GWS resources.
    pub gws: &'a crate::gws::Gws,
    /// Instructions a wave runs before it yields to the others (resident
    /// dispatches, where all workgroups share one host thread; u64::MAX:
    /// never).
    pub slice: u64,
}

/// A wave as a [`Probe`] sees it, before or after an instruction.
pub struct ProbeHit<'a> {
    /// Device address of the instruction.
    pub addr: u64,
    /// Seen after the instruction executed (else before).
    pub after: bool,
    pub workgroup: [u32; 3],
    /// The wave's index in its workgroup (work-items `64 * wave ..`).
    pub wave: u32,
    /// Its registers (`exec()`, `s`, `v`, `a`, `scc`).
    pub state: &'a Wave,
}

/// An observer of waves at chosen instructions, for tests that compare
/// what instrumentation sees with what the GPU had: `before` and `after`
/// list device addresses of instructions; `see` is called from the host
/// threads that run workgroups.
pub struct Probe<'a> {
    pub before: Vec<u64>,
    pub after: Vec<u64>,
    pub see: Box<dyn Fn(&ProbeHit<'_>) + Send + Sync + 'a>,
}

/// A probe resolved to instruction indices of one program.
pub struct Probes<'a> {
    /// Per instruction index: bit 0 observe before, bit 1 after.
    pub(crate) at: Vec<u8>,
    pub(crate) probe: &'a Probe<'a>,
}

impl<'a> Probes<'a> {
    pub(crate) fn new(program: &Program, probe: &'a Probe<'a>) -> Probes<'a> {
        let mut at = vec![0u8; program.insts.len()];
        for (list, bit) in [(&probe.before, 1u8), (&probe.after, 2u8)] {
            for &a in list {
                if let Some(k) = program.index_of_addr(a) {
                    at[k as usize] |= bit;
                }
            }
        }
        Probes { at, probe }
    }
}

/// Appends initial SGPR values in order (values past the end are dropped).
struct SgprWriter<'a> {
    s: &'a mut [u32],
    n: &'a mut usize,
}

impl SgprWriter<'_> {
    fn push(&mut self, v: u32) {
        if let Some(r) = self.s.get_mut(*self.n) {
            *r = v;
        }
        *self.n += 1;
    }
    fn extend_from_slice(&mut self, v: &[u32]) {
        v.iter().for_each(|&x| self.push(x));
    }
    /// The next value goes to SGPR `k` at the earliest (the ones skipped stay 0).
    fn skip_to(&mut self, k: usize) {
        *self.n = (*self.n).max(k);
    }
}

/// A fault inside a workgroup: which wave, which instruction.
pub struct WaveFault {
    pub wave: u32,
    pub inst: u32,
    pub exc: Exception,
}

impl Launch<'_> {
    /// Work-items of workgroup `wg` in each dimension (the last may be partial).
    pub fn actual_size(&self, wg: [u32; 3]) -> [u32; 3] {
        let mut s = [0; 3];
        for d in 0..3 {
            s[d] = self.wg_size[d].min(self.grid[d] - wg[d] * self.wg_size[d]);
        }
        s
    }

    /// Initial state of wave `w` of workgroup `wg` (AMDGPUUsage, GFX9 order of
    /// user SGPRs, then system SGPRs from `user_sgpr_count`).
    fn init_wave(&self, wave: &mut Wave, wg: [u32; 3], w: u32, size: [u32; 3]) {
        let agprs = self
            .kernel
            .vgpr_count
            .saturating_sub(self.kernel.accum_offset);
        wave.reset(self.kernel.vgpr_count, agprs, self.priv_size);
        let p = &self.kernel.decoded.properties;
        let r2 = &self.kernel.decoded.rsrc2;
        // Straight into the (cleared) SGPRs: s0 up, at most the 102 SGPRs.
        let mut n = 0usize;
        let mut s = SgprWriter {
            s: &mut wave.s[..102],
            n: &mut n,
        };
        if p.enable_sgpr_private_segment_buffer {
            // A V# with add_tid_enable: MUBUF accesses through it are the lane's
            // own private memory at offset base + soffset + ... (base 0).
            s.extend_from_slice(&[0, 0, u32::MAX, 1 << 23 | 0x0002_7000]);
        }
        if p.enable_sgpr_dispatch_ptr {
            s.extend_from_slice(&[self.dispatch_ptr as u32, (self.dispatch_ptr >> 32) as u32]);
        }
        if p.enable_sgpr_queue_ptr {
            s.extend_from_slice(&[self.queue_ptr as u32, (self.queue_ptr >> 32) as u32]);
        }
        if p.enable_sgpr_kernarg_segment_ptr {
            s.extend_from_slice(&[self.kernarg_ptr as u32, (self.kernarg_ptr >> 32) as u32]);
        }
        if p.enable_sgpr_dispatch_id {
            s.extend_from_slice(&[self.dispatch_id as u32, (self.dispatch_id >> 32) as u32]);
        }
        if p.enable_sgpr_flat_scratch_init {
            // Scratch base of the queue: 0, each wave owns its private memory.
            s.extend_from_slice(&[0, 0]);
        }
        if p.enable_sgpr_private_segment_size {
            s.push(self.priv_size);
        }
        // System SGPRs follow the user SGPRs the descriptor counts.
        s.skip_to(r2.user_sgpr_count as usize);
        if r2.enable_sgpr_workgroup_id_x {
            s.push(wg[0]);
        }
        if r2.enable_sgpr_workgroup_id_y {
            s.push(wg[1]);
        }
        if r2.enable_sgpr_workgroup_id_z {
            s.push(wg[2]);
        }
        if r2.enable_sgpr_workgroup_info {
            s.push(0);
        }
        if r2.enable_private_segment {
            s.push(0); // private segment wave byte offset
        }
        // Work-item IDs, packed into v0 on gfx90a: x | y << 10 | z << 20.
        let n = size[0] * size[1] * size[2];
        let mut exec = 0u64;
        // The wave's first work-item, then counted up (no divisions per lane).
        let first = w * 64;
        let (mut x, mut y, mut z) = (
            first % size[0],
            first / size[0] % size[1],
            first / (size[0] * size[1]),
        );
        for l in 0..64u32 {
            if first + l >= n {
                break;
            }
            wave.v[0][l as usize] = x | y << 10 | z << 20;
            exec |= 1 << l;
            x += 1;
            if x == size[0] {
                x = 0;
                y += 1;
                if y == size[1] {
                    y = 0;
                    z += 1;
                }
            }
        }
        wave.set_exec(exec);
        wave.pc = self.kernel.entry;
        wave.next_check = CHECK_EVERY.min(self.budget.saturating_add(1));
        // MODE from the descriptor: rounding, denormals, DX10 clamp, IEEE.
        let r1 = &self.kernel.decoded.rsrc1;
        wave.hwreg[1] = r1.float_round_mode_32
            | r1.float_round_mode_16_64 << 2
            | r1.float_denorm_mode_32 << 4
            | r1.float_denorm_mode_16_64 << 6
            | (r1.enable_dx10_clamp as u32) << 8
            | (r1.enable_ieee_mode as u32) << 9;
    }

    /// Runs workgroup `wg`, adding executed instructions (waves, lanes) to `per_pc`.
    /// `waves` is the calling thread's pool of wave states, reused across workgroups.
    pub fn run(
        &self,
        wg: [u32; 3],
        lds: &mut Vec<u8>,
        waves: &mut Vec<Wave>,
        per_pc: &mut [[u64; 2]],
    ) -> Result<(), WaveFault> {
        if let Some(kind) = self.watch.expired() {
            // Ended before it started: the report points at the entry.
            return Err(WaveFault {
                wave: 0,
                inst: self.kernel.entry,
                exc: Exception::new(kind),
            });
        }
        let size = self.actual_size(wg);
        let n_items = size[0] * size[1] * size[2];
        let n_waves = n_items.div_ceil(64) as usize;
        while waves.len() < n_waves {
            waves.push(Wave::new(self.priv_size));
        }
        let waves = &mut waves[..n_waves];
        for (w, wave) in waves.iter_mut().enumerate() {
            self.init_wave(wave, wg, w as u32, size);
        }
        lds.clear();
        lds.resize(self.lds_size as usize, 0);
        let mut env = Env {
            program: self.program,
            mem: self.mem,
            lds: lds.as_mut_slice(),
            cache: Default::default(),
            interrupt: self.interrupt,
            gws: self.gws,
        };
        // Each pass runs every live wave up to its next barrier or its end;
        // after a pass all live waves wait at the barrier, which releases them.
        // (A wave that ended no longer counts, as on hardware.)
        loop {
            for (w, wave) in waves.iter_mut().enumerate() {
                if wave.done {
                    continue;
                }
                match self.run_wave(wave, &mut env, per_pc, (wg, w as u32)) {
                    Ok(Flow::Barrier) => {}
                    // Only resident dispatches wait (Device runs programs
                    // with GWS waits that way) or yield.
                    Ok(Flow::Wait | Flow::Yield) => {
                        return Err(WaveFault {
                            wave: w as u32,
                            inst: wave.pc,
                            exc: Exception::new(FaultKind::Deadlock(
                                "a GWS wait in a dispatch that does not run all its \
                                 workgroups at once"
                                    .into(),
                            )),
                        })
                    }
                    Ok(_) => wave.done = true,
                    Err(exc) => {
                        return Err(WaveFault {
                            wave: w as u32,
                            inst: wave.pc,
                            exc,
                        })
                    }
                }
            }
            if waves.iter().all(|w| w.done) {
                return Ok(());
            }
        }
    }

    /// Runs every workgroup of `groups` at once on this thread, as a
    /// dispatch whose workgroups wait for each other (GWS barriers and
    /// semaphores) needs: each live wave in turn runs until it ends, waits
    /// at a barrier or on GWS, or has run `self.slice` instructions; a
    /// workgroup barrier releases when all its live waves are at it. When
    /// a whole round completes no instruction, nothing can release the
    /// waiting waves: a deadlock. On a fault, the workgroup and the fault.
    pub fn run_resident(
        &self,
        groups: &[[u32; 3]],
        per_pc: &mut [[u64; 2]],
    ) -> Result<(), ([u32; 3], WaveFault)> {
        struct Group {
            id: [u32; 3],
            waves: Vec<Wave>,
            at_barrier: Vec<bool>,
            lds: Vec<u8>,
        }
        let mut all: Vec<Group> = groups
            .iter()
            .map(|&id| {
                let size = self.actual_size(id);
                let n = (size[0] * size[1] * size[2]).div_ceil(64) as usize;
                let mut waves: Vec<Wave> = (0..n).map(|_| Wave::new(self.priv_size)).collect();
                for (w, wave) in waves.iter_mut().enumerate() {
                    self.init_wave(wave, id, w as u32, size);
                }
                Group {
                    id,
                    waves,
                    at_barrier: vec![false; n],
                    lds: vec![0; self.lds_size as usize],
                }
            })
            .collect();
        loop {
            let (mut live, mut progress) = (false, false);
            for g in &mut all {
                let mut env = Env {
                    program: self.program,
                    mem: self.mem,
                    lds: g.lds.as_mut_slice(),
                    cache: Default::default(),
                    interrupt: self.interrupt,
                    gws: self.gws,
                };
                for (w, wave) in g.waves.iter_mut().enumerate() {
                    if wave.done || g.at_barrier[w] {
                        continue;
                    }
                    live = true;
                    let before = wave.executed;
                    match self.run_wave(wave, &mut env, per_pc, (g.id, w as u32)) {
                        Ok(Flow::Barrier) => g.at_barrier[w] = true,
                        Ok(Flow::Wait | Flow::Yield) => {}
                        Ok(_) => wave.done = true,
                        Err(exc) => {
                            let f = WaveFault {
                                wave: w as u32,
                                inst: wave.pc,
                                exc,
                            };
                            return Err((g.id, f));
                        }
                    }
                    progress |= wave.executed != before || wave.done || g.at_barrier[w];
                }
                // All live waves at the barrier: it releases them.
                let waiting = (0..g.waves.len()).filter(|&w| !g.waves[w].done);
                if waiting.clone().count() > 0 && waiting.clone().all(|w| g.at_barrier[w]) {
                    g.at_barrier.iter_mut().for_each(|b| *b = false);
                    live = true;
                    progress = true;
                }
            }
            if !live {
                return Ok(());
            }
            if !progress {
                // Report the first waiting wave.
                for g in &all {
                    for (w, wave) in g.waves.iter().enumerate() {
                        if !wave.done && !g.at_barrier[w] {
                            let why = format!(
                                "every remaining wave waits ({} of {} workgroups unfinished); \
                                 this one on {:?}",
                                all.iter()
                                    .filter(|g| g.waves.iter().any(|w| !w.done))
                                    .count(),
                                all.len(),
                                wave.gws_wait
                            );
                            let f = WaveFault {
                                wave: w as u32,
                                inst: wave.pc,
                                exc: Exception::new(FaultKind::Deadlock(why)),
                            };
                            return Err((g.id, f));
                        }
                    }
                }
                return Ok(());
            }
        }
    }

    /// Runs one wave until it ends, reaches a barrier or faults; on a fault
    /// `wave.pc` is left at the faulting instruction.
    fn run_wave(
        &self,
        wave: &mut Wave,
        env: &mut Env<'_>,
        per_pc: &mut [[u64; 2]],
        id: ([u32; 3], u32),
    ) -> Result<Flow, Exception> {
        if let Some(p) = self.probe {
            // Observed runs are for tests: the plain loop, with the checks.
            return self.run_wave_impl::<true>(wave, env, per_pc, false, Some((p, id)));
        }
        #[cfg(target_arch = "x86_64")]
        if crate::valu::Simd::detect().avx2() {
            // SAFETY: `avx2()` is only true when the CPU has AVX2 and FMA,
            // the features the function is compiled for.
            return unsafe { self.run_wave_avx2(wave, env, per_pc) };
        }
        self.run_wave_impl::<false>(wave, env, per_pc, false, None)
    }

    /// Every [`CHECK_EVERY`] instructions of a wave: the watchdog, and
    /// whether the dispatch must end (stopped, out of time); true when the
    /// wave has used its time slice (it ends at `slice_end`) and must yield.
    #[cold]
    #[inline(never)]
    fn checkpoint(&self, wave: &mut Wave, slice_end: u64) -> Result<bool, Exception> {
        if wave.executed > self.budget {
            return Err(Exception::new(FaultKind::Watchdog {
                budget: self.budget,
            }));
        }
        if let Some(kind) = self.watch.expired() {
            return Err(Exception::new(kind));
        }
        if wave.executed > slice_end {
            return Ok(true);
        }
        wave.next_check = wave
            .executed
            .saturating_add(CHECK_EVERY)
            .min(self.budget.saturating_add(1))
            .min(slice_end.saturating_add(1));
        Ok(false)
    }

    /// The wave loop with the VALU inlined and compiled for AVX2 and FMA.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma,bmi1,bmi2,lzcnt,popcnt")]
    fn run_wave_avx2(
        &self,
        wave: &mut Wave,
        env: &mut Env<'_>,
        per_pc: &mut [[u64; 2]],
    ) -> Result<Flow, Exception> {
        self.run_wave_impl::<false>(wave, env, per_pc, true, None)
    }

    #[inline(always)]
    fn run_wave_impl<const PROBED: bool>(
        &self,
        wave: &mut Wave,
        env: &mut Env<'_>,
        per_pc: &mut [[u64; 2]],
        simd: bool,
        probe: Option<(&Probes<'_>, ([u32; 3], u32))>,
    ) -> Result<Flow, Exception> {
        let insts = &self.program.insts;
        // The wave yields after this many instructions (resident dispatches):
        // its next checkpoint comes no later.
        let slice_end = wave.executed.saturating_add(self.slice);
        wave.next_check = wave.next_check.min(slice_end.saturating_add(1));
        loop {
            let pc = wave.pc as usize;
            let Some(inst) = insts.get(pc) else {
                let target = insts.last().map_or(0, |i| i.addr + i.len as u64);
                return Err(Exception::at(FaultKind::BadJump { target }, target));
            };
            wave.executed += 1;
            if wave.executed >= wave.next_check && self.checkpoint(wave, slice_end)? {
                // Not executed: it runs first when the wave resumes.
                wave.executed -= 1;
                return Ok(Flow::Yield);
            }
            // Wave executions, and lanes enabled when it issues (thread
            // instructions, what per-thread counting tools count).
            per_pc[pc][0] += 1;
            per_pc[pc][1] += u64::from(wave.exec().count_ones());
            let seen = match probe {
                Some((p, _)) if PROBED => p.at[pc],
                _ => 0,
            };
            // A GWS instruction a wave waits on issues once: retries while
            // it waits are neither seen before it nor after it.
            if seen & 1 != 0 && wave.gws_wait.is_none() {
                see(probe, inst.addr, false, wave);
            }
            // Vector ALU instructions go straight to the VALU (no scalar or
            // memory dispatch in between): most of a kernel's instructions.
            let flow = if inst.valu {
                if simd {
                    wave.valu_inline(inst)?;
                } else {
                    wave.valu_on(crate::valu::Simd::detect(), inst)?;
                }
                Flow::Next
            } else {
                wave.step(inst, env)?
            };
            if seen & 2 != 0 && flow != Flow::Wait {
                see(probe, inst.addr, true, wave);
            }
            match flow {
                Flow::Next => wave.pc += 1,
                Flow::Jump(t) => wave.pc = t,
                Flow::Barrier => {
                    wave.pc += 1;
                    return Ok(Flow::Barrier);
                }
                Flow::End => return Ok(Flow::End),
                Flow::Wait => {
                    // Not executed yet: it runs again when the wave resumes.
                    wave.executed -= 1;
                    per_pc[pc][0] -= 1;
                    per_pc[pc][1] -= u64::from(wave.exec().count_ones());
                    return Ok(Flow::Wait);
                }
                Flow::Yield => return Ok(Flow::Yield),
            }
        }
    }
}

/// Shows `wave` to the probe (before or after the instruction at `addr`).
#[cold]
fn see(probe: Option<(&Probes<'_>, ([u32; 3], u32))>, addr: u64, after: bool, wave: &Wave) {
    if let Some((p, (workgroup, w))) = probe {
        (p.probe.see)(&ProbeHit {
            addr,
            after,
            workgroup,
            wave: w,
            state: wave,
        });
    }
}
