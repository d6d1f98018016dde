//! Loading a code object: segments into device memory, dynamic relocations,
//! and the predecoded form of `.text` (decoded once, here).

use std::collections::HashMap;

use inlay_codeobj::descriptor::DecodedDescriptor;
use inlay_codeobj::metadata::KernelArg;
use inlay_codeobj::reloc::RelocType;
use inlay_codeobj::target::Family;
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
    /// Explicit and hidden arguments from the metadata, when the program was
    /// loaded from a file (used to fill hidden arguments for [`crate::Device::dispatch`]).
    pub args: Vec<KernelArg>,
    pub code_object_version: u8,
}

/// One code object's `.text` already placed in device memory (by
/// [`Program::load`] or by another loader such as inlay-loader), with the
/// kernels whose descriptors it holds.
#[derive(Clone, Debug)]
pub struct CodeRegion {
    /// Device address of the code object's virtual address 0.
    pub load_base: u64,
    /// `.text` as ELF virtual addresses.
    pub text_vaddr: u64,
    pub text_size: u64,
    pub code_object_version: u8,
    /// Kernel names and the device addresses of their descriptors.
    pub kernels: Vec<(String, u64)>,
}

/// The predecoded `.text` of one code object.
struct Region {
    load_base: u64,
    /// Device addresses of the first and one past the last byte of `.text`.
    start: u64,
    end: u64,
    /// Instruction index by (address - start) / 4; u32::MAX between instructions.
    index: Vec<u32>,
}

/// Predecoded code of one or more code objects in device memory, so that
/// calls from one into another (a device-function library) resolve.
pub struct Program {
    /// Allocation holding the image, when [`Program::load`] placed it.
    pub image: Option<u64>,
    /// Instructions of every region; `Inst::addr` is a device address.
    pub insts: Vec<Inst>,
    /// Decoded instructions, parallel to `insts` (for fault reports only).
    pub decoded: Vec<Instruction>,
    /// Sorted by start address.
    regions: Vec<Region>,
    /// What it was built from.
    sources: Vec<CodeRegion>,
    pub kernels: HashMap<String, KernelInfo>,
    /// Its code holds GWS instructions that wait for other waves of the
    /// dispatch (`ds_gws_barrier`, `ds_gws_sema_p`): dispatches of it run
    /// all their workgroups at once (see `Device`).
    pub gws_waits: bool,
}

impl Program {
    /// Instruction index at device address `addr` (branch and call targets).
    pub fn index_of_addr(&self, addr: u64) -> Option<u32> {
        let r = &self.regions[self.region_at(addr)?];
        let rel = addr - r.start;
        if !rel.is_multiple_of(4) {
            return None;
        }
        let i = *r.index.get((rel / 4) as usize)?;
        (i != u32::MAX).then_some(i)
    }

    fn region_at(&self, addr: u64) -> Option<usize> {
        let n = self.regions.partition_point(|r| r.start <= addr);
        let i = n.checked_sub(1)?;
        (addr < self.regions[i].end).then_some(i)
    }

    /// Device address of the code object holding instruction address `addr`
    /// (so `addr - load_base_of(addr)` is its offset in the code object).
    pub fn load_base_of(&self, addr: u64) -> Option<u64> {
        self.region_at(addr).map(|i| self.regions[i].load_base)
    }

    pub fn kernel(&self, name: &str) -> Option<&KernelInfo> {
        self.kernels.get(name)
    }

    /// The kernel whose descriptor is at device address `kernel_object`.
    pub fn kernel_at(&self, kernel_object: u64) -> Option<&KernelInfo> {
        self.kernels
            .values()
            .find(|k| k.descriptor_addr == kernel_object)
    }

    /// Number of predecoded instructions the emulator does not implement.
    pub fn unimplemented_count(&self) -> usize {
        self.insts
            .iter()
            .filter(|i| i.op == Op::Unimplemented)
            .count()
    }

