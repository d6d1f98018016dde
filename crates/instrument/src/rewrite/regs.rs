//! Register finding: SGPRs reserved for the whole kernel, registers dead
//! at a point, and where hook registers get set up.

use super::*;
use crate::RegSet;

/// Registers free at a point: dead there (liveness), and not held for the
/// whole kernel (`taken`: the homes of the launch state calls read, which
/// liveness of the original code does not see).
pub(super) struct Free<'a> {
    pub(super) an: &'a Analysis,
    pub(super) taken: RegSet,
}

impl Free<'_> {
    /// Dead SGPRs before `i`, and whether SCC is live there.
    pub(super) fn sgprs_before(&self, i: InstId) -> (Vec<u16>, bool) {
        let live = self.an.live_any_before(i);
        let usable = self.an.resources.sgprs_usable as u16;
        let free = live.union(&self.taken).absent_sgprs(usable);
        (free, live.contains(crate::regs::SCC))
    }

    /// SGPRs dead both before `a` and before `b`.
    pub(super) fn sgprs_before_both(&self, a: InstId, b: InstId) -> Vec<u16> {
        let live = self.an.live_any_before(a);
        let usable = self.an.resources.sgprs_usable as u16;
        live.union(&self.an.live_any_before(b))
            .union(&self.taken)
            .absent_sgprs(usable)
    }

    pub(super) fn before(&self, i: InstId) -> crate::FreeRegisters {
        let mut f = self.an.free_before(i);
        let t = &self.taken;
        f.sgprs.retain(|&n| !t.has_sgpr(n));
        f.vgprs.retain(|&n| !t.has_vgpr(n));
        f.vgprs_active_lanes.retain(|&n| !t.has_vgpr(n));
        f
    }
}

/// Registers hook code runs with.
#[derive(Clone, Copy, Debug)]
pub(super) struct Regs {
    /// Pair holding the counter buffer's address.
    pub(super) base: u16,
    /// Pair holding (1, 0), or (lanes, 0) while counting lanes.
    pub(super) data: u16,
    /// One SGPR saving SCC around code that writes it.
    pub(super) scc: u16,
    /// Two pairs translating a code address loaded from memory (a table
    /// call) to the rewritten callee's.
    pub(super) t: u16,
    pub(super) u: u16,
}

/// The hooked block that must set the hook registers itself (the one no
/// other hooked block dominates), or `None` when a preamble is the better
/// place: when such a block may run more than once per wave, or when there
/// are several of them.
pub(super) fn blocks_setting_registers(
    prog: &crate::lift::Program,
    hooked: &[usize],
) -> Option<Vec<usize>> {
    let kernel = prog.functions.first()?;
    let blocks = kernel.blocks.clone();
    let repeats = blocks_that_may_repeat(prog);
    let idom = dominators(prog, blocks.clone());
    let mut is_hooked = vec![false; prog.blocks.len()];
    for &b in hooked {
        is_hooked[b] = true;
    }
    let is_hooked = |b: usize| is_hooked[b];
    let mut out = Vec::new();
    let mut done = vec![false; prog.blocks.len()];
    for &b in hooked {
        if std::mem::replace(&mut done[b], true) {
            continue;
        }
        if !blocks.contains(&b) {
            return None; // a device function's block
        }
        // Walk up the dominator tree looking for another hooked block.
        let mut d = idom[b - blocks.start];
        let mut covered = false;
        while let Some(x) = d {
            if is_hooked(x) {
                covered = true;
                break;
            }
            d = idom[x - blocks.start];
        }
        if !covered {
            if repeats[b] {
                return None;
            }
            out.push(b);
        }
    }
    // Several setting blocks may all run in one wave (a chain of ifs):
    // only a single one is sure to cost no more than the preamble.
    (out.len() <= 1).then_some(out)
}

