//! Fuzzes everything that reads untrusted files in inlay-codeobj: the
//! container walk (bundles, CCOB, host fat binaries), the listing, the host
//! kernel-handle map, and CodeObject::parse with every accessor of the result.
//! (The writer has its own target, `writer`.)
//! Errors are fine; panics, hangs and runaway allocations are findings.
#![no_main]

use inlay_codeobj::container::{self, ccob, handles, host, list, EntryKind};
use inlay_codeobj::symbols::{SymbolKind, SymbolTable};
use inlay_codeobj::target::FeatureState;
use inlay_codeobj::{CodeObject, KernelDescriptor, TargetId};
use libfuzzer_sys::fuzz_target;

const KINDS: [SymbolKind; 6] = [
    SymbolKind::Kernel,
    SymbolKind::KernelDescriptor,
    SymbolKind::DeviceFunction,
    SymbolKind::Variable,
    SymbolKind::Undefined,
    SymbolKind::Other,
];

fuzz_target!(|data: &[u8]| {
    // The raw input as a code object, whatever the container walk thinks.
    touch_code_object(data);

    let _ = container::identify(data);
    for entry in container::walk(data, "fuzz").take(4096) {
        let Ok(entry) = entry else { continue };
        let _ = (&entry.location, entry.offset, &entry.bundle_id, &entry.target_id);
        if entry.kind == EntryKind::CodeObject {
            touch_code_object(&entry.bytes);
        }
    }
    for listed in list::list(data, "fuzz").take(4096) {
        if let Ok(l) = listed {
            let _ = l.kernels.map(|k| k.len());
        }
    }
    let _ = host::embedded(data).map(|v| v.len());
    let _ = handles::kernel_handles(data, "fuzz").map(|m| (m.code_objects.len(), m.kernels.len()));
    if data.starts_with(ccob::MAGIC) {
        let _ = ccob::Header::parse(data);
        let _ = ccob::decompress(data).map(|d| d.data.len());
    }
});

fn touch_code_object(data: &[u8]) {
    let Ok(co) = CodeObject::parse(data) else {
        return;
    };
    // Serialize walks every public field (header, sections, notes, metadata,
    // symbols, relocations, kernels with decoded descriptors).
    let _ = serde_json::to_string(&co);
    let _ = (co.data().len(), co.is_relocatable(), co.code_object_version);

    // The target ID's text form must read back as the same target. Like
    // LLVM's, the text cannot tell "any" from "unsupported" (e_flags can, e.g.
    // a gfx942 whose sramecc field says unsupported), so those compare equal;
    // nor does it carry the generic version (e_flags bits 24..32).
    let text = co.target.to_string();
    match text.parse::<TargetId>() {
        Ok(t) => {
            let vague = |s: FeatureState| matches!(s, FeatureState::Any | FeatureState::Unsupported);
            let same = |a: FeatureState, b: FeatureState| a == b || (vague(a) && vague(b));
            assert!(
                t.processor == co.target.processor
                    && same(t.xnack, co.target.xnack)
                    && same(t.sramecc, co.target.sramecc),
                "target ID {text} reads back as {t:?}, not {:?}",
                co.target
            );
        }
        Err(e) => panic!("target ID {text} we printed does not parse: {e}"),
    }
    let _ = co.target.e_flags();

    for s in &co.sections {
        let _ = co.section_data(s).len();
        let _ = co.section(s.name);
        let _ = (s.file_size(), s.is_alloc(), s.contains_addr(s.addr));
    }
    for s in co.symbols.all() {
        let _ = co.symbol_file_offset(s);
        let _ = co.symbol_data(s).map(<[u8]>::len);
        let _ = co.section_at(s.value);
        let _ = co.symbols.get(s.name);
        let _ = s.is_defined();
    }
    for kind in KINDS {
        let _ = co.symbols.of_kind(kind).count();
    }
    for table in [SymbolTable::Symtab, SymbolTable::Dynsym] {
        let _ = co.symbols.in_table(table).len();
    }
    for r in &co.relocations {
        let _ = (r.r_type.name(), r.r_type.width(), r.symbol, r.addend);
    }
    if let Some(md) = &co.metadata {
        let _ = md.to_msgpack();
    }
    for k in &co.kernels {
        let _ = co.kernel(k.name);
        // A descriptor writes back to the exact bytes it was read from.
        let at = k.descriptor_file_offset as usize;
        let bytes = data
            .get(at..at.saturating_add(64))
            .expect("descriptor_file_offset points at 64 bytes inside the file");
        assert_eq!(&k.descriptor.to_bytes()[..], bytes, "descriptor bytes differ");
        let again = KernelDescriptor::parse(bytes, 0).expect("64 bytes parse");
        assert_eq!(again, k.descriptor);
    }
    let _ = list::kernel_names(data);
}
