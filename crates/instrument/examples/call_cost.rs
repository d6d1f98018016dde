//! What calls to compiled hooks cost at run time, in the virtual GPU's own
//! dynamic instruction counts: every gfx90a v5 fixture kernel runs as it
//! is, then instrumented, and the instrumented dispatch's instructions
//! beyond the original's are divided by the hooks' executions (wave
//! executions of the hooked instructions in the original run).
//!
//!     cargo run --release -p inlay-instrument --example call_cost [FILTER]
//!
//! (FILTER: only kernels whose fixture or name contains it.)
//!
//! Two parts. First, hooks of fixtures/gfx90a/v5/hooks_test.hsaco shaped
//! like the example tools' — `count_instr(1)` before every instruction,
//! `trace_address(address)` before every FLAT/GLOBAL one — called with the
//! engine's saves (registers live at the point and changed by the call),
//! called saving every register the calling convention lets a callee
//! change (`Plan::save_all_clobberable`, what a register-blind
//! instrumenter must do), and inlined (`Placement::Inline`). Second, the
//! example tools' own hook modules (examples/tools/NAME/NAME_hooks.hsaco,
//! built by `make -C examples/tools/NAME NAME_hooks.hsaco`), placed as
//! each tool places them, called and inlined, beside the built-in hook
//! that does the same where there is one (instr_count: `Hook::Count` per
//! wave before scalar instructions, `Hook::CountLanes` before vector ones).

#[path = "../tests/instrument/harness/mod.rs"]
mod harness;

use std::sync::Arc;

use inlay_codeobj::CodeObject;
use inlay_instrument::hooks::{Arg, HookCall, HookModule, Placement, Point};
use inlay_instrument::lift::Program;
use inlay_instrument::rewrite::{has_address, Hook, Plan};
use inlay_instrument::{analyse, emit};
use inlay_isa::{Encoding, RegFile, Register};

/// A hook placed before an instruction: a compiled one (with its
/// arguments and whether once per wave) and the built-in one that does the
/// same, if any.
struct Site {
    hook: &'static str,
    args: Vec<Arg>,
    once: bool,
    builtin: Option<Hook>,
}

/// How the hooks are placed in one measurement.
#[derive(Clone, Copy, PartialEq)]
enum How {
    Called,
    CalledSavingAll,
    Inlined,
    Builtin,
}

/// Hook executions and the instructions added for each way in `hows`.
fn measure(
    file: &str,
    kernel: &str,
    module: &HookModule,
    site: &dyn Fn(&Program, usize) -> Option<Site>,
    hows: &[How],
) -> Result<(u64, Vec<u64>), String> {
    let bytes = harness::fixture(5, file);
    let co = CodeObject::parse(&bytes).map_err(|e| e.to_string())?;
    let md = co
        .metadata
        .as_ref()
        .and_then(|m| m.kernels.iter().find(|k| k.name == kernel))
        .ok_or("no metadata")?
        .clone();
    let an = analyse(&co, kernel).map_err(|e| e.to_string())?;
    let prog = &an.program;
    let sites: Vec<(usize, Site)> = (0..prog.insts.len())
        .filter_map(|i| site(prog, i).map(|s| (i, s)))
        .collect();
    let (mem, mut dev) = harness::calls::device();
    dev.set_watchdog(1 << 22);
    let original = dev.load(&bytes).map_err(|e| e.to_string())?;
    let (_, stats) = harness::run(&dev, &original, kernel, &md);
    let per = stats.per_offset(&original);
    let executed: u64 = sites
        .iter()
        .map(|(i, _)| per.get(&prog.insts[*i].addr).copied().unwrap_or(0))
        .sum();
    let counters = dev.upload(&[0u8; 8]).map_err(|e| e.to_string())?;
    let private = co
        .kernel(kernel)
        .ok_or("no kernel")?
        .descriptor
        .private_segment_fixed_size;
    let mut added = Vec::new();
    for &how in hows {
        let calls = sites
            .iter()
            .filter(|_| how != How::Builtin)
            .map(|(i, s)| HookCall {
                point: Point::Before(*i),
                module: 0,
                hook: s.hook.into(),
                args: s.args.clone(),
                once_per_wave: s.once,
                placement: if how == How::Inlined {
                    Placement::Inline
                } else {
                    Placement::Call
                },
            })
            .collect();
        let hooks = sites
            .iter()
            .filter(|_| how == How::Builtin)
            .filter_map(|(i, s)| Some((*i, s.builtin?)))
            .collect();
        let plan = Plan {
            counters,
            hooks,
            calls,
            modules: vec![module.clone()],
            private_segment_size: Some(private),
            save_all_clobberable: how == How::CalledSavingAll,
            ..Plan::default()
        };
        let loaded = harness::calls::instrument(&mem, &co, kernel, &an, &original, &plan)
            .map_err(|e| e.to_string())?;
        let l = harness::launch(&dev, &md, 7);
        loaded.prepare(&dev, kernel, l.grid, l.wg);
        let s = dev
            .dispatch(
                &loaded.program,
                &emit::instrumented_name(kernel),
                l.grid,
                l.wg,
                &l.args,
            )
            .map_err(|f| f.to_string())?;
        added.push(s.instructions.saturating_sub(stats.instructions));
    }
    Ok((executed, added))
}

