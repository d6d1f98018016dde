//! `inlay inspect`: what a file holds — code objects, their kernels with descriptors
//! and metadata, device functions, variables, relocations — as text or as JSON.
//!
//! The JSON document is described in `docs/inspect-json.md`; other tools read it,
//! so its shape only grows.

use std::io::{self, Write};

use inlay_codeobj::container::handles::{HandleMap, HandleMapBuilder, HostSymbol};
use inlay_codeobj::container::{identify, walk, Entry, EntryKind, Format};
use inlay_codeobj::symbols::SymbolKind;
use inlay_codeobj::CodeObject;
use serde::Serialize;

use crate::demangle::{demangle, with_demangled};
use crate::json::JsonObject;
use crate::report::{Input, Problems};

/// Version of the JSON document's shape (`"schema"`).
pub const JSON_SCHEMA: &str = "inlay-inspect/1";

pub struct Options<'a> {
    pub json: bool,
    /// Only this kernel (mangled or demangled name, or the demangled name without parameters).
    pub kernel: Option<&'a str>,
    /// One line per code object and per kernel, nothing else.
    pub list: bool,
}

/// Inspects `input`, writing the report to `out` as it goes (one entry at a
/// time, so a whole library is never held in memory). Problems — input that is
/// not a container at all, containers or code objects that cannot be read, a
/// `--kernel` that names no kernel — are reported to `problems`; the rest of
/// the file is still reported.
pub fn inspect(
    input: &Input,
    opts: &Options,
    out: &mut dyn Write,
    problems: &mut Problems,
) -> io::Result<()> {
    let (data, name) = (input.bytes, input.name.as_str());
    if identify(data) == Format::Unknown {
        problems.report(format!(
            "{name}: not a code object, offload bundle, compressed bundle or ELF file"
        ));
        return Ok(());
    }
    // Container problems, which the JSON document lists too.
    let mut errors = Vec::new();
    // The handle map is built from the same walk; `--list` does not print it.
    let mut handles = None;
    if identify(data) == Format::HostElf && !opts.list {
        match HandleMapBuilder::new(data, name) {
            Ok(builder) => handles = Some(builder),
            Err(e) => {
                problems.report(&e);
                errors.push(e.to_string());
            }
        }
    }
    let mut json = match opts.json {
        true => {
            let mut doc = JsonObject::start(out, 0)?;
            let entries = doc.array(out, "entries")?;
            Some((doc, entries))
        }
        false => None,
    };
    let mut kernel_found = false;
    for entry in walk(data, name) {
        if let Some(builder) = handles.as_mut() {
            builder.add(entry.as_ref());
        }
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                problems.report(&e);
                errors.push(e.to_string());
                continue;
            }
        };
        let mut parsed = match entry.kind {
            EntryKind::CodeObject => {
                Some(CodeObject::parse(&entry.bytes).map_err(|e| e.within(entry.location.clone())))
            }
            _ => None,
        };
        if let Some(Err(e)) = &parsed {
            problems.report(e);
        }
        if let Some(kernel) = opts.kernel {
            match &parsed {
                Some(Ok(co)) if co.kernels.iter().any(|k| kernel_matches(k.name, kernel)) => {
                    kernel_found = true;
                }
                _ => {
                    input.release(&entry);
                    continue;
                }
            }
        }
        if let Some((_, entries)) = json.as_mut() {
            if let (Some(Ok(co)), Some(wanted)) = (parsed.as_mut(), opts.kernel) {
                keep_only(co, wanted);
            }
            entries.item(out, &entry_json(&entry, &parsed))?;
        } else if opts.list {
            list_entry(out, &entry, parsed.as_ref())?;
        } else {
            text_entry(out, &entry, parsed.as_ref(), opts.kernel)?;
        }
        drop(parsed);
        input.release(&entry);
    }
    let handles = handles.map(HandleMapBuilder::finish);
    let shown_handles = |h: &HandleMap| -> Vec<usize> {
        (0..h.kernels.len())
            .filter(|&i| {
                opts.kernel
                    .is_none_or(|k| kernel_matches(&h.kernels[i].kernel, k))
            })
            .collect()
    };
    let shown = handles.as_ref().map(shown_handles);
    kernel_found |= shown.as_ref().is_some_and(|s| !s.is_empty());
    if let Some((mut doc, entries)) = json {
        entries.end(out)?;
        doc.member(out, "errors", &errors)?;
        doc.member(out, "file", name)?;
        match (&handles, &shown) {
            (Some(h), Some(shown)) => {
                let mut map = doc.object(out, "host_kernel_handles")?;
                handles_json(out, &mut map, h, shown)?;
                map.end(out)?;
            }
            _ => doc.member(out, "host_kernel_handles", &())?,
        }
        doc.member(out, "schema", JSON_SCHEMA)?;
        doc.end(out)?;
        out.write_all(b"\n")?;
    } else if let (Some(h), Some(shown)) = (&handles, &shown) {
        if opts.kernel.is_none() || !shown.is_empty() {
            text_handles(out, h, shown)?;
        }
    }
    if let Some(kernel) = opts.kernel.filter(|_| !kernel_found) {
        problems.report(format!(
            "{name}: no kernel {kernel} (looked for mangled names, demangled names, and demangled names without parameters)"
        ));
    }
    Ok(())
}

