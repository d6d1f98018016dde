//! The per-opcode harness shared by `opcodes.rs` and `rocsparse_ops.rs`:
//! tiny kernels assembled with llvm-mc-19 at test time, patched into a
//! fixture's kernel body, run on one wave of 64 lanes.
//!
//! v0 holds the lane id; the body leaves a 64-bit result in v[1:2] (both
//! start at 0), which is stored to out[lane].

use std::process::Command;

use inlay_codeobj::CodeObject;
use inlay_vgpu::kernarg::Args;
use inlay_vgpu::Device;

use super::fixture;

pub const LLVM_MC: &str = "llvm-mc-19";

/// Assembles `src` for gfx90a; None if llvm-mc-19 is missing (and allowed to be).
pub fn assemble(src: &str) -> Option<Vec<u8>> {
    let dir = std::env::temp_dir().join(format!("inlay-vgpu-opcodes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    let path = dir.join(format!("t{:x}.s", src.len() ^ src.as_ptr() as usize));
    std::fs::write(&path, src).expect("write asm");
    let out = Command::new(LLVM_MC)
        .args([
            "-triple=amdgcn-amd-amdhsa",
            "-mcpu=gfx90a",
            "--show-encoding",
        ])
        .arg(&path)
        .output();
    let _ = std::fs::remove_file(&path);
    let out = match out {
        Ok(o) => o,
        Err(e) => {
            if std::env::var("INLAY_REQUIRE_ORACLES").as_deref() == Ok("1") {
                panic!("{LLVM_MC} is required (INLAY_REQUIRE_ORACLES=1): {e}");
            }
            eprintln!("note: skipping, {LLVM_MC} not found: {e}");
            return None;
        }
    };
    assert!(
        out.status.success(),
        "{LLVM_MC} failed on:\n{src}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let mut bytes = Vec::new();
    for line in text.lines() {
        let Some(enc) = line.split("encoding: [").nth(1) else {
            continue;
        };
        for b in enc.trim_end_matches(']').split(',') {
            let b = b.trim().trim_start_matches("0x");
            bytes.push(u8::from_str_radix(b, 16).expect("hex byte"));
        }
    }
    Some(bytes)
}

/// Runs `body` on one wave; returns v[1:2] of each lane.
pub fn run_body(dev: &Device, body: &str) -> Option<Vec<u64>> {
    run_body_with(dev, body, 0, 0)
}

/// As [`run_body`], with `lds` bytes of LDS and `scratch` bytes of private
/// memory per lane written into the kernel descriptor.
pub fn run_body_with(dev: &Device, body: &str, lds: u32, scratch: u32) -> Option<Vec<u64>> {
    run_body_result(dev, body, lds, scratch).map(|r| r.unwrap_or_else(|f| panic!("{body}\n{f}")))
}

/// As [`run_body_with`], giving back the fault of a body that faults.
pub fn run_body_result(
    dev: &Device,
    body: &str,
    lds: u32,
    scratch: u32,
) -> Option<Result<Vec<u64>, Box<inlay_vgpu::FaultReport>>> {
    let src = format!(
        "s_load_dwordx2 s[40:41], s[4:5], 0x0\n\
         v_mov_b32 v1, 0\n\
         v_mov_b32 v2, 0\n\
         s_waitcnt lgkmcnt(0)\n\
         {body}\n\
         v_mov_b32 v12, v1\n\
         v_mov_b32 v13, v2\n\
         v_lshlrev_b32 v10, 3, v0\n\
         global_store_dwordx2 v10, v[12:13], s[40:41]\n\
         s_endpgm\n"
    );
    let code = assemble(&src)?;
    let mut bytes = fixture(5, "vector_add");
    let co = CodeObject::parse(&bytes).expect("parse");
    let text = co.section(".text").expect(".text");
    let entry = co
        .kernel("vector_add")
        .and_then(|k| k.entry_address)
        .expect("entry");
    let off = (entry - text.addr + text.offset) as usize;
    let room = (text.offset + text.size) as usize - off;
    let kd = co
        .kernel("vector_add")
        .expect("kernel")
        .descriptor_file_offset as usize;
    assert!(code.len() <= room, "test program too long");
    drop(co);
    // group_segment_fixed_size and private_segment_fixed_size lead the descriptor.
    bytes[kd..kd + 4].copy_from_slice(&lds.to_le_bytes());
    bytes[kd + 4..kd + 8].copy_from_slice(&scratch.to_le_bytes());
    bytes[off..off + code.len()].copy_from_slice(&code);
    let p = dev.load(&bytes).expect("load");
    let out = dev.upload(&[0u8; 64 * 8]).expect("alloc");
    let args = Args::new().ptr(out);
    Some(
        dev.dispatch(&p, "vector_add", [64, 1, 1], [64, 1, 1], args.as_bytes())
            .map(|_| dev.download_u64(out, 64).expect("read")),
    )
}

pub fn check(dev: &Device, body: &str, want: impl Fn(u64) -> u64) {
    let Some(got) = run_body(dev, body) else {
        return;
    };
    for (l, g) in got.iter().enumerate() {
        let w = want(l as u64);
        assert_eq!(*g, w, "lane {l}: got {g:#x}, want {w:#x} for\n{body}");
    }
}

pub fn check_with(dev: &Device, body: &str, lds: u32, scratch: u32, want: impl Fn(u64) -> u64) {
    let Some(got) = run_body_with(dev, body, lds, scratch) else {
        return;
    };
    for (l, g) in got.iter().enumerate() {
        let w = want(l as u64);
        assert_eq!(*g, w, "lane {l}: got {g:#x}, want {w:#x} for\n{body}");
    }
}

/// A per-lane test with inputs from memory and up to 16 results.
///
/// The kernel run by [`run_lanes`]: v0 holds the work-item id, v[4:11] the
/// eight input dwords `inputs(id)` of that work-item, s[40:41] the output
/// buffer and s[42:43] the input buffer; bytes 4096.. of the input buffer
/// hold `mem` (a data area for memory instructions, read back after the
/// run). The body leaves results in v20, v21, ... (`outputs` of them),
/// keeps v0 and s[40:43], and may leave EXEC in any state.
pub struct Lanes<'a> {
    pub body: &'a str,
    pub outputs: usize,
    /// Work-items in the one workgroup (64 or 128).
    pub items: usize,
    pub lds: u32,
    pub scratch: u32,
    pub mem: Vec<u8>,
}

impl<'a> Lanes<'a> {
    pub fn new(body: &'a str, outputs: usize) -> Lanes<'a> {
        Lanes {
            body,
            outputs,
            items: 64,
            lds: 0,
            scratch: 0,
            mem: Vec::new(),
        }
    }
}

/// Offset of the data area in the input buffer.
pub const MEM: usize = 4096;

/// Runs `t`; returns the results of each work-item and the data area after.
pub fn run_lanes(
    dev: &Device,
    t: &Lanes,
    inputs: impl Fn(usize) -> [u32; 8],
) -> Option<(Vec<Vec<u32>>, Vec<u8>)> {
    let n = t.items;
    assert!(
        t.outputs <= 16 && t.outputs * n * 4 <= 4096,
        "too many outputs"
    );
    let mut stores = String::new();
    for k in 0..t.outputs {
        stores += &format!(
            "global_store_dword v1, v{}, s[40:41] offset:{}\n",
            20 + k,
            k * n * 4
        );
    }
    let src = format!(
        "s_load_dwordx4 s[40:43], s[4:5], 0x0\n\
         s_waitcnt lgkmcnt(0)\n\
         v_lshlrev_b32 v1, 5, v0\n\
         global_load_dwordx4 v[4:7], v1, s[42:43]\n\
         global_load_dwordx4 v[8:11], v1, s[42:43] offset:16\n\
         s_waitcnt vmcnt(0)\n\
         {}\n\
         s_mov_b64 exec, -1\n\
         v_lshlrev_b32 v1, 2, v0\n\
         {stores}\
         s_endpgm\n",
        t.body
    );
    let code = assemble(&src)?;
    let mut bytes = fixture(5, "vector_add");
    let co = CodeObject::parse(&bytes).expect("parse");
    let text = co.section(".text").expect(".text");
    let k = co.kernel("vector_add").expect("kernel");
    let off = (k.entry_address.expect("entry") - text.addr + text.offset) as usize;
    let room = (text.offset + text.size) as usize - off;
    let kd = k.descriptor_file_offset as usize;
    assert!(
        code.len() <= room,
        "test program too long: {} bytes",
        code.len()
    );
    drop(co);
    bytes[kd..kd + 4].copy_from_slice(&t.lds.to_le_bytes());
    bytes[kd + 4..kd + 8].copy_from_slice(&t.scratch.to_le_bytes());
    bytes[off..off + code.len()].copy_from_slice(&code);
    let p = dev.load(&bytes).expect("load");
    let mut buf = vec![0u8; MEM + t.mem.len().max(4096)];
    for l in 0..n {
        for (j, w) in inputs(l).iter().enumerate() {
            buf[l * 32 + 4 * j..l * 32 + 4 * j + 4].copy_from_slice(&w.to_le_bytes());
        }
    }
    buf[MEM..MEM + t.mem.len()].copy_from_slice(&t.mem);
    let input = dev.upload(&buf).expect("alloc");
    let out = dev.upload(&vec![0u8; 4096]).expect("alloc");
    let args = Args::new().ptr(out).ptr(input);
    dev.dispatch(
        &p,
        "vector_add",
        [n as u32, 1, 1],
        [n as u32, 1, 1],
        args.as_bytes(),
    )
    .unwrap_or_else(|f| panic!("{}\n{f}", t.body));
    let words = dev.download_u32(out, 1024).expect("read");
    let res = (0..n)
        .map(|l| (0..t.outputs).map(|k| words[k * n + l]).collect())
        .collect();
    let mut after = vec![0u8; buf.len() - MEM];
    let all = dev.download_u32(input, buf.len() / 4).expect("read");
    for (i, w) in all[MEM / 4..].iter().enumerate() {
        after[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
    }
    let _ = dev.unload(p);
    Some((res, after))
}

/// Runs `t` and compares every work-item's results with `want(id, inputs)`.
pub fn check_lanes(
    dev: &Device,
    t: &Lanes,
    inputs: impl Fn(usize) -> [u32; 8],
    want: impl Fn(usize, [u32; 8]) -> Vec<u32>,
) -> Option<Vec<u8>> {
    let (got, mem) = run_lanes(dev, t, &inputs)?;
    for (l, g) in got.iter().enumerate() {
        let w = want(l, inputs(l));
        assert_eq!(w.len(), t.outputs, "want() gives {} results", w.len());
        for k in 0..t.outputs {
            assert_eq!(
                g[k],
                w[k],
                "lane {l}, v{}: got {:#x}, want {:#x} for\n{}",
                20 + k,
                g[k],
                w[k],
                t.body
            );
        }
    }
    Some(mem)
}