/// Runs `site` over every fixture kernel, one row each and a total.
fn table(
    what: &str,
    module: &HookModule,
    filter: &str,
    site: &dyn Fn(&Program, usize) -> Option<Site>,
    hows: &[How],
) {
    let name = |h: &How| match h {
        How::Called => "called",
        How::CalledSavingAll => "save all",
        How::Inlined => "inlined",
        How::Builtin => "built-in",
    };
    println!("\n{what}");
    print!("{:>10}", "hooks run");
    for h in hows {
        print!(" {:>10}", name(h));
    }
    println!("  kernel (instructions added per hook run)");
    let mut total = vec![0u64; hows.len()];
    let mut runs = 0u64;
    for (file, kernel) in harness::kernels(5) {
        if !file.contains(filter) && !kernel.contains(filter) {
            continue;
        }
        match measure(&file, &kernel, module, site, hows) {
            Ok((0, _)) => {}
            Ok((n, added)) => {
                runs += n;
                print!("{n:>10}");
                for (t, a) in total.iter_mut().zip(&added) {
                    *t += a;
                    print!(" {:>10.1}", *a as f64 / n as f64);
                }
                println!("  {file} {kernel}");
            }
            Err(e) => println!("{:>10}  {file} {kernel}: {e}", "-"),
        }
    }
    print!("{runs:>10}");
    for t in &total {
        print!(" {:>10.2}", *t as f64 / runs.max(1) as f64);
    }
    println!("  all kernels");
}

/// The example tool's hook module, if built.
fn example_module(name: &str) -> Option<HookModule> {
    let path = format!(
        "{}/../../examples/tools/{name}/{name}_hooks.hsaco",
        env!("CARGO_MANIFEST_DIR")
    );
    match std::fs::read(&path) {
        Ok(b) => HookModule::new(&path, Arc::from(b)).ok(),
        Err(_) => {
            println!(
                "\n{name}: {path} not built (make -C examples/tools/{name} {name}_hooks.hsaco)"
            );
            None
        }
    }
}

/// What instr_count counts once per wave: scalar instructions and the lane
/// accesses (its INLAY_INSTR_SCALAR class).
fn is_scalar(prog: &Program, i: usize) -> bool {
    let inst = &prog.insts[i].inst;
    matches!(
        inst.encoding(),
        Encoding::Sop1
            | Encoding::Sop2
            | Encoding::Sopc
            | Encoding::Sopk
            | Encoding::Sopp
            | Encoding::Smem
    ) || matches!(
        inst.mnemonic(),
        "v_readlane_b32" | "v_readfirstlane_b32" | "v_writelane_b32" | "v_readfirstlane_b32_e32"
    )
}

fn main() {
    let filter = std::env::args().nth(1).unwrap_or_default();
    let test = harness::calls::hook_module();
    let all = [How::Called, How::CalledSavingAll, How::Inlined];
    table(
        "count_instr(1) before every instruction",
        &test,
        &filter,
        &|_, _| {
            Some(Site {
                hook: "count_instr",
                args: vec![Arg::Const32(1)],
                once: false,
                builtin: None,
            })
        },
        &all,
    );
    table(
        "trace_address(address) before every FLAT/GLOBAL instruction",
        &test,
        &filter,
        &|p, i| {
            has_address(&p.insts[i].inst).then(|| Site {
                hook: "trace_address",
                args: vec![Arg::Address],
                once: false,
                builtin: None,
            })
        },
        &all,
    );
    let tools = [How::Called, How::Inlined];
    if let Some(m) = example_module("instr_count") {
        for per_thread in [0, 1] {
            table(
                &format!(
                    "instr_count: count_vector({per_thread}, exec) / count_scalar() once per wave before every instruction; built-in: {} / Count",
                    if per_thread == 1 { "CountLanes" } else { "Count" }
                ),
                &m,
                &filter,
                &|p, i| {
                    Some(if is_scalar(p, i) {
                        Site {
                            hook: "count_scalar",
                            args: Vec::new(),
                            once: true,
                            builtin: Some(Hook::Count { offset: 0 }),
                        }
                    } else {
                        Site {
                            hook: "count_vector",
                            args: vec![
                                Arg::Const32(per_thread),
                                Arg::Value(Register::new(RegFile::Exec, 0, 2)),
                            ],
                            once: true,
                            builtin: Some(if per_thread == 1 {
                                Hook::CountLanes { offset: 0 }
                            } else {
                                Hook::Count { offset: 0 }
                            }),
                        }
                    })
                },
                &[How::Called, How::Inlined, How::Builtin],
            );
        }
    }
    if let Some(m) = example_module("mem_trace") {
        table(
            "mem_trace: record_access(address, site) before every FLAT/GLOBAL instruction",
            &m,
            &filter,
            &|p, i| {
                has_address(&p.insts[i].inst).then(|| Site {
                    hook: "record_access",
                    args: vec![Arg::Address, Arg::Const32(i as u32)],
                    once: false,
                    builtin: None,
                })
            },
            &tools,
        );
    }
    if let Some(m) = example_module("kernarg_access") {
        table(
            "kernarg_access: read_grid_dim() once per wave before the last instruction of the first block",
            &m,
            &filter,
            &|p, i| {
                let first = &p.blocks[p.functions[0].blocks.start];
                (i + 1 == first.insts.end).then(|| Site {
                    hook: "read_grid_dim",
                    args: Vec::new(),
                    once: true,
                    builtin: None,
                })
            },
            &tools,
        );
    }
    if let Some(m) = example_module("reg_write") {
        table(
            "reg_write: flip_bits(&v0, 1) before every VALU instruction writing v0 (by reference: called only)",
            &m,
            &filter,
            &|p, i| {
                let inst = &p.insts[i].inst;
                let v0 = Register::new(RegFile::Vgpr, 0, 1);
                let valu = matches!(
                    inst.encoding(),
                    Encoding::Vop1 | Encoding::Vop2 | Encoding::Vop3
                );
                (valu && inlay_isa::info(inst).writes(&v0)).then(|| Site {
                    hook: "flip_bits",
                    args: vec![Arg::Reference(v0), Arg::Const32(0)],
                    once: false,
                    builtin: None,
                })
            },
            &[How::Called],
        );
    }
}