/// Does the kernel called `name` match what the user asked for?
fn kernel_matches(name: &str, wanted: &str) -> bool {
    if name == wanted {
        return true;
    }
    match demangle(name) {
        Some(d) => d == wanted || d.split('(').next() == Some(wanted),
        None => false,
    }
}

fn entry_kind(kind: EntryKind) -> &'static str {
    match kind {
        EntryKind::CodeObject => "code_object",
        EntryKind::Host => "host",
        EntryKind::Other => "other",
    }
}

/// One entry of the JSON document (keys are put in order when written).
#[derive(Serialize)]
struct EntryJson<'a> {
    bundle_id: Option<&'a str>,
    code_object: Option<CodeObjectJson<'a>>,
    error: Option<String>,
    kind: &'static str,
    location: &'a str,
    offset: Option<u64>,
    size: usize,
    target_id: &'a str,
}

/// A code object with its target ID as LLVM prints it.
#[derive(Serialize)]
struct CodeObjectJson<'a> {
    #[serde(flatten)]
    co: &'a CodeObject<'a>,
    target_id: String,
}

fn entry_json<'a>(
    entry: &'a Entry,
    parsed: &'a Option<inlay_codeobj::Result<CodeObject<'a>>>,
) -> EntryJson<'a> {
    let (code_object, error) = match parsed {
        Some(Ok(co)) => (
            Some(CodeObjectJson {
                co,
                target_id: co.target.to_string(),
            }),
            None,
        ),
        Some(Err(e)) => (None, Some(e.to_string())),
        None => (None, None),
    };
    EntryJson {
        location: &entry.location,
        offset: entry.offset,
        size: entry.bytes.len(),
        bundle_id: entry.bundle_id.as_deref(),
        target_id: &entry.target_id,
        kind: entry_kind(entry.kind),
        code_object,
        error,
    }
}

/// With `--kernel`: only the chosen kernel in the code object's per-kernel lists.
fn keep_only(co: &mut CodeObject, wanted: &str) {
    co.kernels.retain(|k| kernel_matches(k.name, wanted));
    if let Some(md) = co.metadata.as_mut() {
        md.kernels.retain(|k| kernel_matches(&k.name, wanted));
    }
}

/// A host symbol of the handle map.
#[derive(Serialize)]
struct HostSymbolJson<'a> {
    address: u64,
    name: &'a str,
    section: Option<&'a str>,
    size: u64,
}

fn host_symbol_json(s: &Option<HostSymbol>) -> Option<HostSymbolJson<'_>> {
    s.as_ref().map(|s| HostSymbolJson {
        name: &s.name,
        address: s.address,
        size: s.size,
        section: s.section.as_deref(),
    })
}

