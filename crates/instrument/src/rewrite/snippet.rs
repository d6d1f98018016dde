//! Snippets: the code the engine places at a point (built-in hook code, a
//! call to a compiled hook, a compiled hook inlined), with branches inside
//! it and the relocations its literals need.

use inlay_isa::{Instruction, Target};

use super::hazards::{required_after_unknown, required_at, Brief, Facts, FactsTable, CLAUSES};

use super::RewriteError;

/// A relocation of one instruction's literal (its second word).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct LiteralReloc {
    /// Index of the instruction in the snippet.
    pub(super) inst: usize,
    pub(super) symbol: std::sync::Arc<str>,
    pub(super) high: bool,
    pub(super) addend: i64,
}

/// Code placed at one point.
#[derive(Debug, Clone, Default)]
pub(super) struct Snippet {
    pub(super) insts: Vec<Instruction>,
    pub(super) relocs: Vec<LiteralReloc>,
    /// Instructions whose literal is a call's constant argument: (index,
    /// argument, dword of it).
    pub(super) constants: Vec<(usize, u8, u8)>,
    /// Indices of branches to a label, and the labels (instruction indices
    /// they land before; `insts.len()` is the end).
    branches: Vec<(usize, usize)>,
    /// Once resolved with a facts table: each instruction's facts id in it
    /// (found while padding, kept for the seams).
    pub(super) ids: Vec<u32>,
    /// Parts appended already padded within themselves (see
    /// [`Snippet::append_settled`]), by the index they start at: until
    /// resolved.
    settled: Vec<(usize, std::sync::Arc<Settled>)>,
}

/// A snippet padded within itself, for appending to others whole: how
/// close to its start each of its instructions is, so that only readers a
/// writer before it can reach are searched again (see [`Settled::new`]).
#[derive(Debug)]
pub(super) struct Settled {
    code: Snippet,
    /// Per instruction: the fewest instructions from the part's start to
    /// it on any path (at most 255), or 0 when a soft clause it may join
    /// runs back to the start (then a writer before it may ask anything).
    reach: Vec<u8>,
}

impl Settled {
    /// `code`, resolved with `table`.
    pub(super) fn new(code: Snippet, table: &FactsTable) -> Settled {
        let n = code.insts.len();
        debug_assert_eq!(code.ids.len(), n, "a settled part is resolved");
        let briefs: Vec<&Brief> = code
            .ids
            .iter()
            .map(|&id| &table.briefs[id as usize])
            .collect();
        // Fewest instructions before each position on a path from the
        // start: falling through, or by a branch landing there (forward
        // only, as inserted code branches; any other counts as the start).
        let mut fewest = vec![0u32; n + 1];
        for k in 1..=n {
            let by_branch = code.branches.iter().filter(|&&(_, to)| to == k);
            fewest[k] = by_branch
                .map(|&(b, to)| if b < to { fewest[b] + 1 } else { 0 })
                .fold(fewest[k - 1] + 1, u32::min);
        }
        let reach = (0..n)
            .map(|k| {
                let clause_to_start = briefs[k].kind() & CLAUSES != 0
                    && briefs[..k].iter().all(|w| w.continues_clause(briefs[k]));
                if clause_to_start {
                    0
                } else {
                    fewest[k].min(255) as u8
                }
            })
            .collect();
        Settled { code, reach }
    }

    pub(super) fn code(&self) -> &Snippet {
        &self.code
    }
}

impl Snippet {
    /// Code with branches already placed: (branch index, label index).
    pub(super) fn with_branches(insts: Vec<Instruction>, branches: Vec<(usize, usize)>) -> Snippet {
        Snippet {
            insts,
            branches,
            ..Default::default()
        }
    }

    pub(super) fn push(&mut self, i: Instruction) {
        self.insts.push(i);
    }

    pub(super) fn extend(&mut self, is: impl IntoIterator<Item = Instruction>) {
        self.insts.extend(is);
    }

    /// Pushes an instruction whose literal holds dword `dword` of constant
    /// argument `arg` (a template patches it per call).
    pub(super) fn push_constant(&mut self, i: Instruction, arg: usize, dword: u8) {
        self.constants
            .push((self.insts.len(), arg.min(255) as u8, dword));
        self.insts.push(i);
    }

