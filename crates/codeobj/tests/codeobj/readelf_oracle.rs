//! Oracle tests: our reader against llvm-readelf-19 (JSON output) and
//! llvm-objdump-19 (kernel descriptor directives) on every code object we can get.

use crate::reader_support as support;

use std::collections::{HashMap, HashSet};

use inlay_codeobj::symbols::SymbolTable;
use inlay_codeobj::target::{Family, FeatureState};
use inlay_codeobj::CodeObject;
use serde_json::Value;

fn readelf_json(path: &std::path::Path, args: &[&str]) -> Option<Value> {
    let readelf = support::tool("llvm-readelf-19")?;
    let mut all = vec!["--elf-output-style=JSON"];
    all.extend_from_slice(args);
    let out = support::run(&readelf, &all, path);
    let v: Value = serde_json::from_str(&out).unwrap();
    Some(v[0].clone())
}

/// Code objects written by our writer with edits: they must read back as LLVM reads them too.
fn edited() -> Vec<(String, Vec<u8>)> {
    use inlay_codeobj::symbols::{Binding, Visibility, STT_FUNC};
    use inlay_codeobj::write::{Builder, NewSymbol};
    let mut out = Vec::new();
    for link in [false, true] {
        let Some(bytes) = support::build(support::SAMPLE, "gfx90a", 5, link) else {
            continue;
        };
        let co = CodeObject::parse(&bytes).unwrap();
        let mut text = co.section_data(co.section(".text").unwrap()).to_vec();
        text.resize(text.len() + 0x1004, 0);
        let mut md = co.metadata.clone().unwrap();
        md.unknown
            .push(("inlay.pad".into(), rmpv::Value::from("p".repeat(3000))));
        let mut b = Builder::new(&co);
        b.set_section_data(".text", text).unwrap();
        b.set_metadata(md).unwrap();
        for (name, binding) in [
            ("new_local", Binding::Local),
            ("new_global", Binding::Global),
        ] {
            let s = NewSymbol {
                name: name.into(),
                section: ".text".into(),
                offset: 0x10,
                size: 4,
                elf_type: STT_FUNC,
                binding,
                visibility: Visibility::Default,
            };
            b.add_symbol(s).unwrap();
        }
        out.push((format!("edited-{link}"), b.write().unwrap()));
    }
    out
}

