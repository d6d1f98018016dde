//! Lifting: from a kernel in a code object to functions, basic blocks, CFG
//! edges and the call graph.
//!
//! Code is found by recursive descent from the kernel's entry (never by a
//! linear sweep, so padding and data between functions are never decoded):
//! fall-through, SOPP branch targets, and the targets of calls. A call is an
//! `s_swappc_b64` (execution continues after it); an `s_setpc_b64` whose
//! target is known is a tail call; an unknown `s_setpc_b64` is a return in a
//! device function and an unresolved jump in a kernel.
//!
//! Call targets are found by a forward scan of each basic block that tracks
//! what the SGPRs hold: `s_getpc_b64` gives the address after it; `s_add_u32`
//! / `s_addc_u32` (and `s_sub_u32` / `s_subb_u32`) add constants to such a
//! pair, the constants being literals (linked code) or the values
//! `R_AMDGPU_REL32_LO/HI` relocations give them (relocatable code);
//! `R_AMDGPU_GOTPCREL32_LO/HI` name a symbol's GOT entry; `s_load_dwordx2`
//! from a known address reads a code pointer, resolved through the
//! relocation at that address (`R_AMDGPU_RELATIVE64`, `R_AMDGPU_ABS64`) or
//! the bytes in the file; with an SGPR offset it indexes a table, and every
//! entry of the data symbol holding that address becomes a possible callee.

use std::collections::HashMap;

use crate::fast_hash::FastHash;

use inlay_codeobj::reloc::RelocType;
use inlay_codeobj::symbols::{SymbolKind, SymbolTable};
use inlay_codeobj::CodeObject;
use inlay_isa::{info, Decoder, Encoding, Instruction, Operand, RegFile, Target, UsedRegister};

/// Why a kernel could not be lifted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LiftError {
    /// No kernel of that name in the code object.
    NoKernel(String),
    /// No device function of that name in a linked code object.
    NoFunction(String),
    /// The kernel descriptor gives no entry address.
    NoEntry(String),
    /// The code object's processor is not one the ISA crate decodes.
    UnsupportedTarget(String),
    /// Control reaches an address outside every executable section.
    OutsideCode { address: u64 },
    /// The bytes at `address` are not an instruction of the target.
    Invalid { address: u64 },
    /// A branch lands inside another instruction.
    Overlap { address: u64 },
}

impl std::fmt::Display for LiftError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LiftError::NoKernel(n) => write!(f, "no kernel named {n}"),
            LiftError::NoFunction(n) => write!(f, "no device function named {n}"),
            LiftError::NoEntry(n) => write!(f, "kernel {n} has no entry address"),
            LiftError::UnsupportedTarget(t) => write!(f, "unsupported target {t}"),
            LiftError::OutsideCode { address } => {
                write!(f, "control reaches {address:#x}, outside the code")
            }
            LiftError::Invalid { address } => write!(f, "invalid instruction at {address:#x}"),
            LiftError::Overlap { address } => {
                write!(
                    f,
                    "branch into the middle of an instruction at {address:#x}"
                )
            }
        }
    }
}

impl std::error::Error for LiftError {}

/// Index of an instruction in [`Program::insts`].
pub type InstId = usize;
/// Index of a block in [`Program::blocks`].
pub type BlockId = usize;
/// Index of a function in [`Program::functions`] (0 is the kernel).
pub type FuncId = usize;

/// One decoded instruction.
#[derive(Debug, Clone, Copy)]
pub struct Inst {
    /// Address: the virtual address in linked code objects; in relocatable
    /// ones, the section's file offset plus the offset in the section.
    pub addr: u64,
    pub inst: Instruction,
    pub block: BlockId,
}

/// How a basic block ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Falls into the next block (the block after it starts a branch target).
    FallThrough,
    /// `s_branch`.
    Branch,
    /// `s_cbranch_*`: the target, or the next block.
    CondBranch,
    /// `s_endpgm*`: the wave ends.
    EndProgram,
    /// Return to the caller (`s_setpc_b64` of the return address).
    Return,
    /// `s_setpc_b64` to a known function: tail call (call site index).
    TailCall(usize),
    /// A jump whose target is unknown (`s_setpc_b64` in a kernel, fork/join,
    /// `s_rfe_b64`). Everything is assumed live there.
    Unresolved,
}

/// A basic block: instructions `insts` of one function, in address order.
#[derive(Debug, Clone)]
pub struct Block {
    pub function: FuncId,
    pub insts: std::ops::Range<InstId>,
    pub succs: Vec<BlockId>,
    pub preds: Vec<BlockId>,
    pub exit: Exit,
}

/// Whether a function is the kernel or a device function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FuncKind {
    Kernel,
    Device,
}

/// A function: the kernel, or a device function reached from it.
#[derive(Debug, Clone)]
pub struct Function {
    /// The symbol at its entry, if any.
    pub name: Option<String>,
    pub entry: u64,
    pub kind: FuncKind,
    /// Its blocks (contiguous; the first is the entry block).
    pub blocks: std::ops::Range<BlockId>,
    /// Call sites in it.
    pub calls: Vec<usize>,
}

/// What a call site calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Callee {
    /// One known function.
    Direct(FuncId),
    /// A code pointer loaded from a table with a run-time index: the
    /// functions its entries point to; `unresolved` entries could not be read.
    Table {
        table: u64,
        callees: Vec<FuncId>,
        unresolved: usize,
    },
    /// A symbol defined in another code object.
    External(String),
    /// Unknown target.
    Unresolved,
}

/// A call (`s_swappc_b64`) or a tail call (`s_setpc_b64` with a known target).
#[derive(Debug, Clone)]
pub struct CallSite {
    pub inst: InstId,
    pub caller: FuncId,
    pub callee: Callee,
    pub tail: bool,
}

/// A lifted kernel: every function it can reach, their blocks, the call graph.
#[derive(Debug, Clone)]
pub struct Program {
    pub target: Target,
    pub kernel: String,
    pub insts: Vec<Inst>,
    pub blocks: Vec<Block>,
    pub functions: Vec<Function>,
    pub calls: Vec<CallSite>,
    /// The distinct encodings the instructions have (a kernel repeats
    /// them: its 20,000 instructions have a few thousand), each decoded
    /// once with what later stages need of it.
    forms: Forms,
    /// Index in `forms` of each instruction's encoding.
    form_of: Vec<u32>,
}

