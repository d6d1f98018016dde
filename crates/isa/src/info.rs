//! Register def/use: which registers an instruction reads and writes, with
//! widths, implicit ones included (EXEC, VCC, SCC, M0, PC, FLAT_SCRATCH,
//! hardware registers).
//!
//! Modelled on iced-x86's `InstructionInfo`: [`info`] returns a small value
//! holding [`UsedRegister`]s in a fixed-capacity inline array (no allocation).
//! Explicit registers come from the operand slots in printed order (the same
//! registers the formatter prints); implicit ones follow, from rules below.
//!
//! Conventions:
//! - A VALU/VMEM write of a VGPR writes the lanes EXEC enables; it is still a
//!   [`Access::Write`] (EXEC-aware liveness is the caller's job). Writes that
//!   keep part of the old value (one lane of `v_writelane`, SDWA with
//!   `dst_unused:UNUSED_PRESERVE`, `s_bitset*`, tied accumulators such as
//!   `v_mac`/`v_fmac`) are [`Access::ReadWrite`].
//! - `s_movreld` writes the register *M0 past* its destination; it is
//!   reported as a [`Access::CondWrite`] of the named destination (written
//!   when M0 is 0) plus an M0 read.
//! - The tests check all of this against AMD's specification
//!   (`gen/defuse.py` -> `generated/defuse.rs`), LLVM's instruction
//!   descriptions (every def, use, tied input and implicit register of every
//!   opcode and operand form, through libLLVM: `tests/isa/defuse_llvm.rs`, which
//!   lists where LLVM's description is not the hardware; also tied operands
//!   via `llvm-mc-19 --show-inst`, implicit operands via `llc-19`'s MIR
//!   parser) and the formatter's operands.
//! - Not reported: MODE reads of floating-point VALU instructions, the SGPRs
//!   of the fork/join stack, and the register an M0-relative move really
//!   writes.
//!
//! ```
//! use inlay_isa::{info, Access, Decoder, RegFile, Register, Target};
//! // s_addc_u32 s0, s1, s2
//! let i = Decoder::new(Target::Gfx90a).decode(&[0x01, 0x02, 0x00, 0x82]).unwrap();
//! let inf = info(&i);
//! assert!(inf.writes(&Register::new(RegFile::Sgpr, 0, 1)));
//! let scc = inf.used_registers().iter().find(|u| u.register.file == RegFile::Scc).unwrap();
//! assert_eq!(scc.access, Access::ReadWrite); // carry in and carry out
//! assert!(scc.is_implicit());
//! ```

use crate::model::{Encoding as E, Instruction};
use crate::tables::{Field, File, ImmKind, Slot};
use crate::target::info as target_info;
use std::borrow::Cow;

/// AMD's machine-readable description of every CDNA opcode (register roles
/// and widths), kept as an independent oracle for tests. See `gen/defuse.py`.
pub use crate::generated::defuse::{SpecOp, SPEC};

/// Register files (scalar special registers each have their own file).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RegFile {
    Sgpr,
    Vgpr,
    Agpr,
    Ttmp,
    /// VCC: index 0 = vcc_lo, 1 = vcc_hi.
    Vcc,
    /// EXEC: index 0 = exec_lo, 1 = exec_hi.
    Exec,
    M0,
    Scc,
    /// FLAT_SCRATCH: index 0 = lo, 1 = hi.
    FlatScratch,
    /// XNACK_MASK: index 0 = lo, 1 = hi.
    XnackMask,
    /// The program counter (count 2: it is 64 bits).
    Pc,
    /// A hardware register of `s_getreg`/`s_setreg`, by its id (1 = MODE).
    HwReg,
}

/// `count` consecutive 32-bit registers of one file starting at `first`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Register {
    pub file: RegFile,
    pub first: u16,
    pub count: u8,
}

impl Register {
    pub const fn new(file: RegFile, first: u16, count: u8) -> Register {
        Register { file, first, count }
    }
    /// Whether the two name at least one common 32-bit register.
    pub fn overlaps(&self, other: &Register) -> bool {
        let end = |r: &Register| r.first as u32 + r.count as u32;
        self.file == other.file
            && (self.first as u32) < end(other)
            && (other.first as u32) < end(self)
    }
}

/// How an instruction accesses a register.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    Read,
    Write,
    ReadWrite,
    /// Read only on some path (none at present; kept for symmetry with iced).
    CondRead,
    /// Written only if a condition holds (`s_cmov`, `s_cmovk`).
    CondWrite,
    /// Read, and written only if a condition holds (PC of conditional branches).
    ReadCondWrite,
}

