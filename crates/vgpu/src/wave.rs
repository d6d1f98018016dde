//! One wave of 64 lanes: register state, operand access, and the step
//! function that executes one predecoded instruction (SALU and control flow
//! here; vector ALU in `valu`, memory in `vmem`).

use crate::fault::{Exception, FaultKind};
use crate::inst::{Cond, Inst, Op, Src, Ty, F32_CONSTS, F64_CONSTS};
use crate::memory::Memory;
use crate::program::Program;

/// Scalar register codes.
pub const VCC: usize = 106;
pub const M0: usize = 124;
pub const EXEC: usize = 126;
pub const FLAT_SCRATCH: usize = 102;

/// High halves of the flat apertures: a flat address whose high 32 bits are
/// these goes to LDS / the lane's private memory.
pub const SHARED_APERTURE_HI: u32 = 0x1000_0000;
pub const PRIVATE_APERTURE_HI: u32 = 0x2000_0000;

/// Room for the scalar file (codes 0..=127) plus the widest tuple past it.
const SGPRS: usize = 128 + 16;
/// Room for 256 registers plus the widest tuple past the last one, then
/// four spare registers no instruction can name (see [`TMP_VGPR`]).
const VGPRS: usize = 256 + 16 + 4;
/// The spare VGPRs DPP and SDWA copy their selected sources to (`lanesel`).
pub const TMP_VGPR: usize = 256 + 16;

/// What the wave does after an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    Next,
    Jump(u32),
    Barrier,
    End,
    /// A GWS instruction that cannot complete yet: the wave stays on it.
    Wait,
    /// The wave used its time slice (resident dispatches share one thread).
    Yield,
}

/// Shared context of a workgroup's execution.
pub struct Env<'a> {
    pub program: &'a Program,
    pub mem: &'a Memory,
    pub lds: &'a mut [u8],
    /// The workgroup's last checked allocation (see `access::AllocCache`).
    pub cache: crate::access::AllocCache,
    /// Where `s_sendmsg MSG_INTERRUPT` goes (see `Device::set_interrupt`).
    pub interrupt: Option<&'a crate::device::Interrupt>,
    /// The device's GWS resources.
    pub gws: &'a crate::gws::Gws,
}

pub struct Wave {
    pub s: [u32; SGPRS],
    pub scc: bool,
    pub v: Vec<[u32; 64]>,
    pub a: Vec<[u32; 64]>,
    /// Index of the next instruction.
    pub pc: u32,
    /// Private memory, `priv_size` bytes per lane, swizzled by dword as
    /// the hardware's private buffers are: dword `k` of lane `l` is at byte
    /// `(k * 64 + l) * 4` (see [`private_index`]), so an access at the same
    /// offset in every lane (the usual one) touches one contiguous run.
    pub scratch: Vec<u8>,
    pub priv_size: u32,
    pub done: bool,
    pub executed: u64,
    /// When `executed` reaches this, the wave loop looks at the watchdog
    /// and the dispatch's watch (see `workgroup::CHECK_EVERY`).
    pub next_check: u64,
    /// Hardware registers readable by s_getreg (MODE=1, STATUS=2, TRAPSTS=3 ...).
    /// MODE is kept but not yet honoured by the float operations.
    pub hwreg: [u32; 8],
    /// Scalar and constant sources broadcast to columns, so the VALU lane
    /// loops read every source as a plain array (see `Wave::broadcast`); the
    /// last one is never written and reads as zeros.
    pub bc: [[u32; 64]; 18],
    /// The GWS barrier or semaphore the wave waits on, if any.
    pub gws_wait: Option<crate::gws::GwsWait>,
}

/// A 32-bit source as the lane loops see it (see [`Wave::opnd`]).
#[derive(Clone, Copy)]
pub enum Opnd<'a> {
    Col(&'a [u32; 64]),
    Scalar(u32),
}

impl Opnd<'_> {
    #[inline(always)]
    pub fn get(&self, lane: usize) -> u32 {
        match self {
            Opnd::Col(c) => c[lane],
            Opnd::Scalar(v) => *v,
        }
    }
}

