//! Instrumented kernels on the virtual GPU: every gfx90a fixture kernel,
//! rewritten with a counting hook before every instruction (and, in a second
//! run, before every basic block), computes bit for bit what the original
//! computes, and its counters add up to the virtual GPU's own per-dispatch
//! counts of the original: in total, per opcode and per instruction.

mod harness;

use std::collections::BTreeMap;

use harness::{fixture, kernels, launch_geometry, run, waves_of};
use inlay_codeobj::metadata::KernelMetadata;
use inlay_codeobj::CodeObject;
use inlay_instrument::rewrite::{Hook, Plan, Rewritten, Value};
use inlay_instrument::{analyse, counting, emit};
use inlay_vgpu::{Device, Program, Stats};

/// What an instrumented run gives back.
struct Instrumented {
    rw: Rewritten,
    code_object: Vec<u8>,
    both: Program,
    out: Vec<Vec<u8>>,
    stats: Stats,
}

/// Instruments `kernel` with `plan` and runs it on the same inputs.
fn run_instrumented(
    dev: &Device,
    co: &CodeObject<'_>,
    an: &inlay_instrument::Analysis,
    original: &Program,
    md: &KernelMetadata,
    plan: &Plan,
    what: &str,
) -> Instrumented {
    let l = harness::instrument(dev, co, &md.name, an, original, plan)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let (out, stats) = run(dev, &l.both, &emit::instrumented_name(&md.name), md);
    Instrumented {
        rw: l.rw,
        code_object: l.code_object,
        both: l.both,
        out,
        stats,
    }
}

/// llvm-readelf-19 reads the emitted code object without a warning and
/// finds the instrumented kernel's descriptor and function symbols.
fn readelf_accepts(bytes: &[u8], what: &str) {
    let path = std::env::temp_dir().join(format!(
        "inlay-emit-{}-{}.hsaco",
        std::process::id(),
        what.replace(['/', ' '], "_")
    ));
    std::fs::write(&path, bytes).expect("write");
    let out = std::process::Command::new("llvm-readelf-19")
        .args(["-a", "--dyn-syms"])
        .arg(&path)
        .output();
    let _ = std::fs::remove_file(&path);
    let out = match out {
        Ok(o) => o,
        Err(e) => {
            if std::env::var("INLAY_REQUIRE_ORACLES").as_deref() == Ok("1") {
                panic!("llvm-readelf-19 is required (INLAY_REQUIRE_ORACLES=1): {e}");
            }
            return;
        }
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stderr.trim().is_empty(),
        "{what}: {stderr}"
    );
    assert!(
        stdout.contains(".inlay.kd") && stdout.contains("NT_AMDGPU_METADATA"),
        "{what}:\n{stdout}"
    );
}

