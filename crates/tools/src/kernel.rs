//! A kernel as a tool sees it when it decides where hooks go: the functions
//! the lifted kernel reaches, their basic blocks, and every instruction
//! with the facts a tool chooses by — address, opcode, text, registers read
//! and written, what kind of instruction it is, the memory address operand.
//!
//! Rust tools also get the whole [`Analysis`] (control flow, call graph,
//! liveness) through [`Kernel::analysis`]; the C ABI exposes what this
//! module computes.

use inlay_codeobj::metadata::KernelArg;
use inlay_instrument::lift::{Exit, FuncKind};
use inlay_instrument::Analysis;
use inlay_isa::tables::{Field, Slot};
use inlay_isa::{info, Access, Encoding, Instruction, Operand, RegFile, Register};

/// The kernel being instrumented.
pub struct Kernel<'a> {
    pub(crate) name: &'a str,
    pub(crate) object: u64,
    pub(crate) code_object: &'a str,
    pub(crate) analysis: &'a Analysis,
    pub(crate) args: &'a [KernelArg],
    pub(crate) kernarg_size: usize,
}

impl<'a> Kernel<'a> {
    /// Its name as in the code object (C++ names mangled).
    pub fn name(&self) -> &'a str {
        self.name
    }

    /// Its kernel object (what launches of it dispatch: [`crate::Launch::kernel_object`]).
    pub fn object(&self) -> u64 {
        self.object
    }

    /// The name (or URI) of the code object it was loaded from.
    pub fn code_object(&self) -> &'a str {
        self.code_object
    }

    /// Its arguments (explicit and hidden) from its metadata.
    pub fn args(&self) -> &'a [KernelArg] {
        self.args
    }

    /// Bytes of its kernel-argument segment, from its metadata.
    pub fn kernarg_size(&self) -> usize {
        self.kernarg_size
    }

    /// The lifted kernel with liveness: everything the engine knows.
    pub fn analysis(&self) -> &'a Analysis {
        self.analysis
    }

    /// Instructions of the kernel and of the device functions it reaches,
    /// function by function, in address order within each. An
    /// instruction's index here is what insertion points name.
    pub fn instructions(&self) -> impl ExactSizeIterator<Item = Instr<'a>> + 'a {
        let an = self.analysis;
        (0..an.program.insts.len()).map(move |index| Instr { an, index })
    }

    /// Instruction `index`, if there is one.
    pub fn instruction(&self, index: usize) -> Option<Instr<'a>> {
        (index < self.analysis.program.insts.len()).then_some(Instr {
            an: self.analysis,
            index,
        })
    }

    pub fn instruction_count(&self) -> usize {
        self.analysis.program.insts.len()
    }

    /// The kernel (first) and the device functions it can reach.
    pub fn functions(&self) -> impl ExactSizeIterator<Item = FunctionView<'a>> + 'a {
        let an = self.analysis;
        (0..an.program.functions.len()).map(move |index| FunctionView { an, index })
    }

    /// Basic blocks of all functions, function by function.
    pub fn blocks(&self) -> impl ExactSizeIterator<Item = BlockView<'a>> + 'a {
        let an = self.analysis;
        (0..an.program.blocks.len()).map(move |index| BlockView { an, index })
    }
}

/// A function of the lifted kernel.
#[derive(Clone, Copy)]
pub struct FunctionView<'a> {
    an: &'a Analysis,
    pub index: usize,
}