    /// `s[d:d+1]` = the address of `symbol`: `s_getpc_b64` and the two
    /// literals of its PC-relative offset, relocated at load.
    pub(super) fn pc_relative(
        &mut self,
        asm: &super::asm::Asm,
        d: u16,
        symbol: std::sync::Arc<str>,
    ) -> Result<(), RewriteError> {
        self.pc_relative_at(asm, d, symbol, 0)
    }

    /// `s[d:d+1]` = the address `distance` bytes past `symbol`.
    pub(super) fn pc_relative_at(
        &mut self,
        asm: &super::asm::Asm,
        d: u16,
        symbol: std::sync::Arc<str>,
        distance: i64,
    ) -> Result<(), RewriteError> {
        use super::asm::Asm;
        self.push(asm.build(inlay_isa::Encoding::Sop1, "s_getpc_b64", &[Asm::sgpr(d, 2)])?);
        // The getpc's value is the address after it: the low literal sits 4
        // bytes past that, the high one 12.
        self.relocs.push(LiteralReloc {
            inst: self.insts.len(),
            symbol: symbol.clone(),
            high: false,
            addend: distance + 4,
        });
        self.push(asm.add_lit("s_add_u32", d, 0)?);
        self.relocs.push(LiteralReloc {
            inst: self.insts.len(),
            symbol,
            high: true,
            addend: distance + 12,
        });
        self.push(asm.add_lit("s_addc_u32", d + 1, 0)?);
        Ok(())
    }

    /// Pushes a branch whose target is fixed later with [`Snippet::land`].
    pub(super) fn branch(&mut self, i: Instruction) -> usize {
        self.insts.push(i);
        self.insts.len() - 1
    }

    /// Aims branch `b` at the instruction pushed next.
    pub(super) fn land(&mut self, b: usize) {
        let to = self.insts.len();
        self.branches.push((b, to));
    }

    /// Aims branch `b` at instruction `to` (before or after it; `insts.len()`
    /// at resolve time is the end).
    pub(super) fn aim(&mut self, b: usize, to: usize) {
        self.branches.push((b, to));
    }

    /// Appends `part` whole: padding then searches its readers again
    /// only where a writer before it can reach them.
    pub(super) fn append_settled(&mut self, part: &std::sync::Arc<Settled>) {
        let at = self.insts.len();
        let code = &part.code;
        self.insts.extend_from_slice(&code.insts);
        self.relocs.extend(code.relocs.iter().map(|r| LiteralReloc {
            inst: r.inst + at,
            ..r.clone()
        }));
        self.constants
            .extend(code.constants.iter().map(|&(k, arg, d)| (k + at, arg, d)));
        self.branches
            .extend(code.branches.iter().map(|&(b, to)| (b + at, to + at)));
        self.settled.push((at, part.clone()));
    }

    /// Removes the first instruction (before [`Snippet::resolve`]).
    pub(super) fn remove_first(&mut self) {
        if self.insts.is_empty() {
            return;
        }
        // (A part losing its first instruction is searched as new code.)
        self.settled.retain(|(at, _)| *at > 0);
        for (at, _) in &mut self.settled {
            *at -= 1;
        }
        self.insts.remove(0);
        for r in &mut self.relocs {
            r.inst -= 1;
        }
        for c in &mut self.constants {
            c.0 -= 1;
        }
        for (b, to) in &mut self.branches {
            *b -= 1;
            *to = to.saturating_sub(1);
        }
    }

