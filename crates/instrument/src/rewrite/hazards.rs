//! Software-managed hazards at the seams of inserted code.
//!
//! CDNA hardware does not interlock some register dependencies: the
//! program must put enough wait states (independent instructions, or
//! `s_nop N`, which counts N + 1) between the writer and the reader. The
//! compiler did so for the application's own pairs; code the engine puts
//! between two application instructions (built-in hooks, call sequences,
//! inlined hook bodies) can create new pairs or bring a writer closer to a
//! reader. This module knows the rules ([`required`]) and finds, in the
//! rewritten stream, how many wait states to add at the seams before
//! inserted code and before application instructions ([`pad`]).
//!
//! Rules (wait states required; AMD's "AMD Instinct MI200 ISA", section
//! 4.5 "Manually Inserted Wait States (NOPs)", and the MI100/MI300 guides'
//! tables of the same name; LLVM's `GCNHazardRecognizer` functions named):
//! - VALU writes an SGPR or VCC, a VMEM (MUBUF/MTBUF/MIMG/FLAT/GLOBAL/
//!   SCRATCH) instruction reads it: 5 (`checkVMEMHazards`);
//! - VALU writes an SGPR, `v_readlane`/`v_writelane` reads it as lane
//!   select: 4 (`checkRWLaneHazards`);
//! - VALU writes VCC, `v_div_fmas` follows: 4 (`checkDivFMasHazards`);
//! - VALU writes EXEC, a DPP instruction follows: 5; VALU writes a VGPR a
//!   DPP instruction reads: 2 (`checkDPPHazards`);
//! - SALU writes M0, `s_sendmsg*`, `s_movrel*`, `s_ttracedata`, or a
//!   non-scalar instruction reading M0 (LDS add-TID, GDS, LDS DMA) follows:
//!   1 (`checkSMovRelHazards`, `checkReadM0Hazards`) — every non-SALU M0
//!   reader is counted, which is conservative;
//! - `s_setreg` of a hardware register, then `s_getreg`/`s_setreg` of it:
//!   2 (`checkSetRegHazards`, `checkGetRegHazards`);
//! - gfx942: VALU writes an SGPR or VCC (`v_readlane`,
//!   `v_readfirstlane`, `v_cmp`, carries), a VALU reads it: 2; VALU writes
//!   a VGPR, `v_readlane`/`v_readfirstlane` reads it: 1
//!   (`checkVALUHazards`, `hasVDecCoExecHazard`);
//! - VALU writes EXEC, `v_readlane`/`v_writelane` follows: 4 (gfx90a
//!   table; applied to every target);
//! - VALU writes a VGPR/AGPR that an MFMA or `v_accvgpr_write` reads: 2;
//!   VALU writes EXEC (`v_cmpx`), an MFMA or `v_accvgpr_write` follows: 4
//!   (`checkMAIHazards908`/`90A`);
//! - an MFMA writes a register any later instruction reads or writes, or
//!   reads one a later instruction writes: 19, the longest distance any of
//!   the targets asks for (a 16-pass XDL op on gfx942; gfx908/gfx90a ask
//!   for at most 18) — conservative, as the pass count is not modelled
//!   (`checkMAIVALUHazards`, `checkMAIHazards90A`);
//! - a VMEM store of more than 64 bits of data, then a VALU write of its
//!   data VGPRs: 1 (`checkVALUHazardsHelper`, `has12DWordStoreHazard`).
//!
//! Not covered: gfx942's transcendental-VALU and `v_permlane` rules, LDS
//! DMA's M0 beyond the conservative rule above, the `s_setprio`/trap
//! rules, and exact MFMA pass counts (the bound above stands for them).

use inlay_isa::{info, Access, Decoder, Encoding, Instruction, RegFile, Target, UsedRegister};

use inlay_isa::info::CAPACITY;

use crate::regs as bits;

const BLANK: UsedRegister = UsedRegister {
    register: inlay_isa::Register {
        file: RegFile::Sgpr,
        first: 0,
        count: 0,
    },
    access: Access::Read,
    operand: None,
};

/// The longest distance any rule asks for (wait states).
pub const MAX_WAIT_STATES: u32 = 19;

/// Wait states an instruction provides to those after it: `s_nop N`
/// gives N + 1, anything else 1.
pub fn wait_states(i: &Instruction) -> u32 {
    if i.mnemonic() == "s_nop" {
        (i.words()[0] & 0xf) + 1
    } else {
        1
    }
}

/// `s_nop`s giving `n` wait states (at most 8 per instruction).
pub fn nops(target: Target, mut n: u32) -> Vec<Instruction> {
    let d = Decoder::new(target);
    let mut out = Vec::new();
    while n > 0 {
        let k = n.min(8);
        let word: u32 = 0xbf80_0000 | (k - 1);
        // SOPP opcode 0 with simm16 0..7 is s_nop on every gfx9 target.
        if let Ok(i) = d.decode(&word.to_le_bytes()) {
            out.push(i);
        }
        n -= k;
    }
    out
}

/// What the rules need of one instruction, computed once: its kind, and
/// the registers it reads and writes as bit sets, so that a rule is a few
/// set intersections (the seam search asks for millions of pairs when a
/// call goes before every instruction).
#[derive(Clone)]
pub struct Facts {
    inst: Instruction,
    kind: u32,
    /// Wait states it gives those after it (see [`wait_states`]).
    waits: u8,
    /// Registers (bits of [`crate::regs`]) read, read as operand 2 (the
    /// lane select of `v_readlane`/`v_writelane`), written, named at all,
    /// and a store's data VGPRs when wider than 64 bits.
    reads: Split,
    lane_select: Split,
    writes: Split,
    touches: Split,
    wide_store: Split,
    /// Hardware registers (`s_getreg`/`s_setreg` ids below 64) written
    /// and named.
    hw_writes: u64,
    hw_touches: u64,
    /// Every register it names maps to bits whole: the sets above say all
    /// the rules ask. Otherwise the rules read its registers one by one.
    exact: bool,
    /// Its registers (inlay-isa's `info` holds at most [`CAPACITY`]).
    used: [UsedRegister; CAPACITY],
    used_len: u8,
    /// Wait states it needs after unknown code: without MFMAs in the
    /// program, and with.
    unknown: [u8; 2],
}

// Kinds (bits of `Facts::kind`).
const VALU: u32 = 1;
const SALU: u32 = 1 << 1;
const VMEM: u32 = 1 << 2;
const MFMA: u32 = 1 << 3;
const LANE_OP: u32 = 1 << 4;
const DPP: u32 = 1 << 5;
const DIV_FMAS: u32 = 1 << 6;
const ACC_WRITE: u32 = 1 << 7;
const READLANE: u32 = 1 << 8;
const SETREG: u32 = 1 << 9;
const GETREG: u32 = 1 << 10;
const M0_READER: u32 = 1 << 11;
const SWAPPC: u32 = 1 << 12;
/// Control does not go on to the next instruction (see [`falls_through`]).
const JUMPS: u32 = 1 << 16;
const GFX942: u32 = 1 << 13;
/// It may be the writer of some rule: a VALU, an SALU writing M0, an
/// `s_setreg`, a wide store.
const MAY_WRITE: u32 = 1 << 14;
/// It may be the reader of some rule (or need wait states after unknown
/// code): a VALU, a VMEM reading a scalar register, anything naming a
/// vector register (MFMA results), an M0 reader, `s_getreg`/`s_setreg`.
const MAY_READ: u32 = 1 << 15;