impl Access {
    pub fn reads(self) -> bool {
        !matches!(self, Access::Write | Access::CondWrite)
    }
    pub fn writes(self) -> bool {
        !matches!(self, Access::Read | Access::CondRead)
    }
    fn merge(self, other: Access) -> Access {
        let r = self.reads() || other.reads();
        let w = self.writes() || other.writes();
        let cond_w = !matches!(self, Access::Write | Access::ReadWrite)
            && !matches!(other, Access::Write | Access::ReadWrite);
        match (r, w, cond_w) {
            (true, false, _) => Access::Read,
            (false, true, false) => Access::Write,
            (false, true, true) => Access::CondWrite,
            (true, true, false) => Access::ReadWrite,
            _ => Access::ReadCondWrite,
        }
    }
}

/// One register an instruction uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct UsedRegister {
    pub register: Register,
    pub access: Access,
    /// Index of the printed operand (slot) it comes from; `None` for implicit
    /// registers (EXEC of vector instructions, SCC, ...).
    pub operand: Option<u8>,
}

impl UsedRegister {
    pub fn is_implicit(&self) -> bool {
        self.operand.is_none()
    }
}

/// Most registers one instruction uses (explicit ones are at most 6, implicit
/// ones at most 4); tests check no instruction comes near it. (15, not 16,
/// keeps an [`InstructionInfo`] within 128 bytes, which `info` returns
/// with inline moves instead of a call to memcpy.)
pub const CAPACITY: usize = 15;

/// Registers used by one instruction: explicit ones in printed order, then
/// implicit ones.
#[derive(Clone, Copy, Debug)]
pub struct InstructionInfo {
    regs: [UsedRegister; CAPACITY],
    len: u8,
}

impl InstructionInfo {
    fn new() -> InstructionInfo {
        // A constant: copied whole (built field by field, its entries
        // cost a tenth of `info`).
        const EMPTY: InstructionInfo = InstructionInfo {
            regs: [UsedRegister {
                register: Register::new(RegFile::Sgpr, 0, 0),
                access: Access::Read,
                operand: None,
            }; CAPACITY],
            len: 0,
        };
        EMPTY
    }

    pub fn used_registers(&self) -> &[UsedRegister] {
        &self.regs[..self.len as usize]
    }

    /// Whether the instruction may read any part of `r` (before writing).
    pub fn reads(&self, r: &Register) -> bool {
        self.used_registers()
            .iter()
            .any(|u| u.access.reads() && u.register.overlaps(r))
    }

    /// Whether the instruction may write any part of `r`.
    pub fn writes(&self, r: &Register) -> bool {
        self.used_registers()
            .iter()
            .any(|u| u.access.writes() && u.register.overlaps(r))
    }

    fn push(&mut self, register: Register, access: Access, operand: Option<u8>) {
        if register.count == 0 {
            return;
        }
        // Implicit registers are listed once; repeated mentions merge.
        if operand.is_none() {
            if let Some(u) = self.regs[..self.len as usize]
                .iter_mut()
                .find(|u| u.is_implicit() && u.register == register)
            {
                u.access = u.access.merge(access);
                return;
            }
        }
        if let Some(slot) = self.regs.get_mut(self.len as usize) {
            *slot = UsedRegister {
                register,
                access,
                operand,
            };
            self.len += 1;
        }
    }

    /// Appends `implicit`, a list of implicit registers each listed once
    /// (an opcode's [`Facts`]), to a list that has no implicit ones yet:
    /// there is nothing to merge with, so no search (as many as fit).
    fn append_implicit(&mut self, implicit: &InstructionInfo) {
        debug_assert!(self.used_registers().iter().all(|u| !u.is_implicit()));
        // (A loop: the lists are short, and copy_from_slice called memcpy.)
        for (slot, u) in self.regs[self.len as usize..]
            .iter_mut()
            .zip(implicit.used_registers())
        {
            *slot = *u;
            self.len += 1;
        }
    }

    fn implicit(&mut self, file: RegFile, first: u16, count: u8, access: Access) {
        self.push(Register::new(file, first, count), access, None);
    }
}

/// Def/use of `i`. Invalid instructions use no registers.
pub fn info(i: &Instruction) -> InstructionInfo {
    let mut out = InstructionInfo::new();
    if !i.is_valid() {
        return out;
    }
    // (Matched, not dereferenced: through the Cow each use of the facts
    // asked which one it holds.)
    match facts(i) {
        Cow::Borrowed(facts) => add_registers(i, facts, &mut out),
        Cow::Owned(facts) => add_registers(i, &facts, &mut out),
    }
    out
}