/// What lifting keeps of one distinct encoding.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Form {
    pub(crate) inst: Instruction,
    /// Its control flow at address 0 (a branch target is relative: add the
    /// instruction's address).
    flow: Flow,
    /// Its def/use (inlay-isa's `info`): `Forms::used[used.0..used.1]`.
    used: (u32, u32),
}

/// The distinct encodings met, with every one's def/use in one array.
#[derive(Debug, Clone, Default)]
pub(crate) struct Forms {
    pub(crate) list: Vec<Form>,
    used: Vec<UsedRegister>,
}

impl Forms {
    /// The registers encoding `k` reads and writes.
    pub(crate) fn used(&self, k: usize) -> &[UsedRegister] {
        match self.list.get(k) {
            Some(f) => self
                .used
                .get(f.used.0 as usize..f.used.1 as usize)
                .unwrap_or(&[]),
            None => &[],
        }
    }
}

impl Program {
    /// The registers instruction `i` reads and writes (inlay-isa's
    /// [`info`]: explicit ones in printed order, then implicit ones); empty
    /// for an out-of-range id.
    pub fn used_registers(&self, i: InstId) -> &[UsedRegister] {
        match self.form_of.get(i) {
            Some(&k) => self.forms.used(k as usize),
            None => &[],
        }
    }

    /// The distinct encodings of the instructions (each one appears at
    /// least once), and the index in them of each instruction's.
    pub(crate) fn forms(&self) -> (&Forms, &[u32]) {
        (&self.forms, &self.form_of)
    }

    /// Instructions of a block.
    pub fn block_insts(&self, b: BlockId) -> &[Inst] {
        self.blocks
            .get(b)
            .and_then(|bl| self.insts.get(bl.insts.clone()))
            .unwrap_or(&[])
    }

    /// The instruction at `addr` in function `f`.
    pub fn inst_at(&self, f: FuncId, addr: u64) -> Option<InstId> {
        let fun = self.functions.get(f)?;
        let first = self.blocks.get(fun.blocks.start)?.insts.start;
        let last = self.blocks.get(fun.blocks.end.checked_sub(1)?)?.insts.end;
        let slice = self.insts.get(first..last)?;
        slice
            .binary_search_by_key(&addr, |i| i.addr)
            .ok()
            .map(|k| first + k)
    }

    /// The block starting at `addr` in function `f`.
    pub fn block_at(&self, f: FuncId, addr: u64) -> Option<BlockId> {
        let i = self.inst_at(f, addr)?;
        let b = self.insts[i].block;
        (self.blocks[b].insts.start == i).then_some(b)
    }

    /// Call site of a call instruction.
    pub fn call_at(&self, inst: InstId) -> Option<&CallSite> {
        let f = self.blocks.get(self.insts.get(inst)?.block)?.function;
        self.functions[f]
            .calls
            .iter()
            .map(|c| &self.calls[*c])
            .find(|c| c.inst == inst)
    }

    /// Instructions that end the wave (`s_endpgm*`), in every function.
    pub fn wave_ends(&self) -> Vec<InstId> {
        self.blocks
            .iter()
            .filter(|b| b.exit == Exit::EndProgram)
            .map(|b| b.insts.end - 1)
            .collect()
    }

    /// Return instructions (`s_setpc_b64` of the return address) of `f`.
    pub fn returns(&self, f: FuncId) -> Vec<InstId> {
        let Some(fun) = self.functions.get(f) else {
            return Vec::new();
        };
        fun.blocks
            .clone()
            .filter(|b| self.blocks[*b].exit == Exit::Return)
            .map(|b| self.blocks[b].insts.end - 1)
            .collect()
    }

    /// Functions a call site may transfer to.
    pub fn callees(&self, site: usize) -> Vec<FuncId> {
        match self.calls.get(site).map(|c| &c.callee) {
            Some(Callee::Direct(f)) => vec![*f],
            Some(Callee::Table { callees, .. }) => callees.clone(),
            _ => Vec::new(),
        }
    }
}

/// Control flow of one instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Falls through to the next instruction.
    Next,
    /// `s_branch` to the address.
    Branch(u64),
    /// `s_cbranch_*` to the address, or the next instruction.
    CondBranch(u64),
    /// `s_endpgm*`.
    End,
    /// `s_swappc_b64`.
    Call,
    /// `s_setpc_b64`.
    SetPc,
    /// A jump whose target cannot be known.
    Unresolved,
}

/// How control leaves `i` (at `addr`).
pub fn flow(i: &Instruction, addr: u64) -> Flow {
    // Only scalar instructions change the flow: the others' names (a
    // lookup for each distinct encoding) need not be looked at.
    use Encoding::{Sop1, Sop2, Sopc, Sopk, Sopp};
    if !matches!(i.encoding(), Sopp | Sop1 | Sopk | Sop2 | Sopc) {
        return Flow::Next;
    }
    let Some(op) = i.opcode() else {
        return Flow::Next;
    };
    let name = op.name();
    match i.encoding() {
        Encoding::Sopp => {
            if name.starts_with("s_endpgm") {
                return Flow::End;
            }
            let is_branch = i.slots().contains(&inlay_isa::tables::Slot::Imm(
                inlay_isa::tables::ImmKind::Branch,
            ));
            if is_branch {
                let imm = i.words()[0] as u16 as i16 as i64;
                let t = (addr as i64)
                    .wrapping_add(4)
                    .wrapping_add(imm.wrapping_mul(4)) as u64;
                return if name == "s_branch" {
                    Flow::Branch(t)
                } else if name.starts_with("s_cbranch_") {
                    Flow::CondBranch(t)
                } else {
                    // s_call_b64 and friends do not exist on gfx9.
                    Flow::Unresolved
                };
            }
            Flow::Next
        }
        Encoding::Sop1 | Encoding::Sopk | Encoding::Sop2 | Encoding::Sopc => match name {
            "s_swappc_b64" => Flow::Call,
            "s_setpc_b64" => Flow::SetPc,
            "s_rfe_b64" | "s_cbranch_g_fork" | "s_cbranch_i_fork" | "s_cbranch_join" => {
                Flow::Unresolved
            }
            _ => Flow::Next,
        },
        _ => Flow::Next,
    }
}