#[test]
fn header_symbols_and_relocations_match_llvm_readelf() {
    for (name, bytes) in support::corpus().into_iter().chain(edited()) {
        let co = CodeObject::parse(&bytes).unwrap();
        let path = support::temp_file("oracle-input", &bytes);
        let Some(j) = readelf_json(
            &path,
            &["--file-header", "--symbols", "--dyn-symbols", "--relocs"],
        ) else {
            return;
        };

        // e_flags: LLVM names the machine and the feature states.
        let flag_names: HashSet<String> = j["ElfHeader"]["Flags"]["Flags"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["Name"].as_str().unwrap().to_string())
            .collect();
        let mach = format!(
            "EF_AMDGPU_MACH_AMDGCN_{}",
            co.target.processor.name().to_uppercase().replace('-', "_")
        );
        assert!(
            flag_names.contains(&mach),
            "{name}: {mach} not in {flag_names:?}"
        );
        for (feature, state) in [("XNACK", co.target.xnack), ("SRAMECC", co.target.sramecc)] {
            let expected = match state {
                FeatureState::Unsupported => format!("EF_AMDGPU_FEATURE_{feature}_UNSUPPORTED_V4"),
                FeatureState::Any => format!("EF_AMDGPU_FEATURE_{feature}_ANY_V4"),
                FeatureState::Off => format!("EF_AMDGPU_FEATURE_{feature}_OFF_V4"),
                FeatureState::On => format!("EF_AMDGPU_FEATURE_{feature}_ON_V4"),
            };
            // LLVM omits the "unsupported" (all-zero) flag name.
            if state != FeatureState::Unsupported {
                assert!(
                    flag_names.contains(&expected),
                    "{name}: {expected} not in {flag_names:?}"
                );
            }
        }
        if co.target.generic_version > 0 {
            let v = format!("EF_AMDGPU_GENERIC_VERSION_V{}", co.target.generic_version);
            assert!(flag_names.contains(&v), "{name}: {v} not in {flag_names:?}");
        } else {
            assert!(
                !flag_names
                    .iter()
                    .any(|f| f.starts_with("EF_AMDGPU_GENERIC_VERSION")),
                "{name}"
            );
        }
        assert_eq!(
            j["ElfHeader"]["Ident"]["ABIVersion"].as_u64(),
            Some(u64::from(co.header.abi_version))
        );

        // Symbols of both tables, field by field.
        for (key, table) in [
            ("Symbols", SymbolTable::Symtab),
            ("DynamicSymbols", SymbolTable::Dynsym),
        ] {
            let theirs: Vec<&Value> = j[key]
                .as_array()
                .map(|a| a.iter().skip(1).map(|s| &s["Symbol"]).collect())
                .unwrap_or_default();
            let ours: Vec<_> = co.symbols.in_table(table).iter().collect();
            assert_eq!(ours.len(), theirs.len(), "{name}: {key} count");
            for (o, t) in ours.iter().zip(theirs) {
                let what = format!("{name}: {key} {}", o.name);
                // readelf names section symbols after their section.
                let our_name = if o.elf_type == inlay_codeobj::symbols::STT_SECTION {
                    o.section.unwrap_or("")
                } else {
                    o.name
                };
                assert_eq!(Some(our_name), t["Name"]["Name"].as_str(), "{what}");
                assert_eq!(Some(o.value), t["Value"].as_u64(), "{what}");
                assert_eq!(Some(o.size), t["Size"].as_u64(), "{what}");
                assert_eq!(
                    Some(u64::from(o.elf_type)),
                    t["Type"]["Value"].as_u64(),
                    "{what}"
                );
                assert_eq!(
                    Some(u64::from(o.binding.raw())),
                    t["Binding"]["Value"].as_u64(),
                    "{what}"
                );
                assert_eq!(
                    Some(u64::from(o.visibility.raw())),
                    t["Other"]["Value"].as_u64().map(|v| v & 3),
                    "{what}"
                );
                assert_eq!(
                    Some(u64::from(o.shndx)),
                    t["Section"]["Value"].as_u64(),
                    "{what}"
                );
                if let Some(sec) = o.section {
                    assert_eq!(Some(sec), t["Section"]["Name"].as_str(), "{what}");
                }
            }
        }

        // Relocations, in order.
        let theirs: Vec<&Value> = j["Relocations"]
            .as_array()
            .map(|secs| {
                secs.iter()
                    .flat_map(|s| {
                        s["Relocs"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|r| &r["Relocation"])
                    })
                    .collect()
            })
            .unwrap_or_default();
        assert_eq!(
            co.relocations.len(),
            theirs.len(),
            "{name}: relocation count"
        );
        for (o, t) in co.relocations.iter().zip(theirs) {
            let what = format!("{name}: relocation at {:#x}", o.offset);
            assert_eq!(Some(o.offset), t["Offset"].as_u64(), "{what}");
            assert_eq!(o.r_type.name(), t["Type"]["Name"].as_str(), "{what}");
            assert_eq!(
                Some(u64::from(o.r_type.0)),
                t["Type"]["Value"].as_u64(),
                "{what}"
            );
            // readelf prints "-" for relocations without a symbol (e.g. R_AMDGPU_RELATIVE64).
            let sym = t["Symbol"]["Name"]
                .as_str()
                .filter(|s| !s.is_empty() && *s != "-");
            assert_eq!(o.symbol.filter(|s| !s.is_empty()), sym, "{what}");
            assert_eq!(Some(o.addend), t["Addend"].as_i64(), "{what}");
        }
    }
}

/// `key: value` pairs of LLVM's YAML rendering of the metadata, per document line.
fn yaml_pairs(yaml: &str) -> HashMap<String, Vec<String>> {
    let mut pairs: HashMap<String, Vec<String>> = HashMap::new();
    for line in yaml.lines() {
        let line = line.trim_start().trim_start_matches("- ");
        if let Some((k, v)) = line.split_once(':') {
            let v = v.trim().trim_matches('\'').to_string();
            if !v.is_empty() {
                pairs.entry(k.trim().to_string()).or_default().push(v);
            }
        }
    }
    pairs
}