/// Counters needed at most: one per instruction.
fn sites_len(prog: &inlay_instrument::lift::Program) -> usize {
    prog.insts.len()
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    EveryInstruction,
    EveryBlock,
    /// Every instruction, with registers dead at each hook only.
    DeadRegistersOnly,
    /// Every block, with every branch in the long form (a jump through
    /// SGPRs, SCC saved and restored), as far targets need.
    LongBranches,
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
        .upload(&vec![0u8; 8 * sites_len(prog).max(1)])
        .expect("counters");
    // Per block: hooks on the blocks the counting plan measures; the
    // others' counts follow from flow conservation and the wave count.
    let blocks = counting::plan(prog);
    let sites: Vec<usize> = match mode {
        Mode::EveryInstruction | Mode::DeadRegistersOnly => (0..prog.insts.len()).collect(),
        Mode::EveryBlock | Mode::LongBranches => blocks
            .measured
            .iter()
            .map(|&b| prog.blocks[b].insts.start)
            .collect(),
    };
    let plan = Plan {
        counters,
        hooks: sites
            .iter()
            .enumerate()
            .map(|(n, &i)| {
                let offset = 8 * n as u32;
                (i, Hook::Count { offset })
            })
            .collect(),
        dead_registers_only: mode == Mode::DeadRegistersOnly,
        all_branches_long: mode == Mode::LongBranches,
        ..Plan::default()
    };
    let what = format!("{file} v{version} {kernel} ({mode:?})");
    let Instrumented {
        rw,
        code_object,
        both,
        out: got,
        stats,
    } = run_instrumented(&dev, &co, &an, &original, &md, &plan, &what);
    if mode == Mode::EveryBlock {
        readelf_accepts(&code_object, &what);
    }
    assert!(
        want == got,
        "{file} v{version} {kernel} ({mode:?}): instrumented output differs"
    );

    // Counters -> executions of every original instruction.
    let c = dev.download_u64(counters, sites.len()).expect("counters");
    let waves = waves_of(&launch_geometry(&md));
    assert_eq!(
        waves, native.waves,
        "{file} {kernel}: waves from the geometry"
    );
    let mut executed = vec![0u64; prog.insts.len()];
    for (k, b) in prog.blocks.iter().enumerate() {
        for i in b.insts.clone() {
            executed[i] = match mode {
                Mode::EveryInstruction | Mode::DeadRegistersOnly => c[i],
                Mode::EveryBlock | Mode::LongBranches => blocks.forms[k].eval(&c, waves),
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
    // The instrumented kernel runs each original instruction's copy exactly
    // as often as the original runs it, and each hook at least once per
    // execution of its site.
    let k = both
        .kernel(&emit::instrumented_name(kernel))
        .expect("instrumented kernel");
    let blob = both.insts[k.entry as usize].addr;
    for (i, ins) in prog.insts.iter().enumerate() {
        let copy = stats
            .per_pc
            .get(&(blob + rw.new_offset[i]))
            .copied()
            .unwrap_or(0);
        let want = per_offset.get(&ins.addr).copied().unwrap_or(0);
        assert_eq!(
            copy, want,
            "{what}: copy of the instruction at {:#x}",
            ins.addr
        );
    }
    let hooks_run = match mode {
        Mode::EveryInstruction | Mode::DeadRegistersOnly => native.instructions,
        Mode::EveryBlock | Mode::LongBranches => c.iter().sum::<u64>(),
    };
    assert!(
        stats.instructions - native.instructions >= hooks_run,
        "{what}: overhead"
    );
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

#[test]
fn every_instruction_on_dead_registers_only() {
    for (file, kernel) in kernels(5) {
        check_kernel(5, &file, &kernel, Mode::DeadRegistersOnly);
    }
}

#[test]
fn every_block_with_long_branches() {
    for (file, kernel) in kernels(5) {
        check_kernel(5, &file, &kernel, Mode::LongBranches);
    }
}

/// Counting threads: a lane-counting hook at the start of every region of
/// constant EXEC (blocks, split after EXEC writes and calls) gives, for
/// every instruction, the lanes enabled when it ran, summed over waves:
/// what the virtual GPU counts itself as thread instructions.
fn check_lanes(version: u32, file: &str, kernel: &str) {
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
    let starts = counting::lane_region_starts(prog);
    let counters = dev
        .upload(&vec![0u8; 8 * starts.len().max(1)])
        .expect("counters");
    let plan = Plan {
        counters,
        hooks: starts
            .iter()
            .enumerate()
            .map(|(n, &i)| {
                (
                    i,
                    Hook::CountLanes {
                        offset: 8 * n as u32,
                    },
                )
            })
            .collect(),
        dead_registers_only: false,
        all_branches_long: false,
        ..Plan::default()
    };
    let base = original.image.expect("image");
    let got = run_instrumented(&dev, &co, &an, &original, &md, &plan, "lanes").out;
    let what = format!("{file} v{version} {kernel} (lanes)");
    assert!(want == got, "{what}: instrumented output differs");
    let c = dev.download_u64(counters, starts.len()).expect("counters");
    let mut lanes = BTreeMap::new();
    for (k, &s) in starts.iter().enumerate() {
        let end = prog.blocks[prog.insts[s].block].insts.end;
        let end = starts
            .get(k + 1)
            .copied()
            .filter(|&e| e <= end)
            .unwrap_or(end);
        for i in s..end {
            if c[k] > 0 {
                lanes.insert(prog.insts[i].addr, c[k]);
            }
        }
    }
    let native_lanes: BTreeMap<u64, u64> = native
        .per_pc_lanes
        .iter()
        .filter(|(_, &n)| n > 0)
        .map(|(&a, &n)| (a - base, n))
        .collect();
    assert_eq!(lanes, native_lanes, "{what}: lanes per instruction");
}

#[test]
fn thread_counts_per_region_match_the_virtual_gpu() {
    for (file, kernel) in kernels(5) {
        check_lanes(5, &file, &kernel);
    }
}

/// Hooks with arguments: before every instruction, add the constant 3; at
/// the kernel's entry, add the value of the SGPR holding the workgroup's x
/// id. The first counters must be 3 times the virtual GPU's counts; the
/// entry counter the sum over waves of their workgroup's x id, computed
/// here from the launch geometry. Both with reserved registers and with
/// registers dead at each hook only (which must not take the SGPR read).
fn check_arguments(file: &str, kernel: &str, dead_only: bool) {
    let bytes = fixture(5, file);
    let co = CodeObject::parse(&bytes).expect("parse");
    let md = co
        .metadata
        .as_ref()
        .and_then(|m| m.kernels.iter().find(|k| k.name == kernel))
        .expect("metadata")
        .clone();
    let k = co.kernel(kernel).expect("kernel");
    let rsrc2 = &k.decoded.rsrc2;
    if !rsrc2.enable_sgpr_workgroup_id_x {
        return;
    }
    let wg_id_x = rsrc2.user_sgpr_count as u16;
    let dev = Device::with_threads(2);
    let original = dev.load(&bytes).expect("load");
    let (want, native) = run(&dev, &original, kernel, &md);
    let an = analyse(&co, kernel).expect("analyse");
    let n = an.program.insts.len();
    let counters = dev.upload(&vec![0u8; 8 * (n + 1)]).expect("counters");
    let mut hooks: Vec<(usize, Hook)> = (0..n)
        .map(|i| {
            let offset = 8 * i as u32;
            (
                i,
                Hook::Add {
                    offset,
                    value: Value::Const(3),
                },
            )
        })
        .collect();
    hooks.push((
        0,
        Hook::Add {
            offset: 8 * n as u32,
            value: Value::Sgpr(wg_id_x),
        },
    ));
    let plan = Plan {
        counters,
        hooks,
        dead_registers_only: dead_only,
        all_branches_long: false,
        ..Plan::default()
    };
    let got = run_instrumented(&dev, &co, &an, &original, &md, &plan, "arguments").out;
    let what = format!("{file} {kernel} (arguments, dead only: {dead_only})");
    assert!(want == got, "{what}: instrumented output differs");
    let c = dev.download_u64(counters, n + 1).expect("counters");
    let native_per_offset = native.per_offset(&original);
    for (i, ins) in an.program.insts.iter().enumerate() {
        let times = native_per_offset.get(&ins.addr).copied().unwrap_or(0);
        assert_eq!(c[i], 3 * times, "{what}: instruction at {:#x}", ins.addr);
    }
    let (grid, wg) = launch_geometry(&md);
    let mut want_ids = 0u64;
    for z in 0..grid[2].div_ceil(wg[2]) {
        for y in 0..grid[1].div_ceil(wg[1]) {
            for x in 0..grid[0].div_ceil(wg[0]) {
                let items: u64 = [(x, 0), (y, 1), (z, 2)]
                    .iter()
                    .map(|&(g, d)| u64::from(wg[d].min(grid[d] - g * wg[d])))
                    .product();
                want_ids += u64::from(x) * items.div_ceil(64);
            }
        }
    }
    assert_eq!(c[n], want_ids, "{what}: sum of workgroup x ids over waves");
}

#[test]
fn hooks_add_constants_and_register_values() {
    for (file, kernel) in kernels(5) {
        check_arguments(&file, &kernel, false);
        check_arguments(&file, &kernel, true);
    }
}