/// Sections of the code object in one address space.
struct Image<'a, 'd> {
    co: &'a CodeObject<'d>,
    relocatable: bool,
    /// (index, base address, size, bytes, executable)
    sections: Vec<(usize, u64, u64, &'d [u8], bool)>,
    relocs: HashMap<u64, usize, FastHash>,
    symtab: HashMap<usize, usize, FastHash>,
}

const SHF_EXECINSTR: u64 = 4;
const SHF_ALLOC: u64 = 2;

impl<'a, 'd> Image<'a, 'd> {
    fn new(co: &'a CodeObject<'d>) -> Image<'a, 'd> {
        let relocatable = co.is_relocatable();
        let mut sections = Vec::new();
        for s in &co.sections {
            if s.flags & SHF_ALLOC == 0 || s.size == 0 {
                continue;
            }
            let base = if relocatable { s.offset } else { s.addr };
            sections.push((
                s.index,
                base,
                s.size,
                co.section_data(s),
                s.flags & SHF_EXECINSTR != 0,
            ));
        }
        let mut img = Image {
            co,
            relocatable,
            sections,
            relocs: HashMap::default(),
            symtab: HashMap::default(),
        };
        let table = if relocatable {
            SymbolTable::Symtab
        } else {
            SymbolTable::Dynsym
        };
        for (k, s) in co.symbols.all().iter().enumerate() {
            if s.table == table {
                img.symtab.insert(s.index, k);
            }
        }
        img.relocs.reserve(co.relocations.len());
        for (k, r) in co.relocations.iter().enumerate() {
            let at = if relocatable {
                let Some(base) = r
                    .target_section
                    .and_then(|n| co.sections.iter().find(|s| s.name == n))
                    .map(|s| s.offset)
                else {
                    continue;
                };
                base.wrapping_add(r.offset)
            } else {
                r.offset
            };
            img.relocs.insert(at, k);
        }
        img
    }

    fn section_base(&self, index: usize) -> Option<u64> {
        self.sections
            .iter()
            .find(|s| s.0 == index)
            .map(|s| s.1)
            .or_else(|| {
                // Non-alloc sections of relocatable objects still have offsets.
                let s = self.co.sections.get(index)?;
                Some(if self.relocatable { s.offset } else { s.addr })
            })
    }

    fn is_code(&self, addr: u64) -> bool {
        self.sections
            .iter()
            .any(|s| s.4 && addr >= s.1 && addr - s.1 < s.2)
    }

    /// Bytes from `addr` to the end of its section.
    fn bytes_at(&self, addr: u64, code: bool) -> Option<&'d [u8]> {
        let s = self
            .sections
            .iter()
            .find(|s| (!code || s.4) && addr >= s.1 && addr - s.1 < s.2)?;
        s.3.get((addr - s.1) as usize..)
    }

    /// Address of a symbol (by its table index in the relocations' table).
    fn symbol_addr(&self, sym_index: u32) -> Option<(u64, bool, String)> {
        let k = *self.symtab.get(&(sym_index as usize))?;
        let s = self.co.symbols.all().get(k)?;
        if !s.is_defined() {
            return Some((0, false, s.name.to_string()));
        }
        let base = if self.relocatable {
            self.section_base(s.shndx as usize)?
        } else {
            0
        };
        Some((base.wrapping_add(s.value), true, s.name.to_string()))
    }

    /// The function symbol at `addr`.
    fn function_symbol(&self, addr: u64) -> Option<&'a inlay_codeobj::symbols::Symbol<'d>> {
        self.co
            .symbols
            .all()
            .iter()
            .filter(|s| {
                matches!(s.kind, SymbolKind::Kernel | SymbolKind::DeviceFunction) && s.is_defined()
            })
            .find(|s| {
                let base = if self.relocatable {
                    self.section_base(s.shndx as usize).unwrap_or(u64::MAX)
                } else {
                    0
                };
                base.wrapping_add(s.value) == addr
            })
    }

    /// Name of the function symbol at `addr`.
    fn function_name(&self, addr: u64) -> Option<String> {
        self.function_symbol(addr).map(|s| s.name.to_string())
    }

    /// At most how many instructions the function at `addr` has, from
    /// its symbol's size (0 if no symbol says): to size arrays once.
    fn instructions_hint(&self, addr: u64) -> usize {
        let size = self.function_symbol(addr).map_or(0, |s| s.size);
        // No more than its section holds (a bad size must not allocate much).
        let room = self
            .sections
            .iter()
            .find(|s| s.4 && addr >= s.1 && addr - s.1 < s.2)
            .map_or(0, |s| s.2 - (addr - s.1));
        (size.min(room) / 4) as usize
    }

    /// The code pointer stored at `addr`.
    fn pointer_at(&self, addr: u64) -> Target64 {
        if let Some(r) = self
            .relocs
            .get(&addr)
            .and_then(|k| self.co.relocations.get(*k))
        {
            return match r.r_type {
                RelocType::RELATIVE64 => Target64::Addr(r.addend as u64),
                RelocType::ABS64 => match self.symbol_addr(r.symbol_index) {
                    Some((a, true, _)) => Target64::Addr(a.wrapping_add(r.addend as u64)),
                    Some((_, false, name)) => Target64::External(name),
                    None => Target64::Unknown,
                },
                _ => Target64::Unknown,
            };
        }
        if self.relocatable {
            return Target64::Unknown; // unrelocated data holds no addresses
        }
        match self.bytes_at(addr, false).and_then(|b| b.get(..8)) {
            Some(b) => {
                let mut w = [0u8; 8];
                w.copy_from_slice(b);
                Target64::Addr(u64::from_le_bytes(w))
            }
            None => Target64::Unknown,
        }
    }

    /// The data symbol containing `addr`: (start, size).
    fn data_symbol(&self, addr: u64) -> Option<(u64, u64)> {
        self.co
            .symbols
            .all()
            .iter()
            .filter(|s| s.kind == SymbolKind::Variable && s.is_defined() && s.size > 0)
            .filter_map(|s| {
                let base = if self.relocatable {
                    self.section_base(s.shndx as usize)?
                } else {
                    0
                };
                let start = base.wrapping_add(s.value);
                (addr >= start && addr - start < s.size).then_some((start, s.size))
            })
            .next()
    }
}

/// A 64-bit value read from data.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target64 {
    Addr(u64),
    External(String),
    Unknown,
}

/// What a pointer computation refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ptr {
    Addr(u64),
    /// The GOT entry of a symbol (relocation symbol index).
    Got(u32),
}

