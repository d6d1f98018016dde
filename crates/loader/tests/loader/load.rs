//! Loading fixtures and checking the result against llvm-readelf-19: segment
//! bytes and layout, every relocation site after freeze, every symbol's address.

use crate::common;
use common::*;
use inlay_loader::{CodeObjectId, ErrorKind, Executable, LoadedCodeObject, SymbolKind};
use inlay_vgpu::memory::Memory;
use std::collections::HashMap;

/// Checks the loaded image against readelf's program headers: base aligned as
/// asked, each segment's file bytes at delta + vaddr and zeros after them.
fn check_segments(memory: &Memory, co: &LoadedCodeObject, bytes: &[u8], re: &Readelf) {
    let (start, align) = re.span_start();
    assert_eq!(
        co.load_base % align,
        0,
        "{}: base not {align}-aligned",
        co.name
    );
    assert_eq!(
        co.load_delta,
        co.load_base.wrapping_sub(start),
        "{}",
        co.name
    );
    let end = re.loads.iter().map(|l| l.vaddr + l.memsz).max().unwrap();
    assert_eq!(co.load_size, end - start);
    for l in &re.loads {
        let got = read_mem(memory, co.load_delta + l.vaddr, l.memsz as usize);
        let file = &bytes[l.offset as usize..(l.offset + l.filesz) as usize];
        assert_eq!(
            &got[..l.filesz as usize],
            file,
            "{}: segment at {:#x}",
            co.name,
            l.vaddr
        );
        assert!(
            got[l.filesz as usize..].iter().all(|&b| b == 0),
            "bss not zero"
        );
    }
}

/// The device address of `name` as the other code objects of the executable
/// export it (readelf symbol value + that code object's delta).
fn external(name: &str, others: &[(&LoadedCodeObject, &Readelf)]) -> u64 {
    others
        .iter()
        .find_map(|(co, re)| {
            re.symbols
                .get(name)
                .filter(|s| s.defined && s.bind != "LOCAL")
                .map(|s| co.load_delta + s.value)
        })
        .unwrap_or_else(|| panic!("no code object defines {name}"))
}

/// Every dynamic relocation site holds S + A (ABS64) or B + A (RELATIVE64).
fn check_relocations(
    memory: &Memory,
    co: &LoadedCodeObject,
    re: &Readelf,
    all: &[(&LoadedCodeObject, &Readelf)],
) -> usize {
    for r in &re.relocs {
        let s = match &r.symbol {
            None => 0,
            Some(name) => match re.symbols.get(name) {
                Some(sym) if sym.defined => co.load_delta + sym.value,
                _ => external(name, all),
            },
        };
        let want = match r.r_type.as_str() {
            "R_AMDGPU_ABS64" => s.wrapping_add_signed(r.addend),
            "R_AMDGPU_RELATIVE64" => co.load_delta.wrapping_add_signed(r.addend),
            other => panic!("fixture has {other}; extend the test"),
        };
        let got = read_mem(memory, co.load_delta + r.offset, 8);
        assert_eq!(
            u64::from_le_bytes(got.try_into().unwrap()),
            want,
            "{}: {} at {:#x}",
            co.name,
            r.r_type,
            r.offset
        );
    }
    re.relocs.len()
}

