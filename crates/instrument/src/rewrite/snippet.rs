//! Snippets: the code the engine places at a point (built-in hook code, a
//! call to a compiled hook), with forward branches to its end and the
//! relocations its literals need.

use inlay_isa::Instruction;

use super::RewriteError;

/// A relocation of one instruction's literal (its second word).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct LiteralReloc {
    /// Index of the instruction in the snippet.
    pub(super) inst: usize,
    pub(super) symbol: String,
    pub(super) high: bool,
    pub(super) addend: i64,
}

/// Code placed at one point.
#[derive(Debug, Clone, Default)]
pub(super) struct Snippet {
    pub(super) insts: Vec<Instruction>,
    pub(super) relocs: Vec<LiteralReloc>,
    /// Indices of branches to a label, and the labels (instruction indices
    /// they land before; `insts.len()` is the end).
    branches: Vec<(usize, usize)>,
}

impl Snippet {
    pub(super) fn push(&mut self, i: Instruction) {
        self.insts.push(i);
    }

    pub(super) fn extend(&mut self, is: impl IntoIterator<Item = Instruction>) {
        self.insts.extend(is);
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

    pub(super) fn bytes(&self) -> u64 {
        self.insts.iter().map(|i| i.len() as u64).sum()
    }

    /// Sets the branches' offsets (they are relative, so the snippet can go
    /// anywhere).
    pub(super) fn resolve(&mut self) -> Result<(), RewriteError> {
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
        }
        Ok(())
    }

    /// Appends the encoded snippet to `code`; its relocations, with their
    /// offsets in `code`, to `relocs`.
    pub(super) fn encode(&self, code: &mut Vec<u8>, relocs: &mut Vec<super::CodeReloc>) {
        for (k, i) in self.insts.iter().enumerate() {
            let start = code.len() as u64;
            inlay_isa::encode_into(i, code);
            for r in self.relocs.iter().filter(|r| r.inst == k) {
                relocs.push(super::CodeReloc {
                    offset: start + 4,
                    symbol: r.symbol.clone(),
                    high: r.high,
                    addend: r.addend,
                });
            }
        }
    }
}