/// What the scan knows an SGPR holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SVal {
    Unknown,
    Const(u32),
    /// Low / high half of a pointer.
    Lo(Ptr),
    Hi(Ptr),
    /// Low half of `ptr + c` whose carry is still to be added.
    Pending,
    /// Halves of a 64-bit value loaded from `ptr` (+ a run-time index if `table`).
    MemLo(Ptr, bool),
    MemHi(Ptr, bool),
}

/// A 32-bit constant operand, possibly given by a relocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CVal {
    Val(u32),
    GotLo(u32),
    GotHi(u32),
}

struct Scan {
    sg: [SVal; 102],
    /// After `s_add_u32`/`s_sub_u32` of a pointer: (low register, base, constant, subtract).
    carry: Option<(u16, Ptr, CVal, bool)>,
}

impl Scan {
    fn new() -> Scan {
        Scan {
            sg: [SVal::Unknown; 102],
            carry: None,
        }
    }
    fn get(&self, r: u16) -> SVal {
        self.sg.get(r as usize).copied().unwrap_or(SVal::Unknown)
    }
    fn set(&mut self, r: u16, v: SVal) {
        if let Some(s) = self.sg.get_mut(r as usize) {
            *s = v;
        }
    }
}

/// The decoder, with the distinct encodings it has decoded by their
/// words: decoding, `info` and `flow` run once per distinct encoding, and
/// were most of lifting's time when they ran per instruction.
struct Decoded {
    dec: Decoder,
    forms: Forms,
    /// 4-byte encodings by their word (an 8-byte one's first word maps to
    /// [`LONG`]: look in `long`), 8-byte ones by both words. (The length
    /// of a valid instruction follows from its first word, and a 4-byte
    /// one depends on nothing else.)
    short: FormTable,
    long: FormTable,
}

/// In `Decoded::short`: the word starts 8-byte encodings.
const LONG: u32 = u32::MAX - 1;

/// A hash table from an encoding's words to its form, with open
/// addressing: a probe is a multiply and a compare or two (the standard
/// map's probing and hashing were a tenth of lifting's time).
struct FormTable {
    /// (key, value), or [`EMPTY`]'s value; the length is a power of two,
    /// at least twice the number of entries.
    slots: Vec<(u64, u32)>,
    len: usize,
}

/// The value of an empty slot of a [`FormTable`] (no form has that index).
const EMPTY: u32 = u32::MAX;

impl FormTable {
    /// A table that holds `n` entries before it grows.
    fn with_capacity(n: usize) -> FormTable {
        FormTable {
            slots: vec![(0, EMPTY); (2 * n).next_power_of_two().max(64)],
            len: 0,
        }
    }

    /// The first slot to probe for `key`: Fibonacci hashing (the high bits
    /// of the product depend on every bit of the key).
    fn home(&self, key: u64) -> usize {
        let bits = self.slots.len().trailing_zeros();
        (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - bits)) as usize
    }

    fn get(&self, key: u64) -> Option<u32> {
        let mask = self.slots.len() - 1;
        let mut at = self.home(key);
        loop {
            let (k, v) = self.slots[at];
            if v == EMPTY {
                return None;
            }
            if k == key {
                return Some(v);
            }
            at = (at + 1) & mask;
        }
    }

    /// Adds `key` (not in the table yet).
    fn insert(&mut self, key: u64, value: u32) {
        if 2 * (self.len + 1) > self.slots.len() {
            let bigger = vec![(0, EMPTY); 2 * self.slots.len()];
            let old = std::mem::replace(&mut self.slots, bigger);
            self.len = 0;
            for (k, v) in old {
                if v != EMPTY {
                    self.insert(k, v);
                }
            }
        }
        let mask = self.slots.len() - 1;
        let mut at = self.home(key);
        while self.slots[at].1 != EMPTY {
            at = (at + 1) & mask;
        }
        self.slots[at] = (key, value);
        self.len += 1;
    }
}

impl Decoded {
    /// A decoder for about `n` instructions.
    fn new(target: Target, n: usize) -> Decoded {
        // A large kernel has about one distinct encoding in three, each
        // using up to 4 registers or so.
        let forms = n / 2;
        Decoded {
            dec: Decoder::new(target),
            forms: Forms {
                list: Vec::with_capacity(forms),
                used: Vec::with_capacity(4 * forms),
            },
            // (Each table gets about one entry for 7 words of code: a
            // 4-byte encoding or an 8-byte one's first word; an 8-byte
            // encoding. Every slot is marked empty up front, so room
            // never used is not free.)
            short: FormTable::with_capacity(n / 4),
            long: FormTable::with_capacity(n / 4),
        }
    }

    /// The form of the valid instruction at the start of `bytes`; `None`
    /// if they hold none.
    fn decode(&mut self, bytes: &[u8]) -> Option<u32> {
        let word = |k: usize| -> Option<u32> {
            let b = bytes.get(4 * k..4 * k + 4)?;
            Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        };
        let w0 = word(0)?;
        let short = self.short.get(u64::from(w0));
        if let Some(k) = short.filter(|&k| k != LONG) {
            return Some(k);
        }
        let both = word(1).map(|w1| u64::from(w0) | u64::from(w1) << 32);
        if let Some(k) = both
            .filter(|_| short == Some(LONG))
            .and_then(|key| self.long.get(key))
        {
            return Some(k);
        }
        let i = self.dec.decode(bytes).ok()?;
        if !i.is_valid() || i.is_empty() {
            return None;
        }
        let k = self.forms.list.len() as u32;
        match (i.len(), both) {
            (4, _) => self.short.insert(u64::from(w0), k),
            (8, Some(key)) => {
                if short.is_none() {
                    self.short.insert(u64::from(w0), LONG);
                }
                self.long.insert(key, k);
            }
            _ => return None,
        }
        let a = self.forms.used.len() as u32;
        self.forms.used.extend_from_slice(info(&i).used_registers());
        self.forms.list.push(Form {
            inst: i,
            flow: flow(&i, 0),
            used: (a, self.forms.used.len() as u32),
        });
        Some(k)
    }
}