impl<'a> FunctionView<'a> {
    /// The symbol at its entry, if it has one.
    pub fn name(&self) -> Option<&'a str> {
        self.an.program.functions[self.index].name.as_deref()
    }
    pub fn is_kernel(&self) -> bool {
        self.an.program.functions[self.index].kind == FuncKind::Kernel
    }
    /// Address of its first instruction in its code object.
    pub fn entry(&self) -> u64 {
        self.an.program.functions[self.index].entry
    }
    /// Its blocks (indices into [`Kernel::blocks`]); the first is its entry.
    pub fn blocks(&self) -> std::ops::Range<usize> {
        self.an.program.functions[self.index].blocks.clone()
    }
    /// Its instructions (indices into [`Kernel::instructions`]).
    pub fn instructions(&self) -> std::ops::Range<usize> {
        let p = &self.an.program;
        let b = &p.functions[self.index].blocks;
        match (
            p.blocks.get(b.start),
            b.end.checked_sub(1).and_then(|l| p.blocks.get(l)),
        ) {
            (Some(first), Some(last)) => first.insts.start..last.insts.end,
            _ => 0..0,
        }
    }
}

/// A basic block.
#[derive(Clone, Copy)]
pub struct BlockView<'a> {
    an: &'a Analysis,
    pub index: usize,
}

impl<'a> BlockView<'a> {
    pub fn function(&self) -> usize {
        self.an.program.blocks[self.index].function
    }
    /// Its instructions (indices into [`Kernel::instructions`]).
    pub fn instructions(&self) -> std::ops::Range<usize> {
        self.an.program.blocks[self.index].insts.clone()
    }
    /// Blocks control may go to next (within the function).
    pub fn successors(&self) -> &'a [usize] {
        &self.an.program.blocks[self.index].succs
    }
    pub fn predecessors(&self) -> &'a [usize] {
        &self.an.program.blocks[self.index].preds
    }
    /// Whether the wave ends in it (`s_endpgm`).
    pub fn ends_wave(&self) -> bool {
        self.an.program.blocks[self.index].exit == Exit::EndProgram
    }
    /// Whether it returns to the caller (device functions).
    pub fn returns(&self) -> bool {
        self.an.program.blocks[self.index].exit == Exit::Return
    }
}

/// What kind of instruction it is: a set of flags (several may hold).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Class(pub u32);

impl Class {
    /// Runs once per wave on the scalar unit (SALU, SMEM, SOPP).
    pub const SCALAR: Class = Class(1 << 0);
    /// Runs per lane under EXEC (VALU, vector memory, LDS, export).
    pub const VECTOR: Class = Class(1 << 1);
    /// Accesses memory (scalar, global, flat, scratch, buffer, image, LDS).
    pub const MEMORY: Class = Class(1 << 2);
    /// Reads memory into registers (atomics that return too).
    pub const LOAD: Class = Class(1 << 3);
    /// Writes registers to memory.
    pub const STORE: Class = Class(1 << 4);
    /// A read-modify-write of memory.
    pub const ATOMIC: Class = Class(1 << 5);
    /// May change the program counter: branches, jumps, calls, returns.
    pub const BRANCH: Class = Class(1 << 6);
    /// A call (`s_swappc_b64`, `s_call_b64`).
    pub const CALL: Class = Class(1 << 7);
    /// Ends the wave (`s_endpgm`).
    pub const ENDS_WAVE: Class = Class(1 << 8);
    /// Reads or writes one lane whatever EXEC says (`v_readlane_b32`,
    /// `v_readfirstlane_b32`, `v_writelane_b32`).
    pub const LANE_ACCESS: Class = Class(1 << 9);
    /// Accesses LDS (DS instructions other than GWS ones).
    pub const LDS: Class = Class(1 << 10);
    /// Has an address [`crate::Arg::Address`] can pass (FLAT and
    /// GLOBAL instructions).
    pub const HAS_ADDRESS: Class = Class(1 << 11);

    pub fn contains(self, other: Class) -> bool {
        self.0 & other.0 == other.0
    }
    pub fn intersects(self, other: Class) -> bool {
        self.0 & other.0 != 0
    }
}

impl std::ops::BitOr for Class {
    type Output = Class;
    fn bitor(self, o: Class) -> Class {
        Class(self.0 | o.0)
    }
}