    /// Puts `s_nop`s where a pair inside the snippet is closer than its
    /// hazard rule (see `hazards`), on every path through its branches:
    /// the simplifier may have removed what separated them in clang's code.
    fn pad_hazards(&mut self, table: &mut FactsTable, cache: &mut IdCache) -> Vec<u32> {
        let Some(t) = self.insts.first().map(Instruction::target) else {
            self.settled.clear();
            return Vec::new();
        };
        // Ids: settled parts bring theirs; the rest are looked up. A
        // reader's reach (0 outside settled parts: searched) bounds what a
        // writer before its part can ask of it.
        let mut ids: Vec<u32> = Vec::with_capacity(self.insts.len());
        let mut reach: Vec<u8> = Vec::new();
        if !self.settled.is_empty() {
            reach.resize(self.insts.len(), 0);
        }
        for (at, part) in std::mem::take(&mut self.settled) {
            for i in &self.insts[ids.len()..at] {
                ids.push(cache.id(table, i));
            }
            ids.extend_from_slice(&part.code.ids);
            reach[at..at + part.reach.len()].copy_from_slice(&part.reach);
        }
        for i in &self.insts[ids.len()..] {
            ids.push(cache.id(table, i));
        }
        let mut briefs: Vec<Brief> = ids.iter().map(|&id| table.briefs[id as usize]).collect();
        let mut lands = self.landings();
        let mfma = briefs.iter().any(Brief::is_mfma);
        let mut k = 0;
        while k < self.insts.len() {
            // (A reader's brief says whether a search is needed: its facts
            // are read only for one.)
            let bound = briefs[k].after_unknown(mfma);
            let settled = reach
                .get(k)
                .is_some_and(|&r| r > 0 && u32::from(r) >= bound);
            if settled || !(briefs[k].may_read() && near(t, &briefs, &lands, k, bound)) {
                k += 1;
                continue;
            }
            let need = self.deficit(
                t,
                (&table.facts, &table.briefs, &ids, &lands),
                (k, bound),
                k,
                (0, true),
                0,
                false,
            );
            if need > 0 {
                let nops = super::hazards::nops(t, need);
                let c = nops.len();
                let nop_ids: Vec<u32> = nops.iter().map(|n| table.id(n)).collect();
                briefs.splice(k..k, nop_ids.iter().map(|&id| table.briefs[id as usize]));
                ids.splice(k..k, nop_ids);
                if !reach.is_empty() {
                    reach.splice(k..k, std::iter::repeat_n(0, c));
                }
                self.insts.splice(k..k, nops);
                for r in &mut self.relocs {
                    r.inst += if r.inst >= k { c } else { 0 };
                }
                for x in &mut self.constants {
                    x.0 += if x.0 >= k { c } else { 0 };
                }
                // Branches to `k` land before the nops.
                for (b, to) in &mut self.branches {
                    *b += if *b >= k { c } else { 0 };
                    *to += if *to > k { c } else { 0 };
                }
                lands = self.landings();
                k += c;
            }
            k += 1;
        }
        ids
    }

    /// For each position (up to `insts.len()`), whether a branch lands
    /// there.
    fn landings(&self) -> Vec<bool> {
        let mut lands = vec![false; self.insts.len() + 1];
        for &(_, to) in &self.branches {
            if let Some(l) = lands.get_mut(to) {
                *l = true;
            }
        }
        lands
    }

    /// Wait states reader `r` lacks from writers before position `end`,
    /// `dist` wait states away (`run`: all of them memory instructions of
    /// `r`'s soft-clause kind), following branches that land on the way
    /// (`lands`: where some branch lands); `via_branch`: `end - 1` is a
    /// branch to `end`. No rule asks more of `r` than `bound` (what it
    /// needs after unknown code), soft clauses aside.
    #[allow(clippy::too_many_arguments)]
    fn deficit(
        &self,
        t: Target,
        (facts, briefs, ids, lands): (&[Facts], &[Brief], &[u32], &[bool]),
        (r, bound): (usize, u32),
        end: usize,
        (mut dist, mut run): (u32, bool),
        depth: u32,
        via_branch: bool,
    ) -> u32 {
        let reader = &facts[ids[r] as usize];
        let brief = &briefs[ids[r] as usize];
        let concerns = brief.kind() & CLAUSES != 0;
        let mut need = 0;
        let mut q = end;
        while q > 0 && (dist < bound || run) && depth < 16 {
            if lands[q] {
                for &(b, to) in &self.branches {
                    if to == q {
                        need = need.max(self.deficit(
                            t,
                            (facts, briefs, ids, lands),
                            (r, bound),
                            b + 1,
                            (dist, run),
                            depth + 1,
                            true,
                        ));
                    }
                }
            }
            let p = q - 1;
            let w = &briefs[ids[p] as usize];
            let entered_by_branch = via_branch && q == end;
            if !entered_by_branch && !w.falls_through() {
                break;
            }
            if w.is_call() {
                // The callee ran in between: what it did last is unknown.
                need = need.max(required_after_unknown(t, reader, false).saturating_sub(dist));
                break;
            }
            // Only a writer whose rules concern the reader, or a soft
            // clause both may share, can ask for wait states.
            if w.affects(t) & brief.kind() != 0 || run && concerns {
                let writer = &facts[ids[p] as usize];
                need = need.max(required_at(t, writer, reader, dist, run).saturating_sub(dist));
            }
            run &= w.continues_clause(brief);
            dist += w.wait_states();
            q = p;
        }
        need
    }