/// Adds the registers valid instruction `i` uses to `out`, given its facts.
fn add_registers(i: &Instruction, facts: &Facts, out: &mut InstructionInfo) {
    // EXP and VINTRP have no operand slots (the formatter prints them from
    // their fields): the same registers here.
    match i.encoding {
        E::Exp => {
            // `exp TARGET s0, s1, s2, s3`: the enabled channels' VGPRs
            // (compressed: two channels per VGPR).
            let (en, compr) = (i.bits(0, 0, 4), i.bits(0, 10, 1) != 0);
            for k in 0..4 {
                if en & (1 << k) != 0 {
                    let src = if compr { k / 2 } else { k };
                    let r = Register::new(RegFile::Vgpr, i.bits(1, 8 * src, 8) as u16, 1);
                    out.push(r, Access::Read, Some(k as u8 + 1));
                }
            }
        }
        E::Vintrp => {
            // `v_interp_p1/p2 vdst, vsrc, attr` (p2 accumulates into vdst);
            // `v_interp_mov vdst, param, attr`.
            let op = i.bits(0, 16, 2);
            let vdst = Register::new(RegFile::Vgpr, i.bits(0, 18, 8) as u16, 1);
            let access = if op == 1 {
                Access::ReadWrite
            } else {
                Access::Write
            };
            out.push(vdst, access, Some(0));
            if op != 2 {
                let src = Register::new(RegFile::Vgpr, i.bits(0, 0, 8) as u16, 1);
                out.push(src, Access::Read, Some(1));
            }
        }
        _ => {}
    }
    let dst = facts.dst_fixed.unwrap_or_else(|| dst_access(i, facts.dst));
    // By role (`Role as usize`).
    let accesses = [dst, Access::Read, Access::ReadWrite];
    let lds = crate::format::lds_load(i);
    for u in &facts.operands {
        match *u {
            // A load into LDS names no data register (its address in LDS is
            // M0-based, below).
            OperandUse::Reg { lds_data: true, .. } if lds => {}
            OperandUse::Reg {
                n,
                field,
                read,
                regs,
                file,
                role,
                sized_by_bits,
                ..
            } => {
                let v = read.value(i);
                let r = if sized_by_bits {
                    reg_operand(i, field, v, regs, file)
                } else {
                    named_register(field, v, regs, i.effective_file(field, file))
                };
                if let Some(r) = r {
                    out.push(r, accesses[role as usize], Some(n));
                }
            }
            OperandUse::Other {
                n,
                slot,
                source_before,
                source_before_lds,
            } => {
                let seen_source = if lds {
                    source_before_lds
                } else {
                    source_before
                };
                if let Some((r, access)) =
                    other_operand(i, n as usize, slot, seen_source, facts.setreg)
                {
                    out.push(r, access, Some(n));
                }
            }
        }
    }
    out.append_implicit(&facts.implicit);
    // Loads into LDS address it through M0 (a bit, not the opcode, says so).
    if lds {
        out.implicit(RegFile::M0, 0, 1, Access::Read);
    }
}

/// The register a slot other than a register field names (fixed text, SMEM
/// offset, hardware register), and how it is accessed; `seen_source`: a
/// source slot came before it. Out of line: inlined into `info`'s loop, the
/// bits these few slots read were worked out before it for every
/// instruction.
#[inline(never)]
fn other_operand(
    i: &Instruction,
    n: usize,
    slot: Slot,
    seen_source: bool,
    setreg: bool,
) -> Option<(Register, Access)> {
    match slot {
        Slot::Fixed(t) => {
            // `vcc` before any source is the carry/compare output, after
            // them the carry-in or select mask. The other fixed slots
            // hold addresses (vaddr, saddr), which are only read, even
            // after a store's data.
            let text = Slot::fixed_text(t);
            let access = if seen_source || text != "vcc" {
                Access::Read
            } else {
                Access::Write
            };
            fixed_operand(i, n, text).map(|r| (r, access))
        }
        Slot::Imm(ImmKind::SmemOffset) => smem_soffset(i).map(|r| (r, Access::Read)),
        Slot::Imm(ImmKind::Hwreg) => {
            let v = i.imm_value();
            let (id, off, size) = (v & 0x3F, (v >> 6) & 0x1F, ((v >> 11) & 0x1F) + 1);
            let access = if !setreg {
                Access::Read
            } else if off == 0 && size == 32 {
                Access::Write
            } else {
                Access::ReadWrite
            };
            Some((Register::new(RegFile::HwReg, id as u16, 1), access))
        }
        _ => None,
    }
}

/// What an instruction's opcode alone says about its registers: found by
/// comparing its name with prefixes, once per table entry (the string
/// compares were most of `info`'s cost).
#[derive(Clone)]
struct Facts {
    encoding: E,
    dst: DstRule,
    /// [`dst_access`] when no bit of the instruction decides it.
    dst_fixed: Option<Access>,
    /// `s_setreg*`: the hardware register is written.
    setreg: bool,
    /// Implicit registers, in the order `info` lists them.
    implicit: InstructionInfo,
    /// The operand slots that may name a register, in printed order.
    operands: Vec<OperandUse>,
}

