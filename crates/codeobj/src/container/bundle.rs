//! Clang offload bundles: the `__CLANG_OFFLOAD_BUNDLE__` binary format.
//!
//! Layout (all integers little-endian u64): the 24-byte magic, the entry count,
//! then per entry its offset (from the bundle start), size, ID length and ID
//! string; the entries' bytes follow anywhere after the table.

use super::read::{slice, u64_at};
use crate::{Error, Result};

pub const MAGIC: &[u8; 24] = b"__CLANG_OFFLOAD_BUNDLE__";

/// Smallest possible table entry: three u64 fields and an empty ID.
const MIN_ENTRY_LEN: u64 = 24;

/// A parsed bundle header; entry bytes stay in the borrowed buffer.
#[derive(Debug, Clone)]
pub struct Bundle<'data> {
    data: &'data [u8],
    pub entries: Vec<BundleEntry<'data>>,
    /// End of the table or of the furthest entry, whichever is later: where the
    /// bundle's own bytes end inside `data`.
    pub end: u64,
}

/// One row of the entry table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleEntry<'data> {
    /// The raw bundle entry ID, e.g. `hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-`.
    pub id: &'data str,
    /// Offset of the entry's bytes from the start of the bundle.
    pub offset: u64,
    pub size: u64,
}

/// A bundle entry ID split into `<offload kind>-<triple>[-<target id>]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BundleId<'a> {
    /// `host`, `hip`, `hipv4`, `openmp`, ...
    pub kind: &'a str,
    /// Up to four components, e.g. `amdgcn-amd-amdhsa-` (empty environment) or `x86_64-unknown-linux-gnu`.
    pub triple: &'a str,
    /// Processor and features, e.g. `gfx90a:xnack-`; empty for host entries.
    pub target_id: &'a str,
}

impl<'a> BundleId<'a> {
    pub fn parse(id: &'a str) -> BundleId<'a> {
        // The kind is the first component; the triple is the next four (the
        // environment may be empty); whatever follows the fifth '-' is the target ID.
        let (kind, rest) = id.split_once('-').unwrap_or((id, ""));
        let mut triple_end = rest.len();
        let mut target_id = "";
        if let Some((pos, _)) = rest.match_indices('-').nth(3) {
            triple_end = pos;
            target_id = &rest[pos + 1..];
        }
        BundleId {
            kind,
            triple: &rest[..triple_end],
            target_id,
        }
    }

    pub fn is_host(&self) -> bool {
        self.kind == "host"
    }
}

/// Entries' bytes lie after the table and never overlap one another, as the bundler
/// writes them. Besides rejecting nonsense, this bounds the work of walking nested
/// bundles: an entry that covered its own bundle (or a sibling's bytes) would let a
/// few hundred bytes expand into exponentially many nested entries.
fn check_layout(entries: &[BundleEntry], table_end: u64) -> Result<()> {
    let mut ranges: Vec<(u64, u64, &str)> = entries
        .iter()
        .filter(|e| e.size > 0)
        .map(|e| (e.offset, e.offset + e.size, e.id))
        .collect();
    ranges.sort_unstable();
    let mut previous_end = table_end;
    let mut previous = "the entry table";
    for (start, end, id) in ranges {
        if start < previous_end {
            return Err(Error::at(
                start,
                format!("entry {id} at offset {start:#x} overlaps {previous} (which ends at {previous_end:#x})"),
            ));
        }
        previous_end = end;
        previous = id;
    }
    Ok(())
}

impl<'data> Bundle<'data> {
    /// Parses the bundle that starts at `data[0]`. `data` may extend past the
    /// bundle (a fat binary section holds several); entries must lie within it.
    /// Error offsets count from the start of `data`.
    pub fn parse(data: &'data [u8]) -> Result<Bundle<'data>> {
        if !data.starts_with(MAGIC) {
            return Err(Error::at(0, "missing __CLANG_OFFLOAD_BUNDLE__ magic"));
        }
        let mut pos = MAGIC.len() as u64;
        let count = u64_at(data, pos, "bundle entry count")?;
        let room = (data.len() as u64).saturating_sub(pos + 8) / MIN_ENTRY_LEN;
        if count > room {
            return Err(Error::at(
                pos,
                format!("bundle claims {count} entries but the data has room for at most {room}"),
            ));
        }
        pos += 8;
        let mut entries = Vec::with_capacity(count as usize);
        for index in 0..count {
            let row = pos;
            let offset = u64_at(data, pos, "bundle entry offset")?;
            let size = u64_at(data, pos + 8, "bundle entry size")?;
            let id_len = u64_at(data, pos + 16, "bundle entry ID length")?;
            let id_bytes = slice(data, pos + 24, id_len, "bundle entry ID")?;
            let id = std::str::from_utf8(id_bytes)
                .map_err(|_| Error::at(pos + 24, "bundle entry ID is not UTF-8"))?;
            pos += 24 + id_len;
            let in_bounds = offset
                .checked_add(size)
                .is_some_and(|end| end <= data.len() as u64);
            if !in_bounds {
                return Err(Error::at(
                    row,
                    format!(
                        "entry {index} ({id}) at offset {offset:#x} with size {size:#x} \
                         extends past the end of the data ({} bytes)",
                        data.len()
                    ),
                ));
            }
            entries.push(BundleEntry { id, offset, size });
        }
        check_layout(&entries, pos)?;
        let end = entries
            .iter()
            .map(|e| e.offset + e.size)
            .fold(pos, u64::max);
        Ok(Bundle { data, entries, end })
    }

    /// The bytes of `entry`, borrowed from the parsed buffer.
    pub fn contents(&self, entry: &BundleEntry<'data>) -> &'data [u8] {
        // Bounds were checked by `parse`.
        self.data
            .get(entry.offset as usize..(entry.offset + entry.size) as usize)
            .unwrap_or(&[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_ids() {
        let id = BundleId::parse("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-");
        assert_eq!(
            (id.kind, id.triple, id.target_id),
            ("hipv4", "amdgcn-amd-amdhsa-", "gfx90a:xnack-")
        );
        let id = BundleId::parse("host-x86_64-unknown-linux-gnu-");
        assert_eq!(
            (id.kind, id.triple, id.target_id),
            ("host", "x86_64-unknown-linux-gnu", "")
        );
        let id = BundleId::parse("host-x86_64-unknown-linux");
        assert_eq!(
            (id.kind, id.triple, id.target_id),
            ("host", "x86_64-unknown-linux", "")
        );
        assert!(id.is_host());
        let id = BundleId::parse("junk");
        assert_eq!((id.kind, id.triple, id.target_id), ("junk", "", ""));
    }
}
