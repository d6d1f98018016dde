//! Loading a code object: segments into device memory, dynamic relocations,
//! and the predecoded form of `.text` (decoded once, here).

use std::collections::HashMap;

use inlay_codeobj::descriptor::DecodedDescriptor;
use inlay_codeobj::metadata::KernelArg;
use inlay_codeobj::reloc::RelocType;
use inlay_codeobj::{CodeObject, KernelDescriptor};
use inlay_isa::{Decoder, Instruction, Target};

use crate::inst::{predecode, Inst, Op};
use crate::memory::{MemKind, Memory};

const PT_LOAD: u32 = 1;
/// Largest loadable image accepted (code objects are far smaller).
const MAX_IMAGE: u64 = 1 << 30;

/// Why a code object could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("code object: {0}")]
    Parse(String),
    #[error("target {0} is not gfx90a")]
    Target(String),
    #[error("no loadable segment")]
    NoSegments,
    #[error("device memory: {0}")]
    Memory(#[from] crate::memory::Fault),
    #[error("relocation {kind} at {offset:#x}: {why}")]
    Relocation {
        kind: String,
        offset: u64,
        why: &'static str,
    },
}

/// A kernel of a loaded program.
#[derive(Clone, Debug)]
pub struct KernelInfo {
    pub name: String,
    pub descriptor: KernelDescriptor,
    pub decoded: DecodedDescriptor,
    /// Device address of the 64-byte descriptor (the AQL `kernel_object`).
    pub descriptor_addr: u64,
    /// Index of the first instruction.
    pub entry: u32,
    pub vgpr_count: u32,
    pub sgpr_count: u32,
    pub accum_offset: u32,
    pub kernarg_size: u64,
    pub args: Vec<KernelArg>,
    pub code_object_version: u8,
}

/// A code object loaded into device memory and predecoded.
pub struct Program {
    /// Device address the image's virtual address 0 was placed at.
    pub base: u64,
    pub size: u64,
    pub insts: Vec<Inst>,
    /// Decoded instructions, parallel to `insts` (for fault reports only).
    pub decoded: Vec<Instruction>,
    /// Instruction index by (offset - text_start) / 4; u32::MAX between instructions.
    index: Vec<u32>,
    text_start: u64,
    pub kernels: HashMap<String, KernelInfo>,
}

impl Program {
    /// Instruction index at image offset `off`.
    pub fn index_of(&self, off: u64) -> Option<u32> {
        let rel = off.checked_sub(self.text_start)?;
        if rel % 4 != 0 {
            return None;
        }
        let i = *self.index.get((rel / 4) as usize)?;
        (i != u32::MAX).then_some(i)
    }

    /// Instruction index at device address `addr` (for s_setpc / s_swappc).
    pub fn index_of_addr(&self, addr: u64) -> Option<u32> {
        self.index_of(addr.checked_sub(self.base)?)
    }

    pub fn kernel(&self, name: &str) -> Option<&KernelInfo> {
        self.kernels.get(name)
    }

    /// Number of predecoded instructions the emulator does not implement.
    pub fn unimplemented_count(&self) -> usize {
        self.insts
            .iter()
            .filter(|i| i.op == Op::Unimplemented)
            .count()
    }

    /// Loads `bytes` into `mem`.
    pub fn load(mem: &Memory, bytes: &[u8]) -> Result<Program, LoadError> {
        let co = CodeObject::parse(bytes).map_err(|e| LoadError::Parse(e.to_string()))?;
        if co.target.processor.name() != "gfx90a" {
            let target = co.target.to_string();
            return Err(LoadError::Target(target));
        }
        let loads: Vec<_> = co.segments.iter().filter(|s| s.p_type == PT_LOAD).collect();
        let size = loads
            .iter()
            .map(|s| s.vaddr.saturating_add(s.memsz))
            .max()
            .ok_or(LoadError::NoSegments)?;
        if size > MAX_IMAGE {
            return Err(LoadError::Parse(format!(
                "loadable image of {size:#x} bytes (max {MAX_IMAGE:#x})"
            )));
        }
        let base = mem.alloc(size.max(4), 0x1000, MemKind::Device, 0)?;
        let program = Self::fill(mem, &co, bytes, base, size, &loads);
        if program.is_err() {
            let _ = mem.free(base);
        }
        program
    }

