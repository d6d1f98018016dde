//! Oracle: instruction text identical to `llvm-mc-19 --disassemble` for
//! (a) 32-bit literals of every constant kind and (b) random words in every
//! encoding (LLVM's `/*Invalid register...*/` and `/*Invalid immediate*/`
//! annotations included), one llvm-mc batch per target. Invalid must be
//! invalid on both.
mod support;

use std::io::Write;
use std::process::{Command, Stdio};

use inlay_isa::{format::to_string, Decoder, Target};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) as u32
    }
}

/// Case n is followed by `s_nop <marker_value(n)>`, printed in hex (> 64).
fn marker_value(n: usize) -> u32 {
    0x100 + (n as u32 % 0xFE00)
}

/// (prefix, mask of fixed bits) of the encodings to sample.
const PREFIXES: [(u32, u32); 14] = [
    (0xC400_0000, 0xFC00_0000),
    (0xD400_0000, 0xFC00_0000),
    (0x0000_0000, 0x8000_0000),
    (0x7E00_0000, 0xFE00_0000),
    (0x7C00_0000, 0xFE00_0000),
    (0x8000_0000, 0xF000_0000),
    (0xBE80_0000, 0xFF80_0000),
    (0xBF00_0000, 0xFF80_0000),
    (0xC000_0000, 0xFC00_0000),
    (0xD000_0000, 0xFC00_0000),
    (0xD380_0000, 0xFF80_0000),
    (0xD800_0000, 0xFC00_0000),
    (0xDC00_0000, 0xFC00_0000),
    (0xE000_0000, 0xFC00_0000),
];

/// The first cases are literals (must all match); the rest random words.
const LITERAL_CASES: usize = 6 * 22;

fn cases() -> Vec<[u32; 2]> {
    let mut v = Vec::new();
    // literals: v_add_f16, v_add_u16, v_add_f32, v_add_u32, v_pk_fmac_f16 (VOP2)
    // and v_fract_f64 (VOP1)
    let lits = [
        0x3c00, 0xbc00, 0x3800, 0x3118, 0x3e22f983, 0x3ff00000, 0x3fe00000, 0xbff00000, 0x3fc45f30,
        1, 64, 65, 0xfffffff0, 0xffff, 0xfff0, 0x40000000, 0x4400, 0x8000, 0x7fffffff, 0x10000,
        0x3c003c00, 0,
    ];
    for w in [
        31u32 << 25,
        38 << 25,
        1 << 25,
        0x34 << 25,
        0x3C << 25,
        0x7E00_0000 | 0x32 << 9,
    ] {
        for l in lits {
            v.push([w | 4 << 17 | 12 << 9 | 255, l]);
        }
    }
    let mut rng = Rng(7);
    for n in 0..28_000u32 {
        let (p, m) = PREFIXES[(n % 14) as usize];
        v.push([p | (rng.next() & !m), rng.next()]);
    }
    v
}