/// An operand slot that may name a register, with what `info` needs of it
/// that the opcode alone decides (worked out once per table entry: per
/// operand, the match on the slot and its field was most of `info`).
#[derive(Clone, Copy)]
enum OperandUse {
    /// A register field: slot `n`, its field and how to read it in this
    /// encoding, its size and file before acc bits, and its role.
    Reg {
        n: u8,
        field: Field,
        read: crate::fields::Read,
        regs: u8,
        file: File,
        role: Role,
        /// vdata or vdst, which loads into LDS do not name.
        lds_data: bool,
        /// Other bits decide how many registers it names (vdata, FLAT
        /// addresses): see [`reg_operand`].
        sized_by_bits: bool,
    },
    /// A fixed text, SMEM offset or hardware register slot (`other_operand`);
    /// whether a source register slot comes before it (for `vcc`), among all
    /// register slots and among those loads into LDS name.
    Other {
        n: u8,
        slot: Slot,
        source_before: bool,
        source_before_lds: bool,
    },
}

/// How an instruction accesses a register field.
#[derive(Clone, Copy)]
enum Role {
    /// A destination: as [`dst_access`] says.
    Dst = 0,
    /// Read.
    Source = 1,
    /// The source of `v_swap_*`: read and written (the registers trade values).
    Swapped = 2,
}

/// The slots of `i` that may name a register, as [`OperandUse`]s.
fn operand_uses(i: &Instruction, swap: bool) -> Vec<OperandUse> {
    let mut uses = Vec::new();
    let (mut source_before, mut source_before_lds) = (false, false);
    for (n, slot) in i.slots().iter().enumerate() {
        let n = n as u8;
        match *slot {
            Slot::Reg {
                field, regs, file, ..
            } => {
                let is_dst = is_dst_field(i, field);
                let lds_data = matches!(field, Field::Vdata | Field::Vdst);
                source_before |= !is_dst;
                source_before_lds |= !is_dst && !lds_data;
                let role = if is_dst {
                    Role::Dst
                } else if field == Field::Src0 && swap {
                    Role::Swapped
                } else {
                    Role::Source
                };
                uses.push(OperandUse::Reg {
                    n,
                    field,
                    read: crate::fields::read(i.encoding, field),
                    regs,
                    file,
                    role,
                    lds_data,
                    sized_by_bits: field == Field::Vdata
                        || (field == Field::Addr && i.encoding.is_flat()),
                });
            }
            // Other immediates and literals name no register.
            Slot::Fixed(_) | Slot::Imm(ImmKind::SmemOffset | ImmKind::Hwreg) => {
                uses.push(OperandUse::Other {
                    n,
                    slot: *slot,
                    source_before,
                    source_before_lds,
                })
            }
            Slot::Imm(_) | Slot::Lit | Slot::FieldImm(_) => {}
        }
    }
    uses
}

fn facts(i: &Instruction) -> Cow<'static, Facts> {
    static FACTS: std::sync::OnceLock<Vec<std::sync::OnceLock<Facts>>> = std::sync::OnceLock::new();
    let all = FACTS.get_or_init(|| {
        (0..crate::tables::desc_count())
            .map(|_| std::sync::OnceLock::new())
            .collect()
    });
    let make = || {
        let name = i.opcode().map(|o| o.name()).unwrap_or("");
        let mut implicit = InstructionInfo::new();
        implicit_by_opcode(i, name, &mut implicit);
        let dst = dst_rule(i.encoding, name);
        Facts {
            encoding: i.encoding,
            dst,
            dst_fixed: (!dst_depends_on_bits(i.encoding, dst)).then(|| dst_access(i, dst)),
            setreg: name.starts_with("s_setreg"),
            implicit,
            // `v_swap_*`: the source is written too.
            operands: operand_uses(i, name.starts_with("v_swap_")),
        }
    };
    match all.get(i.desc as usize).map(|cell| cell.get_or_init(make)) {
        Some(f) if f.encoding == i.encoding => Cow::Borrowed(f),
        // A table entry shared by two encodings is not memoised.
        _ => Cow::Owned(make()),
    }
}

/// Whether a register field is the instruction's destination.
fn is_dst_field(i: &Instruction, f: Field) -> bool {
    match f {
        Field::Vdst | Field::Sdst => true,
        Field::Sdata => i.encoding == E::Smem,
        Field::Vdata => matches!(i.encoding, E::Mubuf | E::Mtbuf | E::Mimg),
        _ => false,
    }
}