/// A register set in the two parts the rules look at: the scalar
/// registers (bits 0..128 of [`crate::regs`]: SGPRs, VCC, TTMPs, M0,
/// EXEC) and the vector ones (VGPRs, AGPRs).
#[derive(Clone, Copy, Default)]
struct Split {
    s: u128,
    v: [u64; 8],
}

impl Split {
    /// The bits `b..b + n` (of [`crate::regs`]; those of neither part,
    /// SCC's, are left out).
    fn of(b: u16, n: u16) -> Split {
        let mut out = Split::default();
        for (w, mask) in bits::word_masks(b, n) {
            match w {
                0 => out.s |= u128::from(mask),
                1 => out.s |= u128::from(mask) << 64,
                4..=11 => out.v[w - 4] |= mask,
                _ => {}
            }
        }
        out
    }

    fn add(&mut self, o: &Split) {
        self.s |= o.s;
        for (a, b) in self.v.iter_mut().zip(&o.v) {
            *a |= b;
        }
    }

    /// Whether the vector parts share a register.
    fn meets_v(&self, o: &Split) -> bool {
        self.v.iter().zip(&o.v).any(|(a, b)| a & b != 0)
    }

    fn has_v(&self) -> bool {
        self.v.iter().any(|&a| a != 0)
    }
}

/// Scalar registers a VALU's scalar results land in: SGPRs, VCC, TTMPs.
const SCALAR_RESULTS: u128 =
    (1 << bits::NUM_SGPRS) - 1 | 0b11 << bits::VCC | 0xffff << bits::TTMP_BASE;
const VCC_BITS: u128 = 0b11 << bits::VCC;
const EXEC_BITS: u128 = 0b11 << bits::EXEC;
const M0_BIT: u128 = 1 << bits::M0;

impl Facts {
    pub fn new(inst: &Instruction) -> Facts {
        Facts::with_registers(inst, info(inst).used_registers())
    }

    /// The facts of `inst`, whose registers (inlay-isa's `info`) are `used`.
    pub fn with_registers(inst: &Instruction, used: &[UsedRegister]) -> Facts {
        use Encoding::*;
        let name = inst.mnemonic();
        let enc = inst.encoding();
        let mut f = Facts {
            inst: *inst,
            kind: 0,
            waits: 1,
            reads: Split::default(),
            lane_select: Split::default(),
            writes: Split::default(),
            touches: Split::default(),
            wide_store: Split::default(),
            hw_writes: 0,
            hw_touches: 0,
            exact: true,
            used: [BLANK; CAPACITY],
            used_len: used.len().min(CAPACITY) as u8,
            unknown: [0; 2],
        };
        if name == "s_nop" {
            f.waits = ((inst.words()[0] & 0xf) + 1) as u8;
        }
        let n = usize::from(f.used_len);
        f.used[..n].copy_from_slice(&used[..n]);
        let mut kind = 0;
        let mut flag = |on: bool, k: u32| {
            if on {
                kind |= k;
            }
        };
        flag(
            matches!(
                enc,
                Vop1 | Vop2
                    | Vopc
                    | Vop3
                    | Vop3p
                    | Vop1Sdwa
                    | Vop1Dpp
                    | Vop2Sdwa
                    | Vop2Dpp
                    | VopcSdwa
                    | VopcDpp
            ),
            VALU,
        );
        flag(matches!(enc, Sop1 | Sop2 | Sopk | Sopc | Sopp), SALU);
        flag(
            matches!(enc, Mubuf | Mtbuf | Mimg | Flat | Global | Scratch),
            VMEM,
        );
        flag(
            name.starts_with("v_mfma") || name.starts_with("v_smfmac"),
            MFMA,
        );
        flag(
            matches!(name, "v_readlane_b32" | "v_writelane_b32"),
            LANE_OP,
        );
        flag(enc.is_dpp(), DPP);
        flag(name.starts_with("v_div_fmas"), DIV_FMAS);
        flag(name == "v_accvgpr_write_b32", ACC_WRITE);
        flag(
            matches!(name, "v_readlane_b32" | "v_readfirstlane_b32"),
            READLANE,
        );
        flag(name.starts_with("s_setreg"), SETREG);
        flag(name.starts_with("s_getreg"), GETREG);
        flag(name == "s_swappc_b64", SWAPPC);
        flag(!falls_through(inst), JUMPS);
        flag(inst.target() == Target::Gfx942, GFX942);
        f.kind = kind;
        for u in used {
            let r = &u.register;
            if r.file == RegFile::HwReg {
                let bit = 1u64.checked_shl(u32::from(r.first)).unwrap_or(0);
                f.exact &= bit != 0 && r.count == 1;
                f.hw_touches |= bit;
                if u.access.writes() {
                    f.hw_writes |= bit;
                }
                continue;
            }
            if r.file == RegFile::Pc {
                continue;
            }
            let set = match bits::bits_of(r) {
                Some((b, n)) => {
                    f.exact &= n == u16::from(r.count);
                    Split::of(b, n)
                }
                None => {
                    f.exact = false;
                    continue;
                }
            };
            f.touches.add(&set);
            if u.access.reads() {
                f.reads.add(&set);
                if u.operand == Some(2) {
                    f.lane_select.add(&set);
                }
            }
            if u.access.writes() {
                f.writes.add(&set);
            }
        }
        let store = f.is_vmem()
            && !used
                .iter()
                .any(|u| u.access.writes() && u.register.file == RegFile::Vgpr);
        for u in used {
            let r = &u.register;
            if store && u.access == Access::Read && r.file == RegFile::Vgpr && r.count > 2 {
                if let Some((b, n)) = bits::bits_of(r) {
                    f.wide_store.add(&Split::of(b, n));
                }
            }
        }
        if f.reads_m0_as_hazard() {
            f.kind |= M0_READER;
        }
        let may_write = !f.exact
            || f.is_valu()
            || f.is_mfma()
            || f.is_salu()
                && used
                    .iter()
                    .any(|u| u.access.writes() && u.register.file == RegFile::M0)
            || f.kind & SETREG != 0
            || f.wide_store.has_v();
        let reads_scalar = f.reads.s & SCALAR_RESULTS != 0;
        let may_read = !f.exact
            || f.is_valu()
            || f.is_vmem() && reads_scalar
            || f.touches.has_v()
            || f.kind & (M0_READER | SETREG | GETREG) != 0;
        f.kind |= if may_write { MAY_WRITE } else { 0 } | if may_read { MAY_READ } else { 0 };
        f.unknown = [false, true].map(|mfma| {
            if f.exact {
                f.after_unknown(mfma)
            } else {
                required_after_unknown_listed(inst.target(), &f, mfma)
            }
        } as u8);
        f
    }

    /// [`required_after_unknown`] from the bit sets.
    fn after_unknown(&self, mfma: bool) -> u32 {
        let k = self.kind;
        let reads_scalar = self.reads.s & SCALAR_RESULTS != 0;
        let mut need = 0;
        let mut at_least = |n: u32| need = need.max(n);
        if k & VMEM != 0 && reads_scalar || k & DPP != 0 {
            at_least(5);
        }
        if k & (LANE_OP | DIV_FMAS | MFMA | ACC_WRITE) != 0 {
            at_least(4);
        }
        if k & GFX942 != 0 && k & VALU != 0 && reads_scalar {
            at_least(2);
        }
        if k & (GETREG | SETREG) != 0 {
            at_least(2);
        }
        if k & (M0_READER | VALU) != 0 {
            at_least(1);
        }
        if mfma && self.touches.has_v() {
            at_least(MAX_WAIT_STATES);
        }
        need
    }

