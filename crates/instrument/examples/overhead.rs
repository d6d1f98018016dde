//! What instrumentation costs, in the virtual GPU's own dynamic
//! instruction counts: every gfx90a fixture kernel run as it is, then with a
//! counting hook before every basic block and before every instruction.
//!
//!     cargo run --release -p inlay-instrument --example overhead [-- v4|v5]
//!
//! Per block, hooks go on the blocks the counting plan measures (the others'
//! counts follow from flow conservation). Prints per kernel the original
//! count, the instrumented counts, the ratio (per block) and the
//! instructions added per instrumented instruction (per instruction), then
//! the totals over all kernels.

#[path = "../tests/instrument/harness/mod.rs"]
mod harness;

use inlay_codeobj::CodeObject;
use inlay_instrument::rewrite::{rewrite, Hook, Plan};
use inlay_instrument::{analyse, counting, emit};
use inlay_vgpu::{Device, Program};

/// Dynamic count of `kernel` with a hook at each of `sites` (None: original).
fn count(version: u32, file: &str, kernel: &str, per_block: Option<bool>) -> Result<u64, String> {
    let bytes = harness::fixture(version, file);
    let co = CodeObject::parse(&bytes).map_err(|e| e.to_string())?;
    let md = co
        .metadata
        .as_ref()
        .and_then(|m| m.kernels.iter().find(|k| k.name == kernel))
        .ok_or("no metadata")?
        .clone();
    let dev = Device::with_threads(1);
    let original = dev.load(&bytes).map_err(|e| e.to_string())?;
    let Some(per_block) = per_block else {
        return Ok(harness::run(&dev, &original, kernel, &md).1.instructions);
    };
    let an = analyse(&co, kernel).map_err(|e| e.to_string())?;
    let prog = &an.program;
    let sites: Vec<usize> = if per_block {
        counting::plan(prog)
            .measured
            .iter()
            .map(|&b| prog.blocks[b].insts.start)
            .collect()
    } else {
        (0..prog.insts.len()).collect()
    };
    let counters = dev
        .upload(&vec![0u8; 8 * sites.len().max(1)])
        .map_err(|e| e.to_string())?;
    let plan = Plan {
        counters,
        dead_registers_only: false,
        all_branches_long: false,
        hooks: sites
            .iter()
            .enumerate()
            .map(|(n, &i)| {
                (
                    i,
                    Hook::Count {
                        offset: 8 * n as u32,
                    },
                )
            })
            .collect(),
        ..Plan::default()
    };
    let kd = co.kernel(kernel).ok_or("no kernel")?.descriptor;
    let rw = rewrite(&an, original.image.unwrap_or(0), &kd, &plan).map_err(|e| e.to_string())?;
    let out = emit::code_object(&co, kernel, rw).map_err(|e| e.to_string())?;
    let inst = dev.load(&out).map_err(|e| e.to_string())?;
    let both = Program::merge(dev.memory(), &[&original, &inst]).map_err(|e| e.to_string())?;
    Ok(
        harness::run(&dev, &both, &emit::instrumented_name(kernel), &md)
            .1
            .instructions,
    )
}

fn main() {
    let version = match std::env::args().nth(1).as_deref() {
        Some("v4") => 4,
        _ => 5,
    };
    println!(
        "{:<28} {:>10} {:>12} {:>7} {:>12} {:>9}",
        "kernel", "original", "per block", "ratio", "per instr", "added/i"
    );
    let (mut o_all, mut b_all, mut i_all) = (0u64, 0u64, 0u64);
    for (file, kernel) in harness::kernels(version) {
        let r = (|| {
            Ok::<_, String>((
                count(version, &file, &kernel, None)?,
                count(version, &file, &kernel, Some(true))?,
                count(version, &file, &kernel, Some(false))?,
            ))
        })();
        match r {
            Ok((o, b, i)) => {
                println!(
                    "{:<28} {o:>10} {b:>12} {:>7.3} {i:>12} {:>9.3}",
                    format!("{file}/{}", inlay_tools_name(&kernel)),
                    b as f64 / o as f64,
                    (i - o) as f64 / o as f64
                );
                o_all += o;
                b_all += b;
                i_all += i;
            }
            Err(e) => println!("{file}/{kernel}: {e}"),
        }
    }
    println!(
        "{:<28} {o_all:>10} {b_all:>12} {:>7.3} {i_all:>12} {:>9.3}",
        "all kernels",
        b_all as f64 / o_all as f64,
        (i_all - o_all) as f64 / o_all as f64
    );
}

/// Short kernel names (C++ ones are long).
fn inlay_tools_name(k: &str) -> String {
    k.chars().take(20).collect()
}