/// Kernel objects, variables and device functions at load base + symbol value.
fn check_symbols(
    exe: &Executable,
    co: &LoadedCodeObject,
    re: &Readelf,
    entry: &serde_json::Value,
    metadata: &HashMap<String, HashMap<String, String>>,
) {
    let names = |k: &str| -> Vec<String> {
        entry[k]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect()
    };
    for k in names("kernels") {
        let id = exe
            .symbol(&k, Some(co.agent))
            .unwrap_or_else(|| panic!("kernel {k}"));
        let kd = &re.symbols[&format!("{k}.kd")];
        match &exe.get(id).unwrap().kind {
            SymbolKind::Kernel(info) => {
                assert_eq!(info.object, co.load_delta + kd.value, "{k}");
                assert_eq!(
                    info.entry,
                    Some(co.load_delta + re.symbols[&k].value),
                    "{k} entry"
                );
                let md = &metadata[&format!("{k}.kd")];
                let num = |key: &str| md[key].parse::<u32>().unwrap();
                assert_eq!(info.kernarg_size, num("kernarg_segment_size"), "{k}");
                assert_eq!(info.kernarg_align, num("kernarg_segment_align"), "{k}");
                assert_eq!(
                    info.group_segment_size,
                    num("group_segment_fixed_size"),
                    "{k}"
                );
                assert_eq!(
                    info.private_segment_size,
                    num("private_segment_fixed_size"),
                    "{k}"
                );
                if let Some(d) = md.get("uses_dynamic_stack") {
                    assert_eq!(info.dynamic_callstack.to_string(), *d, "{k}");
                }
            }
            other => panic!("{k} is {other:?}"),
        }
    }
    for v in names("variables") {
        let id = exe
            .symbol(&v, Some(co.agent))
            .unwrap_or_else(|| panic!("variable {v}"));
        let sym = &re.symbols[&v];
        match &exe.get(id).unwrap().kind {
            SymbolKind::Variable(info) => {
                assert_eq!(info.address, co.load_delta + sym.value, "{v}");
                assert_eq!(info.size, sym.size, "{v}");
                let writable = re
                    .loads
                    .iter()
                    .any(|l| l.writable && sym.value >= l.vaddr && sym.value < l.vaddr + l.memsz);
                assert_eq!(info.is_const, !writable, "{v}");
            }
            other => panic!("{v} is {other:?}"),
        }
    }
    // Every FUNC symbol of readelf that is not a kernel entry, locals included.
    let kernels = names("kernels");
    let mut functions = 0;
    for (name, sym) in &re.symbols {
        if sym.sym_type != "FUNC" || !sym.defined || kernels.contains(name) {
            continue;
        }
        let id = exe
            .symbol(name, Some(co.agent))
            .unwrap_or_else(|| panic!("function {name}"));
        match &exe.get(id).unwrap().kind {
            SymbolKind::Function(f) => {
                assert_eq!(f.address, co.load_delta + sym.value, "{name}");
                assert_eq!(f.size, sym.size, "{name}");
                functions += 1;
            }
            other => panic!("{name} is {other:?}"),
        }
    }
    assert!(functions >= names("functions").len());
}

#[test]
fn every_fixture_loads_with_its_layout_relocations_and_symbols() {
    let mut relocations = 0;
    let mut loaded = 0;
    for entry in hsaco_entries() {
        let path = entry["path"].as_str().unwrap();
        if entry["undefined"].as_array().is_some_and(|u| !u.is_empty()) {
            continue; // needs its library; see the devlib test
        }
        let Some(re) = readelf(&fixtures().join(path)) else {
            return;
        };
        let bytes = fixture(path);
        let (memory, mut exe) = executable();
        let a = agent(entry["target"].as_str().unwrap());
        let id = exe
            .load(&a, &bytes, Some(path))
            .unwrap_or_else(|e| panic!("{e}"));
        let co = exe.code_object(id).unwrap();
        check_segments(&memory, co, &bytes, &re);
        exe.freeze().unwrap_or_else(|e| panic!("{e}"));
        let co = exe.code_object(id).unwrap();
        relocations += check_relocations(&memory, co, &re, &[(co, &re)]);
        let metadata = kernel_metadata(&fixtures().join(path)).unwrap();
        check_symbols(&exe, co, &re, &entry, &metadata);
        loaded += 1;
    }
    assert!(loaded > 40, "only {loaded} fixtures");
    assert!(relocations > 0, "no fixture had a dynamic relocation");
}

#[test]
fn library_and_caller_link_in_both_orders() {
    for target in ["gfx908", "gfx90a", "gfx942"] {
        let lib_path = format!("{target}/v5/devlib_lib.hsaco");
        let caller_path = format!("{target}/v5/devlib_caller.hsaco");
        let (Some(lib_re), Some(caller_re)) = (
            readelf(&fixtures().join(&lib_path)),
            readelf(&fixtures().join(&caller_path)),
        ) else {
            return;
        };
        let lib = fixture(&lib_path);
        let caller = fixture(&caller_path);
        for lib_first in [true, false] {
            let (memory, mut exe) = executable();
            let a = agent(target);
            let order: Vec<(&[u8], &str)> = if lib_first {
                vec![(&lib, &lib_path), (&caller, &caller_path)]
            } else {
                vec![(&caller, &caller_path), (&lib, &lib_path)]
            };
            for (bytes, name) in &order {
                let id = exe.load(&a, bytes, Some(name)).unwrap();
                let re = if *name == lib_path {
                    &lib_re
                } else {
                    &caller_re
                };
                check_segments(&memory, exe.code_object(id).unwrap(), bytes, re);
            }
            exe.freeze().unwrap_or_else(|e| panic!("{e}"));
            let (lib_id, caller_id) = if lib_first { (0, 1) } else { (1, 0) };
            let lib_co = exe.code_object(CodeObjectId(lib_id)).unwrap();
            let caller_co = exe.code_object(CodeObjectId(caller_id)).unwrap();
            let all = [(lib_co, &lib_re), (caller_co, &caller_re)];
            assert_eq!(check_relocations(&memory, caller_co, &caller_re, &all), 1);
            assert_eq!(check_relocations(&memory, lib_co, &lib_re, &all), 1);
            // The GOT slot the caller calls through holds the library function.
            let got = read_mem(
                &memory,
                caller_co.load_delta + caller_re.relocs[0].offset,
                8,
            );
            let f = exe.symbol("inlay_lib_scale", Some(a.key)).unwrap();
            let SymbolKind::Function(info) = &exe.get(f).unwrap().kind else {
                panic!()
            };
            assert_eq!(u64::from_le_bytes(got.try_into().unwrap()), info.address);
            assert_eq!(info.size, lib_re.symbols["inlay_lib_scale"].size);
            assert!(exe.functions().contains(&f));
            assert!(!exe.kernels().contains(&f) && !exe.variables().contains(&f));
            // Host-address queries land in the right code object.
            assert_eq!(
                exe.find_address(info.address),
                Some((lib_co.id, info.address - lib_co.load_base))
            );
            assert_eq!(
                exe.find_address(caller_co.load_base),
                Some((caller_co.id, 0))
            );
            assert_eq!(
                exe.find_address(caller_co.load_base + caller_co.load_size),
                None
            );
        }
    }
}