/// How an opcode treats its destination fields; [`dst_access`] finishes
/// with the bits that matter.
#[derive(Clone, Copy)]
enum DstRule {
    /// Data registers of scalar and buffer memory instructions.
    Memory {
        atomic: bool,
        /// Stores (and scalar cache write-backs) only read their data.
        read: bool,
        /// A 16-bit load that keeps the other half.
        keeps_half: bool,
    },
    Is(Access),
    /// gfx9 `_legacy` 16-bit VOP3 ops: `{16'0, result}` (a whole write), or
    /// with op_sel[3] `{result, D[15:0]}` (the low half kept).
    LegacyOpSel,
    /// Decided by encoding: SDWA writing part of a dword, DPP, 8/16-bit
    /// loads into half a register (`d16`), `v_fma_mix{lo,hi}` (`mix`).
    ByEncoding {
        d16: bool,
        mix: bool,
    },
}

fn dst_rule(enc: E, name: &str) -> DstRule {
    let starts = |p: &[&str]| p.iter().any(|x| name.starts_with(x));
    match enc {
        E::Smem | E::Mubuf | E::Mtbuf | E::Mimg => DstRule::Memory {
            atomic: name.contains("atomic"),
            read: name.contains("store") || name.starts_with("s_dcache"),
            keeps_half: name.contains("_d16") && !name.contains("format_d16_xy"),
        },
        _ if starts(&["s_cmpk_", "s_setreg_b32", "s_cbranch_i_fork"]) => DstRule::Is(Access::Read),
        // s_movreld writes SGPR[sdst + M0]: the named register only when M0
        // is 0 (and no register is read through sdst).
        _ if starts(&["s_cmov_", "s_cmovk_", "s_movreld_"]) => DstRule::Is(Access::CondWrite),
        _ if starts(&[
            "s_addk_",
            "s_mulk_",
            "s_bitset",
            "v_mac_",
            "v_fmac_",
            "v_pk_fmac_",
            "v_dot2c_",
            "v_dot4c_",
            "v_dot8c_",
            "v_writelane_",
            "v_swap_",
            "v_smfmac_",
            // 8/16-bit results that keep the rest of the register
            "v_cvt_pk_fp8_",
            "v_cvt_pk_bf8_",
            "v_cvt_sr_fp8_",
            "v_cvt_sr_bf8_",
        ]) =>
        {
            DstRule::Is(Access::ReadWrite)
        }
        _ if starts(&[
            "v_mad_legacy_f16",
            "v_mad_legacy_u16",
            "v_mad_legacy_i16",
            "v_fma_legacy_f16",
            "v_div_fixup_legacy_f16",
        ]) =>
        {
            DstRule::LegacyOpSel
        }
        _ => DstRule::ByEncoding {
            d16: name.contains("_d16"),
            mix: starts(&["v_fma_mixlo_", "v_fma_mixhi_"]),
        },
    }
}

/// Whether [`dst_access`] reads bits of the instruction with `rule` in
/// `enc` (glc of atomics, op_sel of the legacy ops, SDWA's dst_sel).
fn dst_depends_on_bits(enc: E, rule: DstRule) -> bool {
    match rule {
        DstRule::Memory { atomic, .. } => atomic,
        DstRule::Is(_) => false,
        DstRule::LegacyOpSel => true,
        DstRule::ByEncoding { .. } => matches!(enc, E::Vop1Sdwa | E::Vop2Sdwa),
    }
}

/// Access of the destination fields.
fn dst_access(i: &Instruction, rule: DstRule) -> Access {
    match rule {
        DstRule::Memory {
            atomic,
            read,
            keeps_half,
        } => {
            let glc = match i.encoding {
                E::Smem => i.bits(0, 16, 1) != 0,
                E::Mubuf => i.bits(0, 14, 1) != 0,
                E::Mimg => i.bits(0, 13, 1) != 0,
                _ => false,
            };
            if atomic {
                // The data goes in, and with glc the old value comes back.
                if glc {
                    Access::ReadWrite
                } else {
                    Access::Read
                }
            } else if read {
                Access::Read
            } else if keeps_half {
                Access::ReadWrite
            } else {
                Access::Write
            }
        }
        DstRule::Is(a) => a,
        DstRule::LegacyOpSel => {
            if i.bits(0, 14, 1) != 0 {
                Access::ReadWrite
            } else {
                Access::Write
            }
        }
        DstRule::ByEncoding { d16, mix } => match i.encoding {
            // SDWA writing part of a dword and keeping the rest.
            E::Vop1Sdwa | E::Vop2Sdwa if i.bits(1, 8, 3) < 6 && i.bits(1, 11, 2) == 2 => {
                Access::ReadWrite
            }
            // Lanes whose DPP source is invalid or masked keep the old value;
            // like LLVM we count the old value as an input whatever the controls.
            E::Vop1Dpp | E::Vop2Dpp => Access::ReadWrite,
            // 8/16-bit loads into half a register keep the other half.
            E::Ds | E::Flat | E::Global | E::Scratch if d16 => Access::ReadWrite,
            _ if mix => Access::ReadWrite,
            _ => Access::Write,
        },
    }
}