/// The handle map's members, kernels streamed (only those in `shown`).
fn handles_json(
    out: &mut dyn Write,
    map: &mut JsonObject,
    h: &HandleMap,
    shown: &[usize],
) -> io::Result<()> {
    #[derive(Serialize)]
    struct CodeObjectJson<'a> {
        location: &'a str,
        offset: Option<u64>,
        target_id: &'a str,
    }
    #[derive(Serialize)]
    struct KernelJson<'a> {
        handle: Option<HostSymbolJson<'a>>,
        in_code_object: &'a [bool],
        kernel: &'a str,
        stub: Option<HostSymbolJson<'a>>,
    }
    let code_objects: Vec<CodeObjectJson> = h
        .code_objects
        .iter()
        .map(|c| CodeObjectJson {
            location: &c.location,
            target_id: &c.target_id,
            offset: c.offset,
        })
        .collect();
    map.member(out, "code_objects", &code_objects)?;
    let errors: Vec<String> = h.errors.iter().map(|e| e.to_string()).collect();
    map.member(out, "errors", &errors)?;
    let mut kernels = map.array(out, "kernels")?;
    for &i in shown {
        let k = &h.kernels[i];
        kernels.item(
            out,
            &KernelJson {
                kernel: &k.kernel,
                handle: host_symbol_json(&k.handle),
                stub: host_symbol_json(&k.stub),
                in_code_object: &k.in_code_object,
            },
        )?;
    }
    kernels.end(out)
}

fn list_entry(
    out: &mut dyn Write,
    entry: &Entry,
    parsed: Option<&inlay_codeobj::Result<CodeObject>>,
) -> io::Result<()> {
    match parsed {
        Some(Ok(co)) => {
            writeln!(
                out,
                "code object {} {}: {} kernels",
                entry.location,
                co.target,
                co.kernels.len()
            )?;
            for k in &co.kernels {
                writeln!(out, "  {}", k.name)?;
            }
        }
        // Reported on standard error.
        Some(Err(_)) => {}
        None => {
            writeln!(out, "{} entry {}", entry_kind(entry.kind), entry.location)?;
        }
    }
    Ok(())
}