/// Lifts `kernel` of `co` and every device function it can reach.
pub fn lift(co: &CodeObject<'_>, kernel: &str) -> Result<Program, LiftError> {
    let k = co
        .kernel(kernel)
        .ok_or_else(|| LiftError::NoKernel(kernel.to_string()))?;
    let target = Target::from_name(co.target.processor.name())
        .ok_or_else(|| LiftError::UnsupportedTarget(co.target.processor.name().to_string()))?;
    let img = Image::new(co);
    let entry = if img.relocatable {
        let sym = k.entry_symbol.and_then(|n| co.symbols.get(n));
        match sym {
            Some(s) => img
                .section_base(s.shndx as usize)
                .unwrap_or(0)
                .wrapping_add(s.value),
            None => {
                let off = k
                    .entry_address
                    .ok_or_else(|| LiftError::NoEntry(kernel.to_string()))?;
                co.section(".text")
                    .map(|t| t.offset)
                    .unwrap_or(0)
                    .wrapping_add(off)
            }
        }
    } else {
        k.entry_address
            .ok_or_else(|| LiftError::NoEntry(kernel.to_string()))?
    };
    lift_from(&img, target, kernel, entry, FuncKind::Kernel)
}

/// Lifts the device function `name` of a linked code object (a hook, say)
/// and every function it can reach: function 0 of the result is that
/// function, of kind [`FuncKind::Device`], and `Program::kernel` holds its name.
pub fn lift_function(co: &CodeObject<'_>, name: &str) -> Result<Program, LiftError> {
    let target = Target::from_name(co.target.processor.name())
        .ok_or_else(|| LiftError::UnsupportedTarget(co.target.processor.name().to_string()))?;
    let img = Image::new(co);
    if img.relocatable {
        return Err(LiftError::NoFunction(name.to_string()));
    }
    let entry = co
        .symbols
        .all()
        .iter()
        .find(|s| s.name == name && s.kind == SymbolKind::DeviceFunction && s.is_defined())
        .map(|s| s.value)
        .ok_or_else(|| LiftError::NoFunction(name.to_string()))?;
    lift_from(&img, target, name, entry, FuncKind::Device)
}

fn lift_from(
    img: &Image<'_, '_>,
    target: Target,
    root: &str,
    entry: u64,
    kind: FuncKind,
) -> Result<Program, LiftError> {
    let mut dec = Decoded::new(target, img.instructions_hint(entry));
    let mut prog = Program {
        target,
        kernel: root.to_string(),
        insts: Vec::new(),
        blocks: Vec::new(),
        functions: Vec::new(),
        calls: Vec::new(),
        forms: Forms::default(),
        form_of: Vec::new(),
    };
    let mut by_entry: HashMap<u64, FuncId> = HashMap::new();
    let mut queue = vec![(entry, kind)];
    by_entry.insert(entry, 0);
    let mut next = 0;
    while next < queue.len() {
        let (entry, kind) = queue[next];
        let f = next;
        next += 1;
        lift_function_at(img, &mut dec, &mut prog, f, entry, kind)?;
        // Resolve its calls; new callees join the queue.
        let sites: Vec<usize> = prog.functions[f].calls.clone();
        for s in sites {
            let targets = std::mem::replace(&mut prog.calls[s].callee, Callee::Unresolved);
            let resolved = match targets {
                Callee::Table {
                    table,
                    callees,
                    unresolved,
                } => {
                    // `callees` temporarily hold addresses.
                    let mut ids = Vec::new();
                    for a in callees {
                        let id = func_id(&mut by_entry, &mut queue, a as u64);
                        if !ids.contains(&id) {
                            ids.push(id);
                        }
                    }
                    Callee::Table {
                        table,
                        callees: ids,
                        unresolved,
                    }
                }
                Callee::Direct(a) => Callee::Direct(func_id(&mut by_entry, &mut queue, a as u64)),
                other => other,
            };
            prog.calls[s].callee = resolved;
        }
    }
    for f in &mut prog.functions {
        f.name = img.function_name(f.entry);
    }
    prog.forms = dec.forms;
    Ok(prog)
}

fn func_id(
    by_entry: &mut HashMap<u64, FuncId>,
    queue: &mut Vec<(u64, FuncKind)>,
    a: u64,
) -> FuncId {
    *by_entry.entry(a).or_insert_with(|| {
        queue.push((a, FuncKind::Device));
        queue.len() - 1
    })
}

