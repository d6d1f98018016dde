//! Finding code objects inside other files.
//!
//! [`walk`] takes any input — a raw AMDGPU code object, a clang offload bundle,
//! a compressed bundle (CCOB), or a host ELF with a `.hip_fatbin` — and lazily
//! yields every entry it holds, nested containers expanded. Borrowed inputs
//! (e.g. a memory map) are only touched where headers are read; entry bytes stay
//! borrowed unless they came out of a decompressed CCOB.
//!
//! ```no_run
//! use inlay_codeobj::container::{walk, EntryKind};
//! use inlay_codeobj::file::MappedFile;
//!
//! let file = MappedFile::open("/usr/lib/x86_64-linux-gnu/librocsparse.so.0.1")?;
//! for entry in walk(file.bytes(), &file.name()) {
//!     let entry = entry?; // or report it and go on: the walk continues after errors
//!     if entry.kind == EntryKind::CodeObject {
//!         println!("{} ({} bytes, {})", entry.location, entry.bytes.len(), entry.target_id);
//!     }
//! }
//! # Ok::<(), inlay_codeobj::Error>(())
//! ```
//!
//! Modules: [`bundle`] and [`ccob`] read the two container formats, [`host`]
//! finds them in host ELFs, [`list`] adds each code object's kernels, and
//! [`handles`] maps a HIP host binary's kernel handles and stubs to them.

pub mod bundle;
pub mod ccob;
pub mod elf;
pub mod handles;
pub mod host;
pub mod list;
mod md5;
mod read;

use std::borrow::Cow;
use std::ops::Range;

use crate::{Error, Result};
use bundle::{Bundle, BundleId};
use read::rebase;

/// Fat binary sections align each bundle to this many bytes.
const FATBIN_ALIGN: u64 = 4096;

/// Containers inside containers deeper than this are refused. Real files nest
/// two deep (fat binary → CCOB → bundle); the limit stops an entry that holds
/// its own bundle from being walked forever.
const MAX_NESTING: u32 = 8;

/// What a buffer is, judged from its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// An AMDGPU ELF (code object).
    CodeObject,
    Bundle,
    Compressed,
    /// Any other ELF: a host executable, shared library or object.
    HostElf,
    Unknown,
}

pub fn identify(data: &[u8]) -> Format {
    if data.starts_with(bundle::MAGIC) {
        Format::Bundle
    } else if data.starts_with(ccob::MAGIC) {
        Format::Compressed
    } else if elf::is_amdgpu(data) {
        Format::CodeObject
    } else if elf::is_elf(data) {
        Format::HostElf
    } else {
        Format::Unknown
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// An AMDGPU ELF code object.
    CodeObject,
    /// A bundle's host entry; its bytes are not looked into.
    Host,
    /// Device bytes that are not a code object, e.g. LLVM bitcode in a `-fgpu-rdc` object.
    Other,
}

/// One thing found in the input.
#[derive(Debug, Clone)]
pub struct Entry<'data> {
    /// Where it was found, e.g.
    /// `librocsparse.so.0[.hip_fatbin bundle 3 @0x1234000] hipv4-amdgcn-amd-amdhsa--gfx90a`.
    pub location: String,
    /// Offset of `bytes` in the outermost input; `None` if they were decompressed.
    pub offset: Option<u64>,
    /// The bundle entry ID, if the entry came from a bundle.
    pub bundle_id: Option<String>,
    /// Processor and features (`gfx90a:xnack-`); empty for host entries.
    pub target_id: String,
    pub kind: EntryKind,
    pub bytes: Cow<'data, [u8]>,
}

/// Walks `data`, naming locations after `name` (usually the file name).
pub fn walk<'data>(data: &'data [u8], name: &str) -> Walk<'data> {
    Walk {
        stack: vec![Frame::Input(data, name.to_string())],
    }
}

/// The lazy iterator behind [`walk`]. An error ends only the container it was
/// found in; the walk then goes on with the next bundle or section.
pub struct Walk<'data> {
    stack: Vec<Frame<'data>>,
}

