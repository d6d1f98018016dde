//! Shared virtual memory: attributes of host address ranges, as KFD keeps
//! them for `hsa_amd_svm_attributes_set/_get` and `hsa_amd_svm_prefetch_async`.
//!
//! With XNACK off (an MI210 as ROCr drives it by default), host memory is
//! not reachable by the GPU until a range is made accessible to it
//! (`AGENT_ACCESSIBLE` or `AGENT_ACCESSIBLE_IN_PLACE`); that is how HIP's
//! managed memory (`hipMallocManaged`) works on such a device. Pages the GPU
//! may access are entered in the allocation table at their own address
//! (`Memory::add_host`, kind `Svm`), so kernels reach them and nothing else.
//!
//! Attributes are kept per page-aligned range, as KFD keeps them; a query
//! over several ranges combines them as KFD does (flags set in all ranges,
//! flags clear in all ranges, a location only when all ranges agree, access
//! only when all ranges grant it).

use std::collections::BTreeMap;

use crate::agent::AgentId;

pub const PAGE: u64 = 4096;

/// KFD's per-range flags (`HSA_SVM_FLAG_*`).
pub const FLAG_HOST_ACCESS: u32 = 1 << 0;
pub const FLAG_COHERENT: u32 = 1 << 1;
pub const FLAG_HIVE_LOCAL: u32 = 1 << 2;
pub const FLAG_GPU_RO: u32 = 1 << 3;
pub const FLAG_GPU_READ_MOSTLY: u32 = 1 << 5;

/// How a GPU may reach a range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// `AGENT_NO_ACCESS`, and the default with XNACK off.
    None,
    /// `AGENT_ACCESSIBLE`: mapped, may migrate.
    Mapped,
    /// `AGENT_ACCESSIBLE_IN_PLACE`: mapped where it is.
    InPlace,
}

/// One attribute change of `hsa_amd_svm_attributes_set` (after the C layer
/// decoded agents and rejected duplicates).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    SetFlags(u32),
    ClearFlags(u32),
    /// log2 of the migration granularity in pages.
    Granularity(u32),
    Preferred(Option<AgentId>),
    /// The GPU's access (the CPU's is the HOST_ACCESS flag).
    GpuAccess(Access),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Attrs {
    flags: u32,
    granularity: u32,
    preferred: Option<AgentId>,
    prefetched: Option<AgentId>,
    gpu: Access,
}

/// What KFD gives a range it has not seen: host access, coherent, no
/// preferred or prefetch location, 2 MiB granularity, no GPU access.
const DEFAULT: Attrs = Attrs {
    flags: FLAG_HOST_ACCESS | FLAG_COHERENT,
    granularity: 9,
    preferred: None,
    prefetched: None,
    gpu: Access::None,
};

/// The combined attributes of a queried range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Summary {
    /// Flags set in every range.
    pub flags_all: u32,
    /// Flags set in some range.
    pub flags_any: u32,
    pub granularity: u32,
    /// `Some(None)`: all ranges agree on no location; `None`: they differ.
    pub preferred: Option<Option<AgentId>>,
    pub prefetched: Option<Option<AgentId>>,
    pub gpu: Access,
}

/// Page-aligned ranges with their attributes, keyed by start.
#[derive(Default)]
pub struct Ranges {
    map: BTreeMap<u64, (u64, Attrs)>,
}

/// `[lo, hi)` widened to whole pages, or None if it wraps.
pub fn pages(ptr: u64, size: u64) -> Option<(u64, u64)> {
    let end = ptr.checked_add(size)?.checked_add(PAGE - 1)? & !(PAGE - 1);
    Some((ptr & !(PAGE - 1), end))
}

impl Ranges {
    /// Splits the range containing `at` so that a range starts there.
    fn split(&mut self, at: u64) {
        let Some((&start, &(end, attrs))) = self.map.range(..at).next_back() else {
            return;
        };
        if start < at && at < end {
            self.map.insert(start, (at, attrs));
            self.map.insert(at, (end, attrs));
        }
    }