/// Immediate dominators of the blocks of one function (`range`; its first
/// block is the entry), by the iterative algorithm of Cooper, Harvey and
/// Kennedy; `None` for the entry and for unreachable blocks.
pub(super) fn dominators(
    prog: &crate::lift::Program,
    range: std::ops::Range<usize>,
) -> Vec<Option<usize>> {
    let n = range.len();
    let local = |b: usize| range.contains(&b).then(|| b - range.start);
    // Reverse postorder from the entry.
    let mut order = Vec::with_capacity(n);
    let mut seen = vec![false; n];
    let mut stack = vec![(0usize, 0usize)];
    if n > 0 {
        seen[0] = true;
    }
    while let Some(&mut (v, ref mut k)) = stack.last_mut() {
        let succs = &prog.blocks[range.start + v].succs;
        if let Some(&w) = succs.get(*k) {
            *k += 1;
            if let Some(w) = local(w) {
                if !seen[w] {
                    seen[w] = true;
                    stack.push((w, 0));
                }
            }
            continue;
        }
        order.push(v);
        stack.pop();
    }
    order.reverse();
    let mut rpo = vec![usize::MAX; n];
    for (i, &v) in order.iter().enumerate() {
        rpo[v] = i;
    }
    let mut idom: Vec<Option<usize>> = vec![None; n];
    if n == 0 {
        return idom;
    }
    idom[0] = Some(0);
    let intersect = |idom: &[Option<usize>], mut a: usize, mut b: usize| {
        while a != b {
            while rpo[a] > rpo[b] {
                a = idom[a].unwrap_or(0);
            }
            while rpo[b] > rpo[a] {
                b = idom[b].unwrap_or(0);
            }
        }
        a
    };
    let mut changed = true;
    while changed {
        changed = false;
        for &v in order.iter().skip(1) {
            let mut new: Option<usize> = None;
            for &p in &prog.blocks[range.start + v].preds {
                let Some(p) = local(p) else { continue };
                if idom[p].is_none() {
                    continue;
                }
                new = Some(match new {
                    None => p,
                    Some(x) => intersect(&idom, p, x),
                });
            }
            if new.is_some() && idom[v] != new {
                idom[v] = new;
                changed = true;
            }
        }
    }
    idom[0] = None;
    idom.into_iter()
        .map(|d| d.map(|x| range.start + x))
        .collect()
}

/// Blocks that may run more than once per wave: those on a cycle of their
/// function's control flow, and every block of a device function (it may be
/// called many times).
pub(super) fn blocks_that_may_repeat(prog: &crate::lift::Program) -> Vec<bool> {
    let n = prog.blocks.len();
    let mut repeat = vec![false; n];
    for f in &prog.functions {
        if f.kind != crate::lift::FuncKind::Kernel {
            for b in f.blocks.clone() {
                repeat[b] = true;
            }
        }
    }
    // Tarjan's strongly connected components, iteratively.
    let (mut index, mut low) = (vec![usize::MAX; n], vec![0usize; n]);
    let (mut on_stack, mut stack, mut next) = (vec![false; n], Vec::new(), 0usize);
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        let mut frames = vec![(root, 0usize)];
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (v, ref mut k)) = frames.last_mut() {
            if let Some(&w) = prog.blocks[v].succs.get(*k) {
                *k += 1;
                if w == v {
                    repeat[v] = true;
                }
                if index[w] == usize::MAX {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    frames.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            frames.pop();
            if let Some(&(u, _)) = frames.last() {
                low[u] = low[u].min(low[v]);
            }
            if low[v] == index[v] {
                let mut members = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    members.push(w);
                    if w == v {
                        break;
                    }
                }
                if members.len() > 1 {
                    for w in members {
                        repeat[w] = true;
                    }
                }
            }
        }
    }
    repeat
}

pub(super) fn has_table_calls(an: &Analysis) -> bool {
    an.program
        .calls
        .iter()
        .any(|c| matches!(c.callee, Callee::Table { .. }))
}

pub(super) fn max_sgpr(i: &Instruction) -> Option<u16> {
    i.operands()
        .filter_map(|o| match o {
            Operand::Sgpr { first, count } => Some(first + u16::from(count) - 1),
            _ => None,
        })
        .max()
}

/// SGPRs no instruction of the program names, if enough of them (aligned
/// pairs for base and data, one for SCC) lie below s102.
pub(super) fn reserve(an: &Analysis, wanted: bool, floor: u16) -> Option<Regs> {
    if !wanted {
        return None;
    }
    let opaque_calls = an
        .program
        .calls
        .iter()
        .any(|c| matches!(c.callee, Callee::External(_) | Callee::Unresolved));
    let mut first = an.resources.sgprs_used as u16;
    if opaque_calls {
        first = first.max(FIRST_SAFE_ACROSS_CALLS);
    }
    let first = first.max(floor).next_multiple_of(2);
    (first + 10 <= SGPRS).then_some(Regs {
        base: first,
        data: first + 2,
        scc: first + 4,
        t: first + 6,
        u: first + 8,
    })
}

