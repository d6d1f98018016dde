//! Laying the rewritten code out: how each original instruction is
//! emitted (branches re-aimed, call sequences kept, other PC reads made
//! constants), calls through tables translated, branches that cannot reach
//! made long.

use inlay_isa::tables::{ImmKind, Slot};
use inlay_isa::{Encoding, Instruction, Operand};

use super::asm::{sgpr_reg, Asm};
use super::regs::Regs;
use super::*;

/// Code before a call through a pointer loaded from memory: the original
/// address of each known callee becomes its rewritten copy's.
pub(super) struct Translation {
    /// The pair holding the target.
    pub(super) pair: u16,
    /// Entry instruction of each callee, and its original device address.
    pub(super) callees: Vec<(InstId, u64)>,
    pub(super) regs: Regs,
    pub(super) scc_live: bool,
}

impl Translation {
    /// Bytes: per callee getpc (4), add/addc with literals (8 + 8), two
    /// literal moves (8 + 8), s_cmp_eq_u64 (4), s_cselect_b64 (4); SCC save
    /// and restore (4 + 4) when SCC is live.
    pub(super) fn size(&self) -> u64 {
        self.callees.len() as u64 * 44 + if self.scc_live { 8 } else { 0 }
    }

    /// The code, placed at offset `at`; `label` gives each instruction's new place.
    pub(super) fn code(
        &self,
        asm: &Asm,
        at: u64,
        label: &[u64],
    ) -> Result<Vec<Instruction>, RewriteError> {
        let (r, x) = (&self.regs, self.pair);
        let mut out = Vec::new();
        let mut here = at;
        if self.scc_live {
            out.push(asm.build(
                Encoding::Sop2,
                "s_cselect_b32",
                &[Asm::sgpr(r.scc, 1), Asm::konst(1), Asm::konst(0)],
            )?);
            here += 4;
        }
        for &(entry, original) in &self.callees {
            let dist = label[entry].wrapping_sub(here + 4);
            out.push(asm.build(Encoding::Sop1, "s_getpc_b64", &[Asm::sgpr(r.u, 2)])?);
            out.push(asm.add_lit("s_add_u32", r.u, dist as u32)?);
            out.push(asm.add_lit("s_addc_u32", r.u + 1, (dist >> 32) as u32)?);
            out.push(asm.mov_lit(r.t, original as u32)?);
            out.push(asm.mov_lit(r.t + 1, (original >> 32) as u32)?);
            out.push(asm.build(
                Encoding::Sopc,
                "s_cmp_eq_u64",
                &[Asm::sgpr(x, 2), Asm::sgpr(r.t, 2)],
            )?);
            out.push(asm.build(
                Encoding::Sop2,
                "s_cselect_b64",
                &[Asm::sgpr(x, 2), Asm::sgpr(r.u, 2), Asm::sgpr(x, 2)],
            )?);
            here += 44;
        }
        if self.scc_live {
            out.push(asm.build(
                Encoding::Sopc,
                "s_cmp_lg_u32",
                &[Asm::sgpr(r.scc, 1), Asm::konst(0)],
            )?);
        }
        Ok(out)
    }
}

/// How one original instruction is emitted.
#[derive(Clone, Copy, Debug)]
pub(super) enum Emit {
    /// As it was.
    Same,
    /// A branch re-aimed at the new place of the instruction at this address.
    Branch { target: InstId },
    /// `s_getpc_b64 s[d:d+1]` kept (it starts a call into the new code).
    KeepGetpc,
    /// `s_add_u32`/`s_addc_u32` of a kept call sequence: half of the
    /// distance from the `s_getpc_b64` at `getpc` to `callee`'s entry.
    CallLiteral {
        getpc: InstId,
        callee: InstId,
        high: bool,
    },
    /// `s_getpc_b64 s[d:d+1]` made into two moves of `pc` (original address).
    MaterializePc { d: u16, pc: u64 },
    /// `s_endpgm` after `s_dcache_wb`: inserted code stores through the
    /// scalar cache, which is written back before the wave ends (as LLVM
    /// does for a kernel with scalar stores or atomics).
    WritebackEnd,
}

impl Emit {
    pub(super) fn size(&self, i: &Instruction) -> u64 {
        match self {
            Emit::MaterializePc { .. } => 16,
            Emit::WritebackEnd => 8 + i.len() as u64,
            _ => i.len() as u64,
        }
    }
}