#[test]
fn metadata_matches_llvm_readelf_notes() {
    for (name, bytes) in support::corpus().into_iter().chain(edited()) {
        let co = CodeObject::parse(&bytes).unwrap();
        let path = support::temp_file("oracle-notes", &bytes);
        let Some(j) = readelf_json(&path, &["--notes"]) else {
            return;
        };
        let yaml = j["NoteSections"][0]["NoteSection"]["Notes"]
            .as_array()
            .unwrap()
            .iter()
            .find_map(|n| n["AMDGPU Metadata"].as_str())
            .unwrap_or_else(|| panic!("{name}: readelf found no metadata"));
        let pairs = yaml_pairs(yaml);
        let md = co.metadata.as_ref().unwrap();
        assert_eq!(
            pairs.get("amdhsa.target"),
            Some(&vec![md.target.clone().unwrap()]),
            "{name}"
        );
        assert_eq!(
            pairs.get(".name").map(Vec::len).unwrap_or(0),
            md.kernels.len()
                + md.kernels
                    .iter()
                    .flat_map(|k| &k.args)
                    .filter(|a| a.name.is_some())
                    .count(),
            "{name}"
        );
        // Every scalar we decoded appears in LLVM's rendering with the same value, and
        // every key LLVM shows is one we decoded or kept.
        let ours = serde_json::to_value(md).unwrap();
        let mut seen = 0;
        for k in ours["kernels"].as_array().unwrap() {
            for (field, v) in k.as_object().unwrap() {
                let shown = match v {
                    Value::String(s) => s.clone(),
                    Value::Number(n) => n.to_string(),
                    Value::Bool(b) => b.to_string(),
                    _ => continue,
                };
                let key = format!(".{field}");
                let theirs = pairs
                    .get(&key)
                    .unwrap_or_else(|| panic!("{name}: {key} not in readelf output"));
                assert!(
                    theirs.contains(&shown),
                    "{name}: {key} = {shown}, readelf has {theirs:?}"
                );
                seen += 1;
            }
        }
        assert!(
            seen >= 8 * md.kernels.len(),
            "{name}: only {seen} fields compared"
        );
        for key in pairs.keys().filter(|k| k.starts_with('.')) {
            let bare = key.trim_start_matches('.');
            let known = ours["kernels"].as_array().unwrap().iter().any(|k| {
                k.get(bare).is_some_and(|v| !v.is_null())
                    || k["unknown"].get(key).is_some()
                    || k["args"].as_array().unwrap().iter().any(|a| {
                        a.get(bare).is_some_and(|v| !v.is_null()) || a["unknown"].get(key).is_some()
                    })
            });
            assert!(
                known || key == ".args",
                "{name}: readelf shows {key}, we lost it"
            );
        }
        // Re-serializing the typed model gives LLVM's bytes back.
        let note = co.notes.iter().find(|n| n.n_type == 32).unwrap();
        assert_eq!(
            md.to_msgpack(),
            note.desc,
            "{name}: metadata re-serialization differs"
        );
    }
}