    fn used(&self) -> &[UsedRegister] {
        &self.used[..usize::from(self.used_len)]
    }

    fn name(&self) -> &'static str {
        self.inst.mnemonic()
    }

    fn is_valu(&self) -> bool {
        self.kind & VALU != 0
    }

    fn is_salu(&self) -> bool {
        self.kind & SALU != 0
    }

    fn is_vmem(&self) -> bool {
        self.kind & VMEM != 0
    }

    fn is_mfma(&self) -> bool {
        self.kind & MFMA != 0
    }

    fn is_lane_op(&self) -> bool {
        self.kind & LANE_OP != 0
    }

    /// Wait states it gives to those after it.
    pub(super) fn wait_states(&self) -> u32 {
        u32::from(self.waits)
    }

    /// Whether it is an `s_swappc_b64` (a callee runs after it).
    pub(super) fn is_call(&self) -> bool {
        self.kind & SWAPPC != 0
    }

    /// Whether control can go from it to the instruction after it.
    pub(super) fn falls_through(&self) -> bool {
        self.kind & JUMPS == 0
    }

    /// Whether some rule may ask wait states before it (after some writer
    /// or after unknown code).
    pub(super) fn may_read(&self) -> bool {
        self.kind & MAY_READ != 0
    }

    fn writes(&self, file: RegFile) -> impl Iterator<Item = inlay_isa::Register> + '_ {
        self.used()
            .iter()
            .filter(move |u| u.access.writes() && u.register.file == file)
            .map(|u| u.register)
    }

    fn writes_any(&self, file: RegFile) -> bool {
        self.writes(file).next().is_some()
    }

    /// Whether it reads a register overlapping `r` (in operand slot
    /// `slot` when given).
    fn reads(&self, r: &inlay_isa::Register, slot: Option<u8>) -> bool {
        self.used().iter().any(|u| {
            u.access.reads() && u.register.overlaps(r) && (slot.is_none() || u.operand == slot)
        })
    }

    fn writes_reg(&self, r: &inlay_isa::Register) -> bool {
        self.used()
            .iter()
            .any(|u| u.access.writes() && u.register.overlaps(r))
    }

    fn touches(&self, r: &inlay_isa::Register) -> bool {
        self.used().iter().any(|u| u.register.overlaps(r))
    }

    /// SGPRs and VCC a VALU writes (the scalar results of compares,
    /// carries, `v_readlane`, `v_readfirstlane`).
    fn valu_scalar_writes(&self) -> impl Iterator<Item = inlay_isa::Register> + '_ {
        self.writes(RegFile::Sgpr)
            .chain(self.writes(RegFile::Vcc))
            .chain(self.writes(RegFile::Ttmp))
            .filter(move |_| self.is_valu())
    }

    fn reads_m0_as_hazard(&self) -> bool {
        let n = self.name();
        // s_sendmsg, s_ttracedata, LDS add-TID and GDS read M0 without
        // naming it (GDS: the DS word's bit 16).
        let gds = self.inst.encoding() == Encoding::Ds && self.inst.words()[0] & 1 << 16 != 0;
        n.starts_with("s_sendmsg")
            || n.starts_with("s_movrel")
            || n == "s_ttracedata"
            || n.contains("addtid")
            || gds
            || self.reads.s & M0_BIT != 0 && !self.is_salu()
    }

    /// VGPRs of a store's data wider than 64 bits.
    fn wide_store_data(&self) -> impl Iterator<Item = inlay_isa::Register> + '_ {
        let store = self.is_vmem() && !self.writes_any(RegFile::Vgpr);
        self.used()
            .iter()
            .filter(move |u| {
                store
                    && u.access == Access::Read
                    && u.register.file == RegFile::Vgpr
                    && u.register.count > 2
            })
            .map(|u| u.register)
    }
}

/// The rules LLVM applies only to gfx940-gfx942 (`hasVDecCoExecHazard`;
/// llc-19 puts no nop between `v_readfirstlane` and a VALU reading its
/// SGPR for gfx90a).
fn gfx942(t: Target) -> bool {
    t == Target::Gfx942
}

/// Wait states `r` needs after `w` (0: no rule applies).
pub fn required(t: Target, w: &Facts, r: &Facts) -> u32 {
    if w.kind & MAY_WRITE == 0 || r.kind & MAY_READ == 0 {
        return 0;
    }
    if !(w.exact && r.exact) {
        return required_listed(t, w, r);
    }
    let mut need = 0;
    let mut at_least = |n: u32| need = need.max(n);
    let (wk, rk) = (w.kind, r.kind);
    if wk & VALU != 0 {
        let scalar = w.writes.s & SCALAR_RESULTS;
        if scalar != 0 {
            if rk & VMEM != 0 && scalar & r.reads.s != 0 {
                at_least(5);
            }
            if rk & LANE_OP != 0 && scalar & r.lane_select.s != 0 {
                at_least(4);
            }
            if gfx942(t) && rk & VALU != 0 && scalar & r.reads.s != 0 {
                at_least(2);
            }
            if scalar & VCC_BITS != 0 && rk & DIV_FMAS != 0 {
                at_least(4);
            }
        }
        if w.writes.s & EXEC_BITS != 0 {
            if rk & DPP != 0 {
                at_least(5);
            }
            if rk & (LANE_OP | MFMA | ACC_WRITE) != 0 {
                at_least(4);
            }
        }
        if rk & (DPP | MFMA | ACC_WRITE | READLANE) != 0 && w.writes.meets_v(&r.reads) {
            if rk & (DPP | MFMA | ACC_WRITE) != 0 {
                at_least(2);
            }
            if gfx942(t) && rk & READLANE != 0 {
                at_least(1);
            }
        }
    }
    if wk & MFMA != 0 && (w.writes.meets_v(&r.touches) || w.reads.meets_v(&r.writes)) {
        at_least(MAX_WAIT_STATES);
    }
    if wk & SALU != 0 && w.writes.s & M0_BIT != 0 && rk & M0_READER != 0 {
        at_least(1);
    }
    if wk & SETREG != 0 && rk & (GETREG | SETREG) != 0 && w.hw_writes & r.hw_touches != 0 {
        at_least(2);
    }
    if rk & VALU != 0 && w.wide_store.meets_v(&r.writes) {
        at_least(1);
    }
    need
}

