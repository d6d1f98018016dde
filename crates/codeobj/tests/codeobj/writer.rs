//! Writer tests: exact round trips, and edits checked by re-parsing and by LLVM's tools.

use crate::reader_support as support;

use inlay_codeobj::metadata::KernelMetadata;
use inlay_codeobj::symbols::{Binding, SymbolKind, SymbolTable, Visibility, STT_FUNC, STT_OBJECT};
use inlay_codeobj::write::{self, Builder, NewSection, NewSymbol};
use inlay_codeobj::CodeObject;

/// llvm-readelf-19 -a must accept the file without errors or warnings.
fn readelf_accepts(bytes: &[u8], label: &str) -> Option<String> {
    let readelf = support::tool("llvm-readelf-19")?;
    let path = support::temp_file(&format!("writer-{label}"), bytes);
    let out = std::process::Command::new(readelf)
        .args(["-a", "-W"])
        .arg(&path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stderr.trim().is_empty(),
        "{label}: llvm-readelf-19 -a complained:\n{stderr}"
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn unedited_write_is_byte_identical_and_reparses_to_the_same_model() {
    for (name, bytes) in support::corpus() {
        let co = CodeObject::parse(&bytes).unwrap();
        let out = write::write(&co).unwrap();
        assert!(out == bytes, "{name}: unedited write differs from input");
        let again = CodeObject::parse(&out).unwrap();
        assert_eq!(
            serde_json::to_value(&again).unwrap(),
            serde_json::to_value(&co).unwrap(),
            "{name}"
        );
    }
}

/// Appends `n` bytes of s_nop to .text, which pushes every later section out by a page.
fn grow_text(co: &CodeObject, n: usize) -> Vec<u8> {
    let mut text = co.section_data(co.section(".text").unwrap()).to_vec();
    text.extend(std::iter::repeat_n(0xbf80_0000u32.to_le_bytes(), n / 4).flatten());
    let mut b = Builder::new(co);
    b.set_section_data(".text", text).unwrap();
    b.write().unwrap()
}

#[test]
fn growing_text_keeps_kernels_pointing_at_their_code() {
    for link in [true, false] {
        let Some(bytes) = support::build(support::SAMPLE, "gfx90a", 5, link) else {
            return;
        };
        let co = CodeObject::parse(&bytes).unwrap();
        for n in [4usize, 0x1000, 0x3004] {
            let out = grow_text(&co, n);
            let new = CodeObject::parse(&out).unwrap_or_else(|e| panic!("grown by {n}: {e}"));
            let old_text = co.section(".text").unwrap();
            let new_text = new.section(".text").unwrap();
            assert_eq!(new_text.size, old_text.size + n as u64);
            assert_eq!(new.kernels.len(), co.kernels.len());
            for k in &new.kernels {
                let old = co.kernel(k.name).unwrap();
                // The descriptor points at the kernel's function, whose code is unchanged.
                assert_eq!(k.entry_symbol, Some(k.name), "grown by {n}: {}", k.name);
                let entry = new.symbols.get(k.name).unwrap();
                assert_eq!(k.entry_address, Some(entry.value));
                let code = |c: &CodeObject, s: &inlay_codeobj::symbols::Symbol| {
                    c.symbol_data(s).unwrap().to_vec()
                };
                assert_eq!(
                    code(&new, entry),
                    code(&co, co.symbols.get(k.name).unwrap())
                );
                assert_eq!(k.descriptor.kernarg_size, old.descriptor.kernarg_size);
            }
            // Every symbol moved with its section; sizes and kinds are the same.
            for (o, s) in co.symbols.all().iter().zip(new.symbols.all()) {
                assert_eq!(
                    (o.name, o.kind, o.size, o.section),
                    (s.name, s.kind, s.size, s.section)
                );
                if let (Some(os), Some(ns)) = (
                    o.section.and_then(|n| co.section(n)),
                    s.section.and_then(|n| new.section(n)),
                ) {
                    assert_eq!(
                        o.value.wrapping_sub(os.addr),
                        s.value.wrapping_sub(ns.addr),
                        "{}",
                        o.name
                    );
                }
            }
            let Some(listing) = readelf_accepts(&out, &format!("grow-{n}-{link}")) else {
                return;
            };
            if link {
                // Sections after .text moved by whole pages: segments stay page-congruent,
                // and the dynamic section still finds .dynsym and .dynstr.
                for seg in &new.segments {
                    if seg.p_type == 1 {
                        assert_eq!(seg.offset % seg.align, seg.vaddr % seg.align);
                    }
                }
                let dynsym = new.section(".dynsym").unwrap().addr;
                assert!(
                    listing.contains(&format!("(SYMTAB)   {dynsym:#x}")),
                    "{listing}"
                );
                let dynamic = new.section(".dynamic").unwrap();
                let seg = new.segments.iter().find(|s| s.p_type == 2).unwrap();
                assert_eq!(
                    (seg.vaddr, seg.offset, seg.filesz),
                    (dynamic.addr, dynamic.offset, dynamic.size)
                );
                // The kernel's first instructions disassemble the same at the new address.
                if let Some(objdump) = support::tool("llvm-objdump-19") {
                    let dis = |b: &[u8], label: &str| {
                        let p = support::temp_file(label, b);
                        let text = support::run(
                            &objdump,
                            &[
                                "-d",
                                "--no-show-raw-insn",
                                "--no-leading-addr",
                                "--disassemble-symbols=scale",
                            ],
                            &p,
                        );
                        text.lines()
                            .skip_while(|l| !l.starts_with("<scale>"))
                            .map(str::trim)
                            .collect::<Vec<_>>()
                            .join("\n")
                    };
                    assert_eq!(dis(&out, "dis-new"), dis(&bytes, "dis-old"));
                }
            }
        }
    }
}

#[test]
fn added_symbols_are_listed_and_relocations_keep_their_targets() {
    for link in [false, true] {
        let Some(bytes) = support::build(support::SAMPLE, "gfx90a", 5, link) else {
            return;
        };
        let co = CodeObject::parse(&bytes).unwrap();
        let mut b = Builder::new(&co);
        b.add_symbol(NewSymbol {
            name: "probe_local".into(),
            section: ".text".into(),
            offset: 8,
            size: 4,
            elf_type: STT_FUNC,
            binding: Binding::Local,
            visibility: Visibility::Default,
        })
        .unwrap();
        b.add_symbol(NewSymbol {
            name: "probe_global".into(),
            section: ".rodata".into(),
            offset: 0,
            size: 0,
            elf_type: STT_OBJECT,
            binding: Binding::Global,
            visibility: Visibility::Hidden,
        })
        .unwrap();
        let out = b.write().unwrap();
        let new = CodeObject::parse(&out).unwrap();
        let text = new.section(".text").unwrap();
        let p = new.symbols.get("probe_local").unwrap();
        assert_eq!(
            (p.kind, p.binding, p.table),
            (
                SymbolKind::DeviceFunction,
                Binding::Local,
                SymbolTable::Symtab
            )
        );
        assert_eq!(p.value, if link { text.addr + 8 } else { 8 });
        let g = new.symbols.get("probe_global").unwrap();
        assert_eq!(
            (g.kind, g.binding, g.visibility),
            (SymbolKind::Variable, Binding::Global, Visibility::Hidden)
        );
        // Relocations still name the same symbols after locals were renumbered.
        let names = |c: &CodeObject| {
            c.relocations
                .iter()
                .map(|r| (r.offset, r.symbol.map(str::to_string), r.addend))
                .collect::<Vec<_>>()
        };
        assert_eq!(names(&new), names(&co));
        for k in &new.kernels {
            assert_eq!(k.entry_symbol, Some(k.name));
        }
        if let Some(listing) = readelf_accepts(&out, &format!("addsym-{link}")) {
            assert!(listing.contains("probe_local") && listing.contains("probe_global"));
        }
    }
}

#[test]
fn changed_metadata_and_descriptor_are_read_back() {
    let Some(bytes) = support::build(support::SAMPLE, "gfx90a", 5, true) else {
        return;
    };
    let co = CodeObject::parse(&bytes).unwrap();
    let mut md = co.metadata.clone().unwrap();
    let k: &mut KernelMetadata = md.kernels.iter_mut().find(|k| k.name == "scale").unwrap();
    k.max_flat_workgroup_size = Some(128);
    k.unknown
        .push((".inlay_instrumented".into(), rmpv::Value::from(true)));
    // A long unknown key grows the note past the sections after it.
    md.unknown
        .push(("inlay.notes".into(), rmpv::Value::from("x".repeat(5000))));
    let mut kd = co.kernel("scale").unwrap().descriptor;
    kd.private_segment_fixed_size = 48;
    let mut b = Builder::new(&co);
    b.set_metadata(md.clone()).unwrap();
    b.set_kernel_descriptor("scale", kd).unwrap();
    b.add_section(NewSection {
        name: ".inlay.info".into(),
        sh_type: 1,
        data: b"hello".to_vec(),
        addralign: 1,
    });
    let out = b.write().unwrap();
    let new = CodeObject::parse(&out).unwrap();
    assert_eq!(new.metadata.as_ref(), Some(&md));
    let scale = new.kernel("scale").unwrap();
    assert_eq!(scale.descriptor.private_segment_fixed_size, 48);
    assert_eq!(scale.entry_symbol, Some("scale"));
    assert_eq!(new.kernel("add").unwrap().entry_symbol, Some("add"));
    let info = new.section(".inlay.info").unwrap();
    assert_eq!(new.section_data(info), b"hello");
    if let Some(listing) = readelf_accepts(&out, "metadata") {
        assert!(listing.contains(".inlay_instrumented: true"), "{listing}");
        assert!(
            listing.contains(".max_flat_workgroup_size: 128"),
            "{listing}"
        );
        assert!(listing.contains(".inlay.info"));
    }
    if let Some(objdump) = support::tool("llvm-objdump-19") {
        let p = support::temp_file("kd-edit", &out);
        let text = support::run(&objdump, &["-D", "--disassemble-symbols=scale.kd"], &p);
        assert!(
            text.contains(".amdhsa_private_segment_fixed_size 48"),
            "{text}"
        );
    }
}

/// ld.lld-19 links a relocatable object we edited into a code object that reads back right.
#[test]
fn edited_relocatable_objects_link_with_lld() {
    let Some(bytes) = support::build(support::SAMPLE, "gfx90a", 5, false) else {
        return;
    };
    let Some(lld) = support::tool("ld.lld-19") else {
        return;
    };
    let co = CodeObject::parse(&bytes).unwrap();
    let mut b = Builder::new(&co);
    let mut text = co.section_data(co.section(".text").unwrap()).to_vec();
    text.extend(std::iter::repeat_n(0xbf80_0000u32.to_le_bytes(), 0x400).flatten());
    b.set_section_data(".text", text).unwrap();
    b.add_symbol(NewSymbol {
        name: "tail_probe".into(),
        section: ".text".into(),
        offset: co.section(".text").unwrap().size,
        size: 0x1000,
        elf_type: STT_FUNC,
        binding: Binding::Global,
        visibility: Visibility::Protected,
    })
    .unwrap();
    let obj = support::temp_file("lld-in.o", &b.write().unwrap());
    let linked = obj.with_extension("hsaco");
    let status = std::process::Command::new(lld)
        .arg("-shared")
        .arg(&obj)
        .arg("-o")
        .arg(&linked)
        .status()
        .unwrap();
    assert!(status.success(), "ld.lld-19 rejected our object");
    let out = std::fs::read(&linked).unwrap();
    let linked = CodeObject::parse(&out).unwrap();
    assert_eq!(linked.kernels.len(), 3);
    for k in &linked.kernels {
        assert_eq!(k.entry_symbol, Some(k.name));
    }
    let probe = linked.symbols.get("tail_probe").unwrap();
    assert_eq!(probe.kind, SymbolKind::DeviceFunction);
    let text = linked.section(".text").unwrap();
    assert_eq!(probe.value + probe.size, text.addr + text.size);
}

/// Code laid out again (here: 256 bytes of s_nop in front): moving the function
/// symbols moves the kernels' entry points with them.
#[test]
fn moved_symbols_carry_kernel_entries() {
    for link in [true, false] {
        let Some(bytes) = support::build(support::SAMPLE, "gfx90a", 5, link) else {
            return;
        };
        let co = CodeObject::parse(&bytes).unwrap();
        let text_sec = co.section(".text").unwrap();
        let mut text: Vec<u8> = std::iter::repeat_n(0xbf80_0000u32.to_le_bytes(), 64)
            .flatten()
            .collect();
        text.extend_from_slice(co.section_data(text_sec));
        let mut b = Builder::new(&co);
        b.set_section_data(".text", text).unwrap();
        let funcs: Vec<_> = co
            .symbols
            .of_kind(SymbolKind::Kernel)
            .chain(co.symbols.of_kind(SymbolKind::DeviceFunction))
            .map(|s| {
                (
                    s.name,
                    s.value - if link { text_sec.addr } else { 0 },
                    s.size,
                )
            })
            .collect();
        for (name, offset, size) in &funcs {
            b.move_symbol(name, offset + 256, *size).unwrap();
        }
        let out = b.write().unwrap();
        let new = CodeObject::parse(&out).unwrap();
        let new_text = new.section(".text").unwrap();
        for (name, offset, _) in &funcs {
            let s = new.symbols.get(name).unwrap();
            assert_eq!(
                s.value - if link { new_text.addr } else { 0 },
                offset + 256,
                "{name}"
            );
        }
        for k in &new.kernels {
            assert_eq!(k.entry_symbol, Some(k.name), "{}", k.name);
        }
        readelf_accepts(&out, &format!("moved-{link}"));
    }
}

/// Whatever the reader accepts, the writer handles without panicking, and an
/// unedited write of it is still byte-identical.
#[test]
fn writer_survives_corrupted_inputs() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for (_, bytes) in support::corpus().iter().take(4) {
        for _ in 0..support::fuzz_iterations() {
            let mut b = bytes.clone();
            for _ in 0..1 + next() % 4 {
                let at = support::corruption_offset(&b, next());
                b[at] = next() as u8;
            }
            let Ok(co) = CodeObject::parse(&b) else {
                continue;
            };
            if let Ok(out) = write::write(&co) {
                assert!(out.len() >= b.len() || out == b[..out.len()]);
            }
            let mut grow = Builder::new(&co);
            if let Some(text) = co.section(".text") {
                let mut t = co.section_data(text).to_vec();
                t.extend_from_slice(&[0; 64]);
                if grow.set_section_data(".text", t).is_ok() {
                    let _ = grow.write();
                }
            }
        }
    }
}

/// The address map says where code and data went when .text grew.
#[test]
fn address_map_reports_moves() {
    let Some(bytes) = support::build(support::SAMPLE, "gfx90a", 5, true) else {
        return;
    };
    let co = CodeObject::parse(&bytes).unwrap();
    let mut text = co.section_data(co.section(".text").unwrap()).to_vec();
    text.resize(text.len() + 0x2000, 0);
    let mut b = Builder::new(&co);
    b.set_section_data(".text", text).unwrap();
    let (out, map) = b.write_with_map().unwrap();
    let new = CodeObject::parse(&out).unwrap();
    for s in co
        .symbols
        .all()
        .iter()
        .filter(|s| s.is_defined() && s.section.is_some())
    {
        assert_eq!(
            map.addr(s.value),
            new.symbols.get(s.name).unwrap().value,
            "{}",
            s.name
        );
    }
    let gvar = co.symbols.get("gvar").unwrap().value;
    assert_eq!(
        map.addr(gvar) - gvar,
        0x2000,
        "data after .text moves by whole pages"
    );
    let add = co.symbols.get("add").unwrap().value;
    assert_eq!(map.addr(add), add, "code before the growth stays");
}

/// A kernel added to a shared object (here a copy of `scale`) is a kernel like
/// the others: descriptor, entry, symbols and metadata, as LLVM's tools see it.
#[test]
fn added_kernel_is_complete() {
    let Some(bytes) = support::build(support::SAMPLE, "gfx90a", 5, true) else {
        return;
    };
    let co = CodeObject::parse(&bytes).unwrap();
    let scale = co.kernel("scale").unwrap();
    let code = co
        .symbol_data(co.symbols.get("scale").unwrap())
        .unwrap()
        .to_vec();
    let metadata = co
        .metadata
        .as_ref()
        .unwrap()
        .kernels
        .iter()
        .find(|k| k.name == "scale")
        .unwrap()
        .clone();
    let mut b = Builder::new(&co);
    b.add_kernel(write::NewKernel {
        name: "scale2".into(),
        code: code.clone(),
        descriptor: scale.descriptor,
        metadata,
    })
    .unwrap();
    assert!(b
        .add_kernel(write::NewKernel {
            name: "scale".into(),
            code: vec![],
            descriptor: scale.descriptor,
            metadata: co.metadata.as_ref().unwrap().kernels[0].clone()
        })
        .is_err());
    let out = b.write().unwrap();
    let new = CodeObject::parse(&out).unwrap();
    assert_eq!(new.kernels.len(), co.kernels.len() + 1);
    let k2 = new.kernel("scale2").unwrap();
    assert_eq!(k2.entry_symbol, Some("scale2"));
    assert_eq!(
        new.symbol_data(new.symbols.get("scale2").unwrap()).unwrap(),
        code.as_slice()
    );
    assert_eq!(k2.decoded, new.kernel("scale").unwrap().decoded);
    for k in &new.kernels {
        assert_eq!(k.entry_symbol, Some(k.name));
    }
    let md = new.metadata.as_ref().unwrap();
    assert_eq!(md.kernels.last().unwrap().symbol, "scale2.kd");
    readelf_accepts(&out, "add-kernel");
    if let Some(objdump) = support::tool("llvm-objdump-19") {
        let p = support::temp_file("add-kernel-dis", &out);
        let body = |sym: &str| {
            let text = support::run(
                &objdump,
                &[
                    "-d",
                    "--no-show-raw-insn",
                    "--no-leading-addr",
                    &format!("--disassemble-symbols={sym}"),
                ],
                &p,
            );
            text.lines()
                .skip_while(|l| !l.starts_with('<'))
                .skip(1)
                .map(|l| l.split("//").next().unwrap().trim().to_string())
                // objdump runs on through the padding up to the next symbol.
                .scan(false, |ended, l| {
                    (!std::mem::replace(ended, l == "s_endpgm")).then_some(l)
                })
                .collect::<Vec<_>>()
        };
        let (a, b2) = (body("scale"), body("scale2"));
        assert!(a.len() > 5);
        assert_eq!(a, b2);
        let kd = |sym: &str| {
            support::run(
                &objdump,
                &["-D", &format!("--disassemble-symbols={sym}")],
                &p,
            )
        };
        let directives = |t: String| {
            t.lines()
                .filter(|l| l.trim().starts_with(".amdhsa_") && !l.contains("amdhsa_kernel"))
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        assert_eq!(directives(kd("scale.kd")), directives(kd("scale2.kd")));
    }
}
