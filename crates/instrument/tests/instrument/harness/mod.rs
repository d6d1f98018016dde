//! Running gfx90a fixture kernels on the virtual GPU with inputs every one
//! of them survives, for the rewriting tests and the overhead benchmark
//! (which includes this file by path).
#![allow(dead_code)]

use inlay_codeobj::CodeObject;
use inlay_instrument::rewrite::{rewrite, Plan, RewriteError, Rewritten};
use inlay_instrument::{emit, Analysis};
use inlay_vgpu::{Device, Program, Stats};

pub fn fixture(version: u32, name: &str) -> Vec<u8> {
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
pub struct Launch {
    pub grid: [u32; 3],
    pub wg: [u32; 3],
    pub args: Vec<u8>,
    /// Device addresses of the buffers, in argument order.
    pub buffers: Vec<u64>,
}

/// Grid and workgroup sizes of the launch (work-items).
pub fn launch_geometry(md: &inlay_codeobj::metadata::KernelMetadata) -> ([u32; 3], [u32; 3]) {
    let wg = match &md.reqd_workgroup_size {
        Some(r) if r.len() == 3 => [r[0] as u32, r[1] as u32, r[2] as u32],
        _ => [
            md.max_flat_workgroup_size.unwrap_or(256).min(256) as u32,
            1,
            1,
        ],
    };
    // A second row of workgroups only for 2-D workgroups: a 1-D kernel run
    // over two rows would have both rows update the same elements, a race
    // whose outcome depends on the thread schedule.
    let rows = if wg[1] > 1 { 2 } else { 1 };
    ([wg[0] * 3, wg[1] * rows, wg[2]], wg)
}

/// Waves of a launch.
pub fn waves_of(&(grid, wg): &([u32; 3], [u32; 3])) -> u64 {
    inlay_instrument::counting::waves(grid, wg)
}

pub fn launch(dev: &Device, md: &inlay_codeobj::metadata::KernelMetadata, seed: u64) -> Launch {
    let (grid, wg) = launch_geometry(md);
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
pub fn run(
    dev: &Device,
    program: &Program,
    kernel: &str,
    md: &inlay_codeobj::metadata::KernelMetadata,
) -> (Vec<Vec<u8>>, Stats) {
    let (out, stats, _) = run_launch(dev, program, kernel, md);
    (out, stats)
}

/// [`run`], also giving back the launch (its buffers are freed).
pub fn run_launch(
    dev: &Device,
    program: &Program,
    kernel: &str,
    md: &inlay_codeobj::metadata::KernelMetadata,
) -> (Vec<Vec<u8>>, Stats, Launch) {
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
    (out, stats, l)
}

/// Bytes of each buffer a launch passes.
pub const BUFFER_BYTES: usize = BUF;

/// Every kernel of every gfx90a fixture that runs without another code object.
pub fn kernels(version: u32) -> Vec<(String, String)> {
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

/// An instrumented kernel loaded beside its original.
pub struct Loaded {
    pub rw: Rewritten,
    pub code_object: Vec<u8>,
    /// Both code objects as one program, as the runtime registers them:
    /// calls the rewriter leaves pointing at the original code still land.
    pub both: Program,
}

/// Rewrites `kernel` of `co` (loaded on `dev` as `original`) with `plan`,
/// emits it and loads it beside the original.
pub fn instrument(
    dev: &Device,
    co: &CodeObject<'_>,
    kernel: &str,
    an: &Analysis,
    original: &Program,
    plan: &Plan,
) -> Result<Loaded, RewriteError> {
    let kd = co.kernel(kernel).expect("kernel").descriptor;
    let rw = rewrite(an, original.image.expect("image"), &kd, plan)?;
    let code_object = emit::code_object(co, kernel, rw.clone()).expect("emit");
    let instrumented = dev.load(&code_object).expect("load instrumented");
    let both = Program::merge(dev.memory(), &[original, &instrumented]).expect("merge");
    Ok(Loaded {
        rw,
        code_object,
        both,
    })
}

pub mod calls;