    /// Sets the branches' offsets (they are relative, so the snippet can go
    /// anywhere), after padding hazards inside it.
    #[cfg(test)]
    pub(super) fn resolve(&mut self) -> Result<(), RewriteError> {
        self.resolve_with(&mut FactsTable::default())
    }

    /// [`Snippet::resolve`], with the facts of instructions met before in
    /// `table`.
    pub(super) fn resolve_with(&mut self, table: &mut FactsTable) -> Result<(), RewriteError> {
        self.resolve_cached(table, &mut IdCache::default())
    }

    /// [`Snippet::resolve_with`], the facts of instructions met before
    /// found first in `cache` (which must serve this `table` only).
    pub(super) fn resolve_cached(
        &mut self,
        table: &mut FactsTable,
        cache: &mut IdCache,
    ) -> Result<(), RewriteError> {
        let mut ids = self.pad_hazards(table, cache);
        let mut at = Vec::with_capacity(self.insts.len() + 1);
        let mut a = 0u64;
        for i in &self.insts {
            at.push(a);
            a += i.len() as u64;
        }
        at.push(a);
        for &(b, to) in &self.branches {
            self.insts[b]
                .set_branch_target(at[b], at[to])
                .map_err(|e| RewriteError::Build("a branch in hook code", e))?;
            // (Its target is in its words, which the facts are keyed by.)
            ids[b] = cache.id(table, &self.insts[b]);
        }
        self.ids = ids;
        Ok(())
    }

    /// Whether padding the resolved snippet again, every reader searched,
    /// would add nothing (a check of [`Snippet::append_settled`]'s
    /// shortcut).
    pub(super) fn fully_padded(&self, table: &mut FactsTable) -> bool {
        let mut again = Snippet::with_branches(self.insts.clone(), self.branches.clone());
        again.pad_hazards(table, &mut IdCache::default());
        again.insts == self.insts
    }

    /// Appends the encoded snippet to `code`; its relocations, with their
    /// offsets in `code`, to `relocs`.
    pub(super) fn encode(&self, code: &mut Vec<u8>, relocs: &mut super::Relocations) {
        for (k, i) in self.insts.iter().enumerate() {
            let start = code.len() as u64;
            inlay_isa::encode_into(i, code);
            for r in self.relocs.iter().filter(|r| r.inst == k) {
                relocs.push(start + 4, &r.symbol, r.high, r.addend);
            }
        }
    }
}

/// The facts ids of instructions met before, one slot per hash of the
/// instruction, in front of a [`FactsTable`]'s own lookup: call sequences
/// repeat a few hundred distinct instructions thousands of times, and a
/// slot compared is cheaper than the table's hash map. (Empty, it only
/// asks the table.)
#[derive(Default)]
pub(super) struct IdCache {
    slots: Vec<(Instruction, u32)>,
}

impl IdCache {
    /// Slots (a power of two).
    const SLOTS: usize = 4096;

    pub(super) fn new() -> IdCache {
        IdCache {
            // (The default instruction, of no length, matches none.)
            slots: vec![(Instruction::default(), 0); Self::SLOTS],
        }
    }

