//! Counting every basic block with hooks on only some of them.
//!
//! Waves flow through the control-flow graph: a block runs as often as
//! control enters it, and leaves it as often as it runs. With a count for
//! each edge, every block gives two equations, `count(B) = Σ edges into B`
//! and `count(B) = Σ edges out of B`; the kernel's entry block also counts
//! every wave once on entry, which the host knows from the launch geometry.
//! [`plan`] picks blocks to measure one at a time and solves for everything
//! else: while some equation has a single unknown it is solved; when none
//! has, the next unknown block gets a hook. Straight-line code, if/else
//! diamonds and loops with one exit then need hooks on only a few blocks.
//!
//! The equations hold for waves, not lanes: counting lanes measures every
//! counting region instead. Where control leaves the graph the rewriter
//! sees (returns, tail calls, unresolved jumps), the outgoing equation is
//! not used; a device function's entry block is entered by calls, so its
//! incoming equation is not used either.

use crate::lift::{BlockId, Exit, FuncKind, Program};

/// A count as a linear form: `waves * waves_coef + Σ coef * counter[k]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Form {
    pub waves: i64,
    /// (index into [`BlockCounts::measured`], coefficient).
    pub terms: Vec<(usize, i64)>,
}

impl Form {
    fn add(&mut self, other: &Form, sign: i64) {
        self.waves += sign * other.waves;
        for &(k, c) in &other.terms {
            match self.terms.iter_mut().find(|t| t.0 == k) {
                Some(t) => t.1 += sign * c,
                None => self.terms.push((k, sign * c)),
            }
        }
        self.terms.retain(|t| t.1 != 0);
    }

    /// The count, given the measured counters and the number of waves.
    pub fn eval(&self, counters: &[u64], waves: u64) -> u64 {
        let mut v = self.waves as i128 * waves as i128;
        for &(k, c) in &self.terms {
            v += c as i128 * counters.get(k).copied().unwrap_or(0) as i128;
        }
        v.clamp(0, u64::MAX as i128) as u64
    }
}

/// Which blocks get a hook, and every block's count in terms of them.
#[derive(Debug, Clone)]
pub struct BlockCounts {
    /// Blocks with a counting hook (counter k counts `measured[k]`).
    pub measured: Vec<BlockId>,
    /// Per block of the program.
    pub forms: Vec<Form>,
}

/// Unknowns: blocks, then edges.
struct System {
    blocks: usize,
    /// (from, to) for each edge variable.
    edges: Vec<(BlockId, BlockId)>,
    /// Equations: sum of (unknown, sign) = waves * coef.
    equations: Vec<(Vec<(usize, i64)>, i64)>,
}

fn system(prog: &Program) -> System {
    let n = prog.blocks.len();
    let mut edges = Vec::new();
    for (b, bl) in prog.blocks.iter().enumerate() {
        for &s in &bl.succs {
            edges.push((b, s));
        }
    }
    let var = |e: usize| n + e;
    let mut ins: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut outs: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (k, &(from, to)) in edges.iter().enumerate() {
        outs[from].push(k);
        ins[to].push(k);
    }
    let mut equations = Vec::new();
    let mut entry: Vec<Option<FuncKind>> = vec![None; n];
    for f in prog.functions.iter().filter(|f| !f.blocks.is_empty()) {
        entry[f.blocks.start] = Some(f.kind);
    }
    for (b, bl) in prog.blocks.iter().enumerate() {
        // In: count(b) - Σ in-edges = waves (kernel entry) or 0.
        if entry[b] != Some(FuncKind::Device) {
            let mut lhs = vec![(b, 1)];
            lhs.extend(ins[b].iter().map(|&k| (var(k), -1)));
            let waves = i64::from(entry[b] == Some(FuncKind::Kernel));
            equations.push((lhs, waves));
        }
        // Out: count(b) - Σ out-edges = 0, where control goes on to
        // blocks of the graph (not after s_endpgm, returns, tail calls).
        let stays = matches!(bl.exit, Exit::FallThrough | Exit::Branch | Exit::CondBranch);
        if stays {
            let mut lhs = vec![(b, 1)];
            lhs.extend(outs[b].iter().map(|&k| (var(k), -1)));
            equations.push((lhs, 0));
        }
    }
    System {
        blocks: n,
        edges,
        equations,
    }
}