/// Which memory an address operand points into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Space {
    /// FLAT: global, LDS or scratch, decided by the address at run time.
    Flat,
    Global,
    Scratch,
    /// A buffer (MUBUF/MTBUF) or image resource descriptor.
    Buffer,
    Image,
    /// Scalar memory (SMEM).
    Scalar,
    Lds,
}

/// How a memory instruction forms its address: a per-lane base (VGPRs), a
/// wave-uniform base or resource (SGPRs), a scalar offset register, an
/// immediate offset. Absent parts are `None` or 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddressOperand {
    pub space: Space,
    pub vector_base: Option<Register>,
    pub scalar_base: Option<Register>,
    pub scalar_offset: Option<Register>,
    pub offset: i64,
}

/// One instruction of the kernel being instrumented.
#[derive(Clone, Copy)]
pub struct Instr<'a> {
    an: &'a Analysis,
    /// Its index in [`Kernel::instructions`].
    pub index: usize,
}

impl<'a> Instr<'a> {
    fn inst(&self) -> &'a Instruction {
        &self.an.program.insts[self.index].inst
    }

    /// Address in its code object.
    pub fn addr(&self) -> u64 {
        self.an.program.insts[self.index].addr
    }

    pub fn size(&self) -> usize {
        self.inst().len()
    }

    pub fn block(&self) -> usize {
        self.an.program.insts[self.index].block
    }

    pub fn function(&self) -> usize {
        self.an.program.blocks[self.block()].function
    }

    /// The operation without encoding suffix (`v_add_f32`), the same
    /// across encodings; `<invalid>` for words that decode to nothing.
    pub fn opcode(&self) -> &'static str {
        self.inst().opcode().map_or("<invalid>", |o| o.name())
    }

    /// As printed (`v_add_f32_e32`).
    pub fn mnemonic(&self) -> &'static str {
        self.inst().mnemonic()
    }

    /// The instruction as llvm-objdump prints it.
    pub fn text(&self) -> String {
        inlay_isa::format::to_string(self.inst())
    }

    /// The decoded instruction.
    pub fn instruction(&self) -> &'a Instruction {
        self.inst()
    }

    /// Every register it reads or writes, implicit ones included.
    pub fn registers(&self) -> Vec<(Register, Access)> {
        info(self.inst())
            .used_registers()
            .iter()
            .map(|u| (u.register, u.access))
            .collect()
    }

    pub fn class(&self) -> Class {
        classify(self.inst())
    }

    /// Its memory address operand, for memory instructions.
    pub fn address_operand(&self) -> Option<AddressOperand> {
        address_operand(self.inst())
    }
}

