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
//! - VALU writes EXEC, a DPP instruction follows: 5; any instruction (a
//!   load too) writes a VGPR a DPP instruction names: 2
//!   (`checkDPPHazards`);
//! - SALU writes M0, `s_sendmsg*`, `s_movrel*`, `s_ttracedata`, or a
//!   non-scalar instruction reading M0 (LDS add-TID, GDS, LDS DMA) follows:
//!   1 (`checkSMovRelHazards`, `checkReadM0Hazards`) — every non-SALU M0
//!   reader is counted, which is conservative;
//! - `s_setreg` of a hardware register, then `s_getreg`/`s_setreg` of it:
//!   2 (`checkSetRegHazards`, `checkGetRegHazards`);
//! - gfx942: VALU writes an SGPR or VCC (`v_readlane`,
//!   `v_readfirstlane`, `v_cmp`, carries), a VALU reads it: 2; VALU writes
//!   a VGPR, `v_readlane`/`v_readfirstlane` reads it: 1
//!   (`checkVALUHazards`, `hasVDecCoExecHazard`); a transcendental VALU
//!   writes a VGPR, a non-transcendental VALU reads it: 1
//!   (`hasTransForwardingHazard`); a VALU writes part of a VGPR (SDWA
//!   `dst_sel`, VOP3 `op_sel[3]`), a VALU reads it: 1
//!   (`hasDstSelForwardingHazard`);
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
//! - a VMEM store or atomic of more than 64 bits of data, then a VALU
//!   write of its data registers: 1, gfx942 2 (`checkVALUHazardsHelper`,
//!   `has12DWordStoreHazard`).
//!
//! - XNACK soft clauses (`checkSoftClauseHazards`): adjacent memory
//!   instructions of one kind (SMEM; or VMEM: buffer, image, flat,
//!   global, scratch) form a clause the hardware may replay after a page
//!   fault, so none may overwrite a register one of them reads, nor may a
//!   store follow a load of the clause: one instruction of another kind
//!   (an `s_nop`) must break it. Checked pairwise (a writer in the run
//!   before the reader), which covers LLVM's clause-wide check when the
//!   run is itself clean, and for every code object, XNACK on or not:
//!   conservative for code built with XNACK off.
//!
//! Not covered: LDS DMA's M0 beyond the conservative rule above, the
//! `s_setprio`/trap rules, and exact MFMA pass counts (the bound above
//! stands for them). Not needed on these targets: a VALU SGPR write read
//! by SMEM (`checkSMRDHazards` applies to gfx6 only) and the
//! `v_permlane*` rules (gfx942 has no `v_permlane`; gfx950 does).

use inlay_isa::{info, Access, Decoder, Encoding, Instruction, RegFile, Target, UsedRegister};

use crate::regs as bits;

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
    /// lane select of `v_readlane`/`v_writelane`: scalar ones only), written,
    /// and a store's data VGPRs when wider than 64 bits. (Every register
    /// named is read or written; the table holds one of these per distinct
    /// instruction, so what the sets imply is not kept twice.)
    reads: Split,
    lane_select: u128,
    writes: Split,
    wide_store: Split,
    /// Hardware registers (`s_getreg`/`s_setreg` ids below 64) written
    /// and named.
    hw_writes: u64,
    hw_touches: u64,
    /// Every register it names maps to bits whole: the sets above say all
    /// the rules ask. Otherwise the rules read its registers one by one.
    exact: bool,
    /// Wait states it needs after unknown code: without MFMAs in the
    /// program, and with.
    unknown: [u8; 2],
    /// The reader kinds (bits of `kind`, and [`NAMES_V`]) some rule may
    /// ask wait states of after it, on targets other than gfx942 and on
    /// gfx942: [`required`] is 0 for a reader of none of them.
    affects: [u32; 2],
}

/// Whether an instruction's vector register sets hold any register: what
/// the rules on kinds alone ask of them (see [`Facts::fill`]).
struct Vectors {
    written: bool,
    vgpr_written: bool,
    named: bool,
    wide_store: bool,
}

/// An instruction's registers as inlay-isa's `info` gives them.
struct Used(inlay_isa::InstructionInfo);

impl std::ops::Deref for Used {
    type Target = [UsedRegister];
    fn deref(&self) -> &[UsedRegister] {
        self.0.used_registers()
    }
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
/// A transcendental VALU (gfx942 forwards its results late).
const TRANS: u32 = 1 << 17;
/// A VALU writing part of a VGPR gfx942 forwards late (see
/// `forwards_partial_dst`).
const PARTIAL_DST: u32 = 1 << 18;
/// It joins XNACK soft clauses of SMEM, or of VMEM, instructions.
const CLAUSE_SMEM: u32 = 1 << 19;
const CLAUSE_VMEM: u32 = 1 << 20;
/// A memory instruction that writes memory.
const STORES: u32 = 1 << 21;
/// It writes some register.
const WRITES: u32 = 1 << 22;
/// Either soft-clause kind.
pub(super) const CLAUSES: u32 = CLAUSE_SMEM | CLAUSE_VMEM;
/// It may be the writer of some rule: a VALU, an SALU writing M0, an
/// `s_setreg`, a wide store.
const MAY_WRITE: u32 = 1 << 14;
/// It may be the reader of some rule (or need wait states after unknown
/// code): a VALU, a VMEM reading a scalar register, anything naming a
/// vector register (MFMA results), an M0 reader, `s_getreg`/`s_setreg`.
const MAY_READ: u32 = 1 << 15;
/// It names a vector register (what an MFMA's rule asks of readers);
/// set for every instruction whose registers the bit sets do not hold.
const NAMES_V: u32 = 1 << 23;
/// Readers of a VALU's scalar results: a VMEM, a VALU (gfx942), and a
/// lane select, reading a scalar register (set from the kind alone for
/// instructions whose registers the bit sets do not hold).
const VMEM_READS_SCALAR: u32 = 1 << 24;
const VALU_READS_SCALAR: u32 = 1 << 25;
const SCALAR_LANE_SELECT: u32 = 1 << 26;
/// Its opcode reads M0 without naming it (`s_sendmsg`, `s_movrel`,
/// `s_ttracedata`, LDS add-TID); its opcode's name says it writes memory.
const M0_NAMED: u32 = 1 << 27;
const STORE_NAMED: u32 = 1 << 28;

/// What a search reads of each instruction it passes (16 bytes, where
/// [`Facts`] holds hundreds): its kinds, the reader kinds its rules
/// concern, its wait states.
#[derive(Clone, Copy)]
pub(super) struct Brief {
    kind: u32,
    affects: [u32; 2],
    waits: u8,
    /// See [`Facts`]' `unknown`.
    unknown: [u8; 2],
}

impl Brief {
    /// See [`Facts::affects`].
    pub(super) fn affects(&self, t: Target) -> u32 {
        self.affects[usize::from(gfx942(t))]
    }

    pub(super) fn kind(&self) -> u32 {
        self.kind
    }

    pub(super) fn wait_states(&self) -> u32 {
        u32::from(self.waits)
    }

    pub(super) fn is_call(&self) -> bool {
        self.kind & SWAPPC != 0
    }

    /// See [`Facts::may_read`].
    pub(super) fn may_read(&self) -> bool {
        self.kind & MAY_READ != 0
    }

    /// See [`required_after_unknown`].
    pub(super) fn after_unknown(&self, mfma: bool) -> u32 {
        u32::from(self.unknown[usize::from(mfma)])
    }

    pub(super) fn is_mfma(&self) -> bool {
        self.kind & MFMA != 0
    }

    pub(super) fn falls_through(&self) -> bool {
        self.kind & JUMPS == 0
    }

    /// See [`continues_clause`].
    pub(super) fn continues_clause(&self, r: &Brief) -> bool {
        let clause = CLAUSE_SMEM | CLAUSE_VMEM;
        self.kind & clause != 0 && self.kind & clause == r.kind & clause
    }
}

/// A register set in the two parts the rules look at: the scalar
/// registers (bits 0..128 of [`crate::regs`]: SGPRs, VCC, TTMPs, M0,
/// EXEC) and the vector ones (VGPRs, AGPRs).
#[derive(Clone, Copy, Default)]
struct Split {
    s: u128,
    v: [u64; 8],
}

impl Split {
    /// Adds the bits `b..b + n` (of [`crate::regs`]; those of neither
    /// part, SCC's, are left out).
    fn add_bits(&mut self, b: u16, n: u16) {
        let lo = b % 64;
        if n > 0 && lo + n <= 64 && b + n <= bits::NUM_BITS {
            // Within one word (nearly every operand).
            let mask = if n == 64 {
                u64::MAX
            } else {
                ((1u64 << n) - 1) << lo
            };
            self.add_mask(usize::from(b / 64), mask);
        } else {
            for (w, mask) in bits::word_masks(b, n) {
                self.add_mask(w, mask);
            }
        }
    }

    /// The scalar part of the bits `b..b + n` (what `add_bits` would add
    /// to `s`), without a set to add them to.
    fn scalar_bits(b: u16, n: u16) -> u128 {
        let end = b.saturating_add(n).min(128);
        match end.saturating_sub(b) {
            0 => 0,
            128 => u128::MAX,
            len => ((1u128 << len) - 1) << b,
        }
    }

    fn add_mask(&mut self, w: usize, mask: u64) {
        match w {
            0 => self.s |= u128::from(mask),
            1 => self.s |= u128::from(mask) << 64,
            4..=11 => self.v[w - 4] |= mask,
            _ => {}
        }
    }