/// [`required`] register by register (for instructions naming registers
/// the bit sets do not hold whole).
fn required_listed(t: Target, w: &Facts, r: &Facts) -> u32 {
    let mut need = 0;
    let mut at_least = |n: u32| need = need.max(n);
    if w.is_valu() {
        for s in w.valu_scalar_writes() {
            if r.is_vmem() && r.reads(&s, None) {
                at_least(5);
            }
            if r.is_lane_op() && r.reads(&s, Some(2)) {
                at_least(4);
            }
            if gfx942(t) && r.is_valu() && r.reads(&s, None) {
                at_least(2);
            }
            if s.file == RegFile::Vcc && r.name().starts_with("v_div_fmas") {
                at_least(4);
            }
        }
        if w.writes_any(RegFile::Exec) {
            if r.inst.encoding().is_dpp() {
                at_least(5);
            }
            if r.is_lane_op() {
                at_least(4);
            }
            if r.is_mfma() || r.name() == "v_accvgpr_write_b32" {
                at_least(4);
            }
        }
        for v in w.writes(RegFile::Vgpr).chain(w.writes(RegFile::Agpr)) {
            if r.inst.encoding().is_dpp() && r.reads(&v, None) {
                at_least(2);
            }
            if (r.is_mfma() || r.name() == "v_accvgpr_write_b32") && r.reads(&v, None) {
                at_least(2);
            }
            if gfx942(t)
                && matches!(r.name(), "v_readlane_b32" | "v_readfirstlane_b32")
                && r.reads(&v, None)
            {
                at_least(1);
            }
        }
    }
    if w.is_mfma() {
        let writes_what_w_touches = w.used().iter().any(|u| {
            let vector = matches!(u.register.file, RegFile::Vgpr | RegFile::Agpr);
            vector
                && ((u.access.writes() && r.touches(&u.register))
                    || (u.access.reads() && r.writes_reg(&u.register)))
        });
        if writes_what_w_touches {
            at_least(MAX_WAIT_STATES);
        }
    }
    if w.is_salu() && w.writes_any(RegFile::M0) && r.reads_m0_as_hazard() {
        at_least(1);
    }
    if w.name().starts_with("s_setreg") && r.name().starts_with("s_getreg")
        || w.name().starts_with("s_setreg") && r.name().starts_with("s_setreg")
    {
        let same = w.writes(RegFile::HwReg).any(|h| r.touches(&h));
        if same {
            at_least(2);
        }
    }
    if r.is_valu() {
        for d in w.wide_store_data() {
            if r.writes_reg(&d) {
                at_least(1);
            }
        }
    }
    need
}

/// Wait states `r` needs when what ran before it is unknown (a device
/// function's entry, the return from a call): the most any rule it is the
/// reader of can ask; MFMA rules only when the code has MFMAs.
pub fn required_after_unknown(_t: Target, r: &Facts, mfma: bool) -> u32 {
    u32::from(r.unknown[usize::from(mfma)])
}

fn required_after_unknown_listed(t: Target, r: &Facts, mfma: bool) -> u32 {
    let mut need = 0;
    let mut at_least = |n: u32| need = need.max(n);
    let reads_scalar = r.used().iter().any(|u| {
        u.access.reads()
            && matches!(
                u.register.file,
                RegFile::Sgpr | RegFile::Vcc | RegFile::Ttmp
            )
    });
    if r.is_vmem() && reads_scalar {
        at_least(5);
    }
    if r.inst.encoding().is_dpp() {
        at_least(5);
    }
    if r.is_lane_op() || r.name().starts_with("v_div_fmas") {
        at_least(4);
    }
    if r.is_mfma() || r.name() == "v_accvgpr_write_b32" {
        at_least(4);
    }
    if gfx942(t) && r.is_valu() && reads_scalar {
        at_least(2);
    }
    if r.name().starts_with("s_getreg") || r.name().starts_with("s_setreg") {
        at_least(2);
    }
    if r.reads_m0_as_hazard() || r.is_valu() {
        at_least(1);
    }
    let vector = r
        .used()
        .iter()
        .any(|u| matches!(u.register.file, RegFile::Vgpr | RegFile::Agpr));
    if mfma && vector {
        at_least(MAX_WAIT_STATES);
    }
    need
}

/// A pair closer than its rule allows: stream positions, and the wait
/// states between them and needed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub writer: usize,
    pub reader: usize,
    pub had: u32,
    pub needed: u32,
}

/// Pairs in a straight-line stream (`(instruction, inserted)`) closer than
/// their rule allows, where the writer or the reader is inserted.
/// History restarts after instructions control does not fall through
/// (`s_branch`, `s_endpgm`, `s_setpc_b64`) and after calls (`s_swappc_b64`,
/// whose callee is not in the stream).
pub fn violations(t: Target, stream: &[(Instruction, bool)]) -> Vec<Violation> {
    let facts: Vec<Facts> = stream.iter().map(|(i, _)| Facts::new(i)).collect();
    let mut out = Vec::new();
    let mut start = 0;
    for (p, (inst, inserted)) in stream.iter().enumerate() {
        let mut dist = 0;
        for q in (start..p).rev() {
            if dist >= MAX_WAIT_STATES {
                break;
            }
            if *inserted || stream[q].1 {
                let need = required(t, &facts[q], &facts[p]);
                if need > dist {
                    out.push(Violation {
                        writer: q,
                        reader: p,
                        had: dist,
                        needed: need,
                    });
                }
            }
            dist += wait_states(&stream[q].0);
        }
        if ends_history(inst) {
            start = p + 1;
        }
    }
    out
}

/// Whether what follows `i` in the stream does not run right after it
/// (or runs after a callee).
pub fn ends_history(i: &Instruction) -> bool {
    !falls_through(i) || i.mnemonic() == "s_swappc_b64"
}

/// Whether control can go from `i` to the instruction after it.
pub fn falls_through(i: &Instruction) -> bool {
    !matches!(i.mnemonic(), "s_branch" | "s_endpgm" | "s_setpc_b64")
}

/// One node of the rewritten stream, in layout order.
#[derive(Clone, Copy)]
pub(super) enum Node {
    Inst {
        /// Its facts, by index in the stream's [`FactsTable`].
        facts: u32,
        inserted: bool,
    },
    /// Inserted instructions in a row: a [`Run`] (by index), which a
    /// call sequence placed at many points shares.
    Run(u32),
    /// A place nops may go: on every path to what follows it up to the
    /// next label.
    Slot(u32),
    /// The label of a block's first instruction (its hook code follows).
    BlockStart(u32),
}

/// Inserted instructions in a row, with what the seam search asks of
/// them worked out once.
pub(super) struct Run {
    /// Facts of each instruction (indices in the [`FactsTable`]).
    ids: Vec<u32>,
    /// Wait states before each instruction, from the run's start (and
    /// after the last, at `ids.len()`).
    before: Vec<u32>,
    /// Positions of its calls (`s_swappc_b64`).
    calls: Vec<u32>,
    /// Positions of the instructions some rule may concern as readers.
    readers: Vec<u32>,
    /// Wait states back from its end to its last instruction some rule
    /// may concern as a writer, the most if a call comes first, none if
    /// neither is in it (see [`Quiet`]).
    quiet: Option<u32>,
    /// What a search entering it from its end meets: the instructions
    /// some rule may concern as writers (wait states from its end, facts),
    /// back to its last call or as far as any rule reaches, and the wait
    /// states from its end to that call.
    writers: Vec<(u32, u32)>,
    call_from_end: Option<u32>,
}