    fn id(&mut self, table: &mut FactsTable, i: &Instruction) -> u32 {
        if self.slots.is_empty() {
            return table.id(i);
        }
        let w = i.words();
        let word = |k: usize| u64::from(w.get(k).copied().unwrap_or(0));
        let h = (word(0) | word(1) << 32).wrapping_add(i.len() as u64);
        let k = (h.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 52) as usize % Self::SLOTS;
        match self.slots[k] {
            (ref j, id) if j == i => id,
            _ => {
                let id = table.id(i);
                self.slots[k] = (*i, id);
                id
            }
        }
    }
}

/// Whether something within reach before position `k` of a snippet
/// (`briefs` of its instructions, `lands`: where branches land) may ask
/// wait states of the reader at `k`: a writer whose rules concern it, a
/// call when it needs wait states after unknown code, a soft clause it
/// may join, or a branch landing, whose paths the search must follow.
/// Reach is the `bound` wait states the reader needs at most (after
/// unknown code), soft clauses aside; each instruction gives at least one.
fn near(t: Target, briefs: &[Brief], lands: &[bool], k: usize, bound: u32) -> bool {
    let reader = &briefs[k];
    let from = k.saturating_sub(bound as usize);
    lands[from + 1..=k].contains(&true)
        || reader.kind() & CLAUSES != 0 && k > 0 && briefs[k - 1].continues_clause(reader)
        || briefs[from..k]
            .iter()
            .any(|w| w.affects(t) & reader.kind() != 0 || w.is_call())
}

/// A snippet encoded once, copied wherever the same code goes: calls with
/// the same hook, argument kinds and save plan get the same code up to
/// their constant arguments, which are literals patched per copy. Branches
/// in it are relative and its relocations PC-relative, so a copy works
/// anywhere.
#[derive(Debug)]
pub(super) struct Template {
    bytes: Vec<u8>,
    /// Instructions in it (the static count).
    pub(super) insts: usize,
    /// The instructions themselves (constants not patched in), for the
    /// hazard check.
    pub(super) code: Vec<Instruction>,
    /// Their facts ids, when the snippet was resolved (else empty).
    pub(super) ids: Vec<u32>,
    /// Relocations by byte offset of their word.
    relocs: Vec<(u64, LiteralReloc)>,
    /// Literal words holding constant arguments: byte offset, argument,
    /// dword of it.
    constants: Vec<(usize, u8, u8)>,
}

impl Template {
    pub(super) fn new(s: Snippet) -> Template {
        // Each instruction's offset, and the end.
        let mut at = Vec::with_capacity(s.insts.len() + 1);
        let mut bytes = Vec::with_capacity(8 * s.insts.len());
        for i in &s.insts {
            at.push(bytes.len());
            inlay_isa::encode_into(i, &mut bytes);
        }
        at.push(bytes.len());
        // In the order of the instructions they patch.
        let mut relocs: Vec<(u64, LiteralReloc)> = s
            .relocs
            .iter()
            .filter(|r| r.inst < s.insts.len())
            .map(|r| (at[r.inst] as u64 + 4, r.clone()))
            .collect();
        relocs.sort_by_key(|r| r.0);
        let constants = s
            .constants
            .iter()
            .filter(|c| c.0 < s.insts.len())
            // The literal is the instruction's last dword.
            .map(|&(k, arg, dword)| (at[k + 1] - 4, arg, dword))
            .collect();
        Template {
            bytes,
            insts: s.insts.len(),
            code: s.insts,
            ids: s.ids,
            relocs,
            constants,
        }
    }

    pub(super) fn bytes(&self) -> u64 {
        self.bytes.len() as u64
    }

    pub(super) fn relocations(&self) -> usize {
        self.relocs.len()
    }

    /// Appends a copy to `code` with the constants `constant(arg, dword)`
    /// gives, and its relocations to `relocs`.
    pub(super) fn encode(
        &self,
        code: &mut Vec<u8>,
        relocs: &mut super::Relocations,
        constant: impl Fn(u8, u8) -> u32,
    ) {
        let start = code.len();
        code.extend_from_slice(&self.bytes);
        for &(at, arg, dword) in &self.constants {
            code[start + at..start + at + 4].copy_from_slice(&constant(arg, dword).to_le_bytes());
        }
        for (at, r) in &self.relocs {
            relocs.push(start as u64 + at, &r.symbol, r.high, r.addend);
        }
    }
}
