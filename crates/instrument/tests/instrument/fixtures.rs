//! The lifter over every fixture kernel (gfx908, gfx90a, gfx942; v4 and v5;
//! linked and relocatable): structural invariants, and calls checked against
//! what llvm-objdump-19 and llvm-readelf-19 say about the same files.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use inlay_codeobj::CodeObject;
use inlay_instrument::{analyse, Callee, Exit, FuncKind};

fn fixtures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let mut out = Vec::new();
    for t in ["gfx908", "gfx90a", "gfx942"] {
        for v in ["v4", "v5"] {
            let Ok(rd) = std::fs::read_dir(root.join(t).join(v)) else {
                continue;
            };
            for e in rd.flatten() {
                let p = e.path();
                if matches!(p.extension().and_then(|x| x.to_str()), Some("hsaco" | "o")) {
                    out.push(p);
                }
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_fixture_kernel_lifts_with_sound_structure() {
    let files = fixtures();
    assert!(files.len() >= 60, "fixtures missing: {}", files.len());
    let mut kernels = 0;
    let mut calls = 0;
    for path in &files {
        let bytes = std::fs::read(path).unwrap();
        let co = CodeObject::parse(&bytes).unwrap();
        for k in &co.kernels {
            kernels += 1;
            let a = analyse(&co, k.name)
                .unwrap_or_else(|e| panic!("{}: {}: {e}", path.display(), k.name));
            let p = &a.program;
            let ctx = format!("{} {}", path.display(), k.name);
            assert_eq!(p.functions[0].kind, FuncKind::Kernel, "{ctx}");
            // Every instruction in exactly one block, blocks tile each
            // function's instructions in address order, no overlaps.
            let mut covered = vec![0u32; p.insts.len()];
            for (bi, b) in p.blocks.iter().enumerate() {
                assert!(!b.insts.is_empty(), "{ctx}: empty block {bi}");
                for i in b.insts.clone() {
                    covered[i] += 1;
                    assert_eq!(p.insts[i].block, bi, "{ctx}");
                }
                for w in p.insts[b.insts.clone()].windows(2) {
                    assert_eq!(
                        w[0].addr + w[0].inst.len() as u64,
                        w[1].addr,
                        "{ctx}: gap in block"
                    );
                }
            }
            assert!(
                covered.iter().all(|c| *c == 1),
                "{ctx}: instruction not in exactly one block"
            );
            // Each instruction is what the decoder makes of the file's
            // bytes at its address, and its registers what inlay-isa's
            // info says (lifting decodes each distinct encoding once).
            let dec = inlay_isa::Decoder::new(p.target);
            for (i, ins) in p.insts.iter().enumerate() {
                let text = co
                    .sections
                    .iter()
                    .find(|s| {
                        let base = if co.is_relocatable() {
                            s.offset
                        } else {
                            s.addr
                        };
                        s.flags & 0x4 != 0 && ins.addr >= base && ins.addr - base < s.size
                    })
                    .unwrap_or_else(|| panic!("{ctx}: {:#x} in no code section", ins.addr));
                let base = if co.is_relocatable() {
                    text.offset
                } else {
                    text.addr
                };
                let at = (ins.addr - base + text.offset) as usize;
                assert_eq!(
                    Some(ins.inst),
                    dec.decode(&bytes[at..]).ok(),
                    "{ctx}: {:#x}",
                    ins.addr
                );
                assert_eq!(
                    p.used_registers(i),
                    inlay_isa::info(&ins.inst).used_registers(),
                    "{ctx}: {:#x}",
                    ins.addr
                );
            }
            for (fi, f) in p.functions.iter().enumerate() {
                let entry_block = &p.blocks[f.blocks.start];
                assert_eq!(p.insts[entry_block.insts.start].addr, f.entry, "{ctx}");
                let mut addrs = HashSet::new();
                for b in f.blocks.clone() {
                    assert_eq!(p.blocks[b].function, fi);
                    for i in p.blocks[b].insts.clone() {
                        assert!(addrs.insert(p.insts[i].addr), "{ctx}: address twice");
                    }
                }
            }
            // Every branch target is the start of a block, and edges agree.
            for (bi, b) in p.blocks.iter().enumerate() {
                let last = &p.insts[b.insts.end - 1];
                let mnemonic = last.inst.mnemonic();
                if mnemonic.starts_with("s_branch") || mnemonic.starts_with("s_cbranch_") {
                    let imm = last.inst.words()[0] as u16 as i16 as i64;
                    let t = (last.addr as i64 + 4 + imm * 4) as u64;
                    let tb = p.block_at(b.function, t).unwrap_or_else(|| {
                        panic!("{ctx}: branch target {t:#x} is not a block start")
                    });
                    assert!(b.succs.contains(&tb), "{ctx}");
                }
                for s in &b.succs {
                    assert!(p.blocks[*s].preds.contains(&bi), "{ctx}");
                    assert_eq!(p.blocks[*s].function, b.function, "{ctx}");
                }
                match b.exit {
                    Exit::EndProgram => assert!(mnemonic.starts_with("s_endpgm"), "{ctx}"),
                    Exit::Return => assert_eq!(mnemonic, "s_setpc_b64", "{ctx}"),
                    Exit::Unresolved => panic!("{ctx}: unresolved jump in compiled code"),
                    _ => {}
                }
            }
            // Kernels end waves; device functions return.
            let ends = p.wave_ends();
            assert!(!ends.is_empty(), "{ctx}: no s_endpgm");
            for e in &ends {
                assert!(p.insts[*e].inst.mnemonic().starts_with("s_endpgm"), "{ctx}");
            }
            for (fi, f) in p.functions.iter().enumerate().skip(1) {
                assert_eq!(f.kind, FuncKind::Device);
                let rets = p.returns(fi);
                assert!(rets
                    .iter()
                    .all(|r| p.insts[*r].inst.mnemonic() == "s_setpc_b64"));
                let rets = rets.len();
                assert!(rets >= 1, "{ctx}: function {fi} never returns");
            }
            // Liveness against an independent oracle (per-register
            // reachability), in kernels without calls.
            if p.calls.is_empty() {
                check_scalar_liveness(&a, &ctx);
            }
            let free = a.free_before(0);
            assert!(
                !free.scc_live && !free.vcc_live && !free.m0_live,
                "{ctx}: {free:?}"
            );
            assert!(free.exec_live, "{ctx}");
            for s in &p.calls {
                calls += 1;
                match &s.callee {
                    Callee::Direct(f) => assert!(*f < p.functions.len()),
                    Callee::Table { callees, .. } => assert!(!callees.is_empty(), "{ctx}"),
                    _ => {}
                }
            }
            // The resource counts agree with the descriptor.
            let r = a.resources;
            assert!(r.vgprs_used <= r.vgprs_allocated, "{ctx}: {r:?}");
            assert!(
                r.agprs_used <= r.agprs_allocated.max(r.vgprs_allocated),
                "{ctx}: {r:?}"
            );
            if let Some(n) = r.sgprs_allocated {
                assert!(r.sgprs_used <= n, "{ctx}: {r:?}");
            }
        }
    }
    assert!(kernels >= 100, "only {kernels} kernels");
    assert!(calls >= 6, "only {calls} call sites");
}

/// For each register, the instructions before which it is live are those
/// from which a read of it is reachable along the instruction-level control
/// flow without passing a write (backward search from the reads). Scalar
/// registers must match exactly; for VGPRs/AGPRs, where this search ignores
/// EXEC (every write kills), it is a lower bound of the EXEC-aware answer.
fn check_scalar_liveness(a: &inlay_instrument::Analysis, ctx: &str) {
    use inlay_instrument::regs::{bit_name, bits_of, NUM_BITS, VGPR_BASE};
    let p = &a.program;
    let n = p.insts.len();
    // Instruction-level predecessors.
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
    for b in &p.blocks {
        for (k, pr) in preds[b.insts.start + 1..b.insts.end].iter_mut().enumerate() {
            pr.push(b.insts.start + k);
        }
        for s in &b.succs {
            preds[p.blocks[*s].insts.start].push(b.insts.end - 1);
        }
    }
    let (mut reads, mut kills) = (vec![Vec::new(); n], vec![Vec::new(); n]);
    for (i, ins) in p.insts.iter().enumerate() {
        for u in inlay_isa::info(&ins.inst).used_registers() {
            let Some((b, len)) = bits_of(&u.register) else {
                continue;
            };
            for bit in b..b + len {
                if u.access.reads() {
                    reads[i].push(bit);
                }
                if u.access == inlay_isa::Access::Write {
                    kills[i].push(bit);
                }
            }
        }
    }
    for bit in 0u16..NUM_BITS {
        let mut live = vec![false; n];
        let mut stack: Vec<usize> = (0..n).filter(|i| reads[*i].contains(&bit)).collect();
        for i in &stack {
            live[*i] = true;
        }
        while let Some(i) = stack.pop() {
            for &q in &preds[i] {
                // live before q if live after q and q does not write it
                if !live[q] && !kills[q].contains(&bit) {
                    live[q] = true;
                    stack.push(q);
                }
            }
        }
        for (i, want) in live.iter().enumerate() {
            let l = a.live_before(i);
            let what = format!("{ctx}: {} before {:#x}", bit_name(bit), p.insts[i].addr);
            if bit < VGPR_BASE {
                assert_eq!(l.active.contains(bit), *want, "{what}");
            } else if *want {
                assert!(l.any().contains(bit), "{what}");
            }
        }
    }
}

/// Runs an LLVM tool; None (a skip) if it is missing and not required.
fn tool(name: &str, args: &[&str]) -> Option<String> {
    match Command::new(name).args(args).output() {
        Ok(o) if o.status.success() => Some(String::from_utf8_lossy(&o.stdout).into_owned()),
        Ok(o) => panic!("{name} failed: {}", String::from_utf8_lossy(&o.stderr)),
        Err(e) => {
            if std::env::var("INLAY_REQUIRE_ORACLES").as_deref() == Ok("1") {
                panic!("{name} is required: {e}");
            }
            eprintln!("note: skipping, {name} not found");
            None
        }
    }
}

/// Calls in the linked device_call / devlib_caller fixtures resolve to the
/// functions llvm-readelf names: the callee of call_direct is the symbol at
/// the address llvm-objdump prints after the s_getpc/s_add/s_addc sequence,
/// the table of call_indirect holds exactly the function symbols its
/// relocations point at, and devlib_caller calls the undefined symbol of
/// its only ABS64 relocation.
#[test]
fn calls_match_llvm_tools() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    for t in ["gfx908", "gfx90a", "gfx942"] {
        let path = root.join(t).join("v5/device_call.hsaco");
        let p = path.to_str().unwrap();
        let Some(syms) = tool("llvm-readelf-19", &["-sW", p]) else {
            return;
        };
        let Some(rel) = tool("llvm-readelf-19", &["-rW", p]) else {
            return;
        };
        // Function symbols by address.
        let mut funcs: HashMap<u64, String> = HashMap::new();
        for l in syms.lines() {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() == 8 && f[3] == "FUNC" {
                if let Ok(a) = u64::from_str_radix(f[1], 16) {
                    funcs.insert(a, f[7].to_string());
                }
            }
        }
        // RELATIVE64 addends: the table entries.
        let mut table: Vec<String> = rel
            .lines()
            .filter(|l| l.contains("R_AMDGPU_RELATIVE64"))
            .filter_map(|l| l.split_whitespace().last())
            .filter_map(|a| u64::from_str_radix(a, 16).ok())
            .filter_map(|a| funcs.get(&a).cloned())
            .collect();
        table.sort();
        assert_eq!(table.len(), 3, "{p}");

        let bytes = std::fs::read(&path).unwrap();
        let co = CodeObject::parse(&bytes).unwrap();

        // call_direct: objdump's text gives the add literals; compute the target.
        let Some(dis) = tool(
            "llvm-objdump-19",
            &["-d", "--disassemble-symbols=call_direct", p],
        ) else {
            return;
        };
        let direct = oracle_direct_target(&dis).expect("getpc/add/addc/swappc in call_direct");
        let a = analyse(&co, "call_direct").unwrap();
        assert_eq!(a.program.calls.len(), 1, "{p}");
        let Callee::Direct(f) = a.program.calls[0].callee else {
            panic!("{p}: call_direct: {:?}", a.program.calls[0].callee);
        };
        assert_eq!(a.program.functions[f].entry, direct, "{p}");
        assert_eq!(
            a.program.functions[f].name.as_deref(),
            funcs.get(&direct).map(|s| s.as_str())
        );

        let a = analyse(&co, "call_indirect").unwrap();
        assert_eq!(a.program.calls.len(), 1, "{p}");
        let Callee::Table {
            callees,
            unresolved,
            ..
        } = &a.program.calls[0].callee
        else {
            panic!("{p}: call_indirect: {:?}", a.program.calls[0].callee);
        };
        assert_eq!(*unresolved, 0);
        let mut names: Vec<String> = callees
            .iter()
            .map(|f| a.program.functions[*f].name.clone().unwrap_or_default())
            .collect();
        names.sort();
        assert_eq!(names, table, "{p}");

        let path = root.join(t).join("v5/devlib_caller.hsaco");
        let p = path.to_str().unwrap();
        let Some(rel) = tool("llvm-readelf-19", &["-rW", p]) else {
            return;
        };
        let ext: Vec<&str> = rel
            .lines()
            .filter(|l| l.contains("R_AMDGPU_ABS64"))
            .filter_map(|l| l.split_whitespace().nth(4))
            .collect();
        assert_eq!(ext.len(), 1, "{p}");
        let bytes = std::fs::read(&path).unwrap();
        let co = CodeObject::parse(&bytes).unwrap();
        let a = analyse(&co, "lib_caller").unwrap();
        assert_eq!(a.program.calls.len(), 1);
        assert_eq!(
            a.program.calls[0].callee,
            Callee::External(ext[0].to_string()),
            "{p}"
        );
    }
}

/// From objdump text: the address after `s_getpc_b64`, plus the 64-bit
/// constant of the following `s_add_u32`/`s_addc_u32` pair.
fn oracle_direct_target(dis: &str) -> Option<u64> {
    let mut pc = None;
    let mut lo = None;
    for l in dis.lines() {
        let Some((text, comment)) = l.split_once("//") else {
            continue;
        };
        let text = text.trim();
        let at = comment
            .split(':')
            .next()
            .and_then(|h| u64::from_str_radix(h.trim(), 16).ok());
        let lit = |t: &str| {
            let x = t.rsplit(", ").next()?.trim();
            if let Some(h) = x.strip_prefix("0x") {
                u32::from_str_radix(h, 16).ok()
            } else {
                x.parse::<i32>().ok().map(|v| v as u32)
            }
        };
        if text.starts_with("s_getpc_b64") {
            pc = at.map(|a| a + 4);
        } else if text.starts_with("s_add_u32") && pc.is_some() {
            lo = lit(text);
        } else if text.starts_with("s_addc_u32") {
            if let (Some(p), Some(lo)) = (pc, lo) {
                let hi = lit(text)?;
                return Some(p.wrapping_add(((hi as u64) << 32) | lo as u64));
            }
        }
    }
    None
}

/// Random words in place of a kernel's code: lifting and liveness return a
/// result or an error, never panic, whatever the bytes.
#[test]
fn random_code_never_panics() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let original = std::fs::read(root.join("gfx90a/v5/device_call.hsaco")).unwrap();
    let (text_off, text_len, kernels) = {
        let co = CodeObject::parse(&original).unwrap();
        let t = co.section(".text").unwrap();
        let names: Vec<String> = co.kernels.iter().map(|k| k.name.to_string()).collect();
        (t.offset as usize, t.size as usize, names)
    };
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let (mut ok, mut err) = (0, 0);
    for round in 0..300 {
        let mut bytes = original.clone();
        // Mostly branches, calls, setpc, endpgm and ordinary words, so that
        // control flow goes everywhere.
        for w in (text_off..text_off + text_len).step_by(4) {
            let r = next();
            let word: u32 = match r % 8 {
                0 => 0xBF82_0000 | (r >> 8) as u32 & 0xFFFF, // s_branch
                1 => 0xBF84_0000 | (r >> 8) as u32 & 0xFFFF, // s_cbranch_scc0
                2 => 0xBE9E_1E00 | (r >> 8) as u32 & 0x7E,   // s_swappc_b64
                3 => 0xBE80_1D00 | (r >> 8) as u32 & 0x7E,   // s_setpc_b64
                4 if round % 2 == 0 => 0xBF81_0000,          // s_endpgm
                _ => (r >> 16) as u32,
            };
            bytes[w..w + 4].copy_from_slice(&word.to_le_bytes());
        }
        let co = CodeObject::parse(&bytes).unwrap();
        for k in &kernels {
            match analyse(&co, k) {
                Ok(a) => {
                    ok += 1;
                    let _ = a.free_before(a.program.insts.len().saturating_sub(1));
                }
                Err(_) => err += 1,
            }
        }
    }
    eprintln!("random code: {ok} lifted, {err} rejected");
    assert!(ok + err == 600 && err > 0, "ok {ok} err {err}");
}