#[test]
fn text_matches_llvm_mc_disassembler() {
    if !support::have_tool("llvm-mc-19") {
        return;
    }
    let (mut failures, mut literal_failures) = (Vec::new(), Vec::new());
    let mut total = 0;
    for target in [Target::Gfx908, Target::Gfx90a, Target::Gfx942] {
        let dec = Decoder::new(target);
        let mut ours = Vec::new();
        let mut input = String::new();
        let cases = cases();
        total += cases.len() - LITERAL_CASES;
        for c in cases {
            let bytes: Vec<u8> = c.iter().flat_map(|w| w.to_le_bytes()).collect();
            let i = dec.decode(&bytes).unwrap();
            // Both words, then the marker twice: a second word that takes a
            // literal eats the first marker at most.
            let line: Vec<String> = bytes.iter().map(|b| format!("0x{b:02x}")).collect();
            input.push_str(&line.join(","));
            input.push('\n');
            let m = marker_value(ours.len());
            let marker = format!("0x{:02x},0x{:02x},0x80,0xbf", m & 0xFF, m >> 8);
            input.push_str(&format!("{marker},{marker}\n"));
            ours.push((i.is_valid().then(|| to_string(&i)), c));
        }
        let mut child = Command::new("llvm-mc-19")
            .args([
                "--disassemble",
                "-triple=amdgcn-amd-amdhsa",
                &format!("-mcpu={}", target.name()),
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("llvm-mc-19");
        let mut stdin = child.stdin.take().unwrap();
        let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
        let out = child.wait_with_output().unwrap();
        writer.join().unwrap().unwrap();
        let bad: std::collections::HashSet<usize> = String::from_utf8_lossy(&out.stderr)
            .lines()
            .filter(|l| l.contains("invalid instruction encoding"))
            .filter_map(|l| {
                // only a failure at column 1 is the case's first instruction
                let mut it = l.strip_prefix("<stdin>:")?.split(':');
                let line = it.next()?.parse().ok()?;
                (it.next()? == "1").then_some(line)
            })
            .collect();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let mut lines = stdout.lines().skip(1).map(str::trim);
        for (n, (text, words)) in ours.iter().enumerate() {
            // this case's output runs up to its own marker
            let marker = format!("s_nop 0x{:x}", marker_value(n));
            let mut chunk = Vec::new();
            for l in lines.by_ref() {
                if l == marker {
                    break;
                }
                chunk.push(l);
            }
            if lines.clone().next() == Some(marker.as_str()) {
                lines.next();
            }
            let theirs = if bad.contains(&(2 * n + 1)) {
                None
            } else {
                chunk.first().copied()
            };
            if text.as_deref() != theirs {
                let f = format!(
                    "{} {:08x?}: ours {:?} llvm {:?}",
                    target.name(),
                    words,
                    text,
                    theirs
                );
                if n < LITERAL_CASES {
                    literal_failures.push(f);
                } else {
                    failures.push(f);
                }
            }
        }
    }
    assert!(
        literal_failures.is_empty(),
        "literals:\n{}",
        literal_failures.join("\n")
    );
    assert!(
        failures.is_empty(),
        "{} of {total} random words differ from llvm-mc-19, e.g.\n{}",
        failures.len(),
        failures[..failures.len().min(20)].join("\n")
    );
}

/// Every ds_swizzle_b32 offset (the swizzle pattern: QUAD_PERM, SWAP,
/// REVERSE, BROADCAST, BITMASK_PERM or a number) prints as llvm-mc does.
#[test]
fn every_ds_swizzle_offset_prints_like_llvm_mc() {
    if !support::have_tool("llvm-mc-19") {
        return;
    }
    let target = Target::Gfx90a;
    let dec = Decoder::new(target);
    let mut input = String::new();
    let mut ours = Vec::new();
    for offset in 0..=0xFFFFu32 {
        let w = [0xD87A_0000 | offset, 0x0400_0008]; // ds_swizzle_b32 v4, v8
        let bytes: Vec<u8> = w.iter().flat_map(|x| x.to_le_bytes()).collect();
        let line: Vec<String> = bytes.iter().map(|b| format!("0x{b:02x}")).collect();
        input.push_str(&line.join(","));
        input.push('\n');
        ours.push(to_string(&dec.decode(&bytes).unwrap()));
    }
    let mut child = Command::new("llvm-mc-19")
        .args([
            "--disassemble",
            "-triple=amdgcn-amd-amdhsa",
            &format!("-mcpu={}", target.name()),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("llvm-mc-19");
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let theirs: Vec<&str> = stdout
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("ds_swizzle"))
        .collect();
    assert_eq!(theirs.len(), ours.len(), "llvm-mc decoded another count");
    let diffs: Vec<String> = ours
        .iter()
        .zip(&theirs)
        .enumerate()
        .filter(|(_, (a, b))| a != *b)
        .map(|(n, (a, b))| format!("offset {n:#06x}: ours {a:?} llvm-mc {b:?}"))
        .collect();
    assert!(
        diffs.is_empty(),
        "{} offsets differ:\n{}",
        diffs.len(),
        diffs[..diffs.len().min(20)].join("\n")
    );
}
