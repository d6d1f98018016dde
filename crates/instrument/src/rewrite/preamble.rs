//! The kernel's launch state as hooks see it: where launch values are,
//! copies the preamble makes, and the descriptor grown for the hooks.

use inlay_codeobj::descriptor::InitialSgprs;
use inlay_codeobj::KernelDescriptor;

use super::regs::Regs;
use super::*;

/// A copy of SGPRs the preamble makes: (from, to, count).
pub(super) type SgprCopy = (u16, u16, u8);

/// Where the launch values a hook may read are, and whether they are still
/// there at a given instruction: always before the kernel's first one;
/// elsewhere in the kernel only if no instruction of the program (callees
/// included) writes their SGPRs and it calls no code this cannot see.
pub(super) struct Launch {
    pub(super) init: InitialSgprs,
    /// Where hooks find them: `init`, or copies the preamble makes.
    pub(super) effective: InitialSgprs,
    pub(super) entry: Option<InstId>,
    /// SGPRs some instruction writes (all of them after an opaque call).
    pub(super) written: Vec<bool>,
}

impl Launch {
    /// `check_writes`: whether any hook reads a launch value (finding the
    /// SGPRs the program writes costs a pass over it).
    pub(super) fn new(an: &Analysis, descriptor: &KernelDescriptor, check_writes: bool) -> Launch {
        let prog = &an.program;
        let init = descriptor
            .decode(inlay_codeobj::target::Family::Gfx90a, false)
            .initial_sgprs();
        let entry = prog
            .functions
            .first()
            .and_then(|f| prog.inst_at(0, f.entry));
        let opaque = prog
            .calls
            .iter()
            .any(|c| matches!(c.callee, Callee::External(_) | Callee::Unresolved));
        let mut written = vec![opaque; SGPRS as usize];
        for ins in prog.insts.iter().filter(|_| check_writes) {
            for u in inlay_isa::info(&ins.inst).used_registers() {
                if u.access.writes() && u.register.file == inlay_isa::RegFile::Sgpr {
                    let r = u.register;
                    for n in r.first..r.first + u16::from(r.count) {
                        if let Some(w) = written.get_mut(n as usize) {
                            *w = true;
                        }
                    }
                }
            }
        }
        Launch {
            init,
            effective: init,
            entry,
            written,
        }
    }

    /// A layout with `values` moved to SGPRs above `r` (aligned pairs for
    /// pointers), and the copies (from, to, count) that put them there.
    pub(super) fn save(&self, r: &Regs, values: &[Value]) -> Option<(InitialSgprs, Vec<SgprCopy>)> {
        let mut layout = self.init;
        let mut copies = Vec::new();
        let mut next = (r.u + 2).next_multiple_of(2);
        let mut place = |slot: &mut Option<u16>, count: u16| -> Option<()> {
            let from = (*slot)?;
            if copies.iter().any(|&(f, _, _)| f == from) {
                return Some(());
            }
            let to = if count == 2 {
                next.next_multiple_of(2)
            } else {
                next
            };
            if to + count > SGPRS {
                return None;
            }
            next = to + count;
            copies.push((from, to, count as u8));
            *slot = Some(to);
            Some(())
        };
        for v in values {
            match *v {
                Value::KernArg(_) => place(&mut layout.kernarg_segment_ptr, 2)?,
                Value::Packet(_) => place(&mut layout.dispatch_ptr, 2)?,
                Value::WorkgroupId(d) => place(layout.workgroup_id.get_mut(usize::from(d))?, 1)?,
                _ => {}
            }
        }
        Some((layout, copies))
    }

    /// SGPRs `v` reads.
    pub(super) fn sgprs_read(&self, v: Value) -> Vec<u16> {
        let pair = |n: Option<u16>| n.map_or(Vec::new(), |n| vec![n, n + 1]);
        match v {
            Value::Sgpr(n) => vec![n],
            Value::SgprPair(n) => vec![n, n + 1],
            Value::KernArg(_) => pair(self.effective.kernarg_segment_ptr),
            Value::Packet(_) => pair(self.effective.dispatch_ptr),
            Value::WorkgroupId(d) => self
                .effective
                .workgroup_id
                .get(usize::from(d))
                .copied()
                .flatten()
                .into_iter()
                .collect(),
            Value::Const(_) | Value::Exec | Value::Vcc => Vec::new(),
        }
    }

    /// Whether `h` before `i` reads a launch value that must be saved at
    /// the kernel's start (the kernel may overwrite it first); an error if
    /// the kernel does not receive it at all.
    pub(super) fn check(&self, h: &Hook, i: InstId, an: &Analysis) -> Result<bool, RewriteError> {
        let Some(v @ (Value::KernArg(_) | Value::Packet(_) | Value::WorkgroupId(_))) = h.value()
        else {
            return Ok(false);
        };
        let sgprs = self.sgprs_read(v);
        if sgprs.is_empty() {
            return Err(RewriteError::NotReceived(launch_name(v)));
        }
        let prog = &an.program;
        let in_kernel = prog.blocks[prog.insts[i].block].function == 0;
        let kept = in_kernel && sgprs.iter().all(|&n| !self.written[n as usize]);
        Ok(Some(i) != self.entry && !kept)
    }
}

/// Makes a gfx90a descriptor allocate VGPRs up to `highest`: the unified
/// register file's granule (8) and the AGPRs' offset (in units of 4), which
/// stays at the end of the VGPRs.
pub(super) fn grow_vgprs(kd: &mut KernelDescriptor, highest: u16) {
    let need = u32::from(highest) + 1;
    let granules = need.div_ceil(8).max(1);
    let old = kd.compute_pgm_rsrc1 & 0x3f;
    if granules - 1 > old {
        kd.compute_pgm_rsrc1 = (kd.compute_pgm_rsrc1 & !0x3f) | (granules - 1);
    }
    let accum = need.div_ceil(4);
    if accum - 1 > kd.compute_pgm_rsrc3 & 0x3f {
        kd.compute_pgm_rsrc3 = (kd.compute_pgm_rsrc3 & !0x3f) | (accum - 1);
    }
}

/// Makes the descriptor allocate SGPRs up to `highest` (plus the six gfx9
/// keeps for VCC, FLAT_SCRATCH and XNACK_MASK).
pub(super) fn grow_sgprs(kd: &mut KernelDescriptor, highest: u16) {
    let need = u32::from(highest) + 1 + 6;
    let field = need.div_ceil(8).saturating_sub(1).min(15);
    let old = (kd.compute_pgm_rsrc1 >> 6) & 0xf;
    if field > old {
        kd.compute_pgm_rsrc1 = (kd.compute_pgm_rsrc1 & !(0xf << 6)) | field << 6;
    }
}