/// Bytes of private memory a wave holds: `priv_size` per lane, rounded up
/// to whole dwords.
pub fn scratch_bytes(priv_size: u32) -> usize {
    (priv_size as usize).div_ceil(4) * 4 * 64
}

/// Index in `Wave::scratch` of byte `off` of lane `lane`'s private memory.
#[inline(always)]
pub fn private_index(lane: usize, off: usize) -> usize {
    ((off >> 2) * 64 + lane) * 4 + (off & 3)
}

/// Iterates the set bits of a mask (active lanes).
#[inline]
pub fn lanes(mut m: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        if m == 0 {
            return None;
        }
        let l = m.trailing_zeros() as usize;
        m &= m - 1;
        Some(l)
    })
}

impl Wave {
    pub fn new(priv_size: u32) -> Wave {
        Wave {
            s: [0; SGPRS],
            scc: false,
            v: vec![[0; 64]; VGPRS],
            a: vec![[0; 64]; VGPRS],
            pc: 0,
            scratch: vec![0; scratch_bytes(priv_size)],
            priv_size,
            done: false,
            executed: 0,
            next_check: 0,
            hwreg: [0; 8],
            bc: [[0; 64]; 18],
            gws_wait: None,
        }
    }

    /// Makes a used wave look new for a kernel that allocates `vgprs`
    /// registers (VGPRs + AGPRs), `agprs` of them AGPRs, and `priv_size`
    /// bytes of scratch per lane.
    /// Only the kernel's registers are cleared: reusing the big register
    /// files instead of allocating them per wave is what keeps dispatch fast.
    pub fn reset(&mut self, vgprs: u32, agprs: u32, priv_size: u32) {
        self.s = [0; SGPRS];
        self.scc = false;
        let n = (vgprs as usize + 8).min(VGPRS);
        self.v[..n].iter_mut().for_each(|r| *r = [0; 64]);
        let n = (agprs as usize + 8).min(VGPRS);
        self.a[..n].iter_mut().for_each(|r| *r = [0; 64]);
        self.scratch.clear();
        self.scratch.resize(scratch_bytes(priv_size), 0);
        self.priv_size = priv_size;
        self.pc = 0;
        self.done = false;
        self.executed = 0;
        self.hwreg = [0; 8];
        self.gws_wait = None;
    }

    #[inline(always)]
    pub fn exec(&self) -> u64 {
        self.s[EXEC] as u64 | (self.s[EXEC + 1] as u64) << 32
    }
    #[inline(always)]
    pub fn set_exec(&mut self, v: u64) {
        self.s[EXEC] = v as u32;
        self.s[EXEC + 1] = (v >> 32) as u32;
    }
    #[inline(always)]
    pub fn vcc(&self) -> u64 {
        self.sreg64(VCC)
    }
    #[inline(always)]
    pub fn sreg64(&self, c: usize) -> u64 {
        self.s[c] as u64 | (self.s[c + 1] as u64) << 32
    }

    /// Writes a scalar register by code; codes outside the file are dropped.
    #[inline(always)]
    pub fn sw32(&mut self, code: u16, v: u32) {
        if let Some(r) = self.s.get_mut(code as usize) {
            *r = v;
        }
    }
    #[inline(always)]
    pub fn sw64(&mut self, code: u16, v: u64) {
        self.sw32(code, v as u32);
        self.sw32(code + 1, (v >> 32) as u32);
    }

    fn aperture(code: u8) -> u32 {
        match code {
            235 => SHARED_APERTURE_HI,
            236 => SHARED_APERTURE_HI + 1,
            237 => PRIVATE_APERTURE_HI,
            238 => PRIVATE_APERTURE_HI + 1,
            _ => 0,
        }
    }