/// Decodes one function by recursive descent and appends its blocks.
/// Call sites are recorded with target *addresses* in `Callee::Direct` /
/// `Callee::Table` (turned into function ids by the caller).
fn lift_function_at(
    img: &Image<'_, '_>,
    dec: &mut Decoded,
    prog: &mut Program,
    f: FuncId,
    entry: u64,
    kind: FuncKind,
) -> Result<(), LiftError> {
    // The entry's section (where nearly all of the code is): its bytes, and
    // a bit per word of it for the addresses visited; a set elsewhere.
    let (sec_base, sec_bytes) = img
        .sections
        .iter()
        .find(|s| s.4 && entry >= s.1 && entry - s.1 < s.2)
        .map_or((0, &[][..]), |s| (s.1, s.3));
    let mut bitmap = vec![0u64; (sec_bytes.len() / 4 + 1).div_ceil(64)];
    let mut other: std::collections::HashSet<u64> = Default::default();
    let mut seen = |pc: u64| -> bool {
        let k = (pc.wrapping_sub(sec_base) / 4) as usize;
        if pc >= sec_base && pc & 3 == 0 && k / 64 < bitmap.len() {
            let (w, bit) = (&mut bitmap[k / 64], 1u64 << (k % 64));
            let was = *w & bit != 0;
            *w |= bit;
            was
        } else {
            !other.insert(pc)
        }
    };
    let bytes_at = |pc: u64| match pc.checked_sub(sec_base) {
        Some(off) if off < sec_bytes.len() as u64 => sec_bytes.get(off as usize..),
        _ => img.bytes_at(pc, true),
    };
    // (address, form) of each instruction found, in runs of consecutive
    // instructions (`runs`: where each starts in `found`).
    let mut found: Vec<(u64, u32)> = Vec::with_capacity(img.instructions_hint(entry));
    let mut runs: Vec<usize> = Vec::new();
    let mut targets: Vec<u64> = vec![entry];
    let mut stack = vec![entry];
    while let Some(start) = stack.pop() {
        let mut pc = start;
        runs.push(found.len());
        loop {
            if seen(pc) {
                break;
            }
            let bytes = bytes_at(pc).ok_or(LiftError::OutsideCode { address: pc })?;
            let k = dec
                .decode(bytes)
                .ok_or(LiftError::Invalid { address: pc })?;
            found.push((pc, k));
            let form = &dec.forms.list[k as usize];
            let after = pc.wrapping_add(form.inst.len() as u64);
            match form.flow {
                Flow::Next | Flow::Call => pc = after,
                Flow::Branch(t) => {
                    let t = pc.wrapping_add(t);
                    targets.push(t);
                    stack.push(t);
                    break;
                }
                Flow::CondBranch(t) => {
                    let t = pc.wrapping_add(t);
                    targets.push(t);
                    stack.push(t);
                    targets.push(after);
                    pc = after;
                }
                Flow::End | Flow::SetPc | Flow::Unresolved => break,
            }
        }
    }
    let (found, spans) = in_address_order(found, runs);
    let forms = &dec.forms.list;
    let len = |k: u32| forms[k as usize].inst.len() as u64;
    // The flow of a found instruction, with branch targets absolute.
    let flow_at = |(addr, k): (u64, u32)| match forms[k as usize].flow {
        Flow::Branch(t) => Flow::Branch(addr.wrapping_add(t)),
        Flow::CondBranch(t) => Flow::CondBranch(addr.wrapping_add(t)),
        fl => fl,
    };
    targets.sort_unstable();
    targets.dedup();

    // Blocks: a new one at each target, after each control transfer, and
    // after any gap in the decoded code. (Each block but the first starts
    // at a target or after a gap, which only a target reaches.)
    let first_block = prog.blocks.len();
    prog.insts.reserve(found.len());
    prog.form_of.reserve(found.len());
    prog.blocks.reserve(targets.len() + 1);
    // The blocks' start addresses, in order (a search of these stays in
    // the cache; one of the instructions did not).
    let mut starts: Vec<u64> = Vec::with_capacity(targets.len() + 1);
    // Whether each block has a call or a jump through a register: only
    // those need the scan of what SGPRs hold (the others are looked at
    // only at their end).
    let mut scanned: Vec<bool> = Vec::with_capacity(targets.len() + 1);
    let mut t = 0;
    // Where the previous instruction ends, and its flow.
    let mut prev_end: Option<(u64, Flow)> = None;
    for &(addr, k) in spans.iter().flat_map(|s| &found[s.clone()]) {
        if prev_end.is_some_and(|(end, _)| end > addr) {
            return Err(LiftError::Overlap { address: addr });
        }
        while t < targets.len() && targets[t] < addr {
            t += 1;
        }
        let is_target = t < targets.len() && targets[t] == addr;
        let new_block = match prev_end {
            None => true,
            Some((end, fl)) => is_target || end != addr || !matches!(fl, Flow::Next | Flow::Call),
        };
        let flow = forms[k as usize].flow;
        if new_block {
            starts.push(addr);
            scanned.push(false);
            let end = prog.insts.len();
            if prog.blocks.len() > first_block {
                if let Some(b) = prog.blocks.last_mut() {
                    b.insts.end = end;
                }
            }
            prog.blocks.push(Block {
                function: f,
                insts: prog.insts.len()..prog.insts.len(),
                succs: Vec::new(),
                preds: Vec::new(),
                exit: Exit::FallThrough,
            });
        }
        prog.insts.push(Inst {
            addr,
            inst: forms[k as usize].inst,
            block: prog.blocks.len() - 1,
        });
        prog.form_of.push(k);
        if matches!(flow, Flow::Call | Flow::SetPc) {
            if let Some(s) = scanned.last_mut() {
                *s = true;
            }
        }
        prev_end = Some((addr.saturating_add(len(k)), flow));
    }
    let end = prog.insts.len();
    if prog.blocks.len() > first_block {
        if let Some(b) = prog.blocks.last_mut() {
            b.insts.end = end;
        }
    }
    let last_block = prog.blocks.len();
    let fidx = prog.functions.len();
    debug_assert_eq!(fidx, f);
    prog.functions.push(Function {
        name: None,
        entry,
        kind,
        blocks: first_block..last_block,
        calls: Vec::new(),
    });

    // The block at `a`, a successor of block `b` (nearly always the
    // next one when `a` follows `b`).
    let block_of = |b: BlockId, a: u64| -> Option<BlockId> {
        if starts.get(b + 1 - first_block) == Some(&a) {
            return Some(b + 1);
        }
        Some(first_block + starts.binary_search(&a).ok()?)
    };

    // Exits, edges and calls.
    for b in first_block..last_block {
        let range = prog.blocks[b].insts.clone();
        let at = |prog: &Program, id: InstId| (prog.insts[id].addr, prog.form_of[id]);
        let mut scan = scanned[b - first_block].then(Scan::new);
        if let Some(scan) = &mut scan {
            for id in range.clone() {
                let (addr, k) = at(prog, id);
                let inst = forms[k as usize].inst;
                if forms[k as usize].flow == Flow::Call {
                    let callee = resolve(img, scan, &inst, 1);
                    add_call(prog, id, f, callee, false);
                }
                step(img, scan, &inst, dec.forms.used(k as usize), addr);
            }
        }
        let Some(id) = range.clone().last() else {
            continue;
        };
        let (addr, k) = at(prog, id);
        let inst = forms[k as usize].inst;
        let after = addr.wrapping_add(inst.len() as u64);
        // (exit, successor addresses)
        let (exit, succs): (Exit, &[u64]) = match flow_at((addr, k)) {
            Flow::Next | Flow::Call => (Exit::FallThrough, &[after]),
            Flow::Branch(t) => (Exit::Branch, &[t]),
            Flow::CondBranch(t) => (Exit::CondBranch, &[t, after]),
            Flow::End => (Exit::EndProgram, &[]),
            Flow::Unresolved => (Exit::Unresolved, &[]),
            Flow::SetPc => {
                let callee = match &scan {
                    Some(scan) => resolve(img, scan, &inst, 0),
                    None => Callee::Unresolved,
                };
                match callee {
                    Callee::Unresolved if kind == FuncKind::Device => (Exit::Return, &[]),
                    Callee::Unresolved => (Exit::Unresolved, &[]),
                    callee => (Exit::TailCall(add_call(prog, id, f, callee, true)), &[]),
                }
            }
        };
        let mut ids = Vec::with_capacity(succs.len());
        for &s in succs {
            let sb = block_of(b, s).ok_or(LiftError::OutsideCode { address: s })?;
            if !ids.contains(&sb) {
                ids.push(sb);
            }
        }
        prog.blocks[b].exit = exit;
        prog.blocks[b].succs = ids;
    }
    // Predecessor lists allocated once at their size.
    let mut npreds = vec![0usize; last_block - first_block];
    for b in first_block..last_block {
        for &s in &prog.blocks[b].succs {
            npreds[s - first_block] += 1;
        }
    }
    for (b, n) in (first_block..last_block).zip(npreds) {
        prog.blocks[b].preds = Vec::with_capacity(n);
    }
    for b in first_block..last_block {
        for k in 0..prog.blocks[b].succs.len() {
            let s = prog.blocks[b].succs[k];
            prog.blocks[s].preds.push(b);
        }
    }
    Ok(())
}