/// Even SGPRs starting a dead pair, and the first dead SGPR outside
/// `taken` pairs.
pub(super) fn dead_pairs(dead: &[u16]) -> impl Iterator<Item = u16> + '_ {
    dead.iter()
        .copied()
        .filter(|&n| n % 2 == 0 && dead.contains(&(n + 1)))
}

pub(super) fn dead_single(dead: &[u16], taken: &[u16]) -> Option<u16> {
    dead.iter().copied().find(|&n| !taken.contains(&(n & !1)))
}

/// Registers for a hook among SGPRs dead before it: the base and data
/// pairs, two more pairs (`t`, `u`) for hooks that record, and an SGPR
/// saving SCC if the hook must.
pub(super) fn per_point(dead: &[u16], save_scc: bool, temps: bool) -> Option<Regs> {
    let mut pairs = dead_pairs(dead);
    let (base, data) = (pairs.next()?, pairs.next()?);
    let (t, u) = if temps {
        (pairs.next()?, pairs.next()?)
    } else {
        (0, 0)
    };
    let scc = if save_scc {
        let taken: &[u16] = if temps {
            &[base, data, t, u]
        } else {
            &[base, data]
        };
        dead_single(dead, taken)?
    } else {
        0
    };
    Some(Regs {
        base,
        data,
        scc,
        t,
        u,
    })
}

/// Registers for a table-call translation among SGPRs dead before it.
pub(super) fn per_point_translation(dead: &[u16], save_scc: bool) -> Option<Regs> {
    let mut pairs = dead_pairs(dead);
    let (t, u) = (pairs.next()?, pairs.next()?);
    let scc = if save_scc {
        dead_single(dead, &[t, u])?
    } else {
        0
    };
    Some(Regs {
        base: 0,
        data: 0,
        scc,
        t,
        u,
    })
}

/// A pair and an SGPR for a long branch when no SGPRs are reserved: dead
/// both before the branch and at its target (the jump writes them and
/// control goes on there).
pub(super) fn long_branch_regs(free: &Free<'_>, branch: InstId, target: InstId) -> Option<Regs> {
    // (SGPRs only: a kernel can have hundreds of long branches.)
    let dead = free.sgprs_before_both(branch, target);
    let t = dead_pairs(&dead).next()?;
    let scc = dead_single(&dead, &[t])?;
    Some(Regs {
        base: 0,
        data: 0,
        scc,
        t,
        u: 0,
    })
}

/// The first of four VGPRs above everything the kernel allocates (an
/// aligned pair first), when code can still name them and the register
/// file holds them. AGPRs follow the VGPRs in gfx90a's unified file: the
/// descriptor's AGPR offset moves up with them (`grow_vgprs`), and code
/// names AGPRs relative to it, so a kernel using AGPRs can grow too.
pub(super) fn extra_vgprs(an: &Analysis) -> Option<u16> {
    let r = &an.resources;
    let first = r.vgprs_allocated.next_multiple_of(2);
    let fits = (first + 4).next_multiple_of(4) + r.agprs_allocated <= 512;
    (first + 4 <= 256 && fits).then_some(first as u16)
}

/// A dead aligned VGPR pair and one more dead VGPR for a record's code,
/// dead in every lane or (`Lanes::Enabled`) in the lanes EXEC enables.
pub(super) fn pick_vgprs(
    f: &crate::FreeRegisters,
    lanes: Lanes,
    avoid: &[u16],
) -> Option<(u16, u16)> {
    let mut candidates: Vec<u16> = f.vgprs.clone();
    if lanes == Lanes::Enabled {
        candidates.extend(&f.vgprs_active_lanes);
        candidates.sort_unstable();
    }
    candidates.retain(|v| !avoid.contains(v));
    let pair = candidates
        .iter()
        .copied()
        .find(|&v| v % 2 == 0 && candidates.contains(&(v + 1)))?;
    let single = candidates
        .iter()
        .copied()
        .find(|&v| v != pair && v != pair + 1)?;
    Some((pair, single))
}