    /// A 32-bit source value for `lane` (scalar sources ignore the lane).
    #[inline(always)]
    pub fn rd(&self, s: Src, lane: usize) -> u32 {
        match s {
            Src::V(n) => self.v[n as usize][lane],
            Src::S(c) => self.s[c as usize],
            Src::A(n) => self.a[n as usize][lane],
            Src::Int(i) => i as u32,
            Src::F(k) => F32_CONSTS[k as usize],
            Src::Lit(x) => x,
            Src::Scc => self.scc as u32,
            Src::Vccz => (self.vcc() == 0) as u32,
            Src::Execz => (self.exec() == 0) as u32,
            Src::Aperture(c) => Self::aperture(c),
            Src::None => 0,
        }
    }

    /// A 64-bit source value; `float` selects f64 inline constants and
    /// places a 32-bit literal in the high half.
    #[inline(always)]
    pub fn rd64(&self, s: Src, lane: usize, float: bool) -> u64 {
        match s {
            Src::V(n) => {
                self.v[n as usize][lane] as u64 | (self.v[n as usize + 1][lane] as u64) << 32
            }
            Src::A(n) => {
                self.a[n as usize][lane] as u64 | (self.a[n as usize + 1][lane] as u64) << 32
            }
            Src::S(c) => self.sreg64(c as usize),
            Src::Int(i) => i as i64 as u64,
            Src::F(k) => F64_CONSTS[k as usize],
            // A 64-bit read of an aperture is its base address (high half set).
            Src::Aperture(c) => (Self::aperture(c) as u64) << 32,
            Src::Lit(x) if float => (x as u64) << 32,
            Src::Lit(x) => x as u64,
            _ => self.rd(s, lane) as u64,
        }
    }

    /// A source's value in every lane, fetched once per instruction so the
    /// lane loops index plain arrays.
    #[inline]
    pub fn col(&self, s: Src) -> [u32; 64] {
        match s {
            Src::V(n) => self.v[n as usize],
            Src::A(n) => self.a[n as usize],
            _ => [self.rd(s, 0); 64],
        }
    }