/// Kernel descriptor fields against the `.amdhsa_*` directives llvm-objdump prints.
#[test]
fn kernel_descriptors_match_llvm_objdump() {
    let Some(objdump) = support::tool("llvm-objdump-19") else {
        return;
    };
    for (name, bytes) in support::corpus().into_iter().chain(edited()) {
        let co = CodeObject::parse(&bytes).unwrap();
        if co.is_relocatable() {
            continue; // descriptor entry offsets are relocations there; the .hsaco covers the fields
        }
        let path = support::temp_file("oracle-kd", &bytes);
        for k in &co.kernels {
            let out = support::run(
                &objdump,
                &["-D", &format!("--disassemble-symbols={}.kd", k.name)],
                &path,
            );
            // LLVM 19's objdump refuses gfx10+ descriptors that clang-19 itself writes with
            // GRANULATED_WAVEFRONT_SGPR_COUNT set; those are compared by raw bytes only.
            let at = k.descriptor_file_offset as usize;
            assert_eq!(&bytes[at..at + 64], k.descriptor.to_bytes().as_slice());
            if out.contains("error decoding") && co.target.processor.family() >= Family::Gfx10 {
                assert!(
                    out.contains("GRANULATED_WAVEFRONT_SGPR_COUNT"),
                    "{name}: {out}"
                );
                continue;
            }
            let directives: HashMap<&str, i64> = out
                .lines()
                .filter_map(|l| l.trim().strip_prefix(".amdhsa_"))
                .filter_map(|l| l.split_once(' '))
                .filter_map(|(k, v)| Some((k, v.trim().parse().ok()?)))
                .collect();
            let d = &k.decoded;
            let kd = &k.descriptor;
            let b = |x: bool| i64::from(x);
            let mut expected: Vec<(&str, i64)> = vec![
                (
                    "group_segment_fixed_size",
                    kd.group_segment_fixed_size.into(),
                ),
                (
                    "private_segment_fixed_size",
                    kd.private_segment_fixed_size.into(),
                ),
                ("kernarg_size", kd.kernarg_size.into()),
                ("next_free_vgpr", d.vgpr_count.into()),
                ("float_round_mode_32", d.rsrc1.float_round_mode_32.into()),
                (
                    "float_round_mode_16_64",
                    d.rsrc1.float_round_mode_16_64.into(),
                ),
                ("float_denorm_mode_32", d.rsrc1.float_denorm_mode_32.into()),
                (
                    "float_denorm_mode_16_64",
                    d.rsrc1.float_denorm_mode_16_64.into(),
                ),
                (
                    "system_sgpr_private_segment_wavefront_offset",
                    b(d.rsrc2.enable_private_segment),
                ),
                (
                    "system_sgpr_workgroup_id_x",
                    b(d.rsrc2.enable_sgpr_workgroup_id_x),
                ),
                (
                    "system_sgpr_workgroup_id_y",
                    b(d.rsrc2.enable_sgpr_workgroup_id_y),
                ),
                (
                    "system_sgpr_workgroup_id_z",
                    b(d.rsrc2.enable_sgpr_workgroup_id_z),
                ),
                (
                    "system_sgpr_workgroup_info",
                    b(d.rsrc2.enable_sgpr_workgroup_info),
                ),
                (
                    "system_vgpr_workitem_id",
                    d.rsrc2.enable_vgpr_workitem_id.into(),
                ),
                (
                    "exception_fp_ieee_invalid_op",
                    b(d.rsrc2.enable_exception_ieee_754_fp_invalid_operation),
                ),
                (
                    "exception_fp_denorm_src",
                    b(d.rsrc2.enable_exception_fp_denormal_source),
                ),
                (
                    "exception_fp_ieee_div_zero",
                    b(d.rsrc2.enable_exception_ieee_754_fp_division_by_zero),
                ),
                (
                    "exception_fp_ieee_overflow",
                    b(d.rsrc2.enable_exception_ieee_754_fp_overflow),
                ),
                (
                    "exception_fp_ieee_underflow",
                    b(d.rsrc2.enable_exception_ieee_754_fp_underflow),
                ),
                (
                    "exception_fp_ieee_inexact",
                    b(d.rsrc2.enable_exception_ieee_754_fp_inexact),
                ),
                (
                    "exception_int_div_zero",
                    b(d.rsrc2.enable_exception_int_divide_by_zero),
                ),
                (
                    "user_sgpr_dispatch_ptr",
                    b(d.properties.enable_sgpr_dispatch_ptr),
                ),
                ("user_sgpr_queue_ptr", b(d.properties.enable_sgpr_queue_ptr)),
                (
                    "user_sgpr_kernarg_segment_ptr",
                    b(d.properties.enable_sgpr_kernarg_segment_ptr),
                ),
                (
                    "user_sgpr_dispatch_id",
                    b(d.properties.enable_sgpr_dispatch_id),
                ),
                (
                    "user_sgpr_private_segment_size",
                    b(d.properties.enable_sgpr_private_segment_size),
                ),
                ("uses_dynamic_stack", b(d.properties.uses_dynamic_stack)),
            ];
            if let Some(s) = d.sgpr_count {
                expected.push(("next_free_sgpr", s.into()));
            }
            if let Some(a) = d.accum_offset {
                expected.push(("accum_offset", a.into()));
            }
            let family = co.target.processor.family();
            if matches!(family, Family::Gfx90a | Family::Gfx94x) {
                if let inlay_codeobj::descriptor::Rsrc3::Gfx90a { tg_split, .. } = d.rsrc3 {
                    expected.push(("tg_split", b(tg_split)));
                }
            }
            if family < Family::Gfx10 {
                expected.push((
                    "user_sgpr_private_segment_buffer",
                    b(d.properties.enable_sgpr_private_segment_buffer),
                ));
                expected.push((
                    "user_sgpr_flat_scratch_init",
                    b(d.properties.enable_sgpr_flat_scratch_init),
                ));
                expected.push(("dx10_clamp", b(d.rsrc1.enable_dx10_clamp)));
                expected.push(("ieee_mode", b(d.rsrc1.enable_ieee_mode)));
                expected.push(("fp16_overflow", b(d.rsrc1.fp16_ovfl)));
            } else {
                expected.push(("wavefront_size32", b(d.properties.enable_wavefront_size32)));
                expected.push(("workgroup_processor_mode", b(d.rsrc1.wgp_mode)));
                expected.push(("memory_ordered", b(d.rsrc1.mem_ordered)));
                expected.push(("forward_progress", b(d.rsrc1.fwd_progress)));
            }
            // Directives that depend on the code object version may be absent; the core ones may not.
            const REQUIRED: &[&str] = &[
                "group_segment_fixed_size",
                "private_segment_fixed_size",
                "kernarg_size",
                "next_free_vgpr",
                "next_free_sgpr",
                "accum_offset",
                "float_denorm_mode_32",
                "system_sgpr_workgroup_id_x",
                "user_sgpr_kernarg_segment_ptr",
            ];
            let mut compared = 0;
            for (directive, value) in expected {
                match directives.get(directive) {
                    Some(v) => {
                        assert_eq!(*v, value, "{name}: {}: .amdhsa_{directive}\n{out}", k.name);
                        compared += 1;
                    }
                    None => assert!(
                        !REQUIRED.contains(&directive),
                        "{name}: {}: .amdhsa_{directive} missing\n{out}",
                        k.name
                    ),
                }
            }
            assert!(
                compared >= 20,
                "{name}: only {compared} directives compared"
            );
        }
    }
}

