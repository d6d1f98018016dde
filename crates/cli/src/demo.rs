//! `inlay demo`: the whole path on a built-in gfx90a vector add — inspect,
//! disassemble, run on the virtual GPU against a host reference, then
//! instrument it with counting hooks, run the instrumented copy and compare
//! its results and counts with the original's.

use inlay_codeobj::CodeObject;
use inlay_instrument::rewrite::{rewrite, Hook, Plan};
use inlay_instrument::{analyse, counting, emit};
use inlay_vgpu::kernarg::Args;
use inlay_vgpu::{Device, Program};

const KERNEL: &str = "vector_add";
const N: usize = 1000;
const WG: u32 = 256;

/// The demo's listing with each run of `s_nop 0` padding (the code object
/// fills `.text` to its end with it, ~270 lines here) cut to its first line
/// and a count; `inlay disasm` itself prints every line, as objdump does.
pub fn shorten_listing(listing: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(listing.len());
    let mut run = 0usize;
    let end_run = |out: &mut Vec<u8>, run: usize| {
        if run > 1 {
            let note = format!(
                "\t... {} more s_nop 0: padding to the end of .text (inlay disasm lists every one)\n",
                run - 1
            );
            out.extend_from_slice(note.as_bytes());
        }
    };
    for line in listing.split_inclusive(|&b| b == b'\n') {
        if line.starts_with(b"\ts_nop 0 ") {
            run += 1;
            if run > 1 {
                continue;
            }
        } else {
            end_run(&mut out, run);
            run = 0;
        }
        out.extend_from_slice(line);
    }
    end_run(&mut out, run);
    out
}

/// The run and instrumentation part of the demo, as text.
pub fn run(code: &[u8]) -> Result<String, String> {
    let e = |x: &dyn std::fmt::Display| x.to_string();
    let dev = Device::new();
    let original = dev.load(code).map_err(|x| e(&x))?;
    let a: Vec<f32> = (0..N).map(|i| i as f32 * 0.5).collect();
    let b: Vec<f32> = (0..N).map(|i| (N - i) as f32).collect();
    let want: Vec<u32> = a.iter().zip(&b).map(|(x, y)| (x + y).to_bits()).collect();
    let run = |p: &Program, name: &str| -> Result<(Vec<u32>, inlay_vgpu::Stats), String> {
        let da = dev
            .upload_u32(&a.iter().map(|x| x.to_bits()).collect::<Vec<_>>())
            .map_err(|x| e(&x))?;
        let db = dev
            .upload_u32(&b.iter().map(|x| x.to_bits()).collect::<Vec<_>>())
            .map_err(|x| e(&x))?;
        let dc = dev.upload_u32(&[0; N]).map_err(|x| e(&x))?;
        let args = Args::new().ptr(da).ptr(db).ptr(dc).u32(N as u32);
        let stats = dev
            .dispatch(p, name, [N as u32, 1, 1], [WG, 1, 1], args.as_bytes())
            .map_err(|f| e(&f))?;
        let c = dev.download_u32(dc, N).map_err(|x| e(&x))?;
        for d in [da, db, dc] {
            let _ = dev.free(d);
        }
        Ok((c, stats))
    };

    let mut out = String::new();
    let (c, native) = run(&original, KERNEL)?;
    let ok = c == want;
    out.push_str(&format!(
        "\n== running {KERNEL} on the virtual gfx90a: {N} elements, workgroups of {WG}\n\
         c[i] = a[i] + b[i] for every i: {}\n\
         {} waves executed {} wave instructions ({} distinct opcodes)\n",
        if ok {
            "yes, equal to the host's sums"
        } else {
            "NO, differs from the host's sums"
        },
        native.waves,
        native.instructions,
        native.per_opcode.len()
    ));

    // Instrument: counting hooks on the blocks the flow equations cannot solve.
    let co = CodeObject::parse(code).map_err(|x| e(&x))?;
    let an = analyse(&co, KERNEL).map_err(|x| e(&x))?;
    let plan_counts = counting::plan(&an.program);
    let counters = dev
        .upload(&vec![0u8; 8 * plan_counts.measured.len().max(1)])
        .map_err(|x| e(&x))?;
    let hooks = plan_counts
        .measured
        .iter()
        .enumerate()
        .map(|(k, &b)| {
            (
                an.program.blocks[b].insts.start,
                Hook::Count {
                    offset: 8 * k as u32,
                },
            )
        })
        .collect();
    let plan = Plan {
        counters,
        hooks,
        dead_registers_only: false,
        all_branches_long: false,
        ..Plan::default()
    };
    let kd = co.kernel(KERNEL).ok_or("no kernel")?.descriptor;
    let base = original.image.ok_or("no image")?;
    let rw = rewrite(&an, base, &kd, &plan).map_err(|x| e(&x))?;
    let added = rw.added;
    let bytes = emit::code_object(&co, KERNEL, rw).map_err(|x| e(&x))?;
    let copy = dev.load(&bytes).map_err(|x| e(&x))?;
    let both = Program::merge(dev.memory(), &[&original, &copy]).map_err(|x| e(&x))?;
    let (c2, stats) = run(&both, &emit::instrumented_name(KERNEL))?;
    let counted = dev
        .download_u64(counters, plan_counts.measured.len())
        .map_err(|x| e(&x))?;
    let waves = counting::waves([N as u32, 1, 1], [WG, 1, 1]);
    let total: u64 = an
        .program
        .blocks
        .iter()
        .enumerate()
        .map(|(k, bl)| plan_counts.forms[k].eval(&counted, waves) * bl.insts.len() as u64)
        .sum();
    out.push_str(&format!(
        "\n== instrumenting {KERNEL}: {} blocks, hooks on {} of them (the rest follow from flow conservation), \
         {} instructions added, code object of {} bytes\n\
         instrumented results equal the original's: {}\n\
         wave instructions counted by the hooks: {total}; counted by the virtual GPU: {} ({})\n\
         the instrumented dispatch executed {} wave instructions ({:.3}x)\n",
        an.program.blocks.len(),
        plan_counts.measured.len(),
        added,
        bytes.len(),
        if c2 == c { "yes, bit for bit" } else { "NO" },
        native.instructions,
        if total == native.instructions { "equal" } else { "DIFFERENT" },
        stats.instructions,
        stats.instructions as f64 / native.instructions.max(1) as f64,
    ));
    if !ok || c2 != c || total != native.instructions {
        return Err(out + "\ndemo: a check failed");
    }
    Ok(out)
}