    /// A source without copying: a register column, or one scalar value.
    #[inline]
    pub fn opnd(&self, s: Src) -> Opnd<'_> {
        match s {
            Src::V(n) => Opnd::Col(&self.v[n as usize]),
            Src::A(n) => Opnd::Col(&self.a[n as usize]),
            _ => Opnd::Scalar(self.rd(s, 0)),
        }
    }

    /// 64-bit form of [`Wave::col`].
    #[inline]
    pub fn col64(&self, s: Src, float: bool) -> [u64; 64] {
        let mut out = [0u64; 64];
        match s {
            Src::V(n) | Src::A(n) => {
                let file = if matches!(s, Src::V(_)) {
                    &self.v
                } else {
                    &self.a
                };
                let (lo, hi) = (&file[n as usize], &file[n as usize + 1]);
                for l in 0..64 {
                    out[l] = lo[l] as u64 | (hi[l] as u64) << 32;
                }
            }
            _ => out = [self.rd64(s, 0, float); 64],
        }
        out
    }

    #[inline(always)]
    pub fn s32(&self, s: Src) -> u32 {
        self.rd(s, 0)
    }
    #[inline(always)]
    pub fn s64(&self, s: Src) -> u64 {
        self.rd64(s, 0, false)
    }

    /// Executes one instruction.
    #[inline(always)]
    pub fn step(&mut self, i: &Inst, env: &mut Env<'_>) -> Result<Flow, Exception> {
        use Op::*;
        let a = i.src[0];
        let b = i.src[1];
        let d = i.dst;
        match i.op {
            // ---- SOP2 ----
            SAddU32 => {
                let r = self.s32(a) as u64 + self.s32(b) as u64;
                self.scc = r >> 32 != 0;
                self.sw32(d, r as u32);
            }
            SSubU32 => {
                let (x, y) = (self.s32(a), self.s32(b));
                self.scc = y > x;
                self.sw32(d, x.wrapping_sub(y));
            }
            SAddcU32 => {
                let r = self.s32(a) as u64 + self.s32(b) as u64 + self.scc as u64;
                self.scc = r >> 32 != 0;
                self.sw32(d, r as u32);
            }
            SSubbU32 => {
                let (x, y, c) = (self.s32(a) as u64, self.s32(b) as u64, self.scc as u64);
                self.scc = y + c > x;
                self.sw32(d, x.wrapping_sub(y).wrapping_sub(c) as u32);
            }
            SAddI32 => {
                let (r, o) = (self.s32(a) as i32).overflowing_add(self.s32(b) as i32);
                self.scc = o;
                self.sw32(d, r as u32);
            }
            SSubI32 => {
                let (r, o) = (self.s32(a) as i32).overflowing_sub(self.s32(b) as i32);
                self.scc = o;
                self.sw32(d, r as u32);
            }
            SMinI32 | SMaxI32 => {
                let (x, y) = (self.s32(a) as i32, self.s32(b) as i32);
                let pick_x = if i.op == SMinI32 { x < y } else { x > y };
                self.scc = pick_x;
                self.sw32(d, if pick_x { x } else { y } as u32);
            }
            SMinU32 | SMaxU32 => {
                let (x, y) = (self.s32(a), self.s32(b));
                let pick_x = if i.op == SMinU32 { x < y } else { x > y };
                self.scc = pick_x;
                self.sw32(d, if pick_x { x } else { y });
            }
            SCselectB32 => {
                let r = if self.scc { self.s32(a) } else { self.s32(b) };
                self.sw32(d, r);
            }
            SCselectB64 => {
                let r = if self.scc { self.s64(a) } else { self.s64(b) };
                self.sw64(d, r);
            }
            SAndB32 | SOrB32 | SXorB32 | SAndn2B32 | SOrn2B32 => {
                let (x, y) = (self.s32(a), self.s32(b));
                let r = match i.op {
                    SAndB32 => x & y,
                    SOrB32 => x | y,
                    SXorB32 => x ^ y,
                    SAndn2B32 => x & !y,
                    _ => x | !y,
                };
                self.scc = r != 0;
                self.sw32(d, r);
            }
            SAndB64 | SOrB64 | SXorB64 | SAndn2B64 | SOrn2B64 | SNandB64 | SNorB64 => {
                let (x, y) = (self.s64(a), self.s64(b));
                let r = match i.op {
                    SAndB64 => x & y,
                    SOrB64 => x | y,
                    SXorB64 => x ^ y,
                    SAndn2B64 => x & !y,
                    SOrn2B64 => x | !y,
                    SNandB64 => !(x & y),
                    _ => !(x | y),
                };
                self.scc = r != 0;
                self.sw64(d, r);
            }
            SLshlB32 | SLshrB32 | SAshrI32 => {
                let (x, n) = (self.s32(a), self.s32(b) & 31);
                let r = match i.op {
                    SLshlB32 => x << n,
                    SLshrB32 => x >> n,
                    _ => ((x as i32) >> n) as u32,
                };
                self.scc = r != 0;
                self.sw32(d, r);
            }
            SLshlB64 | SLshrB64 | SAshrI64 => {
                let (x, n) = (self.s64(a), self.s32(b) & 63);
                let r = match i.op {
                    SLshlB64 => x << n,
                    SLshrB64 => x >> n,
                    _ => ((x as i64) >> n) as u64,
                };
                self.scc = r != 0;
                self.sw64(d, r);
            }
            SLshl1AddU32 | SLshl2AddU32 | SLshl3AddU32 | SLshl4AddU32 => {
                let n = match i.op {
                    SLshl1AddU32 => 1,
                    SLshl2AddU32 => 2,
                    SLshl3AddU32 => 3,
                    _ => 4,
                };
                let r = ((self.s32(a) as u64) << n) + self.s32(b) as u64;
                self.scc = r >> 32 != 0;
                self.sw32(d, r as u32);
            }
            SBfmB32 => {
                let (w, o) = (self.s32(a) & 31, self.s32(b) & 31);
                self.sw32(d, ((1u32 << w).wrapping_sub(1)) << o);
            }
            SMulI32 => {
                let r = self.s32(a).wrapping_mul(self.s32(b));
                self.sw32(d, r);
            }
            SMulHiU32 => {
                let r = (self.s32(a) as u64 * self.s32(b) as u64) >> 32;
                self.sw32(d, r as u32);
            }
            SMulHiI32 => {
                let r = (self.s32(a) as i32 as i64 * self.s32(b) as i32 as i64) >> 32;
                self.sw32(d, r as u32);
            }
            SBfeU32 | SBfeI32 => {
                let (x, c) = (self.s32(a), self.s32(b));
                let (off, w) = (c & 31, (c >> 16) & 0x7f);
                let r = bfe32(x, off, w, i.op == SBfeI32);
                self.scc = r != 0;
                self.sw32(d, r);
            }
            SBfeU64 | SBfeI64 => {
                let (x, c) = (self.s64(a), self.s32(b));
                let (off, w) = (c & 63, (c >> 16) & 0x7f);
                let r = bfe64(x, off, w, i.op == SBfeI64);
                self.scc = r != 0;
                self.sw64(d, r);
            }
            SPackLlB32B16 => {
                let r = (self.s32(a) & 0xffff) | self.s32(b) << 16;
                self.sw32(d, r);
            }
            // ---- SOPK ----
            SMovkI32 => self.sw32(d, i.imm as u32),
            SAddkI32 => {
                let (r, o) = (self.s32(Src::S(d as u8)) as i32).overflowing_add(i.imm);
                self.scc = o;
                self.sw32(d, r as u32);
            }
            SMulkI32 => {
                let r = (self.s32(Src::S(d as u8)) as i32).wrapping_mul(i.imm);
                self.sw32(d, r as u32);
            }
            SGetregB32 | SSetregB32 | SSetregImm32B32 => {
                // simm16: register id [5:0], bit offset [10:6], size - 1 [15:11].
                let (id, off, size) = (i.imm2 & 63, i.imm2 >> 6 & 31, (i.imm2 >> 11 & 31) + 1);
                let mask = (((1u64 << size) - 1) << off) as u32;
                let value = self.s32(a);
                if let Some(r) = self.hwreg.get_mut(id as usize) {
                    if i.op == SGetregB32 {
                        let v = (*r & mask) >> off;
                        self.sw32(d, v);
                    } else if id == 1 || id == 3 {
                        // Only MODE and TRAPSTS are writable.
                        *r = (*r & !mask) | ((value << off) & mask);
                    }
                } else if i.op == SGetregB32 {
                    self.sw32(d, 0);
                }
            }
            SCmp => {
                self.scc = match i.ty {
                    Ty::U64 | Ty::I64 => compare_u64(i.cond, self.s64(a), self.s64(b)),
                    Ty::I32 => compare_i32(i.cond, self.s32(a) as i32, self.s32(b) as i32),
                    _ => compare_u32(i.cond, self.s32(a), self.s32(b)),
                };
            }
            // ---- SOP1 ----
            SMovB32 => self.sw32(d, self.s32(a)),
            SMovB64 => self.sw64(d, self.s64(a)),
            SCmovB32 => {
                if self.scc {
                    self.sw32(d, self.s32(a))
                }
            }
            SCmovB64 => {
                if self.scc {
                    self.sw64(d, self.s64(a))
                }
            }
            SNotB32 => {
                let r = !self.s32(a);
                self.scc = r != 0;
                self.sw32(d, r);
            }
            SNotB64 => {
                let r = !self.s64(a);
                self.scc = r != 0;
                self.sw64(d, r);
            }
            SBrevB32 => self.sw32(d, self.s32(a).reverse_bits()),
            SBcnt1I32B32 => {
                let r = self.s32(a).count_ones();
                self.scc = r != 0;
                self.sw32(d, r);
            }
            SBcnt1I32B64 => {
                let r = self.s64(a).count_ones();
                self.scc = r != 0;
                self.sw32(d, r);
            }
            SFf1I32B32 => {
                let x = self.s32(a);
                self.sw32(d, if x == 0 { u32::MAX } else { x.trailing_zeros() });
            }
            SFf1I32B64 => {
                let x = self.s64(a);
                self.sw32(d, if x == 0 { u32::MAX } else { x.trailing_zeros() });
            }
            SFlbitI32B32 => {
                let x = self.s32(a);
                self.sw32(d, if x == 0 { u32::MAX } else { x.leading_zeros() });
            }
            SSextI32I8 => self.sw32(d, self.s32(a) as i8 as i32 as u32),
            SSextI32I16 => self.sw32(d, self.s32(a) as i16 as i32 as u32),
            SAbsI32 => {
                let r = (self.s32(a) as i32).wrapping_abs() as u32;
                self.scc = r != 0;
                self.sw32(d, r);
            }
            SAndSaveexecB64 | SOrSaveexecB64 | SXorSaveexecB64 | SAndn2SaveexecB64 => {
                let (x, e) = (self.s64(a), self.exec());
                self.sw64(d, e);
                let r = match i.op {
                    SAndSaveexecB64 => x & e,
                    SOrSaveexecB64 => x | e,
                    SXorSaveexecB64 => x ^ e,
                    _ => x & !e,
                };
                self.set_exec(r);
                self.scc = r != 0;
            }
            SGetpcB64 => self.sw64(d, i.addr + i.len as u64),
            SSetpcB64 | SSwappcB64 => {
                let target = self.s64(a);
                if i.op == SSwappcB64 {
                    self.sw64(d, i.addr + i.len as u64);
                }
                return env
                    .program
                    .index_of_addr(target)
                    .map(Flow::Jump)
                    .ok_or(Exception::at(FaultKind::BadJump { target }, target));
            }
            // ---- SOPP ----
            // MSG_INTERRUPT (message 1) raises an interrupt carrying M0's low
            // byte: how kernels wake host waiters of a signal they updated
            // (hostcall's doorbell). Other messages mean nothing here.
            SSendmsg => {
                if i.imm & 0xf == 1 {
                    if let Some(raise) = env.interrupt {
                        raise(self.s[M0] & 0xff);
                    }
                }
            }
            SNop | SWaitcnt | SSleep | SSetprio | SIcacheInv | SDcacheWb | STtracedata
            | BufferWbinvl1 | BufferWbinvl1Vol | BufferWbl2 | BufferInvl2 => {}
            DsGwsInit | DsGwsBarrier | DsGwsSemaV | DsGwsSemaP | DsGwsSemaBr
            | DsGwsSemaReleaseAll => return Ok(self.gws(i, env)),
            // Bit compares: SCC = bit S1 of S0 is 0 (bitcmp0) or 1 (bitcmp1).
            SBitcmp0B32 | SBitcmp1B32 => {
                let bit = self.s32(a) >> (self.s32(b) & 31) & 1;
                self.scc = bit == (i.op == SBitcmp1B32) as u32;
            }
            SBitcmp0B64 | SBitcmp1B64 => {
                let bit = (self.s64(a) >> (self.s32(b) & 63) & 1) as u32;
                self.scc = bit == (i.op == SBitcmp1B64) as u32;
            }
            SEndpgm => return Ok(Flow::End),
            SBarrier => return Ok(Flow::Barrier),
            STrap => return Err(Exception::new(FaultKind::Trap((i.imm & 0xff) as u16))),
            SBranch | SCbranchScc0 | SCbranchScc1 | SCbranchVccz | SCbranchVccnz
            | SCbranchExecz | SCbranchExecnz => {
                let taken = match i.op {
                    SBranch => true,
                    SCbranchScc0 => !self.scc,
                    SCbranchScc1 => self.scc,
                    SCbranchVccz => self.vcc() == 0,
                    SCbranchVccnz => self.vcc() != 0,
                    SCbranchExecz => self.exec() == 0,
                    _ => self.exec() != 0,
                };
                if taken {
                    if i.target == u32::MAX {
                        let target = (i.addr + 4).wrapping_add((i.imm as i64 * 4) as u64);
                        return Err(Exception::at(FaultKind::BadJump { target }, target));
                    }
                    return Ok(Flow::Jump(i.target));
                }
            }
            SLoad => self.smem_load(i, env)?,
            SAtomic => self.smem_atomic(i, env)?,
            // Clocks: the wave's own instruction count, so runs stay reproducible.
            SMemtime | SMemrealtime => self.sw64(d, self.executed),
            Unimplemented => return Err(Exception::new(FaultKind::Unimplemented)),
            GlobalLoad | GlobalStore | GlobalAtomic | FlatLoad | FlatStore | FlatAtomic
            | ScratchLoad | ScratchStore | BufLoad | BufStore | DsRead | DsRead2 | DsWrite
            | DsWrite2 | DsAtomic | DsBpermuteB32 | DsPermuteB32 | DsSwizzleB32 => {
                self.vmem(i, env)?
            }
            _ => self.valu(i)?,
        }
        Ok(Flow::Next)
    }
}

