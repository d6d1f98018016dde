//! `inlay inspect`: what a file holds — code objects, their kernels with descriptors
//! and metadata, device functions, variables, relocations — as text or as JSON.
//!
//! The JSON document is described in `docs/inspect-json.md`; other tools read it,
//! so its shape only grows.

use std::fmt::Write as _;

use inlay_codeobj::container::handles::{kernel_handles, HandleMap, HostSymbol};
use inlay_codeobj::container::{identify, walk, Entry, EntryKind, Format};
use inlay_codeobj::symbols::SymbolKind;
use inlay_codeobj::CodeObject;
use serde_json::{json, Value};

use crate::demangle::{annotate_json, demangle, with_demangled};

/// Version of the JSON document's shape (`"schema"`).
pub const JSON_SCHEMA: &str = "inlay-inspect/1";

pub struct Options<'a> {
    pub json: bool,
    /// Only this kernel (mangled or demangled name, or the demangled name without parameters).
    pub kernel: Option<&'a str>,
    /// One line per code object and per kernel, nothing else.
    pub list: bool,
}

/// Inspects `data` (the contents of the file called `name`) and returns the report.
/// Errors inside containers are reported in the output; only an input with no
/// recognisable content at all is an error.
pub fn inspect(data: &[u8], name: &str, opts: &Options) -> Result<String, String> {
    if identify(data) == Format::Unknown {
        return Err(format!(
            "{name}: not a code object, offload bundle, compressed bundle or ELF file"
        ));
    }
    let mut out = String::new();
    let mut doc_entries = Vec::new();
    let mut errors = Vec::new();
    for entry in walk(data, name) {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                errors.push(e.to_string());
                continue;
            }
        };
        let parsed = match entry.kind {
            EntryKind::CodeObject => {
                Some(CodeObject::parse(&entry.bytes).map_err(|e| e.within(entry.location.clone())))
            }
            _ => None,
        };
        if let Some(kernel) = opts.kernel {
            match &parsed {
                Some(Ok(co)) if co.kernels.iter().any(|k| kernel_matches(k.name, kernel)) => {}
                _ => continue,
            }
        }
        if opts.json {
            doc_entries.push(entry_json(&entry, parsed.as_ref(), opts.kernel));
        } else if opts.list {
            list_entry(&mut out, &entry, parsed.as_ref());
        } else {
            text_entry(&mut out, &entry, parsed.as_ref(), opts.kernel);
        }
    }
    // The handle map walks the fat binary again; `--list` does not print it.
    let handles = (identify(data) == Format::HostElf && !opts.list)
        .then(|| kernel_handles(data, name))
        .and_then(|r| r.map_err(|e| errors.push(e.to_string())).ok());
    if opts.json {
        let mut doc = json!({
            "schema": JSON_SCHEMA,
            "file": name,
            "entries": doc_entries,
            "host_kernel_handles": handles.as_ref().map(handles_json),
            "errors": errors,
        });
        annotate_json(&mut doc);
        return serde_json::to_string_pretty(&doc).map_err(|e| e.to_string());
    }
    if let Some(h) = &handles {
        text_handles(&mut out, h, opts.kernel);
    }
    for e in &errors {
        let _ = writeln!(out, "error: {e}");
    }
    Ok(out)
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

fn entry_json(
    entry: &Entry,
    parsed: Option<&inlay_codeobj::Result<CodeObject>>,
    kernel: Option<&str>,
) -> Value {
    let (code_object, error) = match parsed {
        Some(Ok(co)) => (code_object_json(co, kernel), Value::Null),
        Some(Err(e)) => (Value::Null, Value::String(e.to_string())),
        None => (Value::Null, Value::Null),
    };
    json!({
        "location": entry.location,
        "offset": entry.offset,
        "size": entry.bytes.len(),
        "bundle_id": entry.bundle_id,
        "target_id": entry.target_id,
        "kind": entry_kind(entry.kind),
        "code_object": code_object,
        "error": error,
    })
}

fn code_object_json(co: &CodeObject, kernel: Option<&str>) -> Value {
    let mut v = serde_json::to_value(co).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut v {
        map.insert("target_id".into(), Value::String(co.target.to_string()));
        if let Some(wanted) = kernel {
            // Keep only the chosen kernel in the per-kernel lists.
            if let Some(Value::Array(ks)) = map.get_mut("kernels") {
                ks.retain(|k| {
                    k["name"]
                        .as_str()
                        .is_some_and(|n| kernel_matches(n, wanted))
                });
            }
            if let Some(Value::Array(ks)) =
                map.get_mut("metadata").and_then(|m| m.get_mut("kernels"))
            {
                ks.retain(|k| {
                    k["name"]
                        .as_str()
                        .is_some_and(|n| kernel_matches(n, wanted))
                });
            }
        }
    }
    v
}

fn host_symbol_json(s: &Option<HostSymbol>) -> Value {
    match s {
        Some(s) => {
            json!({"name": s.name, "address": s.address, "size": s.size, "section": s.section})
        }
        None => Value::Null,
    }
}

fn handles_json(h: &HandleMap) -> Value {
    json!({
        "code_objects": h.code_objects.iter().map(|c| json!({
            "location": c.location, "target_id": c.target_id, "offset": c.offset,
        })).collect::<Vec<_>>(),
        "kernels": h.kernels.iter().map(|k| json!({
            "kernel": k.kernel,
            "handle": host_symbol_json(&k.handle),
            "stub": host_symbol_json(&k.stub),
            "in_code_object": k.in_code_object,
        })).collect::<Vec<_>>(),
        "errors": h.errors.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
    })
}

