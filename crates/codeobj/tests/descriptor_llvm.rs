//! Kernel descriptor checks against LLVM's own decoder: `llvm-objdump-19 -D`
//! decodes a `.kd` symbol into `.amdhsa_kernel` directives and refuses ("error
//! decoding") a descriptor with bits set that must be 0 on its target.
//! Thousands of seeded damaged descriptors (random bytes, single and multiple
//! bit flips, all ones, all zeros) of gfx908, gfx90a and gfx942 fixtures:
//! whatever LLVM refuses, `descriptor_problems` must refuse too; whatever
//! LLVM accepts, it may refuse only by the rules LLVM's decoder does not
//! check (`BEYOND_LLVM`: user SGPRs, SGPR count, AGPR offset, LDS size, entry
//! point, and "must be 0" bits of AMDGPUUsage the decoder ignores), tested
//! one by one below.

#[path = "reader_support.rs"]
mod support;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::process::Command;

use inlay_codeobj::CodeObject;

/// Rules beyond those LLVM's descriptor decoder checks.
const BEYOND_LLVM: &[&str] = &[
    "COMPUTE_PGM_RSRC2.USER_SGPR_COUNT",
    "COMPUTE_PGM_RSRC1.GRANULATED_WAVEFRONT_SGPR_COUNT",
    "COMPUTE_PGM_RSRC3.ACCUM_OFFSET",
    "GROUP_SEGMENT_FIXED_SIZE",
    "KERNEL_CODE_ENTRY_BYTE_OFFSET",
    // AMDGPUUsage says these must be 0 and LLVM 19's decoder does not look:
    // kernarg preloading before GFX90A, the trap handler bit (CP sets it),
    // the private segment buffer and flat scratch init where scratch is
    // architected (GFX940 on).
    "KERNARG_PRELOAD",
    "COMPUTE_PGM_RSRC2.ENABLE_TRAP_HANDLER",
    "KERNEL_CODE_PROPERTIES.ENABLE_SGPR_PRIVATE_SEGMENT_BUFFER",
    "KERNEL_CODE_PROPERTIES.ENABLE_SGPR_FLAT_SCRATCH_INIT",
];

/// A fixture, the file offset of its first kernel's descriptor, and that kernel.
fn seed(rel: &str) -> (Vec<u8>, usize, String) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(rel);
    let bytes = std::fs::read(&path).unwrap();
    let co = CodeObject::parse(&bytes).unwrap();
    let k = &co.kernels[0];
    assert!(
        k.descriptor_problems.is_empty(),
        "{rel}: the original is fine"
    );
    (
        bytes.clone(),
        k.descriptor_file_offset as usize,
        k.name.to_string(),
    )
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// The damaged descriptors for one seed: 64 bytes each.
fn damaged(original: &[u8], rng: &mut Rng, count: usize) -> Vec<[u8; 64]> {
    let mut out = vec![[0xffu8; 64], [0u8; 64]];
    let mut zeros_keeping_entry = [0u8; 64];
    zeros_keeping_entry[16..24].copy_from_slice(&original[16..24]);
    out.push(zeros_keeping_entry);
    while out.len() < count {
        let mut d: [u8; 64] = original.try_into().unwrap();
        match rng.next() % 4 {
            // One bit anywhere.
            0 | 1 => {
                let bit = rng.next() % 512;
                d[(bit / 8) as usize] ^= 1 << (bit % 8);
            }
            // A few bits.
            2 => {
                for _ in 0..1 + rng.next() % 4 {
                    let bit = rng.next() % 512;
                    d[(bit / 8) as usize] ^= 1 << (bit % 8);
                }
            }
            // Every byte random.
            _ => {
                for b in &mut d {
                    *b = rng.next() as u8;
                }
            }
        }
        out.push(d);
    }
    out
}

