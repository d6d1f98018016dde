//! HIP host-side kernel handles.
//!
//! For every `__global__` function, clang emits in the host binary a data symbol
//! with the kernel's mangled name (the "handle" passed to `__hipRegisterFunction`
//! and to `hipLaunchKernel`) and a `__device_stub__` function that launches it.
//! This module maps both to the device kernel of that name in each code object
//! of the binary's fat binary.

use std::collections::{HashMap, HashSet};

use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};

use super::{list::kernel_names, walk, Entry, EntryKind};
use crate::{Error, Result};

const STUB_MARKER: &str = "__device_stub__";

/// A defined symbol of the host binary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSymbol {
    pub name: String,
    pub address: u64,
    pub size: u64,
    /// Name of the section it is defined in.
    pub section: Option<String>,
}

/// A code object of the host binary's fat binary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceCodeObject {
    pub location: String,
    pub target_id: String,
    pub offset: Option<u64>,
}

/// One kernel as the host sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelHandle {
    /// The kernel's mangled name, on host and device alike.
    pub kernel: String,
    /// The data symbol named like the kernel (absent in stripped binaries).
    pub handle: Option<HostSymbol>,
    /// The `__device_stub__` function.
    pub stub: Option<HostSymbol>,
    /// Per entry of [`HandleMap::code_objects`]: does that code object define the kernel?
    pub in_code_object: Vec<bool>,
}

#[derive(Debug, Clone, Default)]
pub struct HandleMap {
    pub code_objects: Vec<DeviceCodeObject>,
    /// Kernels found on either side: defined in a code object, or having a host stub.
    pub kernels: Vec<KernelHandle>,
    /// Problems with individual containers or code objects; the rest was still mapped.
    pub errors: Vec<Error>,
}

/// The kernel a stub launches: `_Z25__device_stub__vector_addPfS_S_i` →
/// `_Z10vector_addPfS_S_i` (the length prefix of the name shrinks by the marker's
/// length), `__device_stub__foo` → `foo` for `extern "C"` kernels.
pub fn kernel_for_stub(stub: &str) -> Option<String> {
    let at = stub.find(STUB_MARKER)?;
    let (before, after) = (&stub[..at], &stub[at + STUB_MARKER.len()..]);
    if after.is_empty() {
        return None;
    }
    let digits = before.len() - before.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 {
        return before.is_empty().then(|| after.to_string());
    }
    let prefix = &before[..before.len() - digits];
    let len: usize = before[prefix.len()..].parse().ok()?;
    let kernel_len = len.checked_sub(STUB_MARKER.len()).filter(|&l| l > 0)?;
    Some(format!("{prefix}{kernel_len}{after}"))
}

/// Maps the kernel handles and stubs of the host binary `data` (named `name`
/// in locations) to the kernels of its code objects.
pub fn kernel_handles(data: &[u8], name: &str) -> Result<HandleMap> {
    let mut builder = HandleMapBuilder::new(data, name)?;
    for entry in walk(data, name) {
        builder.add(entry.as_ref());
    }
    Ok(builder.finish())
}

/// [`kernel_handles`] fed one walk entry at a time, so that a caller already
/// walking the file (to print it) need not walk it twice.
pub struct HandleMapBuilder {
    /// Host data symbols by name: the kernel handles.
    objects: HashMap<String, HostSymbol>,
    /// Host stubs by the kernel they launch.
    stubs: HashMap<String, HostSymbol>,
    map: HandleMap,
    /// Kernel names of each entry of `map.code_objects`.
    device_kernels: Vec<HashSet<String>>,
    /// Device kernels in the order first seen, and the same as a set.
    order: Vec<String>,
    seen: HashSet<String>,
}