    /// Applies `changes` to every page of `[lo, hi)`; pages seen for the
    /// first time start from KFD's defaults.
    pub fn set(&mut self, lo: u64, hi: u64, changes: &[Change]) {
        self.split(lo);
        self.split(hi);
        // Fill the gaps with default ranges.
        let mut at = lo;
        let covered: Vec<(u64, u64)> = self.map.range(lo..hi).map(|(&s, &(e, _))| (s, e)).collect();
        for (s, e) in covered {
            if at < s {
                self.map.insert(at, (s, DEFAULT));
            }
            at = e;
        }
        if at < hi {
            self.map.insert(at, (hi, DEFAULT));
        }
        for (_, (_, a)) in self.map.range_mut(lo..hi) {
            for c in changes {
                match *c {
                    Change::SetFlags(f) => a.flags |= f,
                    Change::ClearFlags(f) => a.flags &= !f,
                    Change::Granularity(g) => a.granularity = g.min(0x3f),
                    Change::Preferred(p) => a.preferred = p,
                    Change::GpuAccess(x) => a.gpu = x,
                }
            }
        }
        self.coalesce(lo, hi);
    }

    /// Records a prefetch of `[lo, hi)` to `agent` (pages without attributes
    /// get defaults first).
    pub fn prefetched(&mut self, lo: u64, hi: u64, agent: AgentId) {
        self.set(lo, hi, &[]);
        for (_, (_, a)) in self.map.range_mut(lo..hi) {
            a.prefetched = Some(agent);
        }
        self.coalesce(lo, hi);
    }

    /// Merges neighbours with equal attributes around `[lo, hi)`.
    fn coalesce(&mut self, lo: u64, hi: u64) {
        let from = self.map.range(..lo).next_back().map_or(lo, |(&s, _)| s);
        let keys: Vec<u64> = self.map.range(from..=hi).map(|(&s, _)| s).collect();
        let mut prev: Option<u64> = None;
        for k in keys {
            let Some(&(end, attrs)) = self.map.get(&k) else {
                continue;
            };
            if let Some(p) = prev {
                if let Some(&(pend, pattrs)) = self.map.get(&p) {
                    if pend == k && pattrs == attrs {
                        self.map.remove(&k);
                        self.map.insert(p, (end, attrs));
                        continue;
                    }
                }
            }
            prev = Some(k);
        }
    }

    /// The attributes of `[lo, hi)` combined over the ranges it meets (KFD's
    /// defaults if it meets none).
    pub fn get(&self, lo: u64, hi: u64) -> Summary {
        let from = self
            .map
            .range(..=lo)
            .next_back()
            .filter(|(_, &(e, _))| e > lo)
            .map_or(lo, |(&s, _)| s);
        let mut found = self.map.range(from..hi).map(|(_, &(_, a))| a).peekable();
        let Some(&first) = found.peek() else {
            return Summary {
                flags_all: DEFAULT.flags,
                flags_any: DEFAULT.flags,
                granularity: DEFAULT.granularity,
                preferred: Some(None),
                prefetched: Some(None),
                gpu: Access::None,
            };
        };
        let mut s = Summary {
            flags_all: u32::MAX,
            flags_any: 0,
            granularity: u32::MAX,
            preferred: Some(first.preferred),
            prefetched: Some(first.prefetched),
            gpu: first.gpu,
        };
        for a in found {
            s.flags_all &= a.flags;
            s.flags_any |= a.flags;
            s.granularity = s.granularity.min(a.granularity);
            if s.preferred != Some(a.preferred) {
                s.preferred = None;
            }
            if s.prefetched != Some(a.prefetched) {
                s.prefetched = None;
            }
            if s.gpu != a.gpu {
                s.gpu = Access::None;
            }
        }
        s
    }