fn text_entry(
    out: &mut dyn Write,
    entry: &Entry,
    parsed: Option<&inlay_codeobj::Result<CodeObject>>,
    kernel: Option<&str>,
) -> io::Result<()> {
    let co = match parsed {
        Some(Ok(co)) => co,
        // Reported on standard error.
        Some(Err(_)) => return Ok(()),
        None => {
            writeln!(
                out,
                "{} entry: {}\n",
                entry_kind(entry.kind),
                entry.location
            )?;
            return Ok(());
        }
    };
    let w = out;
    writeln!(w, "code object: {}", entry.location)?;
    writeln!(
        w,
        "  target {}, code object v{}, {}, {} bytes",
        co.target,
        co.code_object_version,
        if co.is_relocatable() {
            "relocatable"
        } else {
            "shared object"
        },
        entry.bytes.len()
    )?;
    if let Some(md) = &co.metadata {
        if let Some(v) = &md.version {
            let v: Vec<String> = v.iter().map(u64::to_string).collect();
            writeln!(w, "  metadata version {}", v.join("."))?;
        }
        if let Some(p) = md.printf.as_ref().filter(|p| !p.is_empty()) {
            writeln!(w, "  printf formats: {}", p.len())?;
        }
    }
    let kernels: Vec<_> = co
        .kernels
        .iter()
        .filter(|k| kernel.is_none_or(|want| kernel_matches(k.name, want)))
        .collect();
    writeln!(w, "  kernels: {}", kernels.len())?;
    for k in kernels {
        let d = &k.descriptor;
        let dd = &k.decoded;
        writeln!(w, "    {}", with_demangled(k.name))?;
        writeln!(
            w,
            "      descriptor at {:#x}, entry {}",
            k.descriptor_address,
            k.entry_address
                .map_or("unknown".to_string(), |a| format!("{a:#x}"))
        )?;
        writeln!(
            w,
            "      segments: kernarg {} bytes, group (LDS) {} bytes, private {} bytes",
            d.kernarg_size, d.group_segment_fixed_size, d.private_segment_fixed_size
        )?;
        writeln!(
            w,
            "      registers: {} VGPRs (granule {}), {} SGPRs (granule {}){}",
            dd.vgpr_count,
            dd.rsrc1.granulated_workitem_vgpr_count,
            dd.sgpr_count.map_or("-".to_string(), |c| c.to_string()),
            dd.rsrc1.granulated_wavefront_sgpr_count,
            dd.accum_offset
                .map_or(String::new(), |a| format!(", AGPRs from v{a}"))
        )?;
        writeln!(
            w,
            "      rsrc1 {:#010x} rsrc2 {:#010x} rsrc3 {:#010x} properties {:#06x} kernarg preload {:#06x}",
            d.compute_pgm_rsrc1, d.compute_pgm_rsrc2, d.compute_pgm_rsrc3, d.kernel_code_properties, d.kernarg_preload
        )?;
        for problem in &k.descriptor_problems {
            writeln!(w, "      warning: {problem} (a loader refuses this kernel)")?;
        }
        let p = &dd.properties;
        let enabled: Vec<&str> = [
            (
                p.enable_sgpr_private_segment_buffer,
                "private_segment_buffer",
            ),
            (p.enable_sgpr_dispatch_ptr, "dispatch_ptr"),
            (p.enable_sgpr_queue_ptr, "queue_ptr"),
            (p.enable_sgpr_kernarg_segment_ptr, "kernarg_segment_ptr"),
            (p.enable_sgpr_dispatch_id, "dispatch_id"),
            (p.enable_sgpr_flat_scratch_init, "flat_scratch_init"),
            (p.enable_sgpr_private_segment_size, "private_segment_size"),
            (dd.rsrc2.enable_sgpr_workgroup_id_x, "workgroup_id_x"),
            (dd.rsrc2.enable_sgpr_workgroup_id_y, "workgroup_id_y"),
            (dd.rsrc2.enable_sgpr_workgroup_id_z, "workgroup_id_z"),
            (dd.rsrc2.enable_sgpr_workgroup_info, "workgroup_info"),
            (
                dd.rsrc2.enable_private_segment,
                "private_segment_wave_offset",
            ),
        ]
        .into_iter()
        .filter_map(|(on, n)| on.then_some(n))
        .collect();
        writeln!(
            w,
            "      initial SGPRs: {} ({} user); work-item id VGPRs: {}; {}",
            enabled.join(", "),
            dd.rsrc2.user_sgpr_count,
            ["x", "x,y", "x,y,z", "x,y,z"][(dd.rsrc2.enable_vgpr_workitem_id & 3) as usize],
            if p.enable_wavefront_size32 {
                "wave32"
            } else {
                "wave64"
            }
        )?;
        let md = co.metadata.as_ref().and_then(|m| {
            m.kernels
                .iter()
                .find(|km| km.symbol == format!("{}.kd", k.name) || km.name == k.name)
        });
        if let Some(km) = md {
            writeln!(
                w,
                "      metadata: sgpr {} vgpr {} agpr {} spills s{}/v{} wave {} max workgroup {} language {}",
                opt(km.sgpr_count),
                opt(km.vgpr_count),
                opt(km.agpr_count),
                opt(km.sgpr_spill_count),
                opt(km.vgpr_spill_count),
                opt(km.wavefront_size),
                opt(km.max_flat_workgroup_size),
                km.language.as_deref().unwrap_or("-")
            )?;
            for (i, a) in km.args.iter().enumerate() {
                writeln!(
                    w,
                    "      arg {i}: {:<12} {:<24} offset {:>3} size {:>2} {}{}{}",
                    a.name.as_deref().unwrap_or("-"),
                    a.value_kind,
                    a.offset,
                    a.size,
                    a.type_name.as_deref().unwrap_or(""),
                    a.address_space
                        .as_deref()
                        .map_or(String::new(), |s| format!(" [{s}]")),
                    a.access
                        .as_deref()
                        .or(a.actual_access.as_deref())
                        .map_or(String::new(), |s| format!(" {s}"))
                )?;
            }
        }
    }
    if kernel.is_some() {
        return writeln!(w);
    }
    for (kind, title) in [
        (SymbolKind::DeviceFunction, "device functions"),
        (SymbolKind::Variable, "variables"),
        (SymbolKind::Undefined, "undefined symbols"),
    ] {
        let syms: Vec<_> = co.symbols.of_kind(kind).collect();
        if syms.is_empty() {
            continue;
        }
        writeln!(w, "  {title}: {}", syms.len())?;
        for s in syms {
            writeln!(
                w,
                "    {:#010x} size {:<6} {:?} {:?} {} {}",
                s.value,
                s.size,
                s.binding,
                s.visibility,
                s.section.unwrap_or("-"),
                with_demangled(s.name)
            )?;
        }
    }
    if !co.relocations.is_empty() {
        writeln!(w, "  relocations: {}", co.relocations.len())?;
        for r in &co.relocations {
            writeln!(
                w,
                "    {:#010x} {:<24} {} {:+#x}",
                r.offset,
                r.r_type
                    .name()
                    .map_or(format!("type {}", r.r_type.0), str::to_string),
                r.symbol.unwrap_or("-"),
                r.addend
            )?;
        }
    }
    writeln!(w)
}