/// The flags of [`Class`] that hold for `i`.
pub fn classify(i: &Instruction) -> Class {
    if !i.is_valid() {
        return Class::default();
    }
    let op = i.opcode().map_or("", |o| o.name());
    let mut c = match i.encoding() {
        Encoding::Sop1
        | Encoding::Sop2
        | Encoding::Sopk
        | Encoding::Sopc
        | Encoding::Sopp
        | Encoding::Smem => Class::SCALAR,
        _ => Class::VECTOR,
    };
    let memory = matches!(
        i.encoding(),
        Encoding::Smem
            | Encoding::Ds
            | Encoding::Flat
            | Encoding::Global
            | Encoding::Scratch
            | Encoding::Mubuf
            | Encoding::Mtbuf
            | Encoding::Mimg
    );
    // Cache maintenance and s_dcache/s_memtime-style SMEM ops move no data.
    let moves_data = !op.contains("_wb")
        && !op.contains("_inv")
        && !op.starts_with("s_dcache")
        && !op.starts_with("s_mem")
        && !op.starts_with("s_atc_probe")
        && !op.starts_with("ds_gws")
        && op != "ds_nop";
    if memory && moves_data {
        c = c | Class::MEMORY;
        let ds_atomic = i.encoding() == Encoding::Ds
            && ![
                "ds_read",
                "ds_write",
                "ds_swizzle",
                "ds_permute",
                "ds_bpermute",
                "ds_append",
                "ds_consume",
                "ds_ordered",
            ]
            .iter()
            .any(|p| op.starts_with(p));
        let atomic = op.contains("atomic") || ds_atomic;
        if atomic {
            c = c | Class::ATOMIC;
        }
        let writes_reg = info(i).used_registers().iter().any(|u| {
            u.access.writes()
                && matches!(
                    u.register.file,
                    RegFile::Vgpr | RegFile::Agpr | RegFile::Sgpr
                )
                && u.operand.is_some()
        });
        if op.contains("load")
            || op.starts_with("ds_read")
            || op.starts_with("image_sample")
            || op.starts_with("image_gather")
            || (atomic && writes_reg)
        {
            c = c | Class::LOAD;
        }
        if op.contains("store") || op.starts_with("ds_write") {
            c = c | Class::STORE;
        }
        if i.encoding() == Encoding::Ds {
            c = c | Class::LDS;
        }
    }
    if matches!(i.encoding(), Encoding::Flat | Encoding::Global) && moves_data {
        c = c | Class::HAS_ADDRESS;
    }
    let writes_pc = info(i)
        .used_registers()
        .iter()
        .any(|u| u.register.file == RegFile::Pc && u.access.writes());
    if writes_pc {
        c = c | Class::BRANCH;
    }
    if op == "s_swappc_b64" || op == "s_call_b64" {
        c = c | Class::CALL | Class::BRANCH;
    }
    if op.starts_with("s_endpgm") {
        c = c | Class::ENDS_WAVE;
    }
    if matches!(
        op,
        "v_readlane_b32" | "v_readfirstlane_b32" | "v_writelane_b32"
    ) {
        c = c | Class::LANE_ACCESS;
    }
    c
}

fn register_of(o: Operand) -> Option<Register> {
    let r = |file, first: u16, count: u8| Some(Register::new(file, first, count));
    match o {
        Operand::Vgpr { first, count } => r(RegFile::Vgpr, first, count),
        Operand::Agpr { first, count } => r(RegFile::Agpr, first, count),
        Operand::Sgpr { first, count } => r(RegFile::Sgpr, first, count),
        Operand::Ttmp { first, count } => r(RegFile::Ttmp, first, count),
        Operand::Special { code: 106, count } => r(RegFile::Vcc, 0, count),
        Operand::Special { code: 126, count } => r(RegFile::Exec, 0, count),
        Operand::Special { code: 124, count } => r(RegFile::M0, 0, count),
        Operand::Special { code: 102, count } => r(RegFile::FlatScratch, 0, count),
        _ => None,
    }
}