impl Asm {
    /// A branch from `here` to `target` as a jump through `s[r.t:r.t+1]`:
    /// a conditional one becomes the inverse condition skipping the jump.
    /// SCC, which the address arithmetic writes, is saved in `r.scc` and
    /// put back before the jump, so the target sees it unchanged.
    pub(super) fn long_branch(
        &self,
        branch: &Instruction,
        r: &Regs,
        here: u64,
        target: u64,
    ) -> Result<Vec<Instruction>, RewriteError> {
        let mut out = Vec::new();
        let mut at = here;
        let name = branch.opcode().map_or("", |o| o.name());
        if name != "s_branch" {
            let inverse = match name {
                "s_cbranch_scc0" => "s_cbranch_scc1",
                "s_cbranch_scc1" => "s_cbranch_scc0",
                "s_cbranch_vccz" => "s_cbranch_vccnz",
                "s_cbranch_vccnz" => "s_cbranch_vccz",
                "s_cbranch_execz" => "s_cbranch_execnz",
                "s_cbranch_execnz" => "s_cbranch_execz",
                _ => {
                    return Err(RewriteError::Build(
                        "a long branch",
                        inlay_isa::BuildError::Unknown(name.to_string()),
                    ))
                }
            };
            // Skip the 32 bytes of jump when the branch is not taken.
            let mut skip = self.build(Encoding::Sopp, inverse, &[Operand::Imm(0)])?;
            skip.set_branch_target(at, at + 4 + 32)
                .map_err(|e| RewriteError::Build(inverse, e))?;
            out.push(skip);
            at += 4;
        }
        out.push(self.build(
            Encoding::Sop2,
            "s_cselect_b32",
            &[Self::sgpr(r.scc, 1), Self::konst(1), Self::konst(0)],
        )?);
        out.push(self.build(Encoding::Sop1, "s_getpc_b64", &[Self::sgpr(r.t, 2)])?);
        let dist = target.wrapping_sub(at + 8);
        // (Built once per register with literal 0, which the builder's memo
        // keeps, and the distance set: building each distance anew cost
        // more than the rest of the jump.)
        for (m, reg, value) in [
            ("s_add_u32", r.t, dist as u32),
            ("s_addc_u32", r.t + 1, (dist >> 32) as u32),
        ] {
            let mut add = self.add_lit(m, reg, 0)?;
            if !add.set_literal(value) {
                return Err(RewriteError::Build(
                    m,
                    inlay_isa::BuildError::Unknown("no literal".into()),
                ));
            }
            out.push(add);
        }
        out.push(self.build(
            Encoding::Sopc,
            "s_cmp_lg_u32",
            &[Self::sgpr(r.scc, 1), Self::konst(0)],
        )?);
        out.push(self.build(Encoding::Sop1, "s_setpc_b64", &[Self::sgpr(r.t, 2)])?);
        Ok(out)
    }
}

/// Bytes of a long branch: the inverse branch (conditional ones), then
/// s_cselect (4), s_getpc (4), s_add/s_addc with literals (8 + 8),
/// s_cmp (4), s_setpc (4).
pub(super) fn long_branch_size(branch: &Instruction) -> u64 {
    let conditional = branch.opcode().map_or("", |o| o.name()) != "s_branch";
    32 + if conditional { 4 } else { 0 }
}

