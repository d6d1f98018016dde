//! What calls to compiled hooks cost at run time, in the virtual GPU's own
//! dynamic instruction counts. Every gfx90a v5 fixture kernel runs as it
//! is, then with a call before every instruction to `count_instr(1)`
//! (shaped like the instr_count example's vector hook) and with a call
//! before every FLAT/GLOBAL instruction to `trace_address(address)` (like
//! mem_trace's), each twice: with the engine's saves (registers live at the
//! point and changed by the call), and saving every register the calling
//! convention lets a callee change (`Plan::save_all_clobberable`, what a
//! register-blind instrumenter must do). The hooks are those of
//! fixtures/gfx90a/v5/hooks_test.hsaco.
//!
//!     cargo run --release -p inlay-instrument --example call_cost [FILTER]
//!
//! (FILTER: only kernels whose fixture or name contains it.)
//! Per kernel and in total: the calls executed (wave executions of the
//! hooked instructions in the original run), and the instructions the
//! instrumented dispatch executes beyond the original's, per call.

#[path = "../tests/harness/mod.rs"]
mod harness;

use inlay_codeobj::CodeObject;
use inlay_instrument::hooks::{Arg, HookCall, Point};
use inlay_instrument::rewrite::{has_address, Plan};
use inlay_instrument::{analyse, emit};

#[derive(Clone, Copy, PartialEq)]
enum Sites {
    Every,
    Memory,
}

/// (calls executed, instructions added: engine, save-everything) for one kernel.
fn measure(file: &str, kernel: &str, sites: Sites) -> Result<(u64, u64, u64), String> {
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
    let hooked: Vec<usize> = (0..prog.insts.len())
        .filter(|&i| sites == Sites::Every || has_address(&prog.insts[i].inst))
        .collect();
    let (mem, mut dev) = harness::calls::device();
    dev.set_watchdog(1 << 22);
    let original = dev.load(&bytes).map_err(|e| e.to_string())?;
    let (_, stats) = harness::run(&dev, &original, kernel, &md);
    let per = stats.per_offset(&original);
    let calls: u64 = hooked
        .iter()
        .map(|&i| per.get(&prog.insts[i].addr).copied().unwrap_or(0))
        .sum();
    let module = harness::calls::hook_module();
    let mut added = [0u64; 2];
    for (k, save_all) in [false, true].into_iter().enumerate() {
        let plan = Plan {
            calls: hooked
                .iter()
                .map(|&i| HookCall {
                    point: Point::Before(i),
                    module: 0,
                    hook: match sites {
                        Sites::Every => "count_instr".into(),
                        Sites::Memory => "trace_address".into(),
                    },
                    args: vec![match sites {
                        Sites::Every => Arg::Const32(1),
                        Sites::Memory => Arg::Address,
                    }],
                    once_per_wave: false,
                })
                .collect(),
            modules: vec![module.clone()],
            private_segment_size: Some(
                co.kernel(kernel)
                    .ok_or("no kernel")?
                    .descriptor
                    .private_segment_fixed_size,
            ),
            save_all_clobberable: save_all,
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
        added[k] = s.instructions.saturating_sub(stats.instructions);
    }
    Ok((calls, added[0], added[1]))
}

fn main() {
    let filter = std::env::args().nth(1).unwrap_or_default();
    for (sites, what) in [
        (Sites::Every, "count_instr(1) before every instruction"),
        (
            Sites::Memory,
            "trace_address(address) before every FLAT/GLOBAL instruction",
        ),
    ] {
        println!("\n{what}");
        println!(
            "{:>10} {:>12} {:>12} {:>8}  kernel",
            "calls", "live saves", "save all", "ratio"
        );
        let (mut calls, mut engine, mut all) = (0u64, 0u64, 0u64);
        for (file, kernel) in harness::kernels(5) {
            if !file.contains(&filter) && !kernel.contains(&filter) {
                continue;
            }
            match measure(&file, &kernel, sites) {
                Ok((0, _, _)) => {}
                Ok((c, e, a)) => {
                    calls += c;
                    engine += e;
                    all += a;
                    println!(
                        "{c:>10} {:>12.1} {:>12.1} {:>7.2}x  {file} {kernel}",
                        e as f64 / c as f64,
                        a as f64 / c as f64,
                        a as f64 / e.max(1) as f64
                    );
                }
                Err(e) => println!("{:>10}  {file} {kernel}: {e}", "-"),
            }
        }
        println!(
            "{calls:>10} {:>12.1} {:>12.1} {:>7.2}x  all kernels (instructions added per call executed)",
            engine as f64 / calls.max(1) as f64,
            all as f64 / calls.max(1) as f64,
            all as f64 / engine.max(1) as f64
        );
    }
}