/// LLVM's verdict per file: `Some(error)` if it refused the descriptor.
fn llvm_verdicts(objdump: &PathBuf, kernel: &str, files: &[PathBuf]) -> Vec<Option<String>> {
    let out = Command::new(objdump)
        .arg("-D")
        .arg(format!("--disassemble-symbols={kernel}.kd"))
        .args(files)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    // Each file's listing starts with "<path>:\tfile format elf64-amdgpu".
    let headers: HashMap<String, usize> = files
        .iter()
        .enumerate()
        .map(|(i, f)| (format!("{}:\tfile format elf64-amdgpu", f.display()), i))
        .collect();
    let mut by_file: BTreeMap<usize, Option<String>> = BTreeMap::new();
    let mut current = None;
    for line in text.lines() {
        if let Some(&i) = headers.get(line) {
            current = Some(i);
            by_file.insert(i, None);
        } else if let (Some(i), Some(error)) = (current, line.strip_prefix("; error decoding ")) {
            by_file.insert(i, Some(error.to_string()));
        }
    }
    assert_eq!(by_file.len(), files.len(), "objdump listed every file");
    by_file.into_values().collect()
}

#[test]
fn what_llvm_refuses_is_refused_and_beyond_llvm_only_by_the_extra_rules() {
    let Some(objdump) = support::tool("llvm-objdump-19") else {
        return;
    };
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let (mut refused_by_both, mut accepted_by_both, mut extra) = (0, 0, 0);
    for rel in [
        "gfx908/v5/vector_add.hsaco",
        "gfx90a/v5/vector_add.hsaco",
        "gfx942/v5/vector_add.hsaco",
    ] {
        let (bytes, at, kernel) = seed(rel);
        let cases = damaged(&bytes[at..at + 64], &mut rng, 700);
        let dir = support::scratch_dir().join(format!("kd-{}", rel.replace('/', "-")));
        std::fs::create_dir_all(&dir).unwrap();
        let files: Vec<PathBuf> = cases
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let mut b = bytes.clone();
                b[at..at + 64].copy_from_slice(d);
                let path = dir.join(format!("{i:04}.hsaco"));
                std::fs::write(&path, &b).unwrap();
                path
            })
            .collect();
        let verdicts = llvm_verdicts(&objdump, &kernel, &files);
        for ((file, verdict), d) in files.iter().zip(&verdicts).zip(&cases) {
            let b = std::fs::read(file).unwrap();
            let co = CodeObject::parse(&b).unwrap();
            let k = co.kernel(&kernel).unwrap();
            let ours = k.descriptor_problems.clone();
            let shown = || {
                format!(
                    "{}: descriptor {}\nLLVM: {verdict:?}\nours: {ours:#?}",
                    file.display(),
                    hex(d)
                )
            };
            match verdict {
                Some(_) => {
                    assert!(!ours.is_empty(), "LLVM refuses, we accept: {}", shown());
                    refused_by_both += 1;
                }
                None => {
                    assert!(
                        ours.iter().all(|p| BEYOND_LLVM.contains(&p.field)),
                        "LLVM accepts, we refuse by a rule LLVM checks: {}",
                        shown()
                    );
                    if ours.is_empty() {
                        accepted_by_both += 1;
                    } else {
                        extra += 1;
                    }
                }
            }
        }
        std::fs::remove_dir_all(&dir).ok();
    }
    // The mix exercises both sides.
    assert!(
        refused_by_both > 500 && accepted_by_both > 200,
        "{refused_by_both} {accepted_by_both} {extra}"
    );
}

fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// The rules LLVM's decoder does not check, one at a time on a gfx90a kernel.
#[test]
fn impossible_values_llvm_decodes_are_refused_naming_the_field() {
    let (bytes, at, kernel) = seed("gfx90a/v5/vector_add.hsaco");
    let set = |patch: &dyn Fn(&mut [u8])| {
        let mut b = bytes.clone();
        patch(&mut b[at..at + 64]);
        b
    };
    let word = |d: &mut [u8], offset: usize, f: &dyn Fn(u32) -> u32| {
        let v = u32::from_le_bytes(d[offset..offset + 4].try_into().unwrap());
        d[offset..offset + 4].copy_from_slice(&f(v).to_le_bytes());
    };
    let cases: Vec<(&str, Vec<u8>)> = vec![
        // More user SGPRs than the 16 there are.
        (
            "COMPUTE_PGM_RSRC2.USER_SGPR_COUNT",
            set(&|d| word(d, 52, &|v| v | 0x1f << 1)),
        ),
        // Fewer user SGPRs than the ones enabled (buffer 4 + kernarg pointer 2).
        (
            "COMPUTE_PGM_RSRC2.USER_SGPR_COUNT",
            set(&|d| word(d, 52, &|v| v & !(0x1f << 1) | 2 << 1)),
        ),
        // 128 SGPRs: a GFX9 wave has 112 at most.
        (
            "COMPUTE_PGM_RSRC1.GRANULATED_WAVEFRONT_SGPR_COUNT",
            set(&|d| word(d, 48, &|v| v | 0xf << 6)),
        ),
        // AGPRs from v256 with 8 registers allocated.
        (
            "COMPUTE_PGM_RSRC3.ACCUM_OFFSET",
            set(&|d| word(d, 44, &|v| v | 0x3f)),
        ),
        // 1 MiB of LDS.
        (
            "GROUP_SEGMENT_FIXED_SIZE",
            set(&|d| word(d, 0, &|_| 1 << 20)),
        ),
        // Entry point before the descriptor, in .rodata's neighbourhood, not in code.
        (
            "KERNEL_CODE_ENTRY_BYTE_OFFSET",
            set(&|d| d[16..24].copy_from_slice(&(-0x800i64).to_le_bytes())),
        ),
        // Entry point past the end of everything.
        (
            "KERNEL_CODE_ENTRY_BYTE_OFFSET",
            set(&|d| d[16..24].copy_from_slice(&0x7000_0000i64.to_le_bytes())),
        ),
        // Entry point inside the code but not 256-byte aligned.
        (
            "KERNEL_CODE_ENTRY_BYTE_OFFSET",
            set(&|d| {
                let e = i64::from_le_bytes(d[16..24].try_into().unwrap()) + 4;
                d[16..24].copy_from_slice(&e.to_le_bytes());
            }),
        ),
    ];
    for (field, b) in &cases {
        let co = CodeObject::parse(b).unwrap();
        let problems = co.kernel(&kernel).unwrap().descriptor_problems.clone();
        assert!(
            problems.iter().any(|p| p.field == *field),
            "{field}: {problems:#?}"
        );
    }
}

/// Wave32 on a wave64-only target and the GFX940 architected-scratch rules,
/// named as such.
#[test]
fn features_the_target_lacks_are_named() {
    let (bytes, at, kernel) = seed("gfx90a/v5/vector_add.hsaco");
    let mut b = bytes.clone();
    b[at + 57] |= 1 << 2; // kernel_code_properties bit 10
    let co = CodeObject::parse(&b).unwrap();
    let problems = co.kernel(&kernel).unwrap().descriptor_problems.clone();
    assert!(
        problems.iter().any(
            |p| p.field == "KERNEL_CODE_PROPERTIES.ENABLE_WAVEFRONT_SIZE32"
                && p.problem.contains("gfx90a runs wave64 only")
        ),
        "{problems:#?}"
    );
    let (bytes, at, kernel) = seed("gfx942/v5/vector_add.hsaco");
    let mut b = bytes.clone();
    b[at + 56] |= 1; // private segment buffer
    let co = CodeObject::parse(&b).unwrap();
    let problems = co.kernel(&kernel).unwrap().descriptor_problems.clone();
    assert!(
        problems
            .iter()
            .any(|p| p.field == "KERNEL_CODE_PROPERTIES.ENABLE_SGPR_PRIVATE_SEGMENT_BUFFER"),
        "{problems:#?}"
    );
}