#[test]
fn an_unresolved_external_names_symbol_and_code_object_and_freeze_can_be_retried() {
    let (_memory, mut exe) = executable();
    let a = agent("gfx90a");
    exe.load(
        &a,
        &fixture("gfx90a/v5/devlib_caller.hsaco"),
        Some("caller.hsaco"),
    )
    .unwrap();
    let e = exe.freeze().unwrap_err();
    assert_eq!(e.kind, ErrorKind::Undefined);
    assert_eq!(e.code_object.as_deref(), Some("caller.hsaco"));
    assert!(e.to_string().contains("inlay_lib_scale"), "{e}");
    assert!(!exe.is_frozen());
    exe.load(&a, &fixture("gfx90a/v5/devlib_lib.hsaco"), None)
        .unwrap();
    exe.freeze().unwrap();
    assert_eq!(exe.freeze().unwrap_err().kind, ErrorKind::Frozen);
    let e = exe
        .load(&a, &fixture("gfx90a/v5/vector_add.hsaco"), None)
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Frozen);
    assert_eq!(
        exe.define_variable(None, "x", 64, false).unwrap_err().kind,
        ErrorKind::Frozen
    );
}

#[test]
fn host_defined_variables_resolve_externals() {
    // The caller's only external, defined by the host instead of the library.
    let (memory, mut exe) = executable();
    let a = agent("gfx90a");
    let id = exe
        .load(&a, &fixture("gfx90a/v5/devlib_caller.hsaco"), None)
        .unwrap();
    let sym = exe
        .define_variable(Some(a.key), "inlay_lib_scale", 0x1234_5678_9abc, false)
        .unwrap();
    let e = exe
        .define_variable(Some(a.key), "inlay_lib_scale", 1, false)
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::AlreadyDefined);
    let e = exe
        .define_variable(Some(a.key), "lib_caller.kd", 1, true)
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::AlreadyDefined);
    exe.freeze().unwrap();
    let co = exe.code_object(id).unwrap();
    let Some(re) = readelf(&fixtures().join("gfx90a/v5/devlib_caller.hsaco")) else {
        return;
    };
    let got = read_mem(&memory, co.load_delta + re.relocs[0].offset, 8);
    assert_eq!(
        u64::from_le_bytes(got.try_into().unwrap()),
        0x1234_5678_9abc
    );
    assert!(exe.variables().contains(&sym));
}

#[test]
fn a_name_defined_twice_for_one_agent_is_refused() {
    let (_memory, mut exe) = executable();
    let a = agent("gfx90a");
    let lib = fixture("gfx90a/v5/devlib_lib.hsaco");
    exe.load(&a, &lib, None).unwrap();
    assert_eq!(
        exe.load(&a, &lib, None).unwrap_err().kind,
        ErrorKind::AlreadyDefined
    );
    // Another agent has its own namespace.
    let mut b = a;
    b.key = 8;
    exe.load(&b, &lib, None).unwrap();
    assert_eq!(exe.code_objects().len(), 2);
}

const V6_USER: &str = r#"
  .amdgcn_target "amdgcn-amd-amdhsa--gfx90a"
  .amdhsa_code_object_version 6
  .text
  .globl k
  .p2align 8
  .type k,@function
k:
  s_endpgm
  .size k, 4
  .type helper,@function