impl Wave {
    /// A GWS instruction (see [`crate::gws`]): wave-level, on the resource
    /// `(offset + M0[21:16]) % 64`, with data0 from the first active lane.
    fn gws(&mut self, i: &Inst, env: &Env<'_>) -> Flow {
        use crate::gws::GwsWait;
        let exec = self.exec();
        if exec == 0 {
            return Flow::Next;
        }
        if let Some(w) = self.gws_wait {
            if !env.gws.ready(w) {
                return Flow::Wait;
            }
            self.gws_wait = None;
            return Flow::Next;
        }
        let offset = i.imm as u32 | i.imm2 << 8;
        let id = (offset.wrapping_add(self.s[M0] >> 16 & 63) % 64) as u8;
        let lane = exec.trailing_zeros() as usize;
        // data0 is encoded in the address field (LLVM: `ds_gws_init v4` puts
        // v4 in bits 7:0 of the second word), which the decoder reads as src[0].
        let data = match i.src[0] {
            Src::V(n) if i.acc => self.a[n as usize][lane],
            Src::V(n) => self.v[n as usize][lane],
            _ => 0,
        };
        let wait: Option<GwsWait> = match i.op {
            Op::DsGwsInit => {
                env.gws.init(id, data);
                None
            }
            Op::DsGwsBarrier => env.gws.barrier(id, data),
            Op::DsGwsSemaV => {
                env.gws.sema_add(id, 1);
                None
            }
            Op::DsGwsSemaBr => {
                env.gws.sema_add(id, data);
                None
            }
            Op::DsGwsSemaP => env.gws.sema_p(id),
            _ => {
                env.gws.release_all(id);
                None
            }
        };
        match wait {
            Some(w) => {
                self.gws_wait = Some(w);
                Flow::Wait
            }
            None => Flow::Next,
        }
    }
}