    fn fill(
        mem: &Memory,
        co: &CodeObject<'_>,
        bytes: &[u8],
        base: u64,
        size: u64,
        loads: &[&inlay_codeobj::elf::Segment],
    ) -> Result<Program, LoadError> {
        let mut image = vec![0u8; size as usize];
        for s in loads {
            let outside = || LoadError::Parse("segment outside the file or image".into());
            let src = bytes
                .get(range(s.offset, s.filesz).ok_or_else(outside)?)
                .ok_or_else(outside)?;
            let dst = image
                .get_mut(range(s.vaddr, s.filesz).ok_or_else(outside)?)
                .ok_or_else(outside)?;
            dst.copy_from_slice(src);
        }
        apply_relocations(co, base, &mut image)?;
        mem.write_bytes(base, &image)?;

        let text = co
            .section(".text")
            .ok_or(LoadError::Parse("no .text".into()))?;
        let text_bytes = range(text.addr, text.size)
            .and_then(|r| image.get(r))
            .ok_or(LoadError::Parse(".text outside the image".into()))?;
        let (insts, decoded, index) = predecode_text(text_bytes, text.addr);

        let mut program = Program {
            base,
            size,
            insts,
            decoded,
            index,
            text_start: text.addr,
            kernels: HashMap::new(),
        };
        for k in &co.kernels {
            let Some(entry_off) = k.entry_address else {
                continue;
            };
            let Some(entry) = program.index_of(entry_off) else {
                continue;
            };
            let md = co
                .metadata
                .as_ref()
                .and_then(|m| m.kernels.iter().find(|km| km.name == k.name));
            let info = KernelInfo {
                name: k.name.to_string(),
                descriptor: k.descriptor,
                decoded: k.decoded.clone(),
                descriptor_addr: base + k.descriptor_address,
                entry,
                vgpr_count: k.decoded.vgpr_count,
                sgpr_count: k.decoded.sgpr_count.unwrap_or(102),
                accum_offset: k.decoded.accum_offset.unwrap_or(k.decoded.vgpr_count),
                kernarg_size: u64::from(k.descriptor.kernarg_size),
                args: md.map(|m| m.args.clone()).unwrap_or_default(),
                code_object_version: co.code_object_version,
            };
            program.kernels.insert(info.name.clone(), info);
        }
        Ok(program)
    }
}

/// `start..start + len` as indices, if it does not overflow.
fn range(start: u64, len: u64) -> Option<std::ops::Range<usize>> {
    let end = start.checked_add(len)?;
    Some(usize::try_from(start).ok()?..usize::try_from(end).ok()?)
}

fn apply_relocations(co: &CodeObject<'_>, base: u64, image: &mut [u8]) -> Result<(), LoadError> {
    for r in &co.relocations {
        if r.target_section.is_some() {
            continue; // relocatable objects are not loadable here
        }
        let err = |why| LoadError::Relocation {
            kind: r.r_type.name().unwrap_or("?").to_string(),
            offset: r.offset,
            why,
        };
        let value = match r.r_type {
            RelocType::RELATIVE64 => base.wrapping_add(r.addend as u64),
            RelocType::ABS64 => {
                let sym = r.symbol.ok_or(err("no symbol"))?;
                let s = co
                    .symbols
                    .all()
                    .iter()
                    .find(|s| s.name == sym && s.is_defined())
                    .ok_or(err("undefined symbol"))?;
                base.wrapping_add(s.value).wrapping_add(r.addend as u64)
            }
            RelocType::NONE => continue,
            _ => return Err(err("unsupported type")),
        };
        let slot = range(r.offset, 8)
            .and_then(|rg| image.get_mut(rg))
            .ok_or(err("outside the image"))?;
        slot.copy_from_slice(&value.to_le_bytes());
    }
    Ok(())
}

/// Decodes `.text` once into executable instructions plus an address index;
/// branch targets become instruction indices.
fn predecode_text(text: &[u8], start: u64) -> (Vec<Inst>, Vec<Instruction>, Vec<u32>) {
    let dec = Decoder::new(Target::Gfx90a);
    let mut insts = Vec::new();
    let mut decoded = Vec::new();
    let mut index = vec![u32::MAX; text.len().div_ceil(4)];
    let mut off = 0usize;
    let mut ins = Instruction::default();
    while off + 4 <= text.len() {
        let len = match dec.decode_into(&text[off..], &mut ins) {
            Ok(n) => n,
            Err(_) => break,
        };
        index[off / 4] = insts.len() as u32;
        insts.push(predecode(&ins, start + off as u64));
        decoded.push(ins);
        off += len;
    }
    // Resolve SOPP branch targets: PC of the next instruction + simm16 * 4.
    for i in insts.iter_mut() {
        if is_branch(i.op) {
            let t = (i.addr + 4) as i64 + i64::from(i.imm) * 4;
            let rel = t - start as i64;
            i.target = if rel >= 0 && rel % 4 == 0 {
                index.get((rel / 4) as usize).copied().unwrap_or(u32::MAX)
            } else {
                u32::MAX
            };
        }
    }
    (insts, decoded, index)
}

pub fn is_branch(op: Op) -> bool {
    matches!(
        op,
        Op::SBranch
            | Op::SCbranchScc0
            | Op::SCbranchScc1
            | Op::SCbranchVccz
            | Op::SCbranchVccnz
            | Op::SCbranchExecz
            | Op::SCbranchExecnz
    )
}