fn list_entry(out: &mut String, entry: &Entry, parsed: Option<&inlay_codeobj::Result<CodeObject>>) {
    match parsed {
        Some(Ok(co)) => {
            let _ = writeln!(
                out,
                "code object {} {}: {} kernels",
                entry.location,
                co.target,
                co.kernels.len()
            );
            for k in &co.kernels {
                let _ = writeln!(out, "  {}", k.name);
            }
        }
        Some(Err(e)) => {
            let _ = writeln!(out, "error: {e}");
        }
        None => {
            let _ = writeln!(out, "{} entry {}", entry_kind(entry.kind), entry.location);
        }
    }
}

fn text_entry(
    out: &mut String,
    entry: &Entry,
    parsed: Option<&inlay_codeobj::Result<CodeObject>>,
    kernel: Option<&str>,
) {
    let co = match parsed {
        Some(Ok(co)) => co,
        Some(Err(e)) => {
            let _ = writeln!(out, "error: {e}\n");
            return;
        }
        None => {
            let _ = writeln!(
                out,
                "{} entry: {}\n",
                entry_kind(entry.kind),
                entry.location
            );
            return;
        }
    };
    let w = out;
    let _ = writeln!(w, "code object: {}", entry.location);
    let _ = writeln!(
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
    );
    if let Some(md) = &co.metadata {
        if let Some(v) = &md.version {
            let v: Vec<String> = v.iter().map(u64::to_string).collect();
            let _ = writeln!(w, "  metadata version {}", v.join("."));
        }
        if let Some(p) = md.printf.as_ref().filter(|p| !p.is_empty()) {
            let _ = writeln!(w, "  printf formats: {}", p.len());
        }
    }
    let kernels: Vec<_> = co
        .kernels
        .iter()
        .filter(|k| kernel.is_none_or(|want| kernel_matches(k.name, want)))
        .collect();
    let _ = writeln!(w, "  kernels: {}", kernels.len());
    for k in kernels {
        let d = &k.descriptor;
        let dd = &k.decoded;
        let _ = writeln!(w, "    {}", with_demangled(k.name));
        let _ = writeln!(
            w,
            "      descriptor at {:#x}, entry {}",
            k.descriptor_address,
            k.entry_address
                .map_or("unknown".to_string(), |a| format!("{a:#x}"))
        );
        let _ = writeln!(
            w,
            "      segments: kernarg {} bytes, group (LDS) {} bytes, private {} bytes",
            d.kernarg_size, d.group_segment_fixed_size, d.private_segment_fixed_size
        );
        let _ = writeln!(
            w,
            "      registers: {} VGPRs (granule {}), {} SGPRs (granule {}){}",
            dd.vgpr_count,
            dd.rsrc1.granulated_workitem_vgpr_count,
            dd.sgpr_count.map_or("-".to_string(), |c| c.to_string()),
            dd.rsrc1.granulated_wavefront_sgpr_count,
            dd.accum_offset
                .map_or(String::new(), |a| format!(", AGPRs from v{a}"))
        );
        let _ = writeln!(
            w,
            "      rsrc1 {:#010x} rsrc2 {:#010x} rsrc3 {:#010x} properties {:#06x} kernarg preload {:#06x}",
            d.compute_pgm_rsrc1, d.compute_pgm_rsrc2, d.compute_pgm_rsrc3, d.kernel_code_properties, d.kernarg_preload
        );
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
        let _ = writeln!(
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
        );
        let md = co.metadata.as_ref().and_then(|m| {
            m.kernels
                .iter()
                .find(|km| km.symbol == format!("{}.kd", k.name) || km.name == k.name)
        });
        if let Some(km) = md {
            let _ = writeln!(
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
            );
            for (i, a) in km.args.iter().enumerate() {
                let _ = writeln!(
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
                );
            }
        }
    }
    if kernel.is_some() {
        let _ = writeln!(w);
        return;
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
        let _ = writeln!(w, "  {title}: {}", syms.len());
        for s in syms {
            let _ = writeln!(
                w,
                "    {:#010x} size {:<6} {:?} {:?} {} {}",
                s.value,
                s.size,
                s.binding,
                s.visibility,
                s.section.unwrap_or("-"),
                with_demangled(s.name)
            );
        }
    }
    if !co.relocations.is_empty() {
        let _ = writeln!(w, "  relocations: {}", co.relocations.len());
        for r in &co.relocations {
            let _ = writeln!(
                w,
                "    {:#010x} {:<24} {} {:+#x}",
                r.offset,
                r.r_type
                    .name()
                    .map_or(format!("type {}", r.r_type.0), str::to_string),
                r.symbol.unwrap_or("-"),
                r.addend
            );
        }
    }
    let _ = writeln!(w);
}

fn opt(v: Option<u64>) -> String {
    v.map_or("-".to_string(), |v| v.to_string())
}

fn text_handles(out: &mut String, h: &HandleMap, kernel: Option<&str>) {
    let _ = writeln!(out, "host kernel handles: {}", h.kernels.len());
    for k in h
        .kernels
        .iter()
        .filter(|k| kernel.is_none_or(|want| kernel_matches(&k.kernel, want)))
    {
        let _ = writeln!(out, "  {}", with_demangled(&k.kernel));
        if let Some(s) = &k.handle {
            let _ = writeln!(
                out,
                "    handle {:#x} in {}",
                s.address,
                s.section.as_deref().unwrap_or("-")
            );
        }
        if let Some(s) = &k.stub {
            let _ = writeln!(out, "    stub   {:#x} {}", s.address, s.name);
        }
        let present: Vec<&str> = h
            .code_objects
            .iter()
            .zip(&k.in_code_object)
            .filter_map(|(c, &yes)| yes.then_some(c.target_id.as_str()))
            .collect();
        let _ = writeln!(out, "    device code in: {}", present.join(", "));
    }
}