/// Chooses the blocks to measure and expresses every block's count.
pub fn plan(prog: &Program) -> BlockCounts {
    let sys = system(prog);
    let unknowns = sys.blocks + sys.edges.len();
    let mut value: Vec<Option<Form>> = vec![None; unknowns];
    let mut measured = Vec::new();
    // Equations each unknown appears in, to revisit them when it is solved.
    let mut uses: Vec<Vec<usize>> = vec![Vec::new(); unknowns];
    for (q, (lhs, _)) in sys.equations.iter().enumerate() {
        for &(u, _) in lhs {
            uses[u].push(q);
        }
    }
    let mut work: Vec<usize> = (0..sys.equations.len()).collect();
    let mut next_block = 0;
    loop {
        while let Some(q) = work.pop() {
            let (lhs, waves) = &sys.equations[q];
            let open: Vec<&(usize, i64)> =
                lhs.iter().filter(|(u, _)| value[*u].is_none()).collect();
            if open.len() != 1 {
                continue;
            }
            let &(u, coef) = open[0];
            // coef * u = waves - Σ known; coefficients are ±1.
            let mut f = Form {
                waves: *waves,
                terms: Vec::new(),
            };
            for &(k, c) in lhs {
                if k != u {
                    if let Some(v) = &value[k] {
                        f.add(v, -c);
                    }
                }
            }
            if coef < 0 {
                let mut neg = Form::default();
                neg.add(&f, -1);
                f = neg;
            }
            value[u] = Some(f);
            work.extend(uses[u].iter().copied());
        }
        // Everything solved, or measure the next unknown block.
        while next_block < sys.blocks && value[next_block].is_some() {
            next_block += 1;
        }
        if next_block == sys.blocks {
            break;
        }
        let k = measured.len();
        measured.push(next_block);
        value[next_block] = Some(Form {
            waves: 0,
            terms: vec![(k, 1)],
        });
        work.extend(uses[next_block].iter().copied());
    }
    BlockCounts {
        measured,
        forms: value
            .into_iter()
            .take(sys.blocks)
            .map(Option::unwrap_or_default)
            .collect(),
    }
}

/// Waves a launch runs: per workgroup, its work-items (the last workgroup
/// of a dimension may be partial) in waves of 64.
pub fn waves(grid: [u32; 3], workgroup: [u32; 3]) -> u64 {
    let wg = workgroup.map(|w| w.max(1));
    // Workgroups are full but for the last in each dimension: count the
    // (at most 8) kinds of workgroup by how many there are of each.
    let mut total = 0u64;
    for kind in 0..8u32 {
        let mut groups = 1u64;
        let mut items = 1u64;
        for d in 0..3 {
            let last = kind >> d & 1 == 1;
            let full = grid[d] / wg[d];
            let rest = grid[d] % wg[d];
            let (count, size) = match (last, rest) {
                (false, _) => (u64::from(full), wg[d]),
                (true, 0) => (0, 0),
                (true, r) => (1, r),
            };
            groups *= count;
            items *= u64::from(size);
        }
        total += groups * items.div_ceil(64);
    }
    total
}

/// Instructions after which the number of lanes EXEC enables may change
/// within a block: EXEC writes and calls. Counting lanes once per region
/// needs a region to start after each.
pub fn lane_region_starts(prog: &Program) -> Vec<usize> {
    let mut starts = Vec::new();
    for b in &prog.blocks {
        starts.push(b.insts.start);
        for i in b.insts.clone() {
            let changes = prog.call_at(i).is_some()
                || prog
                    .used_registers(i)
                    .iter()
                    .any(|u| u.access.writes() && u.register.file == inlay_isa::RegFile::Exec);
            if changes && i + 1 < b.insts.end {
                starts.push(i + 1);
            }
        }
    }
    starts
}
