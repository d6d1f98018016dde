//! Instrumented kernels on the virtual GPU: every gfx90a fixture kernel,
//! rewritten with a counting hook before every instruction (and, in a second
//! run, before every basic block), computes bit for bit what the original
//! computes, and its counters add up to the virtual GPU's own per-dispatch
//! counts of the original: in total, per opcode and per instruction.

use std::collections::BTreeMap;

use inlay_codeobj::CodeObject;
use inlay_instrument::rewrite::{rewrite, Hook, Plan};
use inlay_instrument::{analyse, emit};
use inlay_vgpu::{Device, Program, Stats};

fn fixture(version: u32, name: &str) -> Vec<u8> {
    let p = format!(
        "{}/../../fixtures/gfx90a/v{version}/{name}.hsaco",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

/// Deterministic input bytes.
fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

const BUF: usize = 1 << 18;

/// A launch every fixture kernel survives: pointers to 256 KiB of noise
/// each, integers 64 (element counts, sizes, bin counts), floats 1.5.
struct Launch {
    grid: [u32; 3],
    wg: [u32; 3],
    args: Vec<u8>,
    buffers: Vec<u64>,
}

fn launch(dev: &Device, md: &inlay_codeobj::metadata::KernelMetadata, seed: u64) -> Launch {
    let wg = match &md.reqd_workgroup_size {
        Some(r) if r.len() == 3 => [r[0] as u32, r[1] as u32, r[2] as u32],
        _ => [
            md.max_flat_workgroup_size.unwrap_or(256).min(256) as u32,
            1,
            1,
        ],
    };
    let grid = [wg[0] * 3, wg[1] * 2, wg[2]];
    let mut args = vec![0u8; md.kernarg_segment_size.unwrap_or(0) as usize];
    let mut buffers = Vec::new();
    for (k, a) in md.args.iter().enumerate() {
        let at = a.offset as usize..(a.offset + a.size) as usize;
        let bytes: Vec<u8> = match a.value_kind.as_str() {
            "global_buffer" => {
                let b = dev
                    .upload(&noise(BUF, seed + k as u64))
                    .expect("device memory");
                buffers.push(b);
                b.to_le_bytes().to_vec()
            }
            "by_value" => {
                let ty = a.type_name.as_deref().unwrap_or("");
                match a.size {
                    8 if ty.contains("double") => 1.5f64.to_le_bytes().to_vec(),
                    8 => 64u64.to_le_bytes().to_vec(),
                    4 if ty.contains("float") => 1.5f32.to_le_bytes().to_vec(),
                    4 => 64u32.to_le_bytes().to_vec(),
                    n => vec![1; n as usize],
                }
            }
            _ => continue, // hidden arguments: filled by the device
        };
        if let Some(slot) = args.get_mut(at) {
            slot.copy_from_slice(&bytes[..slot.len().min(bytes.len())]);
        }
    }
    Launch {
        grid,
        wg,
        args,
        buffers,
    }
}

/// Runs `kernel` of `program` on fresh inputs; returns every buffer after.
fn run(
    dev: &Device,
    program: &Program,
    kernel: &str,
    md: &inlay_codeobj::metadata::KernelMetadata,
) -> (Vec<Vec<u8>>, Stats) {
    let l = launch(dev, md, 7);
    let stats = dev
        .dispatch(program, kernel, l.grid, l.wg, &l.args)
        .unwrap_or_else(|f| panic!("{kernel}: {f}"));
    let out = l
        .buffers
        .iter()
        .map(|&b| {
            let mut v = vec![0u8; BUF];
            dev.read(b, &mut v).expect("read back");
            dev.free(b).expect("free");
            v
        })
        .collect();
    (out, stats)
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    EveryInstruction,
    EveryBlock,
}

fn check_kernel(version: u32, file: &str, kernel: &str, mode: Mode) {
    let bytes = fixture(version, file);
    let co = CodeObject::parse(&bytes).expect("parse");
    let md = co
        .metadata
        .as_ref()
        .and_then(|m| m.kernels.iter().find(|k| k.name == kernel))
        .expect("metadata")
        .clone();
    let dev = Device::with_threads(2);
    let original = dev.load(&bytes).expect("load");
    let (want, native) = run(&dev, &original, kernel, &md);

    let an = analyse(&co, kernel).expect("analyse");
    let prog = &an.program;
    let counters = dev
        .upload(&vec![0u8; 8 * prog.insts.len().max(1)])
        .expect("counters");
    let sites: Vec<usize> = match mode {
        Mode::EveryInstruction => (0..prog.insts.len()).collect(),
        Mode::EveryBlock => prog.blocks.iter().map(|b| b.insts.start).collect(),
    };
    let plan = Plan {
        counters,
        hooks: sites
            .iter()
            .map(|&i| {
                (
                    i,
                    Hook::Count {
                        offset: 8 * i as u32,
                    },
                )
            })
            .collect(),
    };
    let load_delta = original.image.expect("image");
    let kd = co.kernel(kernel).expect("kernel").descriptor;
    let rw = rewrite(&an, load_delta, &kd, &plan).expect("rewrite");
    let out = emit::code_object(&co, kernel, &rw).expect("emit");
    let instrumented = dev.load(&out).expect("load instrumented");
    // One program for both, as the runtime registers them: calls the
    // rewriter leaves pointing at the original code still land in code.
    let both = Program::merge(dev.memory(), &[&original, &instrumented]).expect("merge");
    let (got, stats) = run(&dev, &both, &emit::instrumented_name(kernel), &md);
    assert!(
        want == got,
        "{file} v{version} {kernel} ({mode:?}): instrumented output differs"
    );

    // Counters -> executions of every original instruction.
    let c = dev
        .download_u64(counters, prog.insts.len())
        .expect("counters");
    let mut executed = vec![0u64; prog.insts.len()];
    for b in &prog.blocks {
        for i in b.insts.clone() {
            executed[i] = match mode {
                Mode::EveryInstruction => c[i],
                Mode::EveryBlock => c[b.insts.start],
            };
        }
    }
    let mut per_offset = BTreeMap::new();
    let mut per_opcode: BTreeMap<&str, u64> = BTreeMap::new();
    for (i, n) in executed.iter().enumerate() {
        if *n > 0 {
            per_offset.insert(prog.insts[i].addr, *n);
            let name = prog.insts[i].inst.opcode().map_or("?", |o| o.name());
            *per_opcode.entry(name).or_default() += n;
        }
    }
    let what = format!("{file} v{version} {kernel} ({mode:?})");
    assert_eq!(
        per_offset,
        native.per_offset(&original),
        "{what}: per instruction"
    );
    assert_eq!(per_opcode, native.per_opcode, "{what}: per opcode");
    assert_eq!(
        executed.iter().sum::<u64>(),
        native.instructions,
        "{what}: total"
    );
    // What the hooks cost, in the virtual GPU's own counts: one atomic per
    // hook executed and the 4-instruction preamble per wave, plus, in
    // kernels with table calls, the address translation before them.
    let hooks_run = match mode {
        Mode::EveryInstruction => native.instructions,
        Mode::EveryBlock => c.iter().sum::<u64>(),
    };
    let overhead = stats.instructions - native.instructions;
    if rw.added == rw.added_by_hooks + 4 {
        assert_eq!(overhead, hooks_run + 4 * native.waves, "{what}: overhead");
    } else {
        assert!(overhead > hooks_run + 4 * native.waves, "{what}: overhead");
    }
}

/// Every kernel of every gfx90a fixture that runs without another code object.
fn kernels(version: u32) -> Vec<(String, String)> {
    let dir = format!(
        "{}/../../fixtures/gfx90a/v{version}",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut out = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("fixtures")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "hsaco"))
        .collect();
    files.sort();
    for p in files {
        let stem = p.file_stem().unwrap().to_string_lossy().to_string();
        if stem.starts_with("devlib") {
            continue; // needs its library loaded beside it (the runtime's tests)
        }
        let bytes = std::fs::read(&p).expect("read");
        let co = CodeObject::parse(&bytes).expect("parse");
        for k in &co.kernels {
            out.push((stem.clone(), k.name.to_string()));
        }
    }
    out
}

#[test]
fn every_instruction_code_object_v5() {
    for (file, kernel) in kernels(5) {
        check_kernel(5, &file, &kernel, Mode::EveryInstruction);
    }
}

#[test]
fn every_block_code_object_v5() {
    for (file, kernel) in kernels(5) {
        check_kernel(5, &file, &kernel, Mode::EveryBlock);
    }
}

#[test]
fn every_instruction_code_object_v4() {
    for (file, kernel) in kernels(4) {
        check_kernel(4, &file, &kernel, Mode::EveryInstruction);
    }
}