impl Run {
    pub(super) fn new(ids: Vec<u32>, facts: &[Facts]) -> Run {
        let mut before = Vec::with_capacity(ids.len() + 1);
        let (mut calls, mut readers) = (Vec::new(), Vec::new());
        let mut at = 0u32;
        for (k, &id) in ids.iter().enumerate() {
            let f = &facts[id as usize];
            before.push(at);
            at = at.saturating_add(f.wait_states());
            if f.is_call() {
                calls.push(k as u32);
            }
            if f.may_read() {
                readers.push(k as u32);
            }
        }
        before.push(at);
        let mut quiet = None;
        for &id in &ids {
            quiet = Quiet::after(quiet, &facts[id as usize], true);
        }
        let (mut writers, mut call_from_end) = (Vec::new(), None);
        let mut d = 0u32;
        for &id in ids.iter().rev() {
            let f = &facts[id as usize];
            if d >= MAX_WAIT_STATES {
                break;
            }
            if f.kind & MAY_WRITE != 0 {
                writers.push((d, id));
            }
            if f.is_call() {
                call_from_end = Some(d);
                break;
            }
            d = d.saturating_add(f.wait_states());
        }
        Run {
            ids,
            before,
            calls,
            readers,
            quiet,
            writers,
            call_from_end,
        }
    }
}

/// Distances an application reader's search is sure to find nothing
/// within: what lies between it and the nearest inserted instruction that
/// may be a rule's writer (or a call, which ends the search) gives the
/// wait states.
struct Quiet;

impl Quiet {
    /// The wait states back to the nearest such writer or call after
    /// instruction `f` (`inserted` or not), given `before` up to it.
    fn after(before: Option<u32>, f: &Facts, inserted: bool) -> Option<u32> {
        if f.is_call() {
            Some(u32::MAX)
        } else if inserted && f.kind & MAY_WRITE != 0 {
            Some(0)
        } else {
            before.map(|d| d.saturating_add(f.wait_states()))
        }
    }

    /// The same after a run.
    fn after_run(before: Option<u32>, run: &Run) -> Option<u32> {
        match run.quiet {
            Some(d) => Some(d),
            None => before.map(|d| d.saturating_add(run.before[run.ids.len()])),
        }
    }
}

/// The facts of a stream's instructions, each distinct instruction's
/// computed once (a call at every instruction repeats a few hundred).
#[derive(Default)]
pub(super) struct FactsTable {
    pub(super) facts: Vec<Facts>,
    ids: std::collections::HashMap<(u64, u64), u32, crate::fast_hash::FastHash>,
}

impl FactsTable {
    /// Room for `n` more distinct instructions.
    pub(super) fn reserve(&mut self, n: usize) {
        self.facts.reserve(n);
        self.ids.reserve(n);
    }

    /// The index of `inst`'s facts.
    pub(super) fn id(&mut self, inst: &Instruction) -> u32 {
        let key = Self::key(inst);
        match self.ids.get(&key) {
            Some(&id) => id,
            None => self.insert(key, Facts::new(inst)),
        }
    }

    /// The index of `inst`'s facts, given its registers (inlay-isa's
    /// `info`) when they are new.
    pub(super) fn id_with(&mut self, inst: &Instruction, used: &[UsedRegister]) -> u32 {
        let key = Self::key(inst);
        match self.ids.get(&key) {
            Some(&id) => id,
            None => self.insert(key, Facts::with_registers(inst, used)),
        }
    }

    fn key(inst: &Instruction) -> (u64, u64) {
        let w = inst.words();
        let word = |k: usize| u64::from(w.get(k).copied().unwrap_or(0));
        (
            word(0) | word(1) << 32,
            inst.len() as u64 | (inst.encoding() as u64) << 8 | (inst.target() as u64) << 16,
        )
    }

    fn insert(&mut self, key: (u64, u64), f: Facts) -> u32 {
        let id = self.facts.len() as u32;
        self.facts.push(f);
        self.ids.insert(key, id);
        id
    }
}

/// The control flow of the stream's blocks: for each block, the stream
/// position just past its last node (what runs before a successor), its
/// predecessors, and whether nothing known runs before it.
pub(super) struct Flow {
    pub(super) block_end: Vec<usize>,
    pub(super) preds: Vec<Vec<usize>>,
    /// The block runs right after the node before its label (kernel
    /// entry, whose preamble precedes it).
    pub(super) linear_entry: Vec<bool>,
}

/// The stream [`pad`] searches: its nodes, the facts and runs they name.
pub(super) struct Stream<'a> {
    pub(super) nodes: &'a [Node],
    pub(super) facts: &'a [Facts],
    pub(super) runs: &'a [Run],
    pub(super) flow: &'a Flow,
}

/// Wait states to add at each slot of the stream so that no pair with an
/// inserted side is closer than its rule, on any path, where a slot can
/// help: a reader's slot pads for writers before it (or unknown history).
/// Pairs inside one inserted sequence, with no slot between them, are
/// the sequence's own business: each was padded inside when built.
pub(super) fn pad(t: Target, stream: &Stream<'_>, slots: usize, mfma: bool) -> Vec<u32> {
    let mut pads = vec![0u32; slots];
    // The reader's slot (index, position), wait states of the
    // instructions since it, and their count just past the last call
    // among them.
    let mut slot: Option<(usize, usize)> = None;
    let mut since_slot = 0u32;
    let mut since_call: Option<u32> = None;
    // An application reader has no inserted writer in reach when the
    // application instructions before it (back to inserted code, or to
    // its block's label and then through `quiet_before`) give enough wait
    // states: it is not searched. `application` counts those since the
    // label or the inserted code (a call ends the search: it counts as
    // the most), `label` says the label came last.
    let quiet_before = quiet_before(stream);
    // Wait states back to the nearest writer or call, or to the label.
    let mut quiet: Option<u32> = None;
    let mut label: Option<usize> = None;
    let mut application = 0u32;
    for (p, n) in stream.nodes.iter().enumerate() {
        match *n {
            Node::Slot(s) => {
                slot = Some((s as usize, p));
                (since_slot, since_call) = (0, None);
            }
            Node::BlockStart(b) => {
                slot = None;
                (since_slot, since_call) = (0, None);
                (quiet, label, application) = (None, Some(b as usize), 0);
            }
            Node::Inst {
                facts: id,
                inserted,
            } => {
                let reader = &stream.facts[id as usize];
                let reach = match (quiet, label) {
                    (Some(d), _) => d,
                    (None, Some(b)) => application.saturating_add(quiet_before[b]),
                    (None, None) => 0,
                };
                let far = !inserted && reach >= MAX_WAIT_STATES;
                quiet = Quiet::after(quiet, reader, inserted);
                application = application.saturating_add(reader.wait_states());
                if let Some((s, at)) = slot.filter(|_| !far) {
                    let need = slot_need(
                        t,
                        stream,
                        &pads,
                        (reader, inserted, mfma),
                        at,
                        since_slot,
                        since_call,
                    );
                    pads[s] += need;
                }
                since_slot = since_slot.saturating_add(reader.wait_states());
                if reader.is_call() {
                    since_call = Some(since_slot);
                }
            }
            Node::Run(r) => {
                let run = &stream.runs[r as usize];
                quiet = Quiet::after_run(quiet, run);
                application = application.saturating_add(run.before[run.ids.len()]);
                if let Some((s, at)) = slot {
                    for &k in &run.readers {
                        let reader = &stream.facts[run.ids[k as usize] as usize];
                        let after_call = match run.calls.iter().rev().find(|&&c| c < k) {
                            Some(&c) => Some(since_slot.saturating_add(run.before[c as usize + 1])),
                            None => since_call,
                        };
                        let need = slot_need(
                            t,
                            stream,
                            &pads,
                            (reader, true, mfma),
                            at,
                            since_slot.saturating_add(run.before[k as usize]),
                            after_call,
                        );
                        pads[s] += need;
                    }
                }
                if let Some(&c) = run.calls.last() {
                    since_call = Some(since_slot.saturating_add(run.before[c as usize + 1]));
                }
                since_slot = since_slot.saturating_add(run.before[run.ids.len()]);
            }
        }
    }
    pads
}