/// Bit-field extract of `w` bits at `off` (the ISA's pseudo-code: the
/// source shifted right, arithmetically when `signed`, masked to `w` bits,
/// then sign-extended from its top bit; a field running past bit 31 takes
/// the source's sign).
pub fn bfe32(x: u32, off: u32, w: u32, signed: bool) -> u32 {
    if w == 0 {
        return 0;
    }
    if signed {
        let v = (x as i32 >> off.min(31)) as u32;
        if w >= 32 {
            return v;
        }
        let sh = 32 - w;
        ((v << sh) as i32 >> sh) as u32
    } else {
        let v = x >> off.min(31);
        if w >= 32 {
            v
        } else {
            v & ((1 << w) - 1)
        }
    }
}

/// [`bfe32`] for 64-bit sources.
pub fn bfe64(x: u64, off: u32, w: u32, signed: bool) -> u64 {
    if w == 0 {
        return 0;
    }
    if signed {
        let v = (x as i64 >> off.min(63)) as u64;
        if w >= 64 {
            return v;
        }
        let sh = 64 - w;
        ((v << sh) as i64 >> sh) as u64
    } else {
        let v = x >> off.min(63);
        if w >= 64 {
            v
        } else {
            v & ((1 << w) - 1)
        }
    }
}

/// Which outcomes make a condition true, as bits: 1 less, 2 equal,
/// 4 greater, 8 unordered. Compares then test one bit per lane.
#[inline(always)]
pub fn cond_mask(c: Cond) -> u8 {
    const L: u8 = 1;
    const E: u8 = 2;
    const G: u8 = 4;
    const U: u8 = 8;
    match c {
        Cond::F => 0,
        Cond::Lt => L,
        Cond::Eq => E,
        Cond::Le => L | E,
        Cond::Gt => G,
        // Integer `ne` and float `lg` (ordered and not equal).
        Cond::Ne => L | G,
        Cond::Ge => G | E,
        Cond::T => L | E | G | U,
        Cond::O => L | E | G,
        Cond::U => U,
        // The negated float forms are true when unordered.
        Cond::Nge => L | U,
        Cond::Nlg => E | U,
        Cond::Ngt => L | E | U,
        Cond::Nle => G | U,
        Cond::Neq => L | G | U,
        Cond::Nlt => E | G | U,
    }
}