/// The address operand of a memory instruction, from its operand fields.
pub fn address_operand(i: &Instruction) -> Option<AddressOperand> {
    if !classify(i).contains(Class::MEMORY) {
        return None;
    }
    let space = match i.encoding() {
        Encoding::Flat => Space::Flat,
        Encoding::Global => Space::Global,
        Encoding::Scratch => Space::Scratch,
        Encoding::Mubuf | Encoding::Mtbuf => Space::Buffer,
        Encoding::Mimg => Space::Image,
        Encoding::Smem => Space::Scalar,
        Encoding::Ds => Space::Lds,
        _ => return None,
    };
    let mut a = AddressOperand {
        space,
        vector_base: None,
        scalar_base: None,
        scalar_offset: None,
        offset: 0,
    };
    // FLAT, GLOBAL, SCRATCH: a VGPR address, or with an SGPR base
    // (saddr, 0x7f for none) a 32-bit VGPR offset (GLOBAL) or no VGPR
    // (SCRATCH); the printed operands hide saddr behind `off`.
    let w1 = i.words().get(1).copied().unwrap_or(0);
    let (vaddr, saddr) = ((w1 & 0xff) as u16, (w1 >> 16 & 0x7f) as u16);
    let reg = |file, first, count| Some(Register::new(file, first, count));
    match (i.encoding(), saddr) {
        (Encoding::Flat, _) | (Encoding::Global, 0x7f) => {
            a.vector_base = reg(RegFile::Vgpr, vaddr, 2)
        }
        (Encoding::Global, s) => {
            a.vector_base = reg(RegFile::Vgpr, vaddr, 1);
            a.scalar_base = reg(RegFile::Sgpr, s, 2);
        }
        (Encoding::Scratch, 0x7f) => a.vector_base = reg(RegFile::Vgpr, vaddr, 1),
        (Encoding::Scratch, s) => a.scalar_base = reg(RegFile::Sgpr, s, 1),
        // MUBUF/MTBUF: a VGPR offset and/or index (offen, idxen), printed
        // behind `off` too.
        (Encoding::Mubuf | Encoding::Mtbuf, _) => {
            let w0 = i.words().first().copied().unwrap_or(0);
            let regs = (w0 >> 12 & 1) + (w0 >> 13 & 1);
            if regs > 0 {
                a.vector_base = reg(RegFile::Vgpr, vaddr, regs as u8);
            }
        }
        _ => {}
    }
    let flat = matches!(
        i.encoding(),
        Encoding::Flat | Encoding::Global | Encoding::Scratch
    );
    for (n, slot) in i.slots().iter().enumerate().filter(|_| !flat) {
        let Slot::Reg { field, .. } = *slot else {
            continue;
        };
        let reg = i.operand(n).and_then(register_of);
        match field {
            Field::Vaddr | Field::Addr if a.vector_base.is_none() => a.vector_base = reg,
            Field::Saddr | Field::Sbase | Field::Srsrc => a.scalar_base = reg,
            Field::Soffset => a.scalar_offset = reg,
            _ => {}
        }
    }
    // Immediate offsets: FLAT 12 bits unsigned, GLOBAL/SCRATCH 13 bits
    // signed, MUBUF/MTBUF 12 bits, DS 16 bits (offset0/offset1 of the
    // two-address forms are reported as offset0), SMEM 21 bits signed.
    let w0 = i.words().first().copied().unwrap_or(0);
    a.offset = match i.encoding() {
        Encoding::Flat => i64::from(w0 & 0xfff),
        Encoding::Global | Encoding::Scratch => i64::from(((w0 & 0x1fff) << 19) as i32 >> 19),
        Encoding::Mubuf | Encoding::Mtbuf => i64::from(w0 & 0xfff),
        Encoding::Ds => i64::from(w0 & 0xffff),
        Encoding::Smem if a.scalar_offset.is_none() => {
            i64::from(((i.field(Field::Offset) & 0x1f_ffff) << 11) as i32 >> 11)
        }
        _ => 0,
    };
    Some(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use inlay_isa::{Decoder, Target};

    /// Encodings as `llvm-mc-19 -arch=amdgcn -mcpu=gfx90a -show-encoding`
    /// prints them for the text in each comment.
    fn decode(bytes: &[u8]) -> Instruction {
        Decoder::new(Target::Gfx90a).decode(bytes).expect("decodes")
    }

    #[test]
    fn classes_of_common_instructions() {
        let has = |b: &[u8], c: Class| classify(&decode(b)).contains(c);
        let not = |b: &[u8], c: Class| !classify(&decode(b)).intersects(c);
        // s_add_u32 s0, s1, s2
        let add = [0x01, 0x02, 0x00, 0x80];
        assert!(
            has(&add, Class::SCALAR) && not(&add, Class::VECTOR | Class::MEMORY | Class::BRANCH)
        );
        // s_endpgm; s_branch 1; s_swappc_b64 s[30:31], s[4:5]
        assert!(has(&[0x00, 0x00, 0x81, 0xbf], Class::ENDS_WAVE));
        assert!(has(&[0x01, 0x00, 0x82, 0xbf], Class::BRANCH));
        assert!(has(&[0x04, 0x1e, 0x9e, 0xbe], Class::CALL | Class::BRANCH));
        // v_add_f32_e32 v1, v2, v3
        let vadd = [0x02, 0x07, 0x02, 0x02];
        assert!(has(&vadd, Class::VECTOR) && not(&vadd, Class::SCALAR | Class::MEMORY));
        // v_readlane_b32 s1, v2, 3
        assert!(has(
            &[0x01, 0x00, 0x89, 0xd2, 0x02, 0x07, 0x01, 0x00],
            Class::LANE_ACCESS | Class::VECTOR
        ));
        // global_atomic_add v1, v2, v3, s[4:5] offset:8 glc
        let atomic = [0x08, 0x80, 0x09, 0xdd, 0x02, 0x03, 0x04, 0x01];
        assert!(has(
            &atomic,
            Class::MEMORY | Class::ATOMIC | Class::LOAD | Class::HAS_ADDRESS
        ));
        // flat_store_dword v[4:5], v6 offset:12
        let store = [0x0c, 0x00, 0x70, 0xdc, 0x04, 0x06, 0x00, 0x00];
        assert!(
            has(&store, Class::STORE | Class::HAS_ADDRESS)
                && not(&store, Class::LOAD | Class::ATOMIC)
        );
        // ds_add_u32 v1, v2 offset:4
        let ds = [0x04, 0x00, 0x00, 0xd8, 0x01, 0x02, 0x00, 0x00];
        assert!(has(&ds, Class::LDS | Class::ATOMIC) && not(&ds, Class::HAS_ADDRESS | Class::LOAD));
    }

    #[test]
    fn address_operands() {
        let v = |first, count| Some(Register::new(RegFile::Vgpr, first, count));
        let s = |first, count| Some(Register::new(RegFile::Sgpr, first, count));
        // global_load_dword v1, v[2:3], off offset:-16
        let a =
            address_operand(&decode(&[0xf0, 0x9f, 0x50, 0xdc, 0x02, 0x00, 0x7f, 0x01])).unwrap();
        assert_eq!(
            (a.space, a.vector_base, a.scalar_base, a.offset),
            (Space::Global, v(2, 2), None, -16)
        );
        // global_atomic_add v1, v2, v3, s[4:5] offset:8 glc
        let a =
            address_operand(&decode(&[0x08, 0x80, 0x09, 0xdd, 0x02, 0x03, 0x04, 0x01])).unwrap();
        assert_eq!(
            (a.vector_base, a.scalar_base, a.offset),
            (v(2, 1), s(4, 2), 8)
        );
        // s_load_dwordx2 s[4:5], s[6:7], 0x10
        let a =
            address_operand(&decode(&[0x03, 0x01, 0x06, 0xc0, 0x10, 0x00, 0x00, 0x00])).unwrap();
        assert_eq!(
            (a.space, a.scalar_base, a.offset),
            (Space::Scalar, s(6, 2), 16)
        );
        // buffer_load_dword v1, v2, s[8:11], s3 offen offset:20
        let a =
            address_operand(&decode(&[0x14, 0x10, 0x50, 0xe0, 0x02, 0x01, 0x02, 0x03])).unwrap();
        assert_eq!(
            (
                a.space,
                a.vector_base,
                a.scalar_base,
                a.scalar_offset,
                a.offset
            ),
            (Space::Buffer, v(2, 1), s(8, 4), s(3, 1), 20)
        );
        // ds_add_u32 v1, v2 offset:4
        let a =
            address_operand(&decode(&[0x04, 0x00, 0x00, 0xd8, 0x01, 0x02, 0x00, 0x00])).unwrap();
        assert_eq!((a.space, a.vector_base, a.offset), (Space::Lds, v(1, 1), 4));
        // v_add_f32_e32 v1, v2, v3
        assert!(address_operand(&decode(&[0x02, 0x07, 0x02, 0x02])).is_none());
    }
}