impl HandleMapBuilder {
    /// Reads the host binary's symbols; fails if `data` is not an ELF the
    /// `object` crate can read.
    pub fn new(data: &[u8], name: &str) -> Result<Self> {
        let file = object::File::parse(data)
            .map_err(|e| Error::at(0, format!("host ELF: {e}")).within(name))?;
        let symbol_of = |symbol: &object::Symbol<'_, '_>| -> Option<HostSymbol> {
            let section = symbol.section_index()?;
            Some(HostSymbol {
                name: symbol.name().ok()?.to_string(),
                address: symbol.address(),
                size: symbol.size(),
                section: file
                    .section_by_index(section)
                    .ok()
                    .and_then(|s| s.name().ok().map(str::to_string)),
            })
        };
        // Executables keep .symtab; stripped shared libraries only .dynsym.
        let mut objects: HashMap<String, HostSymbol> = HashMap::new();
        let mut stubs: HashMap<String, HostSymbol> = HashMap::new();
        for symbol in file.symbols().chain(file.dynamic_symbols()) {
            if symbol.is_undefined() {
                continue;
            }
            match symbol.kind() {
                SymbolKind::Data => {
                    if let Some(s) = symbol_of(&symbol) {
                        objects.entry(s.name.clone()).or_insert(s);
                    }
                }
                SymbolKind::Text => {
                    let kernel = symbol.name().ok().and_then(kernel_for_stub);
                    if let (Some(kernel), Some(s)) = (kernel, symbol_of(&symbol)) {
                        stubs.entry(kernel).or_insert(s);
                    }
                }
                _ => {}
            }
        }
        Ok(HandleMapBuilder {
            objects,
            stubs,
            map: HandleMap::default(),
            device_kernels: Vec::new(),
            order: Vec::new(),
            seen: HashSet::new(),
        })
    }

    /// Takes one item of the walk: code objects add their kernels, errors are
    /// kept in [`HandleMap::errors`], other entries are ignored.
    pub fn add(&mut self, entry: std::result::Result<&Entry<'_>, &Error>) {
        let entry = match entry {
            Ok(e) if e.kind == EntryKind::CodeObject => e,
            Ok(_) => return,
            Err(e) => {
                self.map.errors.push(e.clone());
                return;
            }
        };
        let names = match kernel_names(&entry.bytes) {
            Ok(names) => names,
            Err(e) => {
                self.map.errors.push(e.within(entry.location.clone()));
                return;
            }
        };
        for kernel in &names {
            if self.seen.insert(kernel.clone()) {
                self.order.push(kernel.clone());
            }
        }
        self.device_kernels.push(names.into_iter().collect());
        self.map.code_objects.push(DeviceCodeObject {
            location: entry.location.clone(),
            target_id: entry.target_id.clone(),
            offset: entry.offset,
        });
    }

    /// The map: device kernels in the order first seen, then kernels with a
    /// host stub but no device code anywhere (sorted).
    pub fn finish(self) -> HandleMap {
        let HandleMapBuilder {
            objects,
            stubs,
            mut map,
            device_kernels,
            mut order,
            seen,
        } = self;
        let mut host_only: Vec<String> = stubs
            .keys()
            .filter(|k| !seen.contains(*k))
            .cloned()
            .collect();
        host_only.sort();
        order.extend(host_only);
        map.kernels = order
            .into_iter()
            .map(|kernel| KernelHandle {
                handle: objects.get(&kernel).cloned(),
                stub: stubs.get(&kernel).cloned(),
                in_code_object: device_kernels
                    .iter()
                    .map(|set| set.contains(&kernel))
                    .collect(),
                kernel,
            })
            .collect();
        map
    }
}

#[cfg(test)]
mod tests {
    use super::kernel_for_stub;

    #[test]
    fn stub_names_map_back_to_kernels() {
        let k = kernel_for_stub("_Z25__device_stub__vector_addPfS_S_i");
        assert_eq!(k.as_deref(), Some("_Z10vector_addPfS_S_i"));
        let k = kernel_for_stub("_ZN2ns18__device_stub__fooEv");
        assert_eq!(k.as_deref(), Some("_ZN2ns3fooEv"));
        assert_eq!(
            kernel_for_stub("__device_stub__foo").as_deref(),
            Some("foo")
        );
        assert_eq!(kernel_for_stub("_Z15__device_stub__"), None);
        assert_eq!(kernel_for_stub("_Z3foov"), None);
    }
}