/// Every processor clang-19 accepts: our e_flags decoding prints the target
/// string LLVM wrote into the metadata, with each feature setting LLVM can express.
#[test]
fn every_processor_llvm_knows_decodes_like_llvm() {
    use inlay_codeobj::target::{Processor, TargetId};
    let Some(clang) = support::tool("clang-19") else {
        return;
    };
    let dir = support::scratch_dir();
    let src = dir.join("k.cl");
    std::fs::write(&src, "__kernel void k(__global int *p) { p[0] = 1; }").unwrap();
    let mut compiled = 0;
    for p in Processor::all() {
        let mut variants = vec![p.name().to_string()];
        if p.supports_xnack() {
            variants.push(format!("{}:xnack+", p.name()));
        }
        if p.supports_sramecc() {
            variants.push(format!("{}:sramecc-:xnack-", p.name()));
        }
        for cpu in variants {
            let out = dir.join("k.o");
            let cov = if p.is_generic() { "6" } else { "5" };
            let status = std::process::Command::new(&clang)
                .args(["-target", "amdgcn-amd-amdhsa", &format!("-mcpu={cpu}")])
                .args([
                    &format!("-mcode-object-version={cov}"),
                    "-nogpulib",
                    "-O1",
                    "-x",
                    "cl",
                    "-c",
                ])
                .arg(&src)
                .arg("-o")
                .arg(&out)
                .stderr(std::process::Stdio::null())
                .status()
                .unwrap();
            if !status.success() {
                continue; // a processor newer than LLVM 19
            }
            compiled += 1;
            let bytes = std::fs::read(&out).unwrap();
            let co = CodeObject::parse(&bytes).unwrap_or_else(|e| panic!("{cpu}: {e}"));
            let llvm = co.metadata.as_ref().unwrap().target.clone().unwrap();
            assert_eq!(co.target.to_string(), llvm, "{cpu}");
            assert_eq!(co.target.processor, p, "{cpu}");
            let parsed: TargetId = llvm.parse().unwrap();
            assert!(
                parsed.compatible_with(&co.target) && co.target.compatible_with(&parsed),
                "{cpu}"
            );
        }
    }
    assert!(
        compiled >= 60,
        "only {compiled} processor variants compiled with clang-19"
    );
}