/// The instructions found, `found`, in address order: `found` (or, if
/// runs interleave, a sorted copy) and the spans of it to take in turn
/// (not copied out in that order: they are read once). Each run (from its
/// start in `runs` to the next) is in order and, apart from a branch into
/// the middle of an instruction (which lifting then rejects), runs cover
/// disjoint ranges: ordering the runs by their first address orders all.
fn in_address_order(
    found: Vec<(u64, u32)>,
    mut runs: Vec<usize>,
) -> (Vec<(u64, u32)>, Vec<std::ops::Range<usize>>) {
    runs.retain(|&r| r < found.len());
    runs.dedup();
    runs.push(found.len());
    // (first address, start, end) of each run
    let mut spans: Vec<(u64, usize, usize)> = runs
        .windows(2)
        .map(|w| (found[w[0]].0, w[0], w[1]))
        .collect();
    spans.sort_unstable_by_key(|s| s.0);
    // (Each run is in order, so all are if each ends before the next starts.)
    if spans.windows(2).any(|w| found[w[0].2 - 1].0 >= w[1].0) {
        // Runs interleave: order the instructions themselves (addresses
        // are distinct, each visited once).
        let mut sorted = found;
        sorted.sort_unstable_by_key(|x| x.0);
        let n = sorted.len();
        return (sorted, std::iter::once(0..n).collect());
    }
    (found, spans.into_iter().map(|(_, a, b)| a..b).collect())
}

/// Records that instruction `inst` of function `caller` calls `callee`
/// (jumps to it, `tail`); the call site's index.
fn add_call(prog: &mut Program, inst: InstId, caller: FuncId, callee: Callee, tail: bool) -> usize {
    let site = prog.calls.len();
    prog.calls.push(CallSite {
        inst,
        caller,
        callee,
        tail,
    });
    prog.functions[caller].calls.push(site);
    site
}

/// The callee named by the SGPR pair in operand `op` of a call or setpc.
fn resolve(img: &Image<'_, '_>, scan: &Scan, inst: &Instruction, op: usize) -> Callee {
    let Some(Operand::Sgpr { first, .. }) = inst.operand(op) else {
        return Callee::Unresolved;
    };
    let (lo, hi) = (scan.get(first), scan.get(first + 1));
    let code = |a: u64| {
        if img.is_code(a) {
            Callee::Direct(a as usize)
        } else {
            Callee::Unresolved
        }
    };
    let pointer = |p: Ptr| -> Callee {
        match p {
            Ptr::Addr(a) => match img.pointer_at(a) {
                Target64::Addr(t) => code(t),
                Target64::External(n) => Callee::External(n),
                Target64::Unknown => Callee::Unresolved,
            },
            Ptr::Got(sym) => match img.symbol_addr(sym) {
                Some((a, true, _)) => code(a),
                Some((_, false, n)) => Callee::External(n),
                None => Callee::Unresolved,
            },
        }
    };
    match (lo, hi) {
        (SVal::Lo(Ptr::Addr(a)), SVal::Hi(Ptr::Addr(b))) if a == b => code(a),
        (SVal::MemLo(p, false), SVal::MemHi(q, false)) if p == q => pointer(p),
        (SVal::MemLo(Ptr::Addr(a), true), SVal::MemHi(Ptr::Addr(b), true)) if a == b => {
            let Some((start, size)) = img.data_symbol(a) else {
                return Callee::Unresolved;
            };
            let mut callees = Vec::new();
            let mut unresolved = 0;
            let mut at = a;
            while at.saturating_add(8) <= start.saturating_add(size) {
                match img.pointer_at(at) {
                    Target64::Addr(t) if img.is_code(t) => callees.push(t as usize),
                    _ => unresolved += 1,
                }
                at = at.wrapping_add(8);
            }
            Callee::Table {
                table: a,
                callees,
                unresolved,
            }
        }
        _ => Callee::Unresolved,
    }
}