enum Frame<'data> {
    /// The whole input: the only place where we look inside host ELFs.
    Input(&'data [u8], String),
    /// Bytes to identify: one bundle entry's contents.
    Blob(Blob<'data>),
    /// Bundles and CCOBs one after another (a fat binary section, a decompressed CCOB).
    Sequence(Sequence<'data>),
}

struct Blob<'data> {
    data: Cow<'data, [u8]>,
    /// Offset of `data` in the input, if it is a slice of it.
    base: Option<u64>,
    location: String,
    bundle_id: Option<String>,
    /// How many containers enclose it.
    depth: u32,
}

struct Sequence<'data> {
    data: Cow<'data, [u8]>,
    base: Option<u64>,
    location: String,
    depth: u32,
    /// What the containers in it are called in locations, e.g. ".hip_fatbin ".
    label: String,
    pos: u64,
    /// Containers found so far.
    count: usize,
    /// Entries of the current bundle not yet yielded.
    pending: std::collections::VecDeque<PendingEntry>,
}

struct PendingEntry {
    id: String,
    range: Range<u64>,
    location: String,
}

impl<'data> Iterator for Walk<'data> {
    type Item = Result<Entry<'data>>;

    fn next(&mut self) -> Option<Self::Item> {
        while let Some(frame) = self.stack.pop() {
            let produced = match frame {
                Frame::Input(data, name) => self.expand_input(data, name),
                Frame::Blob(blob) => self.expand_blob(blob),
                Frame::Sequence(seq) => self.step_sequence(seq),
            };
            if produced.is_some() {
                return produced;
            }
        }
        None
    }
}