    /// Places `bytes` (a gfx90a code object) into `mem`, applies its dynamic
    /// relocations and predecodes it.
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
        let program = Self::place(mem, &co, bytes, base, size, &loads);
        if program.is_err() {
            let _ = mem.free(base);
        }
        program
    }

    fn place(
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
        if range(text.addr, text.size)
            .and_then(|r| image.get(r))
            .is_none()
        {
            return Err(LoadError::Parse(".text outside the image".into()));
        }
        let region = CodeRegion {
            load_base: base,
            text_vaddr: text.addr,
            text_size: text.size,
            code_object_version: co.code_object_version,
            kernels: co
                .kernels
                .iter()
                .map(|k| (k.name.to_string(), base + k.descriptor_address))
                .collect(),
        };
        let mut program = Self::from_memory(mem, &[region])?;
        program.image = Some(base);
        if let Some(md) = &co.metadata {
            for km in &md.kernels {
                if let Some(k) = program.kernels.get_mut(&km.name) {
                    k.args = km.args.clone();
                }
            }
        }
        Ok(program)
    }

    /// The code objects it holds.
    pub fn code_regions(&self) -> &[CodeRegion] {
        &self.sources
    }

    /// One program holding the code of all of `programs` (already in
    /// `mem`), so that code in one calls into another: an instrumented
    /// kernel into its original code object's functions, say. Kernels keep
    /// their argument metadata; the result owns no image.
    pub fn merge(mem: &Memory, programs: &[&Program]) -> Result<Program, LoadError> {
        let regions: Vec<CodeRegion> = programs
            .iter()
            .flat_map(|p| p.sources.iter().cloned())
            .collect();
        let mut merged = Self::from_memory(mem, &regions)?;
        for p in programs {
            for (name, k) in &p.kernels {
                if let Some(m) = merged.kernels.get_mut(name) {
                    m.args = k.args.clone();
                }
            }
        }
        Ok(merged)
    }

    /// Predecodes code objects already in device memory. Kernels whose
    /// descriptor cannot be read or whose entry is not an instruction are
    /// left out (dispatching them is an error, not a crash).
    pub fn from_memory(mem: &Memory, regions: &[CodeRegion]) -> Result<Program, LoadError> {
        let mut order: Vec<&CodeRegion> = regions.iter().collect();
        order.sort_by_key(|r| r.load_base.wrapping_add(r.text_vaddr));
        let mut program = Program {
            image: None,
            insts: Vec::new(),
            decoded: Vec::new(),
            regions: Vec::new(),
            sources: regions.to_vec(),
            kernels: HashMap::new(),
            gws_waits: false,
        };
        for r in &order {
            let start = r.load_base.wrapping_add(r.text_vaddr);
            let too_big = || LoadError::Parse(format!("{:#x} bytes of .text", r.text_size));
            if r.text_size > MAX_IMAGE {
                return Err(too_big());
            }
            let end = start.checked_add(r.text_size).ok_or_else(too_big)?;
            if program.regions.last().is_some_and(|p| p.end > start) {
                return Err(LoadError::Parse(format!(
                    ".text at {start:#x} overlaps another code object's"
                )));
            }
            let mut text = vec![0u8; r.text_size as usize];
            mem.read_bytes(start, &mut text)?;
            let index = predecode_text(&text, start, &mut program.insts, &mut program.decoded);
            program.regions.push(Region {
                load_base: r.load_base,
                start,
                end,
                index,
            });
        }
        program.resolve_branches();
        program.gws_waits = program
            .insts
            .iter()
            .any(|i| matches!(i.op, Op::DsGwsBarrier | Op::DsGwsSemaP));
        for r in &order {
            for (name, kd) in &r.kernels {
                if let Some(k) = program.kernel_info(mem, name, *kd, r.code_object_version) {
                    program.kernels.insert(name.clone(), k);
                }
            }
        }
        Ok(program)
    }

    fn kernel_info(&self, mem: &Memory, name: &str, kd: u64, version: u8) -> Option<KernelInfo> {
        let mut raw = [0u8; 64];
        mem.read_bytes(kd, &mut raw).ok()?;
        let descriptor = KernelDescriptor::parse(&raw, 0).ok()?;
        let decoded = descriptor.decode(Family::Gfx90a, false);
        let entry_addr = kd.wrapping_add(descriptor.kernel_code_entry_byte_offset as u64);
        let entry = self.index_of_addr(entry_addr)?;
        Some(KernelInfo {
            name: name.to_string(),
            descriptor,
            descriptor_addr: kd,
            entry,
            vgpr_count: decoded.vgpr_count,
            sgpr_count: decoded.sgpr_count.unwrap_or(102),
            accum_offset: decoded.accum_offset.unwrap_or(decoded.vgpr_count),
            kernarg_size: u64::from(descriptor.kernarg_size),
            args: Vec::new(),
            code_object_version: version,
            decoded,
        })
    }

    /// SOPP branch targets (PC of the next instruction + simm16 * 4) as
    /// instruction indices; u32::MAX when the target is not an instruction.
    fn resolve_branches(&mut self) {
        let mut targets = Vec::new();
        for (n, i) in self.insts.iter().enumerate() {
            if is_branch(i.op) {
                let t = (i.addr + 4).wrapping_add((i64::from(i.imm) * 4) as u64);
                targets.push((n, self.index_of_addr(t).unwrap_or(u32::MAX)));
            }
        }
        for (n, t) in targets {
            self.insts[n].target = t;
        }
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

/// Decodes `.text` (at device address `start`) once, appending to `insts`
/// and `decoded`; returns the address index of the region.
fn predecode_text(
    text: &[u8],
    start: u64,
    insts: &mut Vec<Inst>,
    decoded: &mut Vec<Instruction>,
) -> Vec<u32> {
    let dec = Decoder::new(Target::Gfx90a);
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
    index
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