fn opt(v: Option<u64>) -> String {
    v.map_or("-".to_string(), |v| v.to_string())
}

/// The host kernel-handle table: the kernels at the indexes `shown`.
fn text_handles(out: &mut dyn Write, h: &HandleMap, shown: &[usize]) -> io::Result<()> {
    writeln!(out, "host kernel handles: {}", shown.len())?;
    for k in shown.iter().map(|&i| &h.kernels[i]) {
        writeln!(out, "  {}", with_demangled(&k.kernel))?;
        if let Some(s) = &k.handle {
            writeln!(
                out,
                "    handle {:#x} in {}",
                s.address,
                s.section.as_deref().unwrap_or("-")
            )?;
        }
        if let Some(s) = &k.stub {
            writeln!(out, "    stub   {:#x} {}", s.address, s.name)?;
        }
        let present: Vec<&str> = h
            .code_objects
            .iter()
            .zip(&k.in_code_object)
            .filter_map(|(c, &yes)| yes.then_some(c.target_id.as_str()))
            .collect();
        writeln!(out, "    device code in: {}", present.join(", "))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use inlay_codeobj::descriptor::Rsrc3;
    use std::path::Path;

    /// The JSON writer moves an object's members only if they come out of key
    /// order, and then moves everything the object holds; so every type in the
    /// document declares its fields in key order. Only an internally tagged
    /// enum cannot: serde writes its tag (`rsrc3`'s `layout`) first.
    #[test]
    fn every_fixture_code_object_serializes_in_key_order() {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
        let manifest = std::fs::read_to_string(fixtures.join("manifest.json")).unwrap();
        let manifest: serde_json::Value = serde_json::from_str(&manifest).unwrap();
        let mut checked = 0;
        for file in manifest["files"].as_array().unwrap() {
            if !matches!(file["kind"].as_str(), Some("hsaco" | "object")) {
                continue;
            }
            let path = fixtures.join(file["path"].as_str().unwrap());
            let bytes = std::fs::read(&path).unwrap();
            let co = CodeObject::parse(&bytes).unwrap();
            let tagged = co
                .kernels
                .iter()
                .filter(|k| !matches!(k.decoded.rsrc3, Rsrc3::Reserved { .. }))
                .count();
            let json = CodeObjectJson {
                co: &co,
                target_id: co.target.to_string(),
            };
            assert_eq!(
                crate::json::reordered_objects(&json),
                tagged,
                "{}: objects written out of key order",
                path.display()
            );
            checked += 1;
        }
        assert!(checked > 90, "only {checked} fixture code objects");
    }
}
