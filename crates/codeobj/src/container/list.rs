//! Listing a whole file: every code object it holds and the kernels in each.
//! Used by `inlay inspect` on containers and by the listing benchmark.

use object::{Object, ObjectSymbol, SymbolKind};

use super::{walk, Entry, EntryKind};
use crate::{Error, Result};

/// One entry of the walk, with the kernels of code objects.
#[derive(Debug, Clone)]
pub struct Listed<'data> {
    pub entry: Entry<'data>,
    /// Kernel names (symbol order) for code objects; empty for other entries.
    pub kernels: Result<Vec<String>>,
}

/// Names of the kernels in an AMDGPU code object: the symbols that have a
/// kernel descriptor `<name>.kd` beside them.
pub fn kernel_names(code_object: &[u8]) -> Result<Vec<String>> {
    let file = object::File::parse(code_object)
        .map_err(|e| Error::at(0, format!("code object ELF: {e}")))?;
    // Stripped code objects keep only .dynsym, which lists the same kernels.
    let symbols = match file.symbol_table() {
        Some(_) => file.symbols(),
        None => file.dynamic_symbols(),
    };
    let mut names = Vec::new();
    for symbol in symbols {
        if symbol.kind() != SymbolKind::Data {
            continue;
        }
        if let Some(kernel) = symbol.name().ok().and_then(|n| n.strip_suffix(".kd")) {
            names.push(kernel.to_string());
        }
    }
    Ok(names)
}

/// Lazily lists everything in `data` (named `name` in locations).
pub fn list<'data>(data: &'data [u8], name: &str) -> impl Iterator<Item = Result<Listed<'data>>> {
    walk(data, name).map(|entry| {
        entry.map(|entry| {
            let kernels = match entry.kind {
                EntryKind::CodeObject => {
                    kernel_names(&entry.bytes).map_err(|e| e.within(entry.location.clone()))
                }
                EntryKind::Host | EntryKind::Other => Ok(Vec::new()),
            };
            Listed { entry, kernels }
        })
    })
}