/// For each block, the fewest wait states of application instructions
/// on any path back from its label to inserted code, at most
/// [`MAX_WAIT_STATES`] (paths ending at a call or at unknown history
/// count as the most; the kernel's entry, which the preamble precedes,
/// as none).
fn quiet_before(stream: &Stream<'_>) -> Vec<u32> {
    let flow = stream.flow;
    let blocks = flow.preds.len();
    // Per block: wait states back from its end to the nearest inserted
    // writer or call (see `Quiet`), and its wait states in all.
    let mut tail: Vec<Option<u32>> = vec![None; blocks];
    let mut total = vec![0u32; blocks];
    let mut at: Option<usize> = None;
    for n in stream.nodes {
        let (b, node) = match (*n, at) {
            (Node::BlockStart(b), _) => {
                at = Some(b as usize).filter(|&b| b < blocks);
                continue;
            }
            (Node::Slot(_), _) | (_, None) => continue,
            (node, Some(b)) => (b, node),
        };
        match node {
            Node::Run(r) => {
                let run = &stream.runs[r as usize];
                tail[b] = Quiet::after_run(tail[b], run);
                total[b] = total[b].saturating_add(run.before[run.ids.len()]);
            }
            Node::Inst { facts, inserted } => {
                let f = &stream.facts[facts as usize];
                tail[b] = Quiet::after(tail[b], f, inserted);
                total[b] = total[b].saturating_add(f.wait_states());
            }
            _ => {}
        }
    }
    let mut quiet: Vec<u32> = (0..blocks)
        .map(|b| match flow.linear_entry.get(b) {
            Some(true) => 0,
            _ => MAX_WAIT_STATES,
        })
        .collect();
    // Down from the most until nothing changes (values only fall).
    let mut changed = true;
    while changed {
        changed = false;
        for b in 0..blocks {
            for &pb in &flow.preds[b] {
                let through = match tail[pb] {
                    Some(d) => d,
                    None => total[pb].saturating_add(quiet[pb]),
                }
                .min(MAX_WAIT_STATES);
                if through < quiet[b] {
                    quiet[b] = through;
                    changed = true;
                }
            }
        }
    }
    quiet
}

/// Wait states a reader `dist` wait states past its slot (at stream
/// position `slot_pos`) asks the slot for, `after_call` the wait states
/// since the slot just past the last call between them.
fn slot_need(
    t: Target,
    stream: &Stream<'_>,
    pads: &[u32],
    (reader, reader_inserted, mfma): (&Facts, bool, bool),
    slot_pos: usize,
    dist: u32,
    after_call: Option<u32>,
) -> u32 {
    if !reader.may_read() {
        return 0;
    }
    let mut walk = Walk {
        t,
        stream,
        pads,
        reader,
        reader_inserted,
        mfma,
        worst: 0,
    };
    match after_call {
        // What ran last before the reader is the callee, whatever
        // precedes the call.
        Some(a) if dist.saturating_sub(a) < MAX_WAIT_STATES => {
            walk.unknown(dist.saturating_sub(a) + 1)
        }
        Some(_) => {}
        None if dist < MAX_WAIT_STATES => walk.back(slot_pos + 1, dist, 0),
        None => {}
    }
    walk.worst
}

/// A backward search from one reader over every path into it, for the
/// most wait states a writer (or unknown history) lacks.
struct Walk<'a> {
    t: Target,
    stream: &'a Stream<'a>,
    pads: &'a [u32],
    reader: &'a Facts,
    reader_inserted: bool,
    mfma: bool,
    worst: u32,
}

impl Walk<'_> {
    /// A writer `dist` wait states before the reader that needs `need`.
    fn found(&mut self, dist: u32, need: u32) {
        if need > dist {
            self.worst = self.worst.max(need - dist);
        }
    }

    /// Looks at the nodes before position `end`, `dist` wait states from
    /// the reader; `depth` bounds the paths followed through labels.
    fn back(&mut self, end: usize, mut dist: u32, depth: u32) {
        let (t, stream) = (self.t, self.stream);
        let mut q = end;
        while q > 0 && dist < MAX_WAIT_STATES {
            q -= 1;
            match stream.nodes[q] {
                Node::Slot(s) => dist += self.pads[s as usize],
                Node::Inst { facts, inserted } => {
                    let w = &stream.facts[facts as usize];
                    if inserted || self.reader_inserted {
                        self.found(dist, required(t, w, self.reader));
                    }
                    if w.is_call() {
                        // The callee ran between: unknown history.
                        self.unknown(dist + 1);
                        return;
                    }
                    dist += w.wait_states();
                }
                Node::Run(r) => {
                    // Only its writers and its last call can matter.
                    let run = &stream.runs[r as usize];
                    for &(d, id) in &run.writers {
                        let at = dist.saturating_add(d);
                        if at >= MAX_WAIT_STATES {
                            return;
                        }
                        self.found(at, required(t, &stream.facts[id as usize], self.reader));
                    }
                    if let Some(d) = run.call_from_end {
                        let at = dist.saturating_add(d);
                        if at < MAX_WAIT_STATES {
                            // The callee ran between: unknown history.
                            self.unknown(at + 1);
                        }
                        return;
                    }
                    dist = dist.saturating_add(run.before[run.ids.len()]);
                }
                Node::BlockStart(b) => {
                    let (b, flow) = (b as usize, stream.flow);
                    if depth > 64 || !flow.linear_entry[b] && flow.preds[b].is_empty() {
                        self.unknown(dist);
                        return;
                    }
                    for &pb in &flow.preds[b] {
                        self.back(flow.block_end[pb], dist, depth + 1);
                    }
                    if !flow.linear_entry[b] {
                        return;
                    }
                }
            }
        }
    }

    fn unknown(&mut self, dist: u32) {
        if self.reader_inserted {
            self.found(dist, required_after_unknown(self.t, self.reader, self.mfma));
        }
    }
}

#[cfg(test)]
mod tests {
    //! Each rule against the wait-state count of AMD's table (the
    //! instructions assembled by llvm-mc-19, an oracle for the encodings).
    use super::*;