helper:
  s_setpc_b64 s[30:31]
  .size helper, 4
  .rodata
  .p2align 6
  .amdhsa_kernel k
    .amdhsa_next_free_vgpr 1
    .amdhsa_next_free_sgpr 1
    .amdhsa_accum_offset 4
    .amdhsa_group_segment_fixed_size 256
    .amdhsa_private_segment_fixed_size 32
    .amdhsa_kernarg_size 24
  .end_amdhsa_kernel
  .data
  .globl table
  .type table,@object
  .p2align 3
table:
  .quad ext_var + 24
  .quad ext_fn - 8
  .quad helper
  .quad table + 16
  .quad k
  .size table, 40
"#;

const V6_PROVIDER: &str = r#"
  .amdgcn_target "amdgcn-amd-amdhsa--gfx90a"
  .amdhsa_code_object_version 6
  .text
  .globl ext_fn
  .type ext_fn,@function
ext_fn:
  s_setpc_b64 s[30:31]
  .size ext_fn, 4
  .data
  .globl ext_var
  .type ext_var,@object
  .p2align 4
ext_var:
  .quad 1, 2, 3, 4
  .size ext_var, 32
"#;

/// Assembles and links `src` with clang-19 and ld.lld-19 into a shared code object.
fn build_shared(name: &str, src: &str) -> Option<std::path::PathBuf> {
    let (clang, lld) = (tool("clang-19"), tool("ld.lld-19"));
    if !oracle_available("clang-19 and ld.lld-19", clang.is_some() && lld.is_some()) {
        return None;
    }
    let dir = std::env::temp_dir().join(format!("inlay-loader-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (s, o, so) = (
        dir.join("a.s"),
        dir.join("a.o"),
        dir.join(format!("{name}.so")),
    );
    std::fs::write(&s, src).unwrap();
    let run = |cmd: &mut std::process::Command| {
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run(std::process::Command::new(clang?)
        .args(["-c", "--target=amdgcn-amd-amdhsa", "-mcpu=gfx90a", "-o"])
        .arg(&o)
        .arg(&s));
    run(std::process::Command::new(lld?)
        .args(["-shared", "-o"])
        .arg(&so)
        .arg(&o));
    Some(so)
}

#[test]
fn code_object_v6_from_lld_with_signed_addends_links_in_both_orders() {
    let (Some(user), Some(provider)) = (
        build_shared("user", V6_USER),
        build_shared("provider", V6_PROVIDER),
    ) else {
        return;
    };
    let (Some(user_re), Some(prov_re)) = (readelf(&user), readelf(&provider)) else {
        return;
    };
    let (ub, pb) = (
        std::fs::read(&user).unwrap(),
        std::fs::read(&provider).unwrap(),
    );
    for so in [&user, &provider] {
        let _ = std::fs::remove_dir_all(so.parent().unwrap());
    }
    assert!(
        user_re.relocs.iter().any(|r| r.addend < 0),
        "{:?}",
        user_re.relocs
    );
    assert!(user_re
        .relocs
        .iter()
        .any(|r| r.r_type == "R_AMDGPU_RELATIVE64"));
    for user_first in [true, false] {
        let (memory, mut exe) = executable();
        let a = agent("gfx90a:xnack+:sramecc-");
        let (u, p) = if user_first {
            let u = exe.load(&a, &ub, Some("user")).unwrap();
            (u, exe.load(&a, &pb, Some("provider")).unwrap())
        } else {
            let p = exe.load(&a, &pb, Some("provider")).unwrap();
            (exe.load(&a, &ub, Some("user")).unwrap(), p)
        };
        check_segments(&memory, exe.code_object(u).unwrap(), &ub, &user_re);
        exe.freeze().unwrap_or_else(|e| panic!("{e}"));
        let (uc, pc) = (exe.code_object(u).unwrap(), exe.code_object(p).unwrap());
        assert_eq!(uc.code_object_version, 6);
        let all = [(uc, &user_re), (pc, &prov_re)];
        assert_eq!(check_relocations(&memory, uc, &user_re, &all), 5);
        // The local helper is a device function; the kernel has its descriptor's sizes.
        let helper = exe.symbol("helper", Some(a.key)).unwrap();
        let SymbolKind::Function(h) = &exe.get(helper).unwrap().kind else {
            panic!()
        };
        assert_eq!(h.address, uc.load_delta + user_re.symbols["helper"].value);
        assert!(exe.get(helper).unwrap().local);
        let k = exe.symbol("k", None).unwrap();
        let SymbolKind::Kernel(k) = &exe.get(k).unwrap().kind else {
            panic!()
        };
        assert_eq!(k.object, uc.load_delta + user_re.symbols["k.kd"].value);
        assert_eq!(
            (k.kernarg_size, k.group_segment_size, k.private_segment_size),
            (24, 256, 32)
        );
    }
}