/// A constant source operand (inline integer or literal, with its relocation).
fn const_of(img: &Image<'_, '_>, op: Operand, inst_addr: u64) -> Option<CVal> {
    match op {
        Operand::Inline(v @ 128..=192) => Some(CVal::Val(v as u32 - 128)),
        Operand::Inline(v @ 193..=208) => Some(CVal::Val((-(v as i32 - 192)) as u32)),
        Operand::Literal(l) => {
            let at = inst_addr.wrapping_add(4);
            let Some(r) = img.relocs.get(&at).and_then(|k| img.co.relocations.get(*k)) else {
                return Some(CVal::Val(l));
            };
            let (s, defined, _) = img.symbol_addr(r.symbol_index)?;
            let rel = s.wrapping_add(r.addend as u64).wrapping_sub(at);
            match r.r_type {
                RelocType::REL32_LO if defined => Some(CVal::Val(rel as u32)),
                RelocType::REL32_HI if defined => Some(CVal::Val((rel >> 32) as u32)),
                RelocType::GOTPCREL32_LO => Some(CVal::GotLo(r.symbol_index)),
                RelocType::GOTPCREL32_HI => Some(CVal::GotHi(r.symbol_index)),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Advances the scan over one instruction.
fn step(
    img: &Image<'_, '_>,
    scan: &mut Scan,
    inst: &Instruction,
    used: &[UsedRegister],
    addr: u64,
) {
    let name = inst.opcode().map(|o| o.name()).unwrap_or("");
    let sgpr = |i: usize| match inst.operand(i) {
        Some(Operand::Sgpr { first, .. }) => Some(first),
        _ => None,
    };
    let val = |scan: &Scan, i: usize| -> Option<SVal> {
        match inst.operand(i)? {
            Operand::Sgpr { first, .. } => Some(scan.get(first)),
            op => match const_of(img, op, addr)? {
                CVal::Val(v) => Some(SVal::Const(v)),
                _ => None,
            },
        }
    };
    let cval = |scan: &Scan, i: usize| -> Option<CVal> {
        match inst.operand(i)? {
            Operand::Sgpr { first, .. } => match scan.get(first) {
                SVal::Const(v) => Some(CVal::Val(v)),
                _ => None,
            },
            op => const_of(img, op, addr),
        }
    };
    let mut new: Vec<(u16, SVal)> = Vec::new();
    let mut carry = None;
    match name {
        "s_getpc_b64" => {
            if let Some(d) = sgpr(0) {
                let pc = Ptr::Addr(addr.wrapping_add(4));
                new.push((d, SVal::Lo(pc)));
                new.push((d + 1, SVal::Hi(pc)));
            }
        }
        "s_add_u32" | "s_sub_u32" => {
            if let Some(d) = sgpr(0) {
                let sub = name == "s_sub_u32";
                let (a, b) = (val(scan, 1), val(scan, 2));
                let pick = match (a, b) {
                    (Some(SVal::Lo(p)), _) => Some((p, cval(scan, 2))),
                    (_, Some(SVal::Lo(p))) if !sub => Some((p, cval(scan, 1))),
                    _ => None,
                };
                if let Some((p, Some(c))) = pick {
                    carry = Some((d, p, c, sub));
                    new.push((d, SVal::Pending));
                }
            }
        }
        "s_addc_u32" | "s_subb_u32" => {
            if let (Some(d), Some((lo, p, c, sub))) = (sgpr(0), scan.carry) {
                let same_op = sub == (name == "s_subb_u32");
                let (a, b) = (val(scan, 1), val(scan, 2));
                let h = match (a, b) {
                    (Some(SVal::Hi(q)), _) if q == p => cval(scan, 2),
                    (_, Some(SVal::Hi(q))) if q == p && !sub => cval(scan, 1),
                    _ => None,
                };
                if same_op && scan.get(lo) == SVal::Pending {
                    let result = match (p, c, h) {
                        (Ptr::Addr(x), CVal::Val(c), Some(CVal::Val(h))) => {
                            let k = ((h as u64) << 32) | c as u64;
                            Some(Ptr::Addr(if sub {
                                x.wrapping_sub(k)
                            } else {
                                x.wrapping_add(k)
                            }))
                        }
                        (Ptr::Addr(_), CVal::GotLo(s), Some(CVal::GotHi(t))) if s == t && !sub => {
                            Some(Ptr::Got(s))
                        }
                        _ => None,
                    };
                    if let Some(r) = result {
                        new.push((lo, SVal::Lo(r)));
                        new.push((d, SVal::Hi(r)));
                    }
                }
            }
        }
        "s_mov_b32" => {
            if let (Some(d), Some(v)) = (sgpr(0), val(scan, 1)) {
                new.push((d, v));
            }
        }
        "s_mov_b64" => {
            if let (Some(d), Some(Operand::Sgpr { first, .. })) = (sgpr(0), inst.operand(1)) {
                new.push((d, scan.get(first)));
                new.push((d + 1, scan.get(first + 1)));
            }
        }
        "s_load_dwordx2" => {
            if let (Some(d), Some(Operand::Sgpr { first: base, .. })) = (sgpr(0), inst.operand(1)) {
                let (lo, hi) = (scan.get(base), scan.get(base + 1));
                let w = inst.words();
                let imm = w[0] >> 17 & 1 != 0;
                let soe = w[0] >> 14 & 1 != 0;
                let w1 = w.get(1).copied().unwrap_or(0);
                // gfx9 SMEM: 21-bit signed byte offset with imm; with
                // soe an SGPR offset too; with neither the SGPR is in offset.
                let off = if imm {
                    ((w1 & 0x1F_FFFF) << 11) as i32 >> 11
                } else {
                    0
                };
                let index = soe || !imm;
                if let (SVal::Lo(p), SVal::Hi(q)) = (lo, hi) {
                    if p == q {
                        let p = match p {
                            Ptr::Addr(a) => Ptr::Addr(a.wrapping_add(off as i64 as u64)),
                            Ptr::Got(s) if off == 0 => Ptr::Got(s),
                            Ptr::Got(_) => Ptr::Addr(u64::MAX),
                        };
                        new.push((d, SVal::MemLo(p, index)));
                        new.push((d + 1, SVal::MemHi(p, index)));
                    }
                }
            }
        }
        _ => {}
    }
    // Everything the instruction writes becomes unknown, then the results.
    let mut scc_written = false;
    for u in used {
        if !u.access.writes() {
            continue;
        }
        match u.register.file {
            RegFile::Sgpr => {
                for r in u.register.first..u.register.first + u.register.count as u16 {
                    scan.set(r, SVal::Unknown);
                }
            }
            RegFile::Scc => scc_written = true,
            _ => {}
        }
    }
    if scc_written || carry.is_some() {
        scan.carry = carry;
    }
    for (r, v) in new {
        scan.set(r, v);
    }
}

#[cfg(test)]
mod tests {
    use super::in_address_order;

    /// Runs in any order, disjoint or interleaved (a branch into the
    /// middle of an 8-byte instruction), come out as a plain sort would.
    #[test]
    fn runs_are_put_in_address_order() {
        let cases: [(&[u64], &[usize]); 4] = [
            (&[0x200, 0x204, 0x100, 0x108, 0x300], &[0, 2, 4]),
            (&[0x100, 0x108, 0x104, 0x10c], &[0, 2]),
            (&[0x10, 0x14, 0x18], &[0, 0, 3, 3]),
            (&[], &[0]),
        ];
        for (addrs, runs) in cases {
            let found: Vec<(u64, u32)> = addrs
                .iter()
                .enumerate()
                .map(|(k, &a)| (a, k as u32))
                .collect();
            let mut want = found.clone();
            want.sort_by_key(|x| x.0);
            let (found, spans) = in_address_order(found, runs.to_vec());
            let got: Vec<(u64, u32)> = spans.into_iter().flat_map(|s| found[s].to_vec()).collect();
            assert_eq!(got, want, "{addrs:x?} {runs:?}");
        }
    }
}