    fn asm(t: Target, text: &str) -> Vec<Instruction> {
        let out = std::process::Command::new("llvm-mc-19")
            .args([
                "-triple=amdgcn-amd-amdhsa",
                &format!("-mcpu={}", t.name()),
                "--show-encoding",
            ])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin.take().map(|mut s| s.write_all(text.as_bytes()));
                c.wait_with_output()
            })
            .expect("llvm-mc-19 (scripts/install-deps installs it)");
        let listing = String::from_utf8_lossy(&out.stdout);
        let errors = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && !errors.contains("error"),
            "{text}: {errors}"
        );
        let d = Decoder::new(t);
        listing
            .lines()
            .filter_map(|l| l.split_once("encoding: [").map(|x| x.1))
            .map(|enc| {
                let bytes: Vec<u8> = enc
                    .trim_end_matches(']')
                    .split(',')
                    .map(|b| u8::from_str_radix(b.trim().trim_start_matches("0x"), 16).unwrap())
                    .collect();
                d.decode(&bytes).unwrap()
            })
            .collect()
    }

    /// The shortest distance (wait states, as `s_nop`s) at which the pair
    /// `writer` (inserted) → `reader` raises no violation, checked at
    /// every distance below it too; also with independent SALU
    /// instructions in place of the nops.
    fn distance(t: Target, writer: &str, reader: &str) -> u32 {
        let w = asm(t, writer)[0];
        let r = asm(t, reader)[0];
        let filler = asm(t, "s_add_u32 s80, s81, s82")[0];
        let mut first_clean = None;
        for k in 0..=MAX_WAIT_STATES + 1 {
            let mut s = vec![(w, true)];
            s.extend(nops(t, k).into_iter().map(|n| (n, true)));
            s.push((r, false));
            let by_nops = violations(t, &s).is_empty();
            let mut s = vec![(w, false)];
            s.extend((0..k).map(|_| (filler, false)));
            s.push((r, true));
            let by_insts = violations(t, &s).is_empty();
            assert_eq!(by_nops, by_insts, "{writer} / {reader} at {k}");
            match (first_clean, by_nops) {
                (None, true) => first_clean = Some(k),
                (Some(c), false) => panic!("{writer} / {reader}: clean at {c}, not at {k}"),
                _ => {}
            }
        }
        // Application pairs are the compiler's business.
        let app = [(w, false), (r, false)];
        assert!(violations(t, &app).is_empty());
        first_clean.unwrap_or(u32::MAX)
    }

    const ALL: [Target; 3] = [Target::Gfx908, Target::Gfx90a, Target::Gfx942];

    #[test]
    fn valu_sgpr_then_vmem() {
        for t in ALL {
            let r = "global_load_dword v2, v3, s[4:5]";
            assert_eq!(distance(t, "v_readlane_b32 s4, v1, 0", r), 5);
            assert_eq!(distance(t, "v_cmp_eq_u32_e64 s[4:5], v1, v2", r), 5);
            let buf = "buffer_load_dword v1, off, s[8:11], s4";
            assert_eq!(distance(t, "v_readfirstlane_b32 s4, v1", buf), 5);
            // A SALU write is interlocked.
            assert_eq!(distance(t, "s_mov_b32 s4, 0", r), 0);
            assert_eq!(distance(t, "v_readlane_b32 s6, v1, 0", r), 0);
        }
    }

    #[test]
    fn valu_sgpr_then_lane_select() {
        for t in ALL {
            let r = "v_readlane_b32 s6, v1, s5";
            assert_eq!(distance(t, "v_readfirstlane_b32 s5, v2", r), 4);
            let w = "v_writelane_b32 v3, 7, s5";
            assert_eq!(distance(t, "v_readfirstlane_b32 s5, v2", w), 4);
        }
    }

    #[test]
    fn valu_vcc_then_div_fmas() {
        for t in ALL {
            let r = "v_div_fmas_f32 v0, v1, v2, v3";
            assert_eq!(distance(t, "v_cmp_eq_u32_e32 vcc, v1, v2", r), 4);
            assert_eq!(distance(t, "v_add_co_u32_e32 v4, vcc, v1, v2", r), 4);
        }
    }

    #[test]
    fn dpp() {
        for t in ALL {
            let r = "v_mov_b32_dpp v0, v1 quad_perm:[1,0,3,2] row_mask:0xf bank_mask:0xf";
            assert_eq!(distance(t, "v_cmpx_eq_u32_e32 vcc, v1, v2", r), 5);
            assert_eq!(distance(t, "v_add_u32_e32 v1, v2, v3", r), 2);
            assert_eq!(distance(t, "v_add_u32_e32 v5, v2, v3", r), 0);
        }
    }

    #[test]
    fn salu_m0() {
        for t in ALL {
            let w = "s_mov_b32 m0, s1";
            assert_eq!(
                distance(t, w, "s_sendmsg sendmsg(MSG_GS_DONE, GS_OP_NOP)"),
                1
            );
            assert_eq!(distance(t, w, "s_movrels_b32 s0, s1"), 1);
            assert_eq!(distance(t, w, "ds_read_addtid_b32 v0"), 1);
            if t == Target::Gfx908 {
                assert_eq!(distance(t, w, "ds_add_u32 v0, v1 gds"), 1);
            }
            assert_eq!(distance(t, w, "s_add_u32 s0, m0, 1"), 0);
        }
    }

    #[test]
    fn setreg() {
        for t in ALL {
            let w = "s_setreg_b32 hwreg(HW_REG_MODE, 0, 4), s1";
            assert_eq!(
                distance(t, w, "s_getreg_b32 s2, hwreg(HW_REG_MODE, 0, 4)"),
                2
            );
            assert_eq!(
                distance(t, w, "s_setreg_b32 hwreg(HW_REG_MODE, 4, 4), s2"),
                2
            );
            assert_eq!(
                distance(t, w, "s_getreg_b32 s2, hwreg(HW_REG_TRAPSTS, 0, 4)"),
                0
            );
        }
    }

    #[test]
    fn valu_sgpr_then_valu_constant() {
        let (w, r) = ("v_readlane_b32 s4, v1, 0", "v_add_u32_e64 v0, s4, v1");
        assert_eq!(distance(Target::Gfx908, w, r), 0);
        // llc-19 separates them on gfx942 only (`s_nop 1`).
        assert_eq!(distance(Target::Gfx90a, w, r), 0);
        assert_eq!(distance(Target::Gfx942, w, r), 2);
        let cmp = "v_cmp_eq_u32_e64 s[4:5], v1, v2";
        assert_eq!(
            distance(Target::Gfx942, cmp, "v_cndmask_b32_e64 v0, v1, v2, s[4:5]"),
            2
        );
    }

    #[test]
    fn valu_vgpr_then_readlane() {
        let (w, r) = ("v_add_u32_e32 v1, v2, v3", "v_readlane_b32 s4, v1, 0");
        assert_eq!(distance(Target::Gfx908, w, r), 0);
        assert_eq!(distance(Target::Gfx90a, w, r), 0);
        assert_eq!(distance(Target::Gfx942, w, r), 1);
        assert_eq!(distance(Target::Gfx942, w, "v_readfirstlane_b32 s4, v1"), 1);
    }

    #[test]
    fn valu_exec_then_lane_ops_and_mfma() {
        for t in ALL {
            let w = "v_cmpx_eq_u32_e32 vcc, v1, v2";
            assert_eq!(distance(t, w, "v_readlane_b32 s4, v9, 0"), 4);
            let mfma = "v_mfma_f32_32x32x8f16 a[0:15], v[10:11], v[12:13], a[0:15]";
            assert_eq!(distance(t, w, mfma), 4);
        }
    }

    #[test]
    fn mfma() {
        let mfma = "v_mfma_f32_32x32x8f16 a[0:15], v[0:1], v[2:3], a[0:15]";
        for t in ALL {
            // VALU writes what an MFMA reads: 2.
            assert_eq!(distance(t, "v_add_u32_e32 v1, v4, v5", mfma), 2);
            // An MFMA's result read or overwritten, or its source
            // overwritten: the longest distance any target asks (18 for a
            // 16-pass op on gfx908/gfx90a, 19 on gfx942).
            assert_eq!(distance(t, mfma, "v_accvgpr_read_b32 v5, a3"), 19);
            assert_eq!(distance(t, mfma, "v_accvgpr_write_b32 a3, v5"), 19);
            assert_eq!(distance(t, mfma, "v_mov_b32_e32 v1, 0"), 19);
            assert_eq!(distance(t, mfma, "v_accvgpr_read_b32 v5, a20"), 0);
        }
    }

    #[test]
    fn wide_store_then_valu_write() {
        for t in ALL {
            let w = "global_store_dwordx4 v[0:1], v[4:7], off";
            assert_eq!(distance(t, w, "v_mov_b32_e32 v5, 0"), 1);
            assert_eq!(distance(t, w, "v_mov_b32_e32 v8, 0"), 0);
            let narrow = "global_store_dwordx2 v[0:1], v[4:5], off";
            assert_eq!(distance(t, narrow, "v_mov_b32_e32 v5, 0"), 0);
        }
    }

    #[test]
    fn s_nop_counts() {
        let t = Target::Gfx90a;
        for k in 0..8 {
            let n = asm(t, &format!("s_nop {k}"))[0];
            assert_eq!(wait_states(&n), k + 1);
        }
        for n in 0..40 {
            let ns = nops(t, n);
            assert_eq!(ns.iter().map(wait_states).sum::<u32>(), n);
            assert_eq!(ns.len() as u32, n.div_ceil(8));
        }
    }

    /// Inside one snippet (a call sequence, an inlined body): nops go
    /// before the reader, enough for the shortest path, branches included,
    /// and branches to the reader land before them.
    #[test]
    fn snippets_pad_inside_on_every_path() {
        use super::super::snippet::Snippet;
        let t = Target::Gfx90a;
        let code = asm(
            t,
            "v_readlane_b32 s4, v1, 0\ns_cbranch_scc0 0\ns_add_u32 s80, s81, s82\nglobal_load_dword v2, v3, s[4:5]",
        );
        let mut s = Snippet::default();
        s.push(code[0]);
        let b = s.branch(code[1]);
        s.push(code[2]);
        s.land(b);
        s.push(code[3]);
        s.resolve().unwrap();
        let names: Vec<&str> = s.insts.iter().map(|i| i.mnemonic()).collect();
        // Through the branch only the branch separates them: 4 more.
        assert_eq!(
            names,
            [
                "v_readlane_b32",
                "s_cbranch_scc0",
                "s_add_u32",
                "s_nop",
                "global_load_dword"
            ]
        );
        assert_eq!(wait_states(&s.insts[3]), 4);
        // The branch lands on the nop: offset 1 dword past the s_add_u32.
        assert_eq!(s.insts[1].words()[0] & 0xffff, 1);
        // After a call, what the callee did last is unknown.
        let call = asm(
            t,
            "s_swappc_b64 s[30:31], s[4:5]\nglobal_load_dword v2, v3, s[4:5]",
        );
        let mut s = Snippet::default();
        s.extend(call.iter().copied());
        s.resolve().unwrap();
        assert_eq!(s.insts.len(), 3);
        assert_eq!(wait_states(&s.insts[1]), 5);
    }

    fn node(tb: &mut FactsTable, i: Instruction, inserted: bool) -> Node {
        Node::Inst {
            facts: tb.id(&i),
            inserted,
        }
    }

    fn pads(t: Target, nodes: &[Node], tb: &FactsTable, flow: &Flow, slots: usize) -> Vec<u32> {
        let stream = Stream {
            nodes,
            facts: &tb.facts,
            runs: &[],
            flow,
        };
        pad(t, &stream, slots, false)
    }

    /// Padding across a block start: the reader's block has two
    /// predecessors; only the one that ends with inserted code close to it
    /// asks for nops, and the slot before the reader gets them.
    #[test]
    fn pad_follows_predecessors() {
        let t = Target::Gfx90a;
        let w = asm(t, "v_readlane_b32 s4, v1, 0")[0];
        let br = asm(t, "s_branch 0")[0];
        let other = asm(t, "s_add_u32 s80, s81, s82")[0];
        let r = asm(t, "global_load_dword v2, v3, s[4:5]")[0];
        let mut tb = FactsTable::default();
        // block 0: w(inserted) branch; block 1: other other other; block 2: r
        let nodes = vec![
            Node::BlockStart(0),
            Node::Slot(0),
            node(&mut tb, w, true),
            node(&mut tb, br, false),
            Node::BlockStart(1),
            node(&mut tb, other, false),
            node(&mut tb, other, false),
            node(&mut tb, other, false),
            node(&mut tb, other, false),
            node(&mut tb, other, false),
            Node::BlockStart(2),
            Node::Slot(1),
            node(&mut tb, r, false),
        ];
        let flow = Flow {
            block_end: vec![4, 10, 13],
            preds: vec![vec![], vec![], vec![0, 1]],
            linear_entry: vec![true, false, false],
        };
        // Through the branch: one wait state (the branch) of five.
        assert_eq!(pads(t, &nodes, &tb, &flow, 2), vec![0, 4]);
        // A loop: the reader's block is its own predecessor, and the
        // inserted writer at the block's end lies after the reader in the
        // stream; the reader's slot still takes the nops.
        let nodes = vec![
            Node::BlockStart(0),
            Node::Slot(0),
            node(&mut tb, r, false),
            node(&mut tb, w, true),
            node(&mut tb, br, false),
        ];
        let flow = Flow {
            block_end: vec![5],
            preds: vec![vec![0]],
            linear_entry: vec![true],
        };
        assert_eq!(pads(t, &nodes, &tb, &flow, 1), vec![4]);
        // A function entry (no predecessors, not the kernel's): unknown
        // history, an inserted VMEM read of an SGPR takes the worst case.
        let nodes = vec![Node::BlockStart(0), Node::Slot(0), node(&mut tb, r, true)];
        let flow = Flow {
            block_end: vec![3],
            preds: vec![vec![]],
            linear_entry: vec![false],
        };
        assert_eq!(pads(t, &nodes, &tb, &flow, 1), vec![5]);
        // A writer and reader inside one inserted sequence: not the
        // seam's to pad (the sequence was padded when it was built).
        let nodes = vec![
            Node::Slot(0),
            node(&mut tb, w, true),
            node(&mut tb, r, true),
        ];
        let flow = Flow {
            block_end: vec![],
            preds: vec![],
            linear_entry: vec![],
        };
        assert_eq!(pads(t, &nodes, &tb, &flow, 1), vec![0]);
        // Runs: a reader one instruction into a run after its slot, a
        // writer at the end of a run before the reader's slot.
        let ids = |tb: &mut FactsTable, is: &[Instruction]| -> Vec<u32> {
            is.iter().map(|i| tb.id(i)).collect()
        };
        let runs = vec![
            Run::new(ids(&mut tb, &[other, r]), &tb.facts),
            Run::new(ids(&mut tb, &[other, w]), &tb.facts),
        ];
        let nodes = vec![
            node(&mut tb, w, false),
            Node::Slot(0),
            Node::Run(0),
            Node::Slot(1),
            Node::Run(1),
            Node::Slot(2),
            node(&mut tb, r, false),
        ];
        let stream = Stream {
            nodes: &nodes,
            facts: &tb.facts,
            runs: &runs,
            flow: &flow,
        };
        assert_eq!(pad(t, &stream, 3, false), vec![4, 0, 5]);
    }
}