/// The outcome bit of a total comparison.
#[inline]
pub fn ord_bit(o: std::cmp::Ordering) -> u8 {
    1 << (o as i8 + 1)
}

/// The outcome bit of a float comparison (8 when unordered).
#[inline]
pub fn ford_bit(x: f64, y: f64) -> u8 {
    x.partial_cmp(&y).map_or(8, ord_bit)
}

#[inline(always)]
pub fn compare_u32(c: Cond, x: u32, y: u32) -> bool {
    cond_mask(c) & ord_bit(x.cmp(&y)) != 0
}
#[inline(always)]
pub fn compare_i32(c: Cond, x: i32, y: i32) -> bool {
    cond_mask(c) & ord_bit(x.cmp(&y)) != 0
}
#[inline(always)]
pub fn compare_u64(c: Cond, x: u64, y: u64) -> bool {
    cond_mask(c) & ord_bit(x.cmp(&y)) != 0
}
pub fn compare_f64(c: Cond, x: f64, y: f64) -> bool {
    cond_mask(c) & ford_bit(x, y) != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_conditions_follow_ieee_unordered_rules() {
        let nan = f64::NAN;
        // (condition, (1, 2), (2, 2), (nan, 2)) from the ISA's definitions.
        let table = [
            (Cond::Lt, [true, false, false]),
            (Cond::Eq, [false, true, false]),
            (Cond::Ne, [true, false, false]), // lg: ordered and not equal
            (Cond::Ge, [false, true, false]),
            (Cond::O, [true, true, false]),
            (Cond::U, [false, false, true]),
            (Cond::Nge, [true, false, true]),
            (Cond::Nlg, [false, true, true]),
            (Cond::Ngt, [true, true, true]),
            (Cond::Nle, [false, false, true]),
            (Cond::Neq, [true, false, true]),
            (Cond::Nlt, [false, true, true]),
            (Cond::T, [true, true, true]),
            (Cond::F, [false, false, false]),
        ];
        for (c, want) in table {
            let got = [
                compare_f64(c, 1.0, 2.0),
                compare_f64(c, 2.0, 2.0),
                compare_f64(c, nan, 2.0),
            ];
            assert_eq!(got, want, "{c:?}");
        }
        assert!(compare_i32(Cond::Lt, -1, 0));
        assert!(!compare_u32(Cond::Lt, u32::MAX, 0));
        assert!(compare_u64(Cond::Ne, 1 << 40, 0));
    }

    #[test]
    fn bit_field_extract() {
        assert_eq!(bfe32(0xf0, 4, 4, false), 0xf);
        assert_eq!(bfe32(0xf0, 4, 4, true), u32::MAX);
        assert_eq!(bfe32(0x1234_5678, 8, 0, false), 0);
        assert_eq!(bfe64(1 << 63, 60, 4, true), u64::MAX - 7);
        // A signed field past the top bit takes the source's sign.
        assert_eq!(bfe32(0xffff_ffff, 22, 11, true), u32::MAX);
        assert_eq!(bfe64(1 << 63, 60, 100, true), u64::MAX - 7);
    }
}