/// The register(s) a register slot names, as the formatter prints them.
/// (`v`: the field's value.)
fn reg_operand(i: &Instruction, field: Field, v: u32, regs: u8, file: File) -> Option<Register> {
    let file = i.effective_file(field, file);
    let mut regs = regs;
    if field == Field::Vdata {
        regs = crate::format::vdata_regs(i, regs);
    }
    if field == Field::Addr && i.encoding.is_flat() && i.bits(1, 16, 7) != 0x7F {
        match i.encoding {
            E::Global => regs = 1,
            E::Scratch => return None, // printed `off`: the address is saddr
            _ => {}
        }
    }
    named_register(field, v, regs, file)
}

/// The register(s) value `v` of a register field names, given its size and
/// its file after acc bits.
fn named_register(field: Field, v: u32, regs: u8, file: File) -> Option<Register> {
    let src9 = matches!(
        field,
        Field::Src0 | Field::Src1 | Field::Src2 | Field::Vsrc1
    );
    if src9 {
        return if v >= 256 {
            Some(vector(v - 256, regs, file))
        } else {
            scalar(v, regs)
        };
    }
    match file {
        File::S => scalar(v, regs),
        _ => Some(vector(v, regs, file)),
    }
}

fn vector(n: u32, regs: u8, file: File) -> Register {
    let f = if file == File::A {
        RegFile::Agpr
    } else {
        RegFile::Vgpr
    };
    Register::new(f, n as u16, regs)
}

/// A scalar operand code (SGPR, TTMP, VCC, EXEC, M0, ...); None for constants.
fn scalar(v: u32, regs: u8) -> Option<Register> {
    let v = v as u16;
    let pair = |file, base: u16| {
        Some(Register::new(
            file,
            v - base,
            regs.min(2 - (v - base) as u8),
        ))
    };
    match v {
        // Tuples are aligned (pairs to 2, wider ones to 4), as the hardware
        // and LLVM do and the formatter prints them: an odd code in a 64-bit
        // operand names the even pair below it.
        // On gfx9 the trap temporaries ttmp0..ttmp15 are source codes 108..=123.
        0..=101 | 108..=123 => {
            let (file, base) = if v < 102 {
                (RegFile::Sgpr, 0)
            } else {
                (RegFile::Ttmp, 108)
            };
            let n = v - base;
            let first = if regs >= 2 {
                let a = regs.min(4) as u16;
                n / a * a
            } else {
                n
            };
            Some(Register::new(file, first, regs))
        }
        102..=103 => pair(RegFile::FlatScratch, 102),
        104..=105 => pair(RegFile::XnackMask, 104),
        106..=107 => pair(RegFile::Vcc, 106),
        124 => Some(Register::new(RegFile::M0, 0, 1)),
        126..=127 => pair(RegFile::Exec, 126),
        251 => Some(Register::new(RegFile::Vcc, 0, 2)), // vccz
        252 => Some(Register::new(RegFile::Exec, 0, 2)), // execz
        253 => Some(Register::new(RegFile::Scc, 0, 1)),
        254 => Some(Register::new(RegFile::M0, 0, 1)), // lds_direct addresses by M0
        _ => None,
    }
}

/// Where a fixed slot that names an SGPR or VGPR keeps its number
/// (dword, low bit, width, whether it is an SGPR), as [`fixed_operand`]
/// reads it; `None` for other slots (`vcc` is no renamable register).
pub(crate) fn fixed_register_bits(i: &Instruction, n: usize) -> Option<(usize, u32, u32, bool)> {
    let text = match i.slots().get(n)? {
        Slot::Fixed(t) => Slot::fixed_text(*t),
        _ => return None,
    };
    let r = fixed_operand(i, n, text)?;
    let last = n + 1 == i.slots().len();
    match (i.encoding, r.file) {
        (E::VopcSdwa, RegFile::Sgpr) if n == 0 => Some((1, 8, 7, true)),
        (E::Global | E::Scratch, RegFile::Sgpr) if last => Some((1, 16, 7, true)),
        (E::Scratch | E::Mubuf | E::Mtbuf, RegFile::Vgpr) => Some((1, 0, 8, false)),
        _ => None,
    }
}