impl<'data> Walk<'data> {
    fn expand_input(&mut self, data: &'data [u8], name: String) -> Option<Result<Entry<'data>>> {
        match identify(data) {
            Format::HostElf => match host::embedded(data) {
                Ok(found) if found.is_empty() => Some(Err(Error::new(
                    "host ELF has no .hip_fatbin or offload bundle sections",
                )
                .within(name))),
                Ok(found) => {
                    // Reverse, so that popping the stack walks them in section order.
                    for embedded in found.into_iter().rev() {
                        self.stack.push(frame_for(embedded, &name));
                    }
                    None
                }
                Err(e) => Some(Err(e.within(name))),
            },
            Format::Unknown => Some(Err(Error::at(
                0,
                "not a code object, offload bundle, compressed bundle (CCOB) or ELF file",
            )
            .within(name))),
            _ => self.expand_blob(Blob {
                data: Cow::Borrowed(data),
                base: Some(0),
                location: name,
                bundle_id: None,
                depth: 0,
            }),
        }
    }

    fn expand_blob(&mut self, blob: Blob<'data>) -> Option<Result<Entry<'data>>> {
        let id = blob.bundle_id.as_deref().map(BundleId::parse);
        let format = identify(&blob.data);
        let entry = |kind, target_id: String| Entry {
            location: blob.location.clone(),
            offset: blob.base,
            bundle_id: blob.bundle_id.clone(),
            target_id,
            kind,
            bytes: blob.data.clone(),
        };
        if id.is_some_and(|id| id.is_host()) {
            return Some(Ok(entry(EntryKind::Host, String::new())));
        }
        match format {
            Format::CodeObject => {
                let target = match id {
                    Some(id) if !id.target_id.is_empty() => id.target_id.to_string(),
                    _ => elf::target_id(&blob.data).unwrap_or_default(),
                };
                Some(Ok(entry(EntryKind::CodeObject, target)))
            }
            Format::Bundle | Format::Compressed if blob.depth >= MAX_NESTING => {
                let what = format!("containers nested more than {MAX_NESTING} deep");
                Some(Err(
                    Error::at(blob.base.unwrap_or(0), what).within(blob.location)
                ))
            }
            Format::Bundle | Format::Compressed => {
                self.stack.push(Frame::Sequence(Sequence::new(
                    blob.data,
                    blob.base,
                    blob.location,
                    String::new(),
                    blob.depth + 1,
                )));
                None
            }
            _ => {
                let target = id.map(|id| id.target_id.to_string()).unwrap_or_default();
                Some(Ok(entry(EntryKind::Other, target)))
            }
        }
    }

    fn step_sequence(&mut self, mut seq: Sequence<'data>) -> Option<Result<Entry<'data>>> {
        if let Some(pending) = seq.pending.pop_front() {
            let blob = Blob {
                data: sub(&seq.data, pending.range.clone()),
                base: seq.base.map(|b| b + pending.range.start),
                location: pending.location,
                bundle_id: Some(pending.id),
                depth: seq.depth,
            };
            self.stack.push(Frame::Sequence(seq));
            self.stack.push(Frame::Blob(blob));
            return None;
        }
        let Some(start) = next_container(&seq.data, seq.pos) else {
            if seq.count == 0 {
                let what = format!("no offload bundle or CCOB in {}", seq.label.trim());
                return Some(Err(
                    Error::at(seq.base.unwrap_or(0), what).within(seq.location)
                ));
            }
            return None;
        };
        let index = seq.count;
        seq.count += 1;
        let at = seq.base.map_or(start, |b| b + start);
        let here = seq.data.get(start as usize..).unwrap_or(&[]);
        // A decompressed CCOB becomes a sequence of its own, walked before this one resumes.
        let mut inner = None;
        let result = if here.starts_with(bundle::MAGIC) {
            let location = format!("{}[{}bundle {index} @{at:#x}]", seq.location, seq.label);
            Bundle::parse(here).map(|b| {
                seq.pending = b
                    .entries
                    .iter()
                    .map(|e| PendingEntry {
                        id: e.id.to_string(),
                        range: start + e.offset..start + e.offset + e.size,
                        location: format!("{location} {}", e.id),
                    })
                    .collect();
                seq.pos = start + b.end;
            })
        } else {
            let location = format!("{}[{}CCOB {index} @{at:#x}]", seq.location, seq.label);
            ccob::decompress(here).map(|d| {
                seq.pos = start + d.consumed;
                inner = Some(Sequence::new(
                    Cow::Owned(d.data),
                    None,
                    location,
                    String::new(),
                    seq.depth + 1,
                ));
            })
        };
        let error = result.err().map(|e| {
            // Resume the search just past the broken container's magic.
            seq.pos = start + 1;
            rebase(e, at).within(seq.location.clone())
        });
        self.stack.push(Frame::Sequence(seq));
        if let Some(inner) = inner {
            self.stack.push(Frame::Sequence(inner));
        }
        error.map(Err)
    }
}

impl<'data> Sequence<'data> {
    fn new(
        data: Cow<'data, [u8]>,
        base: Option<u64>,
        location: String,
        label: String,
        depth: u32,
    ) -> Self {
        Sequence {
            data,
            base,
            location,
            depth,
            label,
            pos: 0,
            count: 0,
            pending: Default::default(),
        }
    }
}

/// The frame that walks one piece of device code found in a host file.
fn frame_for<'data>(embedded: host::Embedded<'data>, location: &str) -> Frame<'data> {
    match embedded {
        host::Embedded::Fatbin {
            section,
            offset,
            data,
        } => Frame::Sequence(Sequence::new(
            Cow::Borrowed(data),
            Some(offset),
            location.to_string(),
            format!("{section} "),
            1,
        )),
        host::Embedded::BundleSection {
            section,
            id,
            offset,
            data,
        } => Frame::Blob(Blob {
            data: Cow::Borrowed(data),
            base: Some(offset),
            location: format!("{location}[{section} @{offset:#x}]"),
            bundle_id: Some(id),
            depth: 1,
        }),
    }
}

/// A sub-range of `data`, still borrowed if `data` is (ranges were bounds-checked).
fn sub<'data>(data: &Cow<'data, [u8]>, range: Range<u64>) -> Cow<'data, [u8]> {
    let range = range.start as usize..range.end as usize;
    match data {
        Cow::Borrowed(b) => Cow::Borrowed(b.get(range).unwrap_or(&[])),
        Cow::Owned(v) => Cow::Owned(v.get(range).unwrap_or(&[]).to_vec()),
    }
}

fn is_container_start(data: &[u8]) -> bool {
    data.starts_with(bundle::MAGIC) || data.starts_with(ccob::MAGIC)
}

/// Where the next bundle or CCOB starts at or after `from`. The common case —
/// right here or at the next 4096-byte boundary — touches only that page; else
/// the bytes in between are searched.
fn next_container(data: &[u8], from: u64) -> Option<u64> {
    let at = |pos: u64| {
        data.get(pos as usize..)
            .filter(|rest| is_container_start(rest))
            .map(|_| pos)
    };
    let aligned = from.div_ceil(FATBIN_ALIGN).saturating_mul(FATBIN_ALIGN);
    at(from).or_else(|| at(aligned)).or_else(|| {
        let rest = data.get(from as usize..)?;
        let first = |needle: &[u8]| memchr::memmem::find(rest, needle);
        let found = match (first(bundle::MAGIC), first(ccob::MAGIC)) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b)?,
        };
        Some(from + found as u64)
    })
}