/// Decides how each instruction is emitted: branches, call sequences into
/// the new code, and every other `s_getpc_b64`; and which call sites
/// (by index) now reach the rewritten callee.
pub(super) fn plan_emits(an: &Analysis, load_delta: u64) -> (Vec<Emit>, Vec<bool>) {
    let prog = &an.program;
    let mut emits = vec![Emit::Same; prog.insts.len()];
    // Whether it branches to an immediate target, whether it is an
    // `s_getpc_b64`: asked once per distinct encoding.
    let kind = |i: &Instruction| {
        (
            i.slots().contains(&Slot::Imm(ImmKind::Branch)),
            i.opcode().map(|o| o.name()) == Some("s_getpc_b64"),
        )
    };
    let (forms, form_of) = prog.forms();
    let kinds: Vec<(bool, bool)> = forms.list.iter().map(|f| kind(&f.inst)).collect();
    for (i, ins) in prog.insts.iter().enumerate() {
        let (branch, getpc) = form_of
            .get(i)
            .and_then(|&k| kinds.get(k as usize))
            .copied()
            .unwrap_or_else(|| kind(&ins.inst));
        let f = prog.blocks[ins.block].function;
        if branch {
            if let crate::lift::Flow::Branch(t) | crate::lift::Flow::CondBranch(t) =
                crate::lift::flow(&ins.inst, ins.addr)
            {
                // (The target starts a successor of the branch's block:
                // looked for there before the function's instructions.)
                let succ = prog.blocks[ins.block]
                    .succs
                    .iter()
                    .map(|&b| prog.blocks[b].insts.start)
                    .find(|&j| prog.insts.get(j).is_some_and(|x| x.addr == t));
                if let Some(target) = succ.or_else(|| prog.inst_at(f, t)) {
                    emits[i] = Emit::Branch { target };
                }
            }
        }
        if getpc {
            let d = sdst(&ins.inst);
            emits[i] = Emit::MaterializePc {
                d,
                pc: load_delta.wrapping_add(ins.addr + 4),
            };
        }
    }
    let mut redirected = vec![false; prog.calls.len()];
    for (n, c) in prog.calls.iter().enumerate() {
        let Callee::Direct(f) = c.callee else {
            continue;
        };
        let Some(entry) = prog.inst_at(f, prog.functions[f].entry) else {
            continue;
        };
        if let Some((g, a, ac)) = call_sequence(an, c.inst) {
            emits[g] = Emit::KeepGetpc;
            emits[a] = Emit::CallLiteral {
                getpc: g,
                callee: entry,
                high: false,
            };
            emits[ac] = Emit::CallLiteral {
                getpc: g,
                callee: entry,
                high: true,
            };
            redirected[n] = true;
        }
    }
    (emits, redirected)
}

/// The `s_getpc_b64 s[X:X+1]; s_add_u32 sX, sX, lit; s_addc_u32 sX+1, sX+1,
/// lit` that computes the target of the call at `call`, if its pair is used
/// for nothing else: not read between the sequence and the call, not live
/// after the call.
pub(super) fn call_sequence(an: &Analysis, call: InstId) -> Option<(InstId, InstId, InstId)> {
    let prog = &an.program;
    let target = call_pair(&prog.insts[call].inst)?;
    let block = &prog.blocks[prog.insts[call].block];
    let is = |k: InstId, name: &str| prog.insts[k].inst.opcode().map(|o| o.name()) == Some(name);
    let reg_is = |k: InstId, n: usize, want: u16| matches!(prog.insts[k].inst.operand(n), Some(Operand::Sgpr { first, .. }) if first == want);
    let lit = |k: InstId| matches!(prog.insts[k].inst.operand(2), Some(Operand::Literal(_)));
    let mut k = call;
    while k > block.insts.start {
        k -= 1;
        if is(k, "s_getpc_b64") && reg_is(k, 0, target) {
            let (a, c) = (k + 1, k + 2);
            if c >= call
                || !(is(a, "s_add_u32") && reg_is(a, 0, target) && reg_is(a, 1, target) && lit(a))
                || !(is(c, "s_addc_u32")
                    && reg_is(c, 0, target + 1)
                    && reg_is(c, 1, target + 1)
                    && lit(c))
            {
                return None;
            }
            let pair = [target, target + 1];
            let reads_pair = |m: InstId| {
                prog.used_registers(m).iter().any(|u| {
                    u.access.reads()
                        && u.register.file == inlay_isa::RegFile::Sgpr
                        && pair.iter().any(|&p| u.register.overlaps(&sgpr_reg(p)))
                })
            };
            if (c + 1..call).any(reads_pair) {
                return None;
            }
            // After a call (not a tail call) the pair must be dead.
            if block.insts.contains(&(call + 1)) {
                let after = an.live_any_before(call + 1);
                if pair.iter().any(|&p| after.has_sgpr(p)) {
                    return None;
                }
            }
            return Some((k, a, c));
        }
    }
    None
}

/// The SGPR pair a `s_swappc_b64` or `s_setpc_b64` jumps to.
pub(super) fn call_pair(i: &Instruction) -> Option<u16> {
    let n = match i.opcode()?.name() {
        "s_swappc_b64" => 1,
        "s_setpc_b64" => 0,
        _ => return None,
    };
    match i.operand(n)? {
        Operand::Sgpr { first, count: 2 } => Some(first),
        _ => None,
    }
}

/// First SGPR written by `i`, for an instruction whose destination is one.
pub(super) fn sdst(i: &Instruction) -> u16 {
    match i.operand(0) {
        Some(Operand::Sgpr { first, .. }) => first,
        _ => 0,
    }
}