/// Printed fixed operands that name registers (`vcc`, or the `off` slots
/// that hold saddr / vaddr when those are in use).
fn fixed_operand(i: &Instruction, n: usize, text: &str) -> Option<Register> {
    // As the formatter reads them: the last `off` of global/scratch is
    // saddr; an earlier one the address.
    let last = n + 1 == i.slots().len();
    if i.encoding == E::VopcSdwa && n == 0 && i.bits(1, 15, 1) != 0 {
        return scalar(i.bits(1, 8, 7), 2);
    }
    match text {
        "vcc" => Some(Register::new(RegFile::Vcc, 0, 2)),
        "off" => {
            let saddr = i.bits(1, 16, 7);
            match i.encoding {
                E::Global | E::Scratch if saddr != 0x7F && last => {
                    let regs = if i.encoding == E::Global { 2 } else { 1 };
                    scalar(saddr, regs)
                }
                E::Scratch
                    if !last && target_info(i.target).scratch_sve && i.bits(0, 13, 1) != 0 =>
                {
                    Some(Register::new(RegFile::Vgpr, i.bits(1, 0, 8) as u16, 1))
                }
                E::Mubuf | E::Mtbuf => {
                    let regs = i.bits(0, 12, 1) + i.bits(0, 13, 1);
                    (regs > 0)
                        .then(|| Register::new(RegFile::Vgpr, i.bits(1, 0, 8) as u16, regs as u8))
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// The register SMEM reads its offset from, if any.
fn smem_soffset(i: &Instruction) -> Option<Register> {
    let (imm, soe) = (i.bits(0, 17, 1) != 0, i.bits(0, 14, 1) != 0);
    match (imm, soe) {
        (_, true) => scalar(i.bits(1, 25, 7), 1),
        (true, false) => None,
        (false, false) => scalar(i.bits(1, 0, 7), 1),
    }
}

/// Hardware register id of MODE (`s_getreg`/`s_setreg`).
pub const HW_REG_MODE: u16 = 1;

/// Registers an instruction uses without naming them.
/// The implicit registers the opcode of `i` uses (those a bit of `i`
/// decides are added by [`info`]).
fn implicit_by_opcode(i: &Instruction, name: &str, out: &mut InstructionInfo) {
    use Access::*;
    use RegFile::*;
    let starts = |p: &str| name.starts_with(p);
    let any = |ps: &[&str]| ps.iter().any(|p| name.starts_with(p));
    let enc = i.encoding;
    let vector_alu = matches!(
        enc,
        E::Vop1
            | E::Vop2
            | E::Vopc
            | E::Vop3
            | E::Vop3p
            | E::Vop1Sdwa
            | E::Vop2Sdwa
            | E::VopcSdwa
            | E::Vop1Dpp
            | E::Vop2Dpp
            | E::VopcDpp
            | E::Vintrp
            | E::Exp
    );
    let vector_mem = matches!(
        enc,
        E::Ds | E::Flat | E::Global | E::Scratch | E::Mubuf | E::Mtbuf | E::Mimg
    );

    // EXEC: every vector instruction runs under it, except the lane accessors
    // that name their lane.
    if (vector_alu || vector_mem) && !any(&["v_readlane_", "v_writelane_"]) {
        out.implicit(Exec, 0, 2, Read);
    }
    if starts("v_cmpx_") {
        out.implicit(Exec, 0, 2, Write);
    }
    // VOPC without a printed destination writes VCC (DPP forms).
    let prints_vcc = i
        .slots()
        .iter()
        .any(|s| matches!(s, Slot::Fixed(t) if Slot::fixed_text(*t) == "vcc"));
    if matches!(enc, E::Vopc | E::VopcDpp) && !prints_vcc {
        out.implicit(Vcc, 0, 2, Write);
    }
    if starts("v_div_fmas_") {
        out.implicit(Vcc, 0, 2, Read);
    }
    if enc == E::Vop2Dpp && !prints_vcc {
        if any(&["v_cndmask_", "v_addc_", "v_subb_", "v_subbrev_"]) {
            out.implicit(Vcc, 0, 2, Read);
        }
        if any(&[
            "v_add_co_",
            "v_sub_co_",
            "v_subrev_co_",
            "v_addc_",
            "v_subb_",
            "v_subbrev_",
        ]) {
            out.implicit(Vcc, 0, 2, Write);
        }
    }

    // Scalar ALU: SCC, EXEC, PC.
    match enc {
        E::Sop2 | E::Sop1 | E::Sopc | E::Sopk => {
            if scc_written(enc, name) {
                out.implicit(Scc, 0, 1, Write);
            }
            if any(&["s_addc_", "s_subb_", "s_cselect_", "s_cmov_", "s_cmovk_"]) {
                out.implicit(Scc, 0, 1, Read);
            }
            if name.contains("saveexec") || name.contains("wrexec") {
                out.implicit(Exec, 0, 2, ReadWrite);
            }
            match name {
                "s_getpc_b64" => out.implicit(Pc, 0, 2, Read),
                "s_setpc_b64" | "s_rfe_b64" => out.implicit(Pc, 0, 2, Write),
                "s_swappc_b64" | "s_call_b64" => out.implicit(Pc, 0, 2, ReadWrite),
                // Fork/join keep a stack of (PC, EXEC) in SGPRs addressed by
                // MODE.CSP; those SGPRs are not reported.
                "s_cbranch_g_fork" | "s_cbranch_i_fork" => {
                    out.implicit(Exec, 0, 2, ReadWrite);
                    out.implicit(Pc, 0, 2, ReadCondWrite);
                }
                "s_cbranch_join" => {
                    out.implicit(Exec, 0, 2, CondWrite);
                    out.implicit(Pc, 0, 2, ReadCondWrite);
                }
                _ => {}
            }
        }
        E::Sopp => {
            if i.slots().contains(&Slot::Imm(ImmKind::Branch)) {
                let pc = if starts("s_cbranch_") {
                    ReadCondWrite
                } else {
                    ReadWrite
                };
                out.implicit(Pc, 0, 2, pc);
            }
            match name {
                "s_trap" => {
                    out.implicit(Pc, 0, 2, ReadWrite);
                    out.implicit(Ttmp, 0, 2, Write); // the return address
                }
                "s_cbranch_scc0" | "s_cbranch_scc1" => out.implicit(Scc, 0, 1, Read),
                "s_cbranch_vccz" | "s_cbranch_vccnz" => out.implicit(Vcc, 0, 2, Read),
                "s_cbranch_execz" | "s_cbranch_execnz" => out.implicit(Exec, 0, 2, Read),
                _ => {}
            }
        }
        _ => {}
    }

    // M0: relative addressing, messages, interpolation, LDS/GDS extras.
    // Messages carry data in M0 (and LLVM counts EXEC as read too).
    if any(&["s_sendmsg"]) {
        out.implicit(Exec, 0, 2, Read);
    }
    let m0_read = any(&[
        "s_movrel",
        "v_movrel",
        "s_sendmsg",
        "s_ttracedata",
        "v_interp_",
        "ds_gws_",
        "ds_ordered_count",
        // ds_append/ds_consume address LDS by M0 alone; LLVM also gives ds_nop M0.
        "ds_append",
        "ds_consume",
        "ds_nop",
        "global_load_lds_",
        "scratch_load_lds_",
    ]) || (enc == E::Ds && (name.contains("addtid") || name.contains("_src2_")));
    if m0_read {
        out.implicit(M0, 0, 1, Read);
    }
    // s_set_gpr_idx_* set bit fields of M0 and MODE.gpr_idx_en.
    if any(&[
        "s_set_gpr_idx_on",
        "s_set_gpr_idx_idx",
        "s_set_gpr_idx_mode",
    ]) {
        out.implicit(M0, 0, 1, ReadWrite);
    }
    if starts("s_set_gpr_idx_") {
        out.implicit(HwReg, HW_REG_MODE, 1, ReadWrite);
    }
    // Scratch (and flat, which may hit the scratch aperture) use FLAT_SCRATCH.
    if matches!(enc, E::Scratch | E::Flat) || starts("s_scratch_") {
        out.implicit(FlatScratch, 0, 2, Read);
    }
}

/// SALU instructions that set SCC from their result.
fn scc_written(enc: E, name: &str) -> bool {
    let any = |ps: &[&str]| ps.iter().any(|p| name.starts_with(p));
    match enc {
        E::Sopc => !any(&["s_setvskip", "s_set_gpr_idx_on"]),
        E::Sopk => any(&["s_cmpk_", "s_addk_"]),
        E::Sop2 => any(&[
            "s_add_",
            "s_sub_",
            "s_addc_",
            "s_subb_",
            "s_min_",
            "s_max_",
            "s_and_",
            "s_or_",
            "s_xor_",
            "s_andn2_",
            "s_orn2_",
            "s_nand_",
            "s_nor_",
            "s_xnor_",
            "s_lshl_",
            "s_lshr_",
            "s_ashr_",
            "s_bfe_",
            "s_absdiff_",
            "s_lshl1_",
            "s_lshl2_",
            "s_lshl3_",
            "s_lshl4_",
        ]),
        E::Sop1 => {
            any(&[
                "s_not_",
                "s_wqm_",
                "s_bcnt0_",
                "s_bcnt1_",
                "s_quadmask_",
                "s_abs_",
            ]) || name.contains("saveexec")
                || name.contains("wrexec")
        }
        _ => false,
    }
}
