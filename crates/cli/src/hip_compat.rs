//! Before `inlay run` starts a HIP program: can its HIP runtime load the GPU
//! code it carries on the virtual gfx90a?
//!
//! Debian's HIP is 5.2 (`libamdhip64.so.5`). Its code object manager reads
//! code objects up to v4, so a program built by clang-19 with its default
//! (v5) has nothing it can load, and every launch fails with
//! `hipErrorInvalidDeviceFunction`. And clang-19 gives kernels that call
//! `printf` or `malloc` the hidden arguments `hidden_default_queue` and
//! `hidden_completion_action` even in v4, which ROCclr 5.2 takes for
//! device-side enqueue and crashes on at launch. Debian's `hipcc` (clang-15)
//! produces neither. This module reads the program's fat binary and says
//! so, with what to rebuild with, before the program fails obscurely.

use std::path::{Path, PathBuf};

use inlay_codeobj::container::{walk, EntryKind};
use inlay_codeobj::CodeObject;

/// The HIP runtime whose limits apply (the one Debian ships).
const HIP5: &str = "libamdhip64.so.5";
const HIDDEN_ENQUEUE: [&str; 2] = ["hidden_default_queue", "hidden_completion_action"];

/// The file `command` runs: as given if it has a slash, else found on PATH.
pub fn resolve(command: &Path) -> Option<PathBuf> {
    if command.components().count() > 1 {
        return Some(command.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(command))
        .find(|p| p.is_file())
}

/// Whether the ELF at `bytes` lists `lib` among its needed libraries.
fn needs(bytes: &[u8], lib: &str) -> bool {
    use object::read::elf::{Dyn, ElfFile64, FileHeader};
    use object::LittleEndian;
    let Ok(file) = ElfFile64::<LittleEndian>::parse(bytes) else {
        return false;
    };
    let header = file.elf_header();
    let endian = LittleEndian;
    let Ok(sections) = header.sections(endian, bytes) else {
        return false;
    };
    // The dynamic entries and the string table they name.
    let Ok(Some((dynamic, strtab))) = sections.dynamic(endian, bytes) else {
        return false;
    };
    let Ok(strings) = sections.strings(endian, bytes, strtab) else {
        return false;
    };
    dynamic.iter().any(|d| {
        d.d_tag(endian) == u64::from(object::elf::DT_NEEDED)
            && strings
                .get(d.d_val(endian) as u32)
                .is_ok_and(|name| name == lib.as_bytes())
    })
}

/// What is wrong with the GPU code of the program at `path` for HIP 5.2 on
/// gfx90a, as sentences to print; empty when nothing is (or it is not a
/// HIP 5 program, or cannot be read).
pub fn problems(path: &Path) -> Vec<String> {
    let Ok(file) = inlay_codeobj::file::MappedFile::open(path) else {
        return Vec::new();
    };
    let bytes = file.bytes();
    if !needs(bytes, HIP5) {
        return Vec::new();
    }
    let name = path.display();
    let mut targets = Vec::new();
    let mut loadable = 0;
    let mut v5 = 0;
    let mut enqueue_kernels = Vec::new();
    for entry in walk(bytes, "program").flatten() {
        if entry.kind != EntryKind::CodeObject {
            continue;
        }
        let processor = entry.target_id.split(':').next().unwrap_or_default();
        if !targets.iter().any(|t| t == processor) {
            targets.push(processor.to_string());
        }
        // gfx90a code for any XNACK mode but on (the virtual GPU runs XNACK off).
        if processor != "gfx90a" || entry.target_id.contains("xnack+") {
            continue;
        }
        let Ok(co) = CodeObject::parse(&entry.bytes) else {
            continue;
        };
        if co.code_object_version > 4 {
            v5 += 1;
            continue;
        }
        loadable += 1;
        for k in co.metadata.iter().flat_map(|m| &m.kernels) {
            if k.args
                .iter()
                .any(|a| HIDDEN_ENQUEUE.contains(&a.value_kind.as_str()))
            {
                enqueue_kernels
                    .push(crate::demangle::demangle(&k.name).unwrap_or_else(|| k.name.clone()));
            }
        }
    }
    let mut out = Vec::new();
    if targets.is_empty() {
        return out;
    }
    if loadable == 0 && v5 == 0 {
        out.push(format!(
            "{name} carries no GPU code for gfx90a (it has {}): rebuild it with --offload-arch=gfx90a",
            targets.join(", ")
        ));
    } else if loadable == 0 {
        out.push(format!(
            "{name} carries only code object v5 or later for gfx90a, which HIP 5.2 ({HIP5}) cannot load (launches fail with hipErrorInvalidDeviceFunction): rebuild it with -mcode-object-version=4 (clang-19) or with Debian's hipcc"
        ));
    }
    if !enqueue_kernels.is_empty() {
        enqueue_kernels.sort();
        enqueue_kernels.dedup();
        out.push(format!(
            "{name}: kernel{} {} {} hidden_default_queue/hidden_completion_action arguments (clang-19 adds them to kernels that call printf or malloc), on which HIP 5.2's runtime crashes at launch: rebuild it with Debian's hipcc (clang-15)",
            if enqueue_kernels.len() > 1 { "s" } else { "" },
            enqueue_kernels.join(", "),
            if enqueue_kernels.len() > 1 { "have" } else { "has" },
        ));
    }
    out
}