    /// Whether the two share a register.
    fn meets(&self, o: &Split) -> bool {
        self.s & o.s != 0 || self.meets_v(o)
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
    ((1 << bits::NUM_SGPRS) - 1) | (0b11 << bits::VCC) | (0xffff << bits::TTMP_BASE);
const VCC_BITS: u128 = 0b11 << bits::VCC;
const EXEC_BITS: u128 = 0b11 << bits::EXEC;
const M0_BIT: u128 = 1 << bits::M0;

impl Facts {
    pub fn new(inst: &Instruction) -> Facts {
        Facts::build(inst, info(inst).used_registers(), opcode_kinds(inst))
    }

    /// The facts of `inst`, given its registers (inlay-isa's `info`: the
    /// register-by-register rules find them again from the instruction)
    /// and the kinds its opcode has.
    fn build(inst: &Instruction, used: &[UsedRegister], opcode_kinds: u32) -> Facts {
        let mut f = Facts::blank(inst);
        f.fill(used, opcode_kinds);
        f
    }

    /// Facts of `inst` with no registers and no kinds, for [`Facts::fill`].
    fn blank(inst: &Instruction) -> Facts {
        Facts {
            inst: *inst,
            kind: 0,
            waits: 1,
            reads: Split::default(),
            lane_select: 0,
            writes: Split::default(),
            wide_store: Split::default(),
            hw_writes: 0,
            hw_touches: 0,
            exact: true,
            unknown: [0; 2],
            affects: [u32::MAX; 2],
        }
    }

    /// Fills in blank facts from the instruction's registers (inlay-isa's
    /// `info`) and its opcode's kinds. (In place: the facts table builds
    /// each entry where it keeps it, not on the stack and then copied.)
    fn fill(&mut self, used: &[UsedRegister], opcode_kinds: u32) {
        debug_assert_eq!(used, info(&self.inst).used_registers());
        let f = self;
        let inst = f.inst;
        // (The name looked up only for the one encoding s_nop has.)
        if inst.encoding() == Encoding::Sopp && inst.mnemonic() == "s_nop" {
            f.waits = ((inst.words()[0] & 0xf) + 1) as u8;
        }
        f.kind = opcode_kinds;
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
            let Some((b, n)) = bits::bits_of(r) else {
                f.exact = false;
                continue;
            };
            f.exact &= n == u16::from(r.count);
            // (Each set's words ORed in place: a register set built and
            // added whole per register made this the seams' costliest
            // loop, in copies of the sets.)
            if u.access.reads() {
                f.reads.add_bits(b, n);
                if u.operand == Some(2) {
                    f.lane_select |= Split::scalar_bits(b, n);
                }
            }
            if u.access.writes() {
                f.writes.add_bits(b, n);
            }
        }
        // (Only a memory instruction has any: most skip the loop.)
        let memory = f.is_vmem();
        for u in used.iter().filter(|_| memory) {
            let r = &u.register;
            let vector = matches!(r.file, RegFile::Vgpr | RegFile::Agpr);
            if u.access == Access::Read && vector && r.count > 2 {
                if let Some((b, n)) = bits::bits_of(r) {
                    f.wide_store.add_bits(b, n);
                }
            }
        }
        let mut more = 0;
        let mut flag = |on: bool, k: u32| {
            if on {
                more |= k;
            }
        };
        flag(f.reads_m0_as_hazard(), M0_READER);
        let valu_scalar_write = f.is_valu()
            && used.iter().any(|u| {
                u.access.writes()
                    && matches!(
                        u.register.file,
                        RegFile::Sgpr | RegFile::Vcc | RegFile::Ttmp
                    )
            });
        flag(f.forwards_partial_dst(valu_scalar_write), PARTIAL_DST);
        flag(f.clause_kind() == Some(true), CLAUSE_SMEM);
        flag(f.clause_kind() == Some(false), CLAUSE_VMEM);
        flag(f.may_store(), STORES);
        flag(used.iter().any(|u| u.access.writes()), WRITES);
        f.kind |= more;
        // (The vector sets' words looked at once each, not per rule.)
        let vectors = Vectors {
            written: f.writes.has_v(),
            vgpr_written: f.writes.v[..4].iter().any(|&w| w != 0),
            named: f.reads.has_v() || f.writes.has_v(),
            wide_store: f.wide_store.has_v(),
        };
        let may_write = !f.exact
            || f.is_valu()
            || f.is_mfma()
            || f.is_salu()
                && used
                    .iter()
                    .any(|u| u.access.writes() && u.register.file == RegFile::M0)
            || f.kind & SETREG != 0
            || vectors.wide_store
            || vectors.vgpr_written;
        let reads_scalar = f.reads.s & SCALAR_RESULTS != 0;
        let may_read = !f.exact
            || f.is_valu()
            || f.is_vmem() && reads_scalar
            || vectors.named
            || f.kind & (M0_READER | SETREG | GETREG | CLAUSE_SMEM | CLAUSE_VMEM) != 0;
        f.kind |= if may_write { MAY_WRITE } else { 0 } | if may_read { MAY_READ } else { 0 };
        if !f.exact || vectors.named {
            f.kind |= NAMES_V;
        }
        let scalar_read = !f.exact || f.reads.s & SCALAR_RESULTS != 0;
        let scalar_select = !f.exact || f.lane_select != 0;
        if scalar_read && f.is_vmem() {
            f.kind |= VMEM_READS_SCALAR;
        }
        if scalar_read && f.is_valu() {
            f.kind |= VALU_READS_SCALAR;
        }
        if scalar_select && f.is_lane_op() {
            f.kind |= SCALAR_LANE_SELECT;
        }
        if f.exact {
            f.affects = f.affected_readers(&vectors);
            f.unknown = f.after_unknown(&vectors);
        } else {
            f.unknown = [false, true]
                .map(|mfma| required_after_unknown_listed(inst.target(), f, mfma) as u8);
        }
    }

    /// [`required_after_unknown`] from the bit sets: without MFMAs in the
    /// program, and with.
    fn after_unknown(&self, vectors: &Vectors) -> [u8; 2] {
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
        // gfx942: a wide store's data overwritten by a VALU.
        if k & GFX942 != 0 && k & VALU != 0 && vectors.written {
            at_least(2);
        }
        if k & (GETREG | SETREG) != 0 {
            at_least(2);
        }
        if k & (M0_READER | VALU) != 0 {
            at_least(1);
        }
        // Only the MFMA rule differs.
        let with_mfma = if vectors.named { MAX_WAIT_STATES } else { need };
        [need as u8, with_mfma as u8]
    }

    /// The reader kinds [`required`]'s rules may ask wait states of after
    /// this (exact) writer, each rule's condition on kinds alone: on
    /// targets other than gfx942, and on gfx942.
    fn affected_readers(&self, vectors: &Vectors) -> [u32; 2] {
        let mut out = 0;
        // What the gfx942-only rules add.
        let mut gfx942 = 0;
        if self.is_valu() {
            if self.writes.s & SCALAR_RESULTS != 0 {
                out |= VMEM_READS_SCALAR | SCALAR_LANE_SELECT | DIV_FMAS;
                gfx942 |= VALU_READS_SCALAR;
            }
            if self.writes.s & EXEC_BITS != 0 {
                out |= DPP | LANE_OP | MFMA | ACC_WRITE;
            }
            if vectors.written {
                out |= MFMA | ACC_WRITE;
                let late = self.kind & (TRANS | PARTIAL_DST) != 0;
                gfx942 |= READLANE | if late { VALU } else { 0 };
            }
        }
        if vectors.vgpr_written {
            out |= DPP;
        }
        if self.is_mfma() {
            out |= NAMES_V;
        }
        if self.is_salu() && self.writes.s & M0_BIT != 0 {
            out |= M0_READER;
        }
        if self.kind & SETREG != 0 {
            out |= GETREG | SETREG;
        }
        if vectors.wide_store {
            out |= VALU;
        }
        [out, out | gfx942]
    }

    /// Its registers, found again (the rules read them one by one only
    /// for instructions whose registers the bit sets do not hold, and
    /// their partners: rare, while keeping them made every entry of the
    /// facts table a third larger).
    fn used(&self) -> Used {
        Used(info(&self.inst))
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

    /// Transcendental VALU operations (gfx942 forwards their results late).
    fn is_trans(&self) -> bool {
        self.kind & TRANS != 0
    }

    /// A VALU whose VGPR result is a partial write gfx942 forwards late:
    /// SDWA with `dst_sel` other than DWORD, or VOP3 `op_sel[3]` (the
    /// destination's high half). For VOP3P llc-19 tests the same modifier
    /// bit, which there is src0's `op_sel_hi` (set by default), and pads
    /// after it; we follow it, as an extra wait state is always safe.
    /// (`valu_scalar_write`: it is a VALU writing a scalar register.)
    fn forwards_partial_dst(&self, valu_scalar_write: bool) -> bool {
        let w = self.inst.words();
        match self.inst.encoding() {
            Encoding::Vop1Sdwa | Encoding::Vop2Sdwa => w.get(1).is_some_and(|d| (d >> 8) & 7 != 6),
            // VOP3B (carry-out forms) keep their SGPR destination there.
            Encoding::Vop3 => w[0] & 1 << 14 != 0 && !valu_scalar_write,
            Encoding::Vop3p => w.get(1).is_some_and(|d| d & 1 << 27 != 0),
            _ => false,
        }
    }

    /// The kind of XNACK soft clause a memory instruction joins: SMEM
    /// (`Some(true)`) or VMEM (`Some(false)`: buffer, image, flat, global,
    /// scratch).
    fn clause_kind(&self) -> Option<bool> {
        match self.inst.encoding() {
            Encoding::Smem => Some(true),
            _ if self.is_vmem() => Some(false),
            _ => None,
        }
    }

    /// Whether a memory instruction writes memory (stores, atomics, a
    /// buffer load into LDS).
    fn may_store(&self) -> bool {
        let lds_dma =
            self.inst.encoding() == Encoding::Mubuf && self.inst.words()[0] & 1 << 16 != 0;
        self.kind & STORE_NAMED != 0 || lds_dma
    }

    fn writes_any_read_by(&self, r: &Facts) -> bool {
        self.used()
            .iter()
            .any(|u| u.access.writes() && r.reads(&u.register, None))
    }

    fn is_lane_op(&self) -> bool {
        self.kind & LANE_OP != 0
    }

    /// Wait states it gives to those after it.
    pub(super) fn wait_states(&self) -> u32 {
        u32::from(self.waits)
    }

    fn brief(&self) -> Brief {
        Brief {
            kind: self.kind,
            affects: self.affects,
            waits: self.waits,
            unknown: self.unknown,
        }
    }

    /// The reader kinds some rule may ask wait states of after it, on
    /// target `t` (see [`Facts::affected_readers`]).
    pub(super) fn affects(&self, t: Target) -> u32 {
        self.affects[usize::from(gfx942(t))]
    }

    /// Whether it is an `s_swappc_b64` (a callee runs after it).
    pub(super) fn is_call(&self) -> bool {
        self.kind & SWAPPC != 0
    }

    /// Whether some rule may ask wait states before it (after some writer
    /// or after unknown code).
    pub(super) fn may_read(&self) -> bool {
        self.kind & MAY_READ != 0
    }

    fn writes(&self, file: RegFile) -> std::vec::IntoIter<inlay_isa::Register> {
        let used = self.used();
        let written = used
            .iter()
            .filter(|u| u.access.writes() && u.register.file == file)
            .map(|u| u.register);
        written.collect::<Vec<_>>().into_iter()
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
        // GDS reads M0 without naming it (the DS word's bit 16).
        let gds = self.inst.encoding() == Encoding::Ds && self.inst.words()[0] & 1 << 16 != 0;
        self.kind & M0_NAMED != 0 || gds || self.reads.s & M0_BIT != 0 && !self.is_salu()
    }

    /// Vector registers of a VMEM instruction's data wider than 64 bits
    /// (stores and atomics, with or without a returned value). Addresses
    /// are at most 64 bits except an image's, which are counted too:
    /// conservative, like a MUBUF store with an SGPR `soffset`, which
    /// LLVM exempts.
    fn wide_store_data(&self) -> std::vec::IntoIter<inlay_isa::Register> {
        let vmem = self.is_vmem();
        let used = self.used();
        let data = used
            .iter()
            .filter(|u| {
                vmem && u.access == Access::Read
                    && matches!(u.register.file, RegFile::Vgpr | RegFile::Agpr)
                    && u.register.count > 2
            })
            .map(|u| u.register);
        data.collect::<Vec<_>>().into_iter()
    }
}

/// The kinds an instruction has by its opcode and encoding alone (the
/// same for every instruction of one opcode: [`FactsTable`] keeps them).
fn opcode_kinds(inst: &Instruction) -> u32 {
    use Encoding::*;
    let name = inst.mnemonic();
    let enc = inst.encoding();
    let mut kind = 0;
    let mut flag = |on: bool, k: u32| {
        if on {
            kind |= k;
        }
    };
    let valu = matches!(
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
    );
    flag(valu, VALU);
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
    let trans = [
        "v_exp_", "v_log_", "v_rcp_", "v_rsq_", "v_sqrt_", "v_sin_", "v_cos_",
    ];
    flag(valu && trans.iter().any(|p| name.starts_with(p)), TRANS);
    // s_sendmsg, s_ttracedata and LDS add-TID read M0 without naming it.
    flag(
        name.starts_with("s_sendmsg")
            || name.starts_with("s_movrel")
            || name == "s_ttracedata"
            || name.contains("addtid"),
        M0_NAMED,
    );
    flag(
        name.contains("store") || name.contains("atomic"),
        STORE_NAMED,
    );
    kind
}

/// The rules LLVM applies only to gfx940-gfx942 (`hasVDecCoExecHazard`;
/// llc-19 puts no nop between `v_readfirstlane` and a VALU reading its
/// SGPR for gfx90a).
fn gfx942(t: Target) -> bool {
    t == Target::Gfx942
}

/// Wait states `r` needs after `w` (0: no rule applies).
pub fn required(t: Target, w: &Facts, r: &Facts) -> u32 {
    if w.kind & MAY_WRITE == 0 || r.kind & MAY_READ == 0 || w.affects(t) & r.kind == 0 {
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
            if rk & LANE_OP != 0 && scalar & r.lane_select != 0 {
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
        if rk & (MFMA | ACC_WRITE | READLANE) != 0 && w.writes.meets_v(&r.reads) {
            if rk & (MFMA | ACC_WRITE) != 0 {
                at_least(2);
            }
            if gfx942(t) && rk & READLANE != 0 {
                at_least(1);
            }
        }
        let late = wk & TRANS != 0 && rk & TRANS == 0 || wk & PARTIAL_DST != 0;
        if gfx942(t) && late && rk & VALU != 0 && w.writes.meets_v(&r.reads) {
            at_least(1);
        }
    }
    // Any write of a VGPR (a load's too), then a DPP instruction naming
    // it (its `old` destination included): 2.
    if rk & DPP != 0
        && w.writes.v[..4]
            .iter()
            .zip(r.reads.v[..4].iter().zip(&r.writes.v[..4]))
            .any(|(a, (b, c))| a & (b | c) != 0)
    {
        at_least(2);
    }
    if wk & MFMA != 0
        && (w.writes.meets_v(&r.reads) || w.writes.meets_v(&r.writes) || w.reads.meets_v(&r.writes))
    {
        at_least(MAX_WAIT_STATES);
    }
    if wk & SALU != 0 && w.writes.s & M0_BIT != 0 && rk & M0_READER != 0 {
        at_least(1);
    }
    if wk & SETREG != 0 && rk & (GETREG | SETREG) != 0 && w.hw_writes & r.hw_touches != 0 {
        at_least(2);
    }
    if rk & VALU != 0 && w.wide_store.meets_v(&r.writes) {
        at_least(if gfx942(t) { 2 } else { 1 });
    }
    need
}

/// Whether a soft clause holding `w` and, after it, `r` (adjacent, or
/// with only memory instructions of their kind between) breaks
/// replay: `w` writes a register and `r` stores, or reads what `w` wrote,
/// or overwrites what it reads itself; or `r` overwrites what `w` read.
fn soft_clause_hazard(w: &Facts, r: &Facts) -> bool {
    if w.clause_kind().is_none() || w.clause_kind() != r.clause_kind() {
        return false;
    }
    if !(w.exact && r.exact) {
        return soft_clause_hazard_listed(w, r);
    }
    w.kind & WRITES != 0
        && (r.kind & STORES != 0 || w.writes.meets(&r.reads) || r.writes.meets(&r.reads))
        || r.writes.meets(&w.reads)
}

/// [`soft_clause_hazard`] register by register.
fn soft_clause_hazard_listed(w: &Facts, r: &Facts) -> bool {
    let w_writes = w.used().iter().any(|u| u.access.writes());
    w_writes && (r.may_store() || w.writes_any_read_by(r) || r.writes_any_read_by(r))
        || r.writes_any_read_by(w)
}

/// Wait states `r` needs after `w` when `dist` wait states lie between
/// them and `run` says whether all of them are memory instructions of
/// `r`'s clause kind (see [`continues_clause`]): [`required`], and one
/// more than `dist` when the two would share a soft clause that breaks
/// replay (any instruction of another kind between them fixes it).
pub fn required_at(t: Target, w: &Facts, r: &Facts, dist: u32, run: bool) -> u32 {
    let need = required(t, w, r);
    if run && soft_clause_hazard(w, r) {
        need.max(dist + 1)
    } else {
        need
    }
}

/// Whether the soft clause `r` would join still reaches back past `i`.
#[inline]
pub fn continues_clause(i: &Facts, r: &Facts) -> bool {
    let clause = CLAUSE_SMEM | CLAUSE_VMEM;
    i.kind & clause != 0 && i.kind & clause == r.kind & clause
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
            if (r.is_mfma() || r.name() == "v_accvgpr_write_b32") && r.reads(&v, None) {
                at_least(2);
            }
            if gfx942(t)
                && matches!(r.name(), "v_readlane_b32" | "v_readfirstlane_b32")
                && r.reads(&v, None)
            {
                at_least(1);
            }
            let late = w.is_trans() && !r.is_trans() || w.kind & PARTIAL_DST != 0;
            if gfx942(t) && late && r.is_valu() && r.reads(&v, None) {
                at_least(1);
            }
        }
    }
    // Any write of a VGPR (a load's too), then a DPP instruction naming
    // it (its `old` destination included): 2.
    for v in w.writes(RegFile::Vgpr) {
        if r.inst.encoding().is_dpp() && r.touches(&v) {
            at_least(2);
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
                at_least(if gfx942(t) { 2 } else { 1 });
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
    let writes_vector = r
        .used()
        .iter()
        .any(|u| u.access.writes() && matches!(u.register.file, RegFile::Vgpr | RegFile::Agpr));
    if gfx942(t) && r.is_valu() && writes_vector {
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
        let (mut dist, mut run) = (0, true);
        for q in (start..p).rev() {
            if dist >= MAX_WAIT_STATES && !run {
                break;
            }
            if *inserted || stream[q].1 {
                let need = required_at(t, &facts[q], &facts[p], dist, run);
                if need > dist {
                    out.push(Violation {
                        writer: q,
                        reader: p,
                        had: dist,
                        needed: need,
                    });
                }
            }
            run &= continues_clause(&facts[q], &facts[p]);
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
    /// What the walk asks of it at every point it is placed, found once:
    /// its wait states in all (`before[ids.len()]`), those from its start
    /// to just past its last call, the soft-clause kinds of its last
    /// instruction, and those every instruction of it has.
    total: u32,
    past_last_call: Option<u32>,
    last_clauses: u32,
    clauses_throughout: u32,
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
    /// How many of its first instructions are SMEM, and VMEM, ones (a
    /// soft clause a reader in it joins may reach back past its start).
    clause_prefix: [u32; 2],
    /// What its head (the readers a slot before it can help: within
    /// reach of its start, before its first call) asks of what precedes
    /// it: the readers' kinds together, the soft-clause kinds of those
    /// in a clause reaching its start, and the most wait states after
    /// unknown code any lacks from its start (without MFMAs in the
    /// program, and with).
    head_kinds: u32,
    head_clauses: u32,
    head_unknown: [u32; 2],
    /// For each kind (a bit) of `head_kinds`, the wait states from its
    /// start to its first head reader of that kind (less than
    /// [`MAX_WAIT_STATES`]), indexed by the bit.
    head_nearest: [u8; 32],
    /// For each reader kind (a bit) some writer of `writers` concerns, the
    /// wait states back from its end to the nearest such writer: on
    /// targets other than gfx942, and on gfx942.
    nearest_writers: [Vec<(u8, u32)>; 2],
    /// The kinds `nearest_writers` holds, as masks.
    nearest_kinds: [u32; 2],
}

impl Run {
    pub(super) fn new(ids: Vec<u32>, briefs: &[Brief]) -> Run {
        let mut before = Vec::with_capacity(ids.len() + 1);
        // (Sized up front: a call at every instruction builds hundreds of
        // runs, and their lists grew a few times each.)
        let (mut calls, mut readers) = (Vec::new(), Vec::with_capacity(ids.len()));
        let mut at = 0u32;
        for (k, &id) in ids.iter().enumerate() {
            let f = &briefs[id as usize];
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
            quiet = Quiet::after(quiet, &briefs[id as usize], true);
        }
        let (mut writers, mut call_from_end) = (Vec::with_capacity(ids.len().min(32)), None);
        let mut d = 0u32;
        for &id in ids.iter().rev() {
            let f = &briefs[id as usize];
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
        let clause_prefix = [CLAUSE_SMEM, CLAUSE_VMEM].map(|k| {
            ids.iter()
                .take_while(|&&id| briefs[id as usize].kind & k != 0)
                .count() as u32
        });
        let nearest_writers = [0, 1].map(|target| {
            // `writers` runs back from the end: the first with a bit is
            // the nearest.
            let mut seen = 0u32;
            let mut nearest: Vec<(u8, u32)> = Vec::with_capacity(32);
            for &(d, id) in &writers {
                let mut bits = briefs[id as usize].affects[target] & !seen;
                seen |= bits;
                while bits != 0 {
                    nearest.push((bits.trailing_zeros() as u8, d));
                    bits &= bits - 1;
                }
            }
            nearest
        });
        let nearest_kinds = [0, 1].map(|target| {
            nearest_writers[target]
                .iter()
                .fold(0, |kinds, &(bit, _)| kinds | 1 << bit)
        });
        let (mut head_kinds, mut head_clauses, mut head_unknown) = (0, 0, [0u32; 2]);
        let mut head_nearest = [0u8; 32];
        let first_call = calls.first().copied().unwrap_or(u32::MAX);
        for &k in readers.iter().take_while(|&&k| k <= first_call) {
            let f = &briefs[ids[k as usize] as usize];
            let at = before[k as usize];
            for (c, n) in [CLAUSE_SMEM, CLAUSE_VMEM].into_iter().zip(clause_prefix) {
                if n >= k {
                    head_clauses |= f.kind & c;
                }
            }
            if at < MAX_WAIT_STATES {
                // (Readers come in order: the first with a kind is the
                // nearest.)
                let mut new = f.kind & !head_kinds;
                while new != 0 {
                    head_nearest[new.trailing_zeros() as usize] = at as u8;
                    new &= new - 1;
                }
                head_kinds |= f.kind;
                for (u, need) in head_unknown.iter_mut().zip(f.unknown) {
                    *u = (*u).max(u32::from(need).saturating_sub(at));
                }
            }
        }
        let total = before[ids.len()];
        let past_last_call = calls.last().map(|&c| before[c as usize + 1]);
        let last_clauses = ids
            .last()
            .map_or(0, |&id| briefs[id as usize].kind & CLAUSES);
        let mut clauses_throughout = 0;
        for (c, n) in [CLAUSE_SMEM, CLAUSE_VMEM].into_iter().zip(clause_prefix) {
            if n as usize == ids.len() {
                clauses_throughout |= c;
            }
        }
        Run {
            ids,
            before,
            calls,
            total,
            past_last_call,
            last_clauses,
            clauses_throughout,
            readers,
            quiet,
            writers,
            call_from_end,
            clause_prefix,
            head_kinds,
            head_clauses,
            head_unknown,
            head_nearest,
            nearest_writers,
            nearest_kinds,
        }
    }

    /// Whether no reader of its head can lack wait states after
    /// `history` (found), `dist` wait states from the slot (its pad
    /// included), soft clauses aside.
    fn head_is_quiet(&self, history: &History, dist: u32, mfma: bool) -> bool {
        let unknown = self.head_unknown[usize::from(mfma)];
        history.affects & self.head_kinds == 0
            && history
                .unknown
                .is_none_or(|u| u.saturating_add(dist) >= unknown)
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
    fn after(before: Option<u32>, f: &Brief, inserted: bool) -> Option<u32> {
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
            None => before.map(|d| d.saturating_add(run.total)),
        }
    }
}

/// The facts of a stream's instructions, each distinct instruction's
/// computed once (a call at every instruction repeats a few hundred).
#[derive(Default)]
pub(super) struct FactsTable {
    pub(super) facts: Vec<Facts>,
    /// The same, what a search reads of every instruction it passes.
    pub(super) briefs: Vec<Brief>,
    /// [`opcode_kinds`] by opcode (the address of its description) and
    /// target.
    opcodes: std::collections::HashMap<(usize, u8), u32, crate::fast_hash::FastHash>,
    ids: std::collections::HashMap<(u64, u64), u32, crate::fast_hash::FastHash>,
}

impl FactsTable {
    /// Room for `n` more distinct instructions.
    pub(super) fn reserve(&mut self, n: usize) {
        self.facts.reserve(n);
        self.briefs.reserve(n);
        self.ids.reserve(n);
    }

    /// The index of `inst`'s facts.
    pub(super) fn id(&mut self, inst: &Instruction) -> u32 {
        let key = Self::key(inst);
        match self.ids.get(&key) {
            Some(&id) => id,
            None => self.insert(key, inst, info(inst).used_registers()),
        }
    }

    /// The index of `inst`'s facts, given its registers (inlay-isa's
    /// `info`) when they are new.
    pub(super) fn id_with(&mut self, inst: &Instruction, used: &[UsedRegister]) -> u32 {
        let key = Self::key(inst);
        match self.ids.get(&key) {
            Some(&id) => id,
            None => self.insert(key, inst, used),
        }
    }

    /// Adds the facts of `inst`, whose registers are `used`, as a new
    /// entry without looking for an equal one: for instructions the
    /// caller knows are distinct (the application's distinct encodings).
    /// An equal entry already there is harmless: both say the same.
    pub(super) fn add(&mut self, inst: &Instruction, used: &[UsedRegister]) -> u32 {
        let kinds = self.opcode_kinds(inst);
        let id = self.facts.len() as u32;
        self.facts.push(Facts::blank(inst));
        let f = self.facts.last_mut().expect("just pushed");
        f.fill(used, kinds);
        self.briefs.push(f.brief());
        id
    }

    fn key(inst: &Instruction) -> (u64, u64) {
        let w = inst.words();
        let word = |k: usize| u64::from(w.get(k).copied().unwrap_or(0));
        (
            word(0) | word(1) << 32,
            inst.len() as u64 | (inst.encoding() as u64) << 8 | (inst.target() as u64) << 16,
        )
    }

    fn opcode_kinds(&mut self, inst: &Instruction) -> u32 {
        let opcode = (
            std::ptr::from_ref(inst.desc()) as usize,
            inst.target() as u8,
        );
        *self
            .opcodes
            .entry(opcode)
            .or_insert_with(|| opcode_kinds(inst))
    }

    /// Adds the facts of `inst`, whose registers are `used`, and finds
    /// them by `key` from now on.
    fn insert(&mut self, key: (u64, u64), inst: &Instruction, used: &[UsedRegister]) -> u32 {
        let id = self.add(inst, used);
        self.ids.insert(key, id);
        id
    }
}

/// The control flow of the stream's blocks: for each block, the stream
/// position just past its last node (what runs before a successor), its
/// predecessors, and whether nothing known runs before it.
pub(super) struct Flow<'a> {
    pub(super) block_end: Vec<usize>,
    pub(super) preds: Vec<&'a [usize]>,
    /// The block runs right after the node before its label (kernel
    /// entry, whose preamble precedes it).
    pub(super) linear_entry: Vec<bool>,
}

/// The stream [`pad`] searches: its nodes, the facts and runs they name.
pub(super) struct Stream<'a> {
    pub(super) nodes: &'a [Node],
    pub(super) facts: &'a [Facts],
    pub(super) briefs: &'a [Brief],
    pub(super) runs: &'a [Run],
    pub(super) flow: &'a Flow<'a>,
    /// What [`quiet_before`] needs of each block, if gathered while the
    /// nodes were built ([`Nodes`]); else found from the nodes.
    pub(super) tails: Option<&'a BlockTails>,
}

/// Per block: the wait states back from its end to the nearest inserted
/// writer or call (see [`Quiet`]), and its wait states in all.
#[derive(Debug, PartialEq)]
pub(super) struct BlockTails {
    tail: Vec<Option<u32>>,
    total: Vec<u32>,
}

impl BlockTails {
    fn new(blocks: usize) -> BlockTails {
        BlockTails {
            tail: vec![None; blocks],
            total: vec![0; blocks],
        }
    }

    fn get(&self, b: usize) -> Tail {
        Tail {
            tail: self.tail[b],
            total: self.total[b],
        }
    }

    fn set(&mut self, b: usize, t: Tail) {
        (self.tail[b], self.total[b]) = (t.tail, t.total);
    }

    /// Found by walking `nodes` (each node belongs to the block whose
    /// start came last before it).
    fn of(nodes: &[Node], briefs: &[Brief], runs: &[Run], blocks: usize) -> BlockTails {
        let mut tails = BlockTails::new(blocks);
        let mut at: Option<usize> = None;
        for n in nodes {
            match (*n, at) {
                (Node::BlockStart(b), _) => at = Some(b as usize).filter(|&b| b < blocks),
                (Node::Run(r), Some(b)) => {
                    let mut t = tails.get(b);
                    t.run(&runs[r as usize]);
                    tails.set(b, t);
                }
                (Node::Inst { facts, inserted }, Some(b)) => {
                    let mut t = tails.get(b);
                    t.inst(&briefs[facts as usize], inserted);
                    tails.set(b, t);
                }
                _ => {}
            }
        }
        tails
    }
}

/// One block's entry of [`BlockTails`], as its nodes are met.
#[derive(Clone, Copy, Default)]
struct Tail {
    tail: Option<u32>,
    total: u32,
}

impl Tail {
    fn inst(&mut self, f: &Brief, inserted: bool) {
        self.tail = Quiet::after(self.tail, f, inserted);
        self.total = self.total.saturating_add(f.wait_states());
    }

    fn run(&mut self, run: &Run) {
        self.tail = Quiet::after_run(self.tail, run);
        self.total = self.total.saturating_add(run.total);
    }
}

/// A stream's nodes as they are built, with each block's [`BlockTails`]
/// gathered on the way (a second walk over every node took 0.3 ms of the
/// seams' 2 with a call at every instruction of a 20,000-instruction
/// kernel).
pub(super) struct Nodes {
    pub(super) nodes: Vec<Node>,
    block: Option<usize>,
    tails: BlockTails,
    /// The current block's entry, kept here until the next block starts
    /// (not looked up in `tails` at every node).
    current: Tail,
}

impl Nodes {
    pub(super) fn new(capacity: usize, blocks: usize) -> Nodes {
        Nodes {
            nodes: Vec::with_capacity(capacity),
            block: None,
            tails: BlockTails::new(blocks),
            current: Tail::default(),
        }
    }

    /// Puts the current block's tail and total in `tails`.
    fn flush(&mut self) {
        if let Some(b) = self.block {
            self.tails.set(b, self.current);
        }
    }

    pub(super) fn len(&self) -> usize {
        self.nodes.len()
    }

    #[inline]
    pub(super) fn block(&mut self, b: usize) {
        self.nodes.push(Node::BlockStart(b as u32));
        self.flush();
        self.block = Some(b).filter(|&b| b < self.tails.tail.len());
        if let Some(b) = self.block {
            self.current = self.tails.get(b);
        }
    }

    #[inline]
    pub(super) fn slot(&mut self, s: usize) {
        self.nodes.push(Node::Slot(s as u32));
    }

    #[inline]
    pub(super) fn inst(&mut self, facts: u32, inserted: bool, briefs: &[Brief]) {
        self.nodes.push(Node::Inst { facts, inserted });
        if self.block.is_some() {
            self.current.inst(&briefs[facts as usize], inserted);
        }
    }

    #[inline]
    pub(super) fn run(&mut self, r: u32, runs: &[Run]) {
        self.nodes.push(Node::Run(r));
        if self.block.is_some() {
            self.current.run(&runs[r as usize]);
        }
    }

    pub(super) fn finish(mut self) -> (Vec<Node>, BlockTails) {
        self.flush();
        (self.nodes, self.tails)
    }
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
    // The soft-clause kinds every instruction since the slot has.
    let mut clause = CLAUSES;
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
    // What lies before the current slot, found once for all its readers.
    let mut history = History::default();
    // Which inserted writers an application reader may meet: see
    // `Recent`.
    let mut recent = Recent::new(t);
    for (p, n) in stream.nodes.iter().enumerate() {
        match *n {
            Node::Slot(s) => {
                slot = Some((s as usize, p));
                history.found = false;
                (since_slot, since_call, clause) = (0, None, CLAUSES);
            }
            Node::BlockStart(b) => {
                slot = None;
                (since_slot, since_call, clause) = (0, None, CLAUSES);
                (quiet, label, application) = (None, Some(b as usize), 0);
                recent.label();
            }
            Node::Inst {
                facts: id,
                inserted,
            } => {
                // (What the walk reads of every instruction is its brief;
                // its facts only when it is searched.)
                let brief = &stream.briefs[id as usize];
                let reach = match (quiet, label) {
                    (Some(d), _) => d,
                    (None, Some(b)) => application.saturating_add(quiet_before[b]),
                    (None, None) => 0,
                };
                // (Soft clauses reach further, so memory readers are searched.)
                let unconcerned = reach >= MAX_WAIT_STATES || !recent.may_concern(brief.kind);
                let far = !inserted && unconcerned && brief.kind & CLAUSES == 0;
                recent.inst(brief, inserted);
                quiet = Quiet::after(quiet, brief, inserted);
                application = application.saturating_add(brief.wait_states());
                if let Some((s, at)) = slot.filter(|_| !far) {
                    let reader = &stream.facts[id as usize];
                    let need = slot_need(
                        t,
                        stream,
                        (&pads, &mut history),
                        (reader, inserted, mfma),
                        at,
                        (since_slot, reader.kind & clause & CLAUSES != 0),
                        since_call,
                    );
                    pads[s] += need;
                }
                clause &= brief.kind;
                since_slot = since_slot.saturating_add(brief.wait_states());
                if brief.is_call() {
                    since_call = Some(since_slot);
                }
            }
            Node::Run(r) => {
                let run = &stream.runs[r as usize];
                // A run right after its slot, with nothing within reach
                // before that concerns its head (nor a label, nor a call
                // too close),
                // nor a soft clause its head may join, asks the slot
                // nothing: what the search below would find, seen without
                // searching.
                let head_unconcerned = since_slot == 0
                    && clause == CLAUSES
                    && (!mfma || run.calls.is_empty())
                    && slot.is_some_and(|(s, _)| {
                        run.head_clauses & recent.last_clauses == 0 || pads[s] > 0
                    })
                    && recent.quiet_for(run, mfma);
                recent.run(run);
                quiet = Quiet::after_run(quiet, run);
                application = application.saturating_add(run.total);
                if let Some((s, at)) = slot.filter(|_| !head_unconcerned) {
                    // With no call since the slot and no soft clause
                    // reaching back past it, the readers of the run's head
                    // (before its first call: those after it are padded
                    // inside the run) meet what lies before the slot, found
                    // once; a head that asks nothing of it, not even that.
                    let plain = since_call.is_none() && (!mfma || run.calls.is_empty()) && {
                        if !history.found {
                            history.find(t, stream, &pads, at);
                        }
                        run.head_clauses & clause & history.clauses == 0 || pads[s] > 0
                    };
                    if plain {
                        let dist = since_slot.saturating_add(pads[s]);
                        if !run.head_is_quiet(&history, dist, mfma) {
                            let first_call = run.calls.first().copied().unwrap_or(u32::MAX);
                            for &k in run.readers.iter().take_while(|&&k| k <= first_call) {
                                let dist = since_slot.saturating_add(run.before[k as usize]);
                                if dist >= MAX_WAIT_STATES {
                                    break;
                                }
                                let id = run.ids[k as usize] as usize;
                                let at = dist.saturating_add(pads[s]);
                                // (Most ask nothing of the history: seen
                                // from the brief, the facts not read.)
                                let brief = &stream.briefs[id];
                                let unknown = u32::from(brief.unknown[usize::from(mfma)]);
                                if history.affects & brief.kind == 0
                                    && history
                                        .unknown
                                        .is_none_or(|u| u.saturating_add(at) >= unknown)
                                {
                                    continue;
                                }
                                let reader = &stream.facts[id];
                                pads[s] += history.lack(t, stream, (reader, true, mfma), at);
                            }
                        }
                    } else {
                        pad_run_readers(
                            t,
                            stream,
                            (&mut pads, &mut history),
                            (s, at),
                            run,
                            (since_slot, since_call, clause),
                            mfma,
                        );
                    }
                }
                clause &= run.clauses_throughout;
                if let Some(c) = run.past_last_call {
                    since_call = Some(since_slot.saturating_add(c));
                }
                since_slot = since_slot.saturating_add(run.total);
            }
        }
    }
    pads
}

/// The inserted writers an application reader may meet, by the reader
/// kinds they concern: for each kind, where the last such writer ended
/// (in wait states of the stream's instructions so far, pads left out:
/// they only add distance), and where the last call and label were. An
/// application reader's search meets only inserted writers, none before
/// a call, and through a label ones this cannot see.
///
/// It also keeps, for [`Recent::quiet_for`], the same for every writer,
/// inserted or not, and the soft-clause kinds of the last instruction.
struct Recent {
    target: usize,
    clock: u32,
    writer: [u32; 32],
    /// The kinds (bits of `writer`) whose last inserted writer is at or
    /// after the last call: the only ones `may_concern` need look at (the
    /// others' entries are stale or unset).
    since_call: u32,
    any_writer: [u32; 32],
    /// The kinds `any_writer` holds a writer of: the only ones
    /// `quiet_for` need look at (the others' entries are unset).
    any_bits: u32,
    last_clauses: u32,
    call: Option<u32>,
    label: Option<u32>,
}

impl Recent {
    fn new(t: Target) -> Recent {
        Recent {
            target: usize::from(gfx942(t)),
            clock: 0,
            writer: [0; 32],
            since_call: 0,
            any_writer: [0; 32],
            any_bits: 0,
            last_clauses: 0,
            call: None,
            label: None,
        }
    }

    fn within_reach(&self, at: Option<u32>) -> bool {
        at.is_some_and(|a| self.clock - a < MAX_WAIT_STATES)
    }

    /// Whether a reader of kinds `kind` here may meet an inserted writer
    /// whose rules concern it.
    fn may_concern(&self, kind: u32) -> bool {
        if self.within_reach(self.label) && self.label >= self.call {
            return true;
        }
        debug_assert!((0..32)
            .filter(|b| self.since_call & 1 << b != 0)
            .all(|b| Some(self.writer[b]) >= self.call));
        let mut bits = kind & self.since_call;
        while bits != 0 {
            let b = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            if self.within_reach(Some(self.writer[b])) {
                return true;
            }
        }
        false
    }

    /// Whether a search back from here for the head readers of `run`,
    /// were it to start here, would surely find nothing they lack: no
    /// label within reach, no call so close that the unknown code before
    /// its return may concern a head reader (the search ends there, as
    /// unknown one wait state before it), and no writer concerning a head
    /// reader's kind that close to it (pads left out: they only add
    /// distance).
    fn quiet_for(&self, run: &Run, mfma: bool) -> bool {
        if self.within_reach(self.label) {
            return false;
        }
        let after_call = self.call.filter(|_| self.within_reach(self.call));
        if after_call.is_some_and(|c| (self.clock - c + 1) < run.head_unknown[usize::from(mfma)]) {
            return false;
        }
        let mut bits = run.head_kinds & self.any_bits;
        while bits != 0 {
            let b = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            let at = u32::from(run.head_nearest[b]);
            if (self.clock - self.any_writer[b]).saturating_add(at) < MAX_WAIT_STATES {
                return false;
            }
        }
        true
    }

    fn concerns(writers: &mut [u32; 32], affects: u32, at: u32) {
        let mut bits = affects;
        while bits != 0 {
            let b = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            writers[b] = at;
        }
    }

    fn inst(&mut self, f: &Brief, inserted: bool) {
        self.clock = self.clock.saturating_add(f.wait_states());
        let affects = f.affects[self.target];
        if inserted {
            Self::concerns(&mut self.writer, affects, self.clock);
            self.since_call |= affects;
        }
        Self::concerns(&mut self.any_writer, affects, self.clock);
        self.any_bits |= affects;
        self.last_clauses = f.kind & CLAUSES;
        if f.is_call() {
            self.call = Some(self.clock);
            // (Only its own writes share the call's clock.)
            self.since_call = if inserted { affects } else { 0 };
        }
    }

    fn run(&mut self, run: &Run) {
        self.clock = self.clock.saturating_add(run.total);
        if !run.calls.is_empty() {
            // Its last call, or as far back as its writers were listed
            // (the run's start lies further back: every writer before it
            // is older).
            let back = run.call_from_end.unwrap_or(MAX_WAIT_STATES);
            self.call = Some(self.clock.saturating_sub(back));
            self.since_call = 0;
        }
        self.since_call |= run.nearest_kinds[self.target];
        self.any_bits |= run.nearest_kinds[self.target];
        for &(bit, d) in &run.nearest_writers[self.target] {
            let at = self.clock.saturating_sub(d);
            self.writer[usize::from(bit)] = at;
            self.any_writer[usize::from(bit)] = at;
        }
        if !run.ids.is_empty() {
            self.last_clauses = run.last_clauses;
        }
    }

    fn label(&mut self) {
        self.label = Some(self.clock);
    }
}

/// What the readers of `run` ask of slot `s` (at stream position `at`),
/// reader by reader: `since_slot` wait states after it, `since_call` past
/// the last call between, `clause` the soft-clause kinds of every
/// instruction since the slot.
fn pad_run_readers(
    t: Target,
    stream: &Stream<'_>,
    (pads, history): (&mut [u32], &mut History),
    (s, at): (usize, usize),
    run: &Run,
    (since_slot, since_call, clause): (u32, Option<u32>, u32),
    mfma: bool,
) {
    // Readers past what a slot can reach ask nothing: too far from it and
    // in no soft clause reaching it, or after a call of the run, whose own
    // padding put the wait states a callee's return asks (without MFMAs,
    // what the seam search would ask too).
    let clause_reach = run.clause_prefix[0].max(run.clause_prefix[1]);
    let first_call = run.calls.first().copied().unwrap_or(u32::MAX);
    for &k in &run.readers {
        let dist = since_slot.saturating_add(run.before[k as usize]);
        let out_of_reach = dist >= MAX_WAIT_STATES && k > clause_reach;
        if since_call.is_none() && !mfma && (out_of_reach || k > first_call) {
            break;
        }
        let reader = &stream.facts[run.ids[k as usize] as usize];
        let after_call = match run.calls.iter().rev().find(|&&c| c < k) {
            Some(&c) => Some(since_slot.saturating_add(run.before[c as usize + 1])),
            None => since_call,
        };
        let in_clause = [CLAUSE_SMEM, CLAUSE_VMEM]
            .into_iter()
            .zip(run.clause_prefix)
            .any(|(c, n)| reader.kind & clause & c != 0 && n >= k);
        let need = slot_need(
            t,
            stream,
            (pads, history),
            (reader, true, mfma),
            at,
            (dist, in_clause),
            after_call,
        );
        pads[s] += need;
    }
}

/// For each block, the fewest wait states of application instructions
/// on any path back from its label to inserted code, at most
/// [`MAX_WAIT_STATES`] (paths ending at a call or at unknown history
/// count as the most; the kernel's entry, which the preamble precedes,
/// as none).
fn quiet_before(stream: &Stream<'_>) -> Vec<u32> {
    let flow = stream.flow;
    let blocks = flow.preds.len();
    let found;
    let tails = match stream.tails {
        Some(t) => {
            debug_assert!(
                *t == BlockTails::of(stream.nodes, stream.briefs, stream.runs, blocks),
                "the block tails gathered differ from the nodes'"
            );
            t
        }
        None => {
            found = BlockTails::of(stream.nodes, stream.briefs, stream.runs, blocks);
            &found
        }
    };
    let (tail, total) = (&tails.tail, &tails.total);
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
            for &pb in flow.preds[b] {
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
/// since the slot just past the last call between them; `history`, what
/// lies before the slot, is found by the first reader that asks.
fn slot_need(
    t: Target,
    stream: &Stream<'_>,
    (pads, history): (&[u32], &mut History),
    (reader, reader_inserted, mfma): (&Facts, bool, bool),
    slot_pos: usize,
    (dist, run): (u32, bool),
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
        // A soft clause may reach back past the slot: instruction by
        // instruction.
        None if run => walk.back(slot_pos + 1, dist, run, 0),
        None if dist < MAX_WAIT_STATES => {
            if !history.found {
                history.find(t, stream, pads, slot_pos);
            }
            let slot = match stream.nodes[slot_pos] {
                Node::Slot(s) => pads[s as usize],
                _ => 0,
            };
            let reader = (reader, reader_inserted, mfma);
            walk.worst = walk
                .worst
                .max(history.lack(t, stream, reader, dist.saturating_add(slot)));
        }
        None => {}
    }
    walk.worst
}

/// What lies before a slot as far as any rule reaches, on every path:
/// the instructions some rule may concern as writers, and the nearest
/// unknown history (a callee ran, or nothing known precedes).
#[derive(Default)]
struct History {
    /// Whether it holds what lies before the current slot.
    found: bool,
    /// Wait states from the slot (its own pad left out), facts, and
    /// whether it is inserted.
    writers: Vec<(u32, u32, bool)>,
    unknown: Option<u32>,
    /// The reader kinds the writers' rules concern, together.
    affects: u32,
    /// The soft-clause kinds of the instructions right before the slot
    /// (on any path, no nop between): those a reader's clause may reach
    /// back into.
    clauses: u32,
}

impl History {
    /// Finds what lies before the slot at stream position `slot_pos`.
    fn find(&mut self, t: Target, stream: &Stream<'_>, pads: &[u32], slot_pos: usize) {
        self.writers.clear();
        (self.unknown, self.affects, self.clauses) = (None, 0, 0);
        self.back(t, stream, pads, slot_pos, 0, 0, true);
        self.found = true;
    }

    fn writer(&mut self, t: Target, stream: &Stream<'_>, dist: u32, id: u32, inserted: bool) {
        let affects = stream.briefs[id as usize].affects(t);
        if affects != 0 {
            self.affects |= affects;
            self.writers.push((dist, id, inserted));
        }
    }

    fn unknown(&mut self, dist: u32) {
        self.unknown = Some(self.unknown.map_or(dist, |u| u.min(dist)));
    }

    /// Every path back from `end` as far as any rule reaches, for no
    /// reader in particular (soft clauses aside: a reader one may reach
    /// walks those itself, see [`Walk::back`]); `fresh`: no instruction or
    /// nop met yet on this path.
    #[allow(clippy::too_many_arguments)]
    fn back(
        &mut self,
        t: Target,
        stream: &Stream<'_>,
        pads: &[u32],
        end: usize,
        mut dist: u32,
        depth: u32,
        mut fresh: bool,
    ) {
        let mut q = end;
        while q > 0 && dist < MAX_WAIT_STATES {
            q -= 1;
            match stream.nodes[q] {
                Node::Slot(s) => {
                    dist += pads[s as usize];
                    fresh &= pads[s as usize] == 0;
                }
                Node::Inst { facts, inserted } => {
                    let w = &stream.briefs[facts as usize];
                    if fresh {
                        self.clauses |= w.kind & CLAUSES;
                        fresh = false;
                    }
                    self.writer(t, stream, dist, facts, inserted);
                    if w.is_call() {
                        self.unknown(dist + 1);
                        return;
                    }
                    dist += w.wait_states();
                }
                Node::Run(r) => {
                    let run = &stream.runs[r as usize];
                    if fresh && !run.ids.is_empty() {
                        self.clauses |= run.last_clauses;
                        fresh = false;
                    }
                    for &(d, id) in &run.writers {
                        let at = dist.saturating_add(d);
                        if at >= MAX_WAIT_STATES {
                            return;
                        }
                        self.writer(t, stream, at, id, true);
                    }
                    if let Some(d) = run.call_from_end {
                        let at = dist.saturating_add(d);
                        if at < MAX_WAIT_STATES {
                            self.unknown(at + 1);
                        }
                        return;
                    }
                    dist = dist.saturating_add(run.total);
                }
                Node::BlockStart(b) => {
                    let (b, flow) = (b as usize, stream.flow);
                    if depth > 64 || !flow.linear_entry[b] && flow.preds[b].is_empty() {
                        self.unknown(dist);
                        return;
                    }
                    for &pb in flow.preds[b] {
                        self.back(t, stream, pads, flow.block_end[pb], dist, depth + 1, fresh);
                    }
                    if !flow.linear_entry[b] {
                        return;
                    }
                }
            }
        }
    }

    /// What a reader (`reader_inserted` or not), `dist` wait states past
    /// the slot, lacks.
    fn lack(
        &self,
        t: Target,
        stream: &Stream<'_>,
        (reader, reader_inserted, mfma): (&Facts, bool, bool),
        dist: u32,
    ) -> u32 {
        let mut worst = 0;
        let mut found = |at: u32, need: u32| worst = worst.max(need.saturating_sub(at));
        if self.affects & reader.kind != 0 {
            for &(d, id, inserted) in &self.writers {
                let at = dist.saturating_add(d);
                let concerned = stream.briefs[id as usize].affects(t) & reader.kind != 0;
                if at < MAX_WAIT_STATES && concerned && (inserted || reader_inserted) {
                    found(at, required(t, &stream.facts[id as usize], reader));
                }
            }
        }
        if let Some(u) = self.unknown.filter(|_| reader_inserted) {
            found(
                dist.saturating_add(u),
                required_after_unknown(t, reader, mfma),
            );
        }
        worst
    }
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
    /// the reader (`run`: all of them memory instructions of the reader's
    /// soft-clause kind); `depth` bounds the paths followed through labels.
    fn back(&mut self, end: usize, mut dist: u32, mut run: bool, depth: u32) {
        let (t, stream) = (self.t, self.stream);
        let mut q = end;
        while q > 0 && (dist < MAX_WAIT_STATES || run) {
            if !run || self.reader.kind & CLAUSES == 0 {
                // No soft clause reaches further back: the reader meets
                // what lies before, as a slot's readers do.
                let mut before = History::default();
                before.back(t, stream, self.pads, q, 0, depth, false);
                let reader = (self.reader, self.reader_inserted, self.mfma);
                self.worst = self.worst.max(before.lack(t, stream, reader, dist));
                return;
            }
            q -= 1;
            match stream.nodes[q] {
                Node::Slot(s) => {
                    dist += self.pads[s as usize];
                    run &= self.pads[s as usize] == 0;
                }
                Node::Inst { facts, inserted } => {
                    let w = &stream.facts[facts as usize];
                    if !self.step(w, inserted, &mut dist, &mut run) {
                        return;
                    }
                }
                Node::Run(r) => {
                    // A soft clause may reach into it: one by one.
                    for &id in stream.runs[r as usize].ids.iter().rev() {
                        if !(dist < MAX_WAIT_STATES || run) {
                            return;
                        }
                        let w = &stream.facts[id as usize];
                        if !self.step(w, true, &mut dist, &mut run) {
                            return;
                        }
                    }
                }
                Node::BlockStart(b) => {
                    let (b, flow) = (b as usize, stream.flow);
                    if depth > 64 || !flow.linear_entry[b] && flow.preds[b].is_empty() {
                        self.unknown(dist);
                        return;
                    }
                    for &pb in flow.preds[b] {
                        self.back(flow.block_end[pb], dist, run, depth + 1);
                    }
                    if !flow.linear_entry[b] {
                        return;
                    }
                }
            }
        }
    }

    /// Looks at writer `w`, `dist` wait states before the reader, and
    /// moves past it; false when the search ends there (a call).
    fn step(&mut self, w: &Facts, inserted: bool, dist: &mut u32, run: &mut bool) -> bool {
        if inserted || self.reader_inserted {
            let need = required_at(self.t, w, self.reader, *dist, *run);
            self.found(*dist, need);
        }
        if w.is_call() {
            // The callee ran between: unknown history.
            self.unknown(*dist + 1);
            return false;
        }
        *run &= continues_clause(w, self.reader);
        *dist += w.wait_states();
        true
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

    /// `program args` with `input` on its standard input (the LLVM tools
    /// scripts/install-deps installs).
    fn run_llvm(program: &str, args: &[&str], input: &str) -> std::process::Output {
        use std::io::Write;
        use std::process::{Command, Stdio};
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{program} (scripts/install-deps installs it): {e}"));
        if let Some(mut stdin) = child.stdin.take() {
            stdin
                .write_all(input.as_bytes())
                .expect("write to the tool");
        }
        child.wait_with_output().expect("the tool's output")
    }

    fn asm(t: Target, text: &str) -> Vec<Instruction> {
        let cpu = format!("-mcpu={}", t.name());
        let out = run_llvm(
            "llvm-mc-19",
            &["-triple=amdgcn-amd-amdhsa", &cpu, "--show-encoding"],
            text,
        );
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
            // Any writer, and the DPP's old destination value too
            // (llc-19 pads each of these by 2).
            let dpp = "$vgpr0 = V_MOV_B32_dpp $vgpr0, $vgpr1, 177, 15, 15, 0, implicit $exec";
            for (w, w_mir) in [
                (
                    "ds_read_b32 v1, v7",
                    "$vgpr1 = DS_READ_B32 $vgpr7, 0, 0, implicit $m0, implicit $exec",
                ),
                (
                    "global_load_dword v1, v[4:5], off",
                    "$vgpr1 = GLOBAL_LOAD_DWORD $vgpr4_vgpr5, 0, 0, implicit $exec",
                ),
                (
                    "v_writelane_b32 v1, s0, 0",
                    "$vgpr1 = V_WRITELANE_B32 $sgpr0, 0, $vgpr1",
                ),
                (
                    "v_add_u32_e32 v0, v2, v3",
                    "$vgpr0 = V_ADD_U32_e32 $vgpr2, $vgpr3, implicit $exec",
                ),
            ] {
                assert_eq!(distance(t, w, r), llc_wait_states(t, w_mir, dpp), "{w}");
            }
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

    /// Wait states llc-19's hazard recognizer puts between two
    /// instructions given in MIR (`post-RA-hazard-rec`), XNACK on (as our
    /// rules assume): the oracle for the rules below.
    fn llc_wait_states(t: Target, writer: &str, reader: &str) -> u32 {
        let mir = format!(
            "---\nname: pair\nbody: |\n  bb.0:\n    {writer}\n    {reader}\n    S_ENDPGM 0\n...\n"
        );
        let cpu = format!("-mcpu={}", t.name());
        let args = [
            "-march=amdgcn",
            &cpu,
            "-mattr=+xnack",
            "-run-pass=post-RA-hazard-rec",
            "-x",
            "mir",
            "-",
            "-o",
            "-",
        ];
        let out = run_llvm("llc-19", &args, &mir);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{mir}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        text.lines()
            .filter_map(|l| l.trim().strip_prefix("S_NOP "))
            .map(|n| n.trim().parse::<u32>().unwrap() + 1)
            .sum()
    }

    #[test]
    fn gfx942_late_forwarding_matches_llc() {
        const MODE: &str = "implicit $mode, implicit $exec";
        // (writer asm, writer MIR, reader asm, reader MIR)
        let add = (
            "v_add_f32_e32 v2, v0, v3",
            format!("$vgpr2 = V_ADD_F32_e32 $vgpr0, $vgpr3, {MODE}"),
        );
        let exp = (
            "v_exp_f32_e32 v0, v1",
            format!("$vgpr0 = V_EXP_F32_e32 $vgpr1, {MODE}"),
        );
        let sqrt64 = (
            "v_sqrt_f64_e32 v[0:1], v[4:5]",
            format!("$vgpr0_vgpr1 = V_SQRT_F64_e32 $vgpr4_vgpr5, {MODE}"),
        );
        let word1 = (
            "v_mov_b32_sdwa v0, v1 dst_sel:WORD_1 dst_unused:UNUSED_PRESERVE src0_sel:DWORD",
            "$vgpr0 = V_MOV_B32_sdwa 0, $vgpr1, 0, 5, 2, 6, implicit $exec, implicit $vgpr0(tied-def 0)"
                .to_string(),
        );
        let dword = (
            "v_mov_b32_sdwa v0, v1 dst_sel:DWORD src0_sel:WORD_1",
            "$vgpr0 = V_MOV_B32_sdwa 0, $vgpr1, 0, 6, 2, 5, implicit $exec, implicit $vgpr0(tied-def 0)"
                .to_string(),
        );
        let opsel = (
            "v_mad_u16 v0, v1, v6, v3 op_sel:[0,0,0,1]",
            "$vgpr0 = V_MAD_U16_gfx9_e64 8, $vgpr1, 0, $vgpr6, 0, $vgpr3, 0, 0, implicit $exec"
                .to_string(),
        );
        let pk = (
            "v_pk_add_f16 v0, v1, v6",
            format!("$vgpr0 = V_PK_ADD_F16 8, $vgpr1, 8, $vgpr6, 0, 0, 0, 0, 0, {MODE}"),
        );
        let carry = (
            "v_add_co_u32_e64 v0, s[64:65], v1, v6",
            "$vgpr0, $sgpr64_sgpr65 = V_ADD_CO_U32_e64 $vgpr1, $vgpr6, 0, implicit $exec"
                .to_string(),
        );
        let cases = [
            (&exp, add.clone()),
            (
                &exp,
                (
                    "v_sqrt_f32_e32 v2, v0",
                    format!("$vgpr2 = V_SQRT_F32_e32 $vgpr0, {MODE}"),
                ),
            ),
            (
                &exp,
                (
                    "v_add_f32_e32 v0, v4, v3",
                    format!("$vgpr0 = V_ADD_F32_e32 $vgpr4, $vgpr3, {MODE}"),
                ),
            ),
            (
                &exp,
                (
                    "v_readfirstlane_b32 s0, v0",
                    "$sgpr0 = V_READFIRSTLANE_B32 $vgpr0, implicit $exec".into(),
                ),
            ),
            (
                &exp,
                (
                    "global_store_dword v[2:3], v0, off",
                    "GLOBAL_STORE_DWORD $vgpr2_vgpr3, $vgpr0, 0, 0, implicit $exec".into(),
                ),
            ),
            (
                &sqrt64,
                (
                    "v_add_f32_e32 v2, v1, v3",
                    format!("$vgpr2 = V_ADD_F32_e32 $vgpr1, $vgpr3, {MODE}"),
                ),
            ),
            (&word1, add.clone()),
            (
                &word1,
                (
                    "v_readfirstlane_b32 s0, v0",
                    "$sgpr0 = V_READFIRSTLANE_B32 $vgpr0, implicit $exec".into(),
                ),
            ),
            (&dword, add.clone()),
            (&opsel, add.clone()),
            (&pk, add.clone()),
            (&carry, add.clone()),
        ];
        for t in [Target::Gfx90a, Target::Gfx942] {
            for (w, r) in &cases {
                let want = llc_wait_states(t, &w.1, &r.1);
                assert_eq!(
                    distance(t, w.0, r.0),
                    want,
                    "{} / {} on {}",
                    w.0,
                    r.0,
                    t.name()
                );
            }
        }
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
        let mov = |r: &str| {
            let asm = format!("v_mov_b32_e32 {r}, 0");
            (
                asm,
                format!("$vgpr{} = V_MOV_B32_e32 0, implicit $exec", &r[1..]),
            )
        };
        let cases = [
            ("global_store_dwordx4 v[0:1], v[4:7], off", "GLOBAL_STORE_DWORDX4 $vgpr0_vgpr1, $vgpr4_vgpr5_vgpr6_vgpr7, 0, 0, implicit $exec", "v5"),
            ("global_store_dwordx4 v[0:1], v[4:7], off", "GLOBAL_STORE_DWORDX4 $vgpr0_vgpr1, $vgpr4_vgpr5_vgpr6_vgpr7, 0, 0, implicit $exec", "v8"),
            ("global_store_dwordx4 v[0:1], v[4:7], off", "GLOBAL_STORE_DWORDX4 $vgpr0_vgpr1, $vgpr4_vgpr5_vgpr6_vgpr7, 0, 0, implicit $exec", "v0"),
            ("global_store_dwordx2 v[0:1], v[4:5], off", "GLOBAL_STORE_DWORDX2 $vgpr0_vgpr1, $vgpr4_vgpr5, 0, 0, implicit $exec", "v5"),
            ("global_store_dwordx3 v0, v[2:4], s[0:1]", "GLOBAL_STORE_DWORDX3_SADDR $vgpr0, $vgpr2_vgpr3_vgpr4, $sgpr0_sgpr1, 0, 0, implicit $exec", "v3"),
            ("flat_store_dwordx3 v[0:1], v[2:4]", "FLAT_STORE_DWORDX3 $vgpr0_vgpr1, $vgpr2_vgpr3_vgpr4, 0, 0, implicit $exec, implicit $flat_scr", "v4"),
            ("buffer_store_dwordx3 v[2:4], off, s[0:3], 0", "BUFFER_STORE_DWORDX3_OFFSET $vgpr2_vgpr3_vgpr4, $sgpr0_sgpr1_sgpr2_sgpr3, 0, 0, 0, 0, implicit $exec", "v3"),
            // An atomic returning its old value reads wide data too.
            ("global_atomic_cmpswap_x2 v[6:7], v[0:1], v[2:5], off glc", "$vgpr6_vgpr7 = GLOBAL_ATOMIC_CMPSWAP_X2_RTN $vgpr0_vgpr1, $vgpr2_vgpr3_vgpr4_vgpr5, 0, 1, implicit $exec", "v4"),
            ("global_atomic_cmpswap_x2 v[0:1], v[2:5], off", "GLOBAL_ATOMIC_CMPSWAP_X2 $vgpr0_vgpr1, $vgpr2_vgpr3_vgpr4_vgpr5, 0, 0, implicit $exec", "v2"),
            ("global_load_dwordx4 v[2:5], v[0:1], off", "$vgpr2_vgpr3_vgpr4_vgpr5 = GLOBAL_LOAD_DWORDX4 $vgpr0_vgpr1, 0, 0, implicit $exec", "v0"),
        ];
        for t in ALL {
            for (w, w_mir, reg) in cases {
                let (r, r_mir) = mov(reg);
                // gfx942 spells "return the old value" sc0.
                let w = &match t {
                    Target::Gfx942 => w.replace(" glc", " sc0"),
                    _ => w.to_string(),
                };
                let want = llc_wait_states(t, w_mir, &r_mir);
                assert_eq!(distance(t, w, &r), want, "{w} / {r} on {}", t.name());
            }
        }
    }

    #[test]
    fn xnack_soft_clauses_match_llc() {
        const X: &str = "implicit $exec";
        let gload = |d: u8, a: u8| {
            (
                format!("global_load_dword v{d}, v[{a}:{}], off", a + 1),
                format!(
                    "$vgpr{d} = GLOBAL_LOAD_DWORD $vgpr{a}_vgpr{}, 0, 0, {X}",
                    a + 1
                ),
            )
        };
        let gstore = (
            "global_store_dword v[6:7], v8, off".to_string(),
            format!("GLOBAL_STORE_DWORD $vgpr6_vgpr7, $vgpr8, 0, 0, {X}"),
        );
        let sload = |d: &str, dm: &str, a: u8, off: u8| {
            let x2 = d.contains(':');
            (
                format!(
                    "s_load_dword{} {d}, s[{a}:{}], {off:#x}",
                    if x2 { "x2" } else { "" },
                    a + 1
                ),
                format!(
                    "{dm} = S_LOAD_DWORD{}_IMM $sgpr{a}_sgpr{}, {off}, 0",
                    if x2 { "X2" } else { "" },
                    a + 1
                ),
            )
        };
        let cases = [
            // A store after a load of the clause; loads whose registers
            // overlap; an independent pair.
            (gload(2, 4), gstore.clone()),
            (gload(2, 4), gload(3, 2)),
            (gload(2, 4), gload(3, 6)),
            (gload(2, 4), gload(6, 6)),
            (
                (
                    "buffer_load_dword v2, off, s[0:3], 0".to_string(),
                    format!("$vgpr2 = BUFFER_LOAD_DWORD_OFFSET $sgpr0_sgpr1_sgpr2_sgpr3, 0, 0, 0, 0, {X}"),
                ),
                gstore.clone(),
            ),
            (
                gload(2, 4),
                (
                    "ds_write_b32 v6, v8".to_string(),
                    format!("DS_WRITE_B32 $vgpr6, $vgpr8, 0, 0, implicit $m0, {X}"),
                ),
            ),
            (
                sload("s0", "$sgpr0", 4, 0),
                (
                    "s_store_dword s8, s[6:7], 0x0".to_string(),
                    "S_STORE_DWORD_IMM $sgpr8, $sgpr6_sgpr7, 0, 0".to_string(),
                ),
            ),
            (sload("s[0:1]", "$sgpr0_sgpr1", 4, 0), sload("s2", "$sgpr2", 0, 0)),
            (sload("s0", "$sgpr0", 4, 0), sload("s[4:5]", "$sgpr4_sgpr5", 4, 8)),
            (sload("s0", "$sgpr0", 4, 0), sload("s1", "$sgpr1", 6, 0)),
            (
                sload("s[0:1]", "$sgpr0_sgpr1", 4, 0),
                (
                    "global_load_dword v2, v3, s[0:1]".to_string(),
                    format!("$vgpr2 = GLOBAL_LOAD_DWORD_SADDR $sgpr0_sgpr1, $vgpr3, 0, 0, {X}"),
                ),
            ),
        ];
        for t in ALL {
            for (w, r) in &cases {
                let want = llc_wait_states(t, &w.1, &r.1);
                assert_eq!(
                    distance(t, &w.0, &r.0),
                    want,
                    "{} / {} on {}",
                    w.0,
                    r.0,
                    t.name()
                );
            }
            // Conservative where LLVM is not: a load overwriting what a
            // store before it in the clause read (LLVM looks only at
            // clauses whose earlier instructions write registers).
            let (st, ld) = (&gstore, gload(6, 6));
            assert_eq!(llc_wait_states(t, &st.1, &ld.1), 0);
            assert_eq!(distance(t, &st.0, &ld.0), 1);
            // Clause-wide: the first of three adjacent loads writes what
            // the third reads; a nop anywhere between breaks the clause.
            let [a, b, c] = [gload(2, 4), gload(3, 6), gload(9, 2)].map(|x| asm(t, &x.0)[0]);
            let nop = nops(t, 1)[0];
            assert_eq!(violations(t, &[(a, true), (b, false), (c, false)]).len(), 1);
            assert!(violations(t, &[(a, true), (b, false), (nop, true), (c, false)]).is_empty());
            assert!(violations(t, &[(a, true), (nop, true), (b, false), (c, false)]).is_empty());
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

    /// A part appended settled (padded within itself, see
    /// `snippet::Settled`) is searched again where a writer before it can
    /// reach its readers, branches inside it included: joined, the code is
    /// what padding the whole gives.
    #[test]
    fn settled_parts_are_padded_where_writers_before_reach() {
        use super::super::snippet::{Settled, Snippet};
        let t = Target::Gfx90a;
        let mut table = FactsTable::default();
        // A VALU writing s[4:5] before the part; each part reads them in a
        // VMEM instruction, first thing or through a branch from its start.
        let head = asm(
            t,
            "v_readlane_b32 s4, v1, 0
v_readlane_b32 s5, v1, 0",
        );
        let filler = "s_add_u32 s80, s81, s82
"
        .repeat(6);
        let parts = [
            format!(
                "global_load_dword v2, v3, s[4:5]
{filler}global_load_dword v4, v3, s[4:5]"
            ),
            format!(
                "s_cbranch_scc0 0
{filler}global_load_dword v2, v3, s[4:5]"
            ),
        ];
        for (k, text) in parts.iter().enumerate() {
            let code = asm(t, text);
            let part = |s: &mut Snippet| {
                if k == 1 {
                    let b = s.branch(code[0]);
                    s.extend(code[1..code.len() - 1].iter().copied());
                    s.land(b);
                    s.push(code[code.len() - 1]);
                } else {
                    s.extend(code.iter().copied());
                }
            };
            let mut settled = Snippet::default();
            part(&mut settled);
            settled.resolve_with(&mut table).unwrap();
            let settled = std::sync::Arc::new(Settled::new(settled, &table));
            let mut joined = Snippet::default();
            joined.extend(head.iter().copied());
            joined.append_settled(&settled);
            joined.resolve_with(&mut table).unwrap();
            let mut whole = Snippet::default();
            whole.extend(head.iter().copied());
            part(&mut whole);
            whole.resolve_with(&mut table).unwrap();
            assert_eq!(joined.insts, whole.insts, "part {k}");
            // The read after the writer got its wait states: 5 right
            // after it, 4 with the branch between.
            let nop = joined.insts.iter().position(|i| i.mnemonic() == "s_nop");
            assert!(
                nop.is_some_and(|n| wait_states(&joined.insts[n]) == [5, 4][k]),
                "part {k}: {:?}",
                joined
                    .insts
                    .iter()
                    .map(|i| i.mnemonic())
                    .collect::<Vec<_>>()
            );
        }
    }

    fn node(tb: &mut FactsTable, i: Instruction, inserted: bool) -> Node {
        Node::Inst {
            facts: tb.id(&i),
            inserted,
        }
    }

    /// The bit-set forms of the rules say what the register-by-register
    /// forms (which the tests above check against llc-19 and AMD's
    /// tables) say, for every pair of the distinct instructions of the
    /// fixture kernels.
    #[test]
    fn bit_sets_agree_with_the_register_lists() {
        for arch in ["gfx908", "gfx90a", "gfx942"] {
            let mut tb = FactsTable::default();
            let dir = format!("{}/../../fixtures/{arch}/v5", env!("CARGO_MANIFEST_DIR"));
            for entry in std::fs::read_dir(dir).unwrap() {
                let bytes = std::fs::read(entry.unwrap().path()).unwrap();
                let Ok(co) = inlay_codeobj::CodeObject::parse(&bytes) else {
                    continue;
                };
                for k in &co.kernels {
                    if let Ok(p) = crate::lift::lift(&co, k.name) {
                        for ins in &p.insts {
                            tb.id(&ins.inst);
                        }
                    }
                }
            }
            let facts = &tb.facts;
            assert!(
                facts.len() > 200,
                "{arch}: {} distinct instructions",
                facts.len()
            );
            let own = facts[0].inst.target();
            // gfx90a's instructions are also checked under gfx942's rules.
            let targets: &[Target] = match own {
                Target::Gfx90a => &[Target::Gfx90a, Target::Gfx942],
                _ => &[own],
            };
            for w in facts {
                assert!(w.exact, "{}", w.name());
                for mfma in [false, true] {
                    let listed = required_after_unknown_listed(own, w, mfma);
                    assert_eq!(required_after_unknown(own, w, mfma), listed);
                }
                for r in facts {
                    for &t in targets {
                        let (fast, listed) = (required(t, w, r), required_listed(t, w, r));
                        assert_eq!(fast, listed, "{} / {}", w.name(), r.name());
                        // What a reader needs after unknown code bounds
                        // every rule on its own target (searches stop
                        // there).
                        let bound = required_after_unknown(t, r, w.is_mfma());
                        let (n, m) = (w.name(), r.name());
                        assert!(t != own || fast <= bound, "{n} / {m}: {fast} > {bound}");
                    }
                    let same_clause =
                        w.clause_kind().is_some() && w.clause_kind() == r.clause_kind();
                    let listed = same_clause && soft_clause_hazard_listed(w, r);
                    assert_eq!(
                        soft_clause_hazard(w, r),
                        listed,
                        "{} / {}",
                        w.name(),
                        r.name()
                    );
                    assert_eq!(continues_clause(w, r), same_clause);
                }
            }
        }
    }

    fn pads(t: Target, nodes: &[Node], tb: &FactsTable, flow: &Flow, slots: usize) -> Vec<u32> {
        let stream = Stream {
            nodes,
            facts: &tb.facts,
            briefs: &tb.briefs,
            runs: &[],
            flow,
            tails: None,
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
            preds: vec![&[], &[], &[0, 1]],
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
            preds: vec![&[0]],
            linear_entry: vec![true],
        };
        assert_eq!(pads(t, &nodes, &tb, &flow, 1), vec![4]);
        // A function entry (no predecessors, not the kernel's): unknown
        // history, an inserted VMEM read of an SGPR takes the worst case.
        let nodes = vec![Node::BlockStart(0), Node::Slot(0), node(&mut tb, r, true)];
        let flow = Flow {
            block_end: vec![3],
            preds: vec![&[]],
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
            Run::new(ids(&mut tb, &[other, r]), &tb.briefs),
            Run::new(ids(&mut tb, &[other, w]), &tb.briefs),
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
            briefs: &tb.briefs,
            runs: &runs,
            flow: &flow,
            tails: None,
        };
        assert_eq!(pad(t, &stream, 3, false), vec![4, 0, 5]);
    }
}