    /// The maximal runs of pages the GPU may access that touch `[lo, hi)`
    /// (neighbours included, so runs that meet are one run).
    pub fn gpu_runs(&self, lo: u64, hi: u64) -> Vec<(u64, u64)> {
        let mut runs: Vec<(u64, u64)> = Vec::new();
        // Start at the range holding lo, then walk back over the GPU
        // ranges that run into it; forward past one reaching hi.
        let mut from = self
            .map
            .range(..=lo)
            .next_back()
            .filter(|(_, &(e, _))| e > lo)
            .map_or(lo, |(&s, _)| s);
        while let Some((&s, &(e, a))) = self.map.range(..from).next_back() {
            if e == from && a.gpu != Access::None {
                from = s;
            } else {
                break;
            }
        }
        for (&s, &(e, a)) in self.map.range(from..) {
            let extends = runs.last().is_some_and(|r| r.1 == s);
            if s >= hi && !(extends && a.gpu != Access::None) {
                break;
            }
            if a.gpu == Access::None {
                continue;
            }
            match runs.last_mut() {
                Some(r) if extends => r.1 = e,
                _ => runs.push((s, e)),
            }
        }
        runs
    }

    /// Forgets `[lo, hi)`'s attributes (the host unmapped it).
    pub fn forget(&mut self, lo: u64, hi: u64) {
        self.split(lo);
        self.split(hi);
        let keys: Vec<u64> = self.map.range(lo..hi).map(|(&s, _)| s).collect();
        for k in keys {
            self.map.remove(&k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::{CPU, GPU};

    const P: u64 = PAGE;

    #[test]
    fn unseen_pages_have_kfd_defaults() {
        let r = Ranges::default();
        let s = r.get(0x10000, 0x20000);
        assert_eq!(s.flags_all, FLAG_HOST_ACCESS | FLAG_COHERENT);
        assert_eq!(s.gpu, Access::None);
        assert_eq!(s.granularity, 9);
        assert!(r.gpu_runs(0x10000, 0x20000).is_empty());
    }

    #[test]
    fn partial_updates_split_and_queries_combine() {
        let mut r = Ranges::default();
        r.set(10 * P, 20 * P, &[Change::GpuAccess(Access::Mapped)]);
        r.set(12 * P, 14 * P, &[Change::ClearFlags(FLAG_COHERENT)]);
        assert_eq!(r.gpu_runs(10 * P, 20 * P), vec![(10 * P, 20 * P)]);
        let s = r.get(10 * P, 20 * P);
        assert_eq!(s.flags_all & FLAG_COHERENT, 0);
        assert_ne!(s.flags_any & FLAG_COHERENT, 0);
        assert_eq!(s.gpu, Access::Mapped);
        assert_eq!(r.get(12 * P, 13 * P).flags_any & FLAG_COHERENT, 0);
        // Taking access from the middle leaves two runs.
        r.set(15 * P, 16 * P, &[Change::GpuAccess(Access::None)]);
        assert_eq!(
            r.gpu_runs(10 * P, 20 * P),
            vec![(10 * P, 15 * P), (16 * P, 20 * P)]
        );
        assert_eq!(r.get(10 * P, 20 * P).gpu, Access::None);
        // Giving it back joins them again.
        r.set(15 * P, 16 * P, &[Change::GpuAccess(Access::Mapped)]);
        assert_eq!(r.gpu_runs(15 * P, 16 * P), vec![(10 * P, 20 * P)]);
    }

    #[test]
    fn locations_agree_or_are_undefined() {
        let mut r = Ranges::default();
        r.set(0, 4 * P, &[Change::Preferred(Some(GPU))]);
        assert_eq!(r.get(0, 4 * P).preferred, Some(Some(GPU)));
        r.set(2 * P, 4 * P, &[Change::Preferred(Some(CPU))]);
        assert_eq!(r.get(0, 4 * P).preferred, None);
        r.prefetched(0, 4 * P, GPU);
        assert_eq!(r.get(P, 3 * P).prefetched, Some(Some(GPU)));
        r.forget(0, 4 * P);
        assert_eq!(r.get(0, 4 * P).preferred, Some(None));
    }

    #[test]
    fn pages_round_outwards() {
        assert_eq!(pages(P + 5, 10), Some((P, 2 * P)));
        assert_eq!(pages(u64::MAX - 3, 10), None);
    }
}
