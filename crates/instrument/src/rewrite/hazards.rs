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

use inlay_isa::{info, Access, Decoder, Encoding, Instruction, InstructionInfo, RegFile, Target};

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

/// What the rules need of one instruction, computed once.
#[derive(Clone, Copy)]
pub struct Facts {
    inst: Instruction,
    info: InstructionInfo,
}

impl Facts {
    pub fn new(inst: &Instruction) -> Facts {
        Facts {
            inst: *inst,
            info: info(inst),
        }
    }

    fn name(&self) -> &'static str {
        self.inst.mnemonic()
    }

    fn is_valu(&self) -> bool {
        use Encoding::*;
        matches!(
            self.inst.encoding(),
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
        )
    }

    fn is_salu(&self) -> bool {
        use Encoding::*;
        matches!(self.inst.encoding(), Sop1 | Sop2 | Sopk | Sopc | Sopp)
    }

    fn is_vmem(&self) -> bool {
        use Encoding::*;
        matches!(
            self.inst.encoding(),
            Mubuf | Mtbuf | Mimg | Flat | Global | Scratch
        )
    }

    fn is_mfma(&self) -> bool {
        let n = self.name();
        n.starts_with("v_mfma") || n.starts_with("v_smfmac")
    }

    /// Transcendental VALU operations (gfx942 forwards their results late).
    fn is_trans(&self) -> bool {
        let n = self.name();
        self.is_valu()
            && [
                "v_exp_", "v_log_", "v_rcp_", "v_rsq_", "v_sqrt_", "v_sin_", "v_cos_",
            ]
            .iter()
            .any(|p| n.starts_with(p))
    }

    /// A VALU whose VGPR result is a partial write gfx942 forwards late:
    /// SDWA with `dst_sel` other than DWORD, or VOP3 `op_sel[3]` (the
    /// destination's high half). For VOP3P llc-19 tests the same modifier
    /// bit, which there is src0's `op_sel_hi` (set by default), and pads
    /// after it; we follow it, as an extra wait state is always safe.
    fn forwards_partial_dst(&self) -> bool {
        let w = self.inst.words();
        match self.inst.encoding() {
            Encoding::Vop1Sdwa | Encoding::Vop2Sdwa => w.get(1).is_some_and(|d| (d >> 8) & 7 != 6),
            // VOP3B (carry-out forms) keep their SGPR destination there.
            Encoding::Vop3 => w[0] & 1 << 14 != 0 && self.valu_scalar_writes().next().is_none(),
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
        let n = self.name();
        let lds_dma =
            self.inst.encoding() == Encoding::Mubuf && self.inst.words()[0] & 1 << 16 != 0;
        n.contains("store") || n.contains("atomic") || lds_dma
    }

    fn writes_any_read_by(&self, r: &Facts) -> bool {
        self.info
            .used_registers()
            .iter()
            .any(|u| u.access.writes() && r.reads(&u.register, None))
    }

    fn is_lane_op(&self) -> bool {
        matches!(self.name(), "v_readlane_b32" | "v_writelane_b32")
    }

    fn writes(&self, file: RegFile) -> impl Iterator<Item = inlay_isa::Register> + '_ {
        self.info
            .used_registers()
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
        self.info.used_registers().iter().any(|u| {
            u.access.reads() && u.register.overlaps(r) && (slot.is_none() || u.operand == slot)
        })
    }

    fn writes_reg(&self, r: &inlay_isa::Register) -> bool {
        self.info
            .used_registers()
            .iter()
            .any(|u| u.access.writes() && u.register.overlaps(r))
    }

    fn touches(&self, r: &inlay_isa::Register) -> bool {
        self.info
            .used_registers()
            .iter()
            .any(|u| u.register.overlaps(r))
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
        let m0 = inlay_isa::Register::new(RegFile::M0, 0, 1);
        let n = self.name();
        // s_sendmsg, s_ttracedata, LDS add-TID and GDS read M0 without
        // naming it (GDS: the DS word's bit 16).
        let gds = self.inst.encoding() == Encoding::Ds && self.inst.words()[0] & 1 << 16 != 0;
        n.starts_with("s_sendmsg")
            || n.starts_with("s_movrel")
            || n == "s_ttracedata"
            || n.contains("addtid")
            || gds
            || self.reads(&m0, None) && !self.is_salu()
    }

    /// Vector registers of a VMEM instruction's data wider than 64 bits
    /// (stores and atomics, with or without a returned value). Addresses
    /// are at most 64 bits except an image's, which are counted too:
    /// conservative, like a MUBUF store with an SGPR `soffset`, which
    /// LLVM exempts.
    fn wide_store_data(&self) -> impl Iterator<Item = inlay_isa::Register> + '_ {
        let vmem = self.is_vmem();
        self.info
            .used_registers()
            .iter()
            .filter(move |u| {
                vmem && u.access == Access::Read
                    && matches!(u.register.file, RegFile::Vgpr | RegFile::Agpr)
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
            let late = w.is_trans() && !r.is_trans() || w.forwards_partial_dst();
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
        let writes_what_w_touches = w.info.used_registers().iter().any(|u| {
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

/// Whether a soft clause holding `w` and, after it, `r` (adjacent, or
/// with only memory instructions of their kind between) breaks
/// replay: `w` writes a register and `r` stores, or reads what `w` wrote,
/// or overwrites what it reads itself; or `r` overwrites what `w` read.
fn soft_clause_hazard(w: &Facts, r: &Facts) -> bool {
    if w.clause_kind().is_none() || w.clause_kind() != r.clause_kind() {
        return false;
    }
    let w_writes = w.info.used_registers().iter().any(|u| u.access.writes());
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
pub fn continues_clause(i: &Facts, r: &Facts) -> bool {
    i.clause_kind().is_some() && i.clause_kind() == r.clause_kind()
}

/// Wait states `r` needs when what ran before it is unknown (a device
/// function's entry, the return from a call): the most any rule it is the
/// reader of can ask; MFMA rules only when the code has MFMAs.
pub fn required_after_unknown(t: Target, r: &Facts, mfma: bool) -> u32 {
    let mut need = 0;
    let mut at_least = |n: u32| need = need.max(n);
    let reads_scalar = r.info.used_registers().iter().any(|u| {
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
        .info
        .used_registers()
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
pub(super) enum Node {
    Inst {
        inst: Instruction,
        inserted: bool,
    },
    /// A place nops may go: on every path to what follows it up to the
    /// next label.
    Slot(usize),
    /// The label of a block's first instruction (its hook code follows).
    BlockStart(usize),
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

/// Wait states to add at each slot of `nodes` so that no pair with an
/// inserted side is closer than its rule, on any path. Also returns the
/// pairs inside one inserted sequence (no slot between them), which
/// padding at seams cannot fix.
pub(super) fn pad(
    t: Target,
    nodes: &[Node],
    flow: &Flow,
    slots: usize,
    mfma: bool,
) -> (Vec<u32>, Vec<Violation>) {
    let facts: Vec<Option<Facts>> = nodes
        .iter()
        .map(|n| match n {
            Node::Inst { inst, .. } => Some(Facts::new(inst)),
            _ => None,
        })
        .collect();
    let mut pads = vec![0u32; slots];
    let mut inside = Vec::new();
    let mut slot_before = None;
    let mut slot_pos = 0;
    for (p, n) in nodes.iter().enumerate() {
        let (reader, reader_inserted) = match (n, &facts[p]) {
            (Node::Slot(s), _) => {
                slot_before = Some(*s);
                slot_pos = p;
                continue;
            }
            (Node::BlockStart(_), _) => {
                slot_before = None;
                continue;
            }
            (Node::Inst { inserted, .. }, Some(f)) => (f, *inserted),
            _ => continue,
        };
        let mut worst_at_slot = 0u32;
        let mut walk = Walk {
            t,
            nodes,
            facts: &facts,
            flow,
            pads: &pads,
            reader,
            reader_inserted,
            mfma,
            found: Vec::new(),
        };
        walk.back(p, 0, true, 0);
        for (q, had, need, crossed) in walk.found {
            // Paddable when the writer lies before the reader's slot on
            // its path: found through a label (another path), or before
            // the slot in the stream.
            match slot_before {
                Some(_) if crossed || q == usize::MAX || q < slot_pos => {
                    worst_at_slot = worst_at_slot.max(need - had)
                }
                _ => inside.push(Violation {
                    writer: q,
                    reader: p,
                    had,
                    needed: need,
                }),
            }
        }
        if let Some(s) = slot_before.filter(|_| worst_at_slot > 0) {
            pads[s] += worst_at_slot;
        }
    }
    (pads, inside)
}

/// A backward search from one reader over every path into it.
struct Walk<'a> {
    t: Target,
    nodes: &'a [Node],
    facts: &'a [Option<Facts>],
    flow: &'a Flow,
    pads: &'a [u32],
    reader: &'a Facts,
    reader_inserted: bool,
    mfma: bool,
    /// (writer position, or usize::MAX for unknown history; wait states
    /// between; wait states needed; reached through a label).
    found: Vec<(usize, u32, u32, bool)>,
}

impl Walk<'_> {
    /// Looks at the nodes before position `end`, `dist` wait states from
    /// the reader (`run`: all of them memory instructions of the reader's
    /// soft-clause kind); `depth` bounds the paths followed through labels.
    fn back(&mut self, end: usize, mut dist: u32, mut run: bool, depth: u32) {
        let mut q = end;
        while q > 0 && (dist < MAX_WAIT_STATES || run) {
            q -= 1;
            match &self.nodes[q] {
                Node::Slot(s) => {
                    dist += self.pads[*s];
                    run &= self.pads[*s] == 0;
                }
                Node::Inst { inst, inserted } => {
                    let Some(w) = &self.facts[q] else { continue };
                    if *inserted || self.reader_inserted {
                        let need = required_at(self.t, w, self.reader, dist, run);
                        if need > dist {
                            self.found.push((q, dist, need, depth > 0));
                        }
                    }
                    if inst.mnemonic() == "s_swappc_b64" {
                        // The callee ran between: unknown history.
                        self.unknown(dist + 1);
                        return;
                    }
                    run &= continues_clause(w, self.reader);
                    dist += wait_states(inst);
                }
                Node::BlockStart(b) => {
                    let b = *b;
                    if depth > 64 || !self.flow.linear_entry[b] && self.flow.preds[b].is_empty() {
                        self.unknown(dist);
                        return;
                    }
                    for k in 0..self.flow.preds[b].len() {
                        let pb = self.flow.preds[b][k];
                        self.back(self.flow.block_end[pb], dist, run, depth + 1);
                    }
                    if !self.flow.linear_entry[b] {
                        return;
                    }
                }
            }
        }
    }

    fn unknown(&mut self, dist: u32) {
        if self.reader_inserted {
            let need = required_after_unknown(self.t, self.reader, self.mfma);
            if need > dist {
                self.found.push((usize::MAX, dist, need, true));
            }
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
        let out = std::process::Command::new("llc-19")
            .args([
                "-march=amdgcn",
                &format!("-mcpu={}", t.name()),
                "-mattr=+xnack",
                "-run-pass=post-RA-hazard-rec",
                "-x",
                "mir",
                "-",
                "-o",
                "-",
            ])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin.take().map(|mut s| s.write_all(mir.as_bytes()));
                c.wait_with_output()
            })
            .expect("llc-19 (scripts/install-deps installs llvm-19)");
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

    fn node(i: Instruction, inserted: bool) -> Node {
        Node::Inst { inst: i, inserted }
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
        // block 0: w(inserted) branch; block 1: other other other; block 2: r
        let nodes = vec![
            Node::BlockStart(0),
            Node::Slot(0),
            node(w, true),
            node(br, false),
            Node::BlockStart(1),
            node(other, false),
            node(other, false),
            node(other, false),
            node(other, false),
            node(other, false),
            Node::BlockStart(2),
            Node::Slot(1),
            node(r, false),
        ];
        let flow = Flow {
            block_end: vec![4, 10, 13],
            preds: vec![vec![], vec![], vec![0, 1]],
            linear_entry: vec![true, false, false],
        };
        let (pads, inside) = pad(t, &nodes, &flow, 2, false);
        assert!(inside.is_empty());
        // Through the branch: one wait state (the branch) of five.
        assert_eq!(pads, vec![0, 4]);
        // A loop: the reader's block is its own predecessor, and the
        // inserted writer at the block's end lies after the reader in the
        // stream; the reader's slot still takes the nops.
        let nodes = vec![
            Node::BlockStart(0),
            Node::Slot(0),
            node(r, false),
            node(w, true),
            node(br, false),
        ];
        let flow = Flow {
            block_end: vec![5],
            preds: vec![vec![0]],
            linear_entry: vec![true],
        };
        let (pads, inside) = pad(t, &nodes, &flow, 1, false);
        assert!(inside.is_empty());
        assert_eq!(pads, vec![4]);
        // A function entry (no predecessors, not the kernel's): unknown
        // history, an inserted VMEM read of an SGPR takes the worst case.
        let nodes = vec![Node::BlockStart(0), Node::Slot(0), node(r, true)];
        let flow = Flow {
            block_end: vec![3],
            preds: vec![vec![]],
            linear_entry: vec![false],
        };
        assert_eq!(pad(t, &nodes, &flow, 1, false).0, vec![5]);
        // A writer and reader inside one inserted sequence: reported.
        let nodes = vec![Node::Slot(0), node(w, true), node(r, true)];
        let flow = Flow {
            block_end: vec![],
            preds: vec![],
            linear_entry: vec![],
        };
        let (pads, inside) = pad(t, &nodes, &flow, 1, false);
        assert_eq!(pads, vec![0]);
        assert_eq!(inside.len(), 1);
    }
}
