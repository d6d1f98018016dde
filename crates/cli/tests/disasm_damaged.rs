//! `inlay disasm` against `llvm-objdump-19 -d` on damaged machine code.
//!
//! Seeded random flips (bytes, words, single bits) in the `.text` of every
//! fixture code object (gfx908, gfx90a, gfx942) and of small librocsparse code
//! objects (gfx908, gfx90a) give thousands of damaged files; both tools list
//! them, a few hundred files per invocation, and every listing must be
//! identical byte for byte. Damage reaches the corners compilers never emit:
//! invalid encodings, operands LLVM annotates or warns about, literals and
//! instructions cut off by a symbol or the section end, branches anywhere.
//!
//! A failure names the seed, the damaged file (kept on disk), the file it was
//! made from, its flips and the first differing lines. `INLAY_FLIP_SEED=N`
//! replays another seed; `INLAY_FLIP_CASES=N` sets the cases per target.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use inlay_codeobj::container::{walk, EntryKind};
use inlay_codeobj::CodeObject;

const DEFAULT_SEED: u64 = 14_07;
const CASES_PER_TARGET: usize = 1000;
/// Files per llvm-objdump/inlay invocation (objdump's start-up is the cost).
const BATCH: usize = 400;
/// librocsparse code objects used as seeds per target, with `.text` this small.
const ROCSPARSE_SEEDS: usize = 8;
const ROCSPARSE_TEXT: std::ops::Range<usize> = 512..8192;

/// xorshift64*: the same stream on every machine for a given seed.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// An undamaged code object and where its `.text` lies in the file.
struct Seed {
    name: String,
    bytes: Vec<u8>,
    text: std::ops::Range<usize>,
    /// ELF `e_flags`: llvm-objdump takes the processor of the first file of an
    /// invocation for all of them, so each invocation lists one kind only.
    e_flags: u32,
}

impl Seed {
    fn new(name: String, bytes: Vec<u8>) -> Option<Seed> {
        let co = CodeObject::parse_code(&bytes).ok()?;
        let text = co.sections.iter().find(|s| s.name == ".text")?;
        let start = usize::try_from(text.offset).ok()?;
        let end = start.checked_add(usize::try_from(text.size).ok()?)?;
        let e_flags = co.header.e_flags;
        (end <= bytes.len() && end - start >= 8).then_some(Seed {
            name,
            text: start..end,
            e_flags,
            bytes,
        })
    }

    fn target(&self) -> &'static str {
        match self.e_flags & 0xFF {
            0x30 => "gfx908",
            0x3F => "gfx90a",
            _ => "gfx942",
        }
    }
}

/// One change to a seed's `.text`: `bytes` written at file offset `at`.
#[derive(Debug)]
struct Flip {
    at: usize,
    bytes: Vec<u8>,
}

/// A damaged file to list.
struct Case {
    file: String,
    seed: usize,
    flips: Vec<Flip>,
}

fn seeds() -> Vec<Seed> {
    let mut seeds: Vec<Seed> = fixtures(&["hsaco", "object"])
        .into_iter()
        .filter_map(|p| {
            let name = p.strip_prefix(root()).unwrap_or(&p).display().to_string();
            Seed::new(name, std::fs::read(&p).ok()?)
        })
        .collect();
    let so = Path::new(ROCSPARSE);
    if missing(ROCSPARSE, so.exists()) {
        return seeds;
    }
    let file = inlay_codeobj::file::MappedFile::open(so).expect("map librocsparse");
    let mut taken = BTreeMap::<&str, usize>::new();
    for entry in walk(file.bytes(), "librocsparse.so.0") {
        let Ok(entry) = entry else { continue };
        if entry.kind != EntryKind::CodeObject {
            continue;
        }
        let Some(target) = ["gfx908", "gfx90a"]
            .into_iter()
            .find(|t| entry.target_id.starts_with(t))
        else {
            continue;
        };
        if taken.get(target).copied().unwrap_or(0) >= ROCSPARSE_SEEDS {
            if taken.values().sum::<usize>() >= 2 * ROCSPARSE_SEEDS {
                break;
            }
            continue;
        }
        let Some(seed) = Seed::new(entry.location.clone(), entry.bytes.to_vec()) else {
            continue;
        };
        if ROCSPARSE_TEXT.contains(&seed.text.len()) {
            *taken.entry(target).or_default() += 1;
            seeds.push(seed);
        }
    }
    seeds
}

/// Up to six flips in `.text`: a random byte, a random aligned word or one bit.
fn damage(seed: &Seed, rng: &mut Rng) -> Vec<Flip> {
    let text = &seed.text;
    (0..1 + rng.below(6))
        .map(|_| match rng.below(5) {
            0 | 1 => Flip {
                at: text.start + rng.below(text.len()),
                bytes: vec![rng.next() as u8],
            },
            2 | 3 => Flip {
                at: text.start + rng.below(text.len() / 4) * 4,
                bytes: (rng.next() as u32).to_le_bytes().to_vec(),
            },
            _ => {
                let at = text.start + rng.below(text.len());
                Flip {
                    at,
                    bytes: vec![seed.bytes[at] ^ 1 << rng.below(8)],
                }
            }
        })
        .collect()
}

/// stdout of `program args... files` run in `dir`, so headers name the bare files.
fn run(mut cmd: Command, dir: &Path, files: &[&Case]) -> String {
    let out = cmd
        .args(files.iter().map(|c| &c.file))
        .current_dir(dir)
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 listing")
}

/// The listing of each file, split at objdump's per-file header line.
fn per_file(listing: &str) -> BTreeMap<&str, &str> {
    let mut out = BTreeMap::new();
    let mut rest = listing;
    while let Some(at) = rest.find(":\tfile format ") {
        let name_start = rest[..at].rfind('\n').map_or(0, |n| n + 1);
        let name = &rest[name_start..at];
        let body = &rest[at..];
        let end = body[1..]
            .find(":\tfile format ")
            .and_then(|n| body[..n + 1].rfind('\n'))
            .unwrap_or(body.len());
        out.insert(name, &body[..end]);
        rest = &body[end..];
    }
    out
}

/// The first differing line with two lines of context before it.
fn first_difference(ours: &str, theirs: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (ours.lines().collect(), theirs.lines().collect());
    let k = (0..a.len().max(b.len()))
        .find(|&k| a.get(k) != b.get(k))
        .unwrap_or(0);
    let mut s = String::new();
    for line in &a[k.saturating_sub(2)..k] {
        s += &format!("    same:    {line}\n");
    }
    s += &format!(
        "    inlay:   {}\n    objdump: {}\n",
        a.get(k).unwrap_or(&"<end>"),
        b.get(k).unwrap_or(&"<end>")
    );
    s
}

#[test]
fn damaged_code_lists_as_objdump_does() {
    if tool_missing("llvm-objdump-19") {
        return;
    }
    let seed_value = std::env::var("INLAY_FLIP_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(DEFAULT_SEED);
    let per_target = std::env::var("INLAY_FLIP_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(CASES_PER_TARGET);
    let seeds = seeds();
    let dir: PathBuf =
        std::env::temp_dir().join(format!("inlay-disasm-damaged-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();

    // Cases per target, each from a seed of that target; grouped by e_flags.
    let mut rng = Rng::new(seed_value);
    let mut groups = BTreeMap::<u32, Vec<Case>>::new();
    for target in ["gfx908", "gfx90a", "gfx942"] {
        let mine: Vec<usize> = (0..seeds.len())
            .filter(|&i| seeds[i].target() == target)
            .collect();
        assert!(!mine.is_empty(), "no seed code objects for {target}");
        for n in 0..per_target {
            let seed = mine[rng.below(mine.len())];
            let flips = damage(&seeds[seed], &mut rng);
            let mut bytes = seeds[seed].bytes.clone();
            for f in &flips {
                bytes[f.at..f.at + f.bytes.len()].copy_from_slice(&f.bytes);
            }
            let file = format!("{target}-{n:04}.hsaco");
            std::fs::write(dir.join(&file), bytes).unwrap();
            groups
                .entry(seeds[seed].e_flags)
                .or_default()
                .push(Case { file, seed, flips });
        }
    }

    let mut failures = Vec::new();
    let mut listed = 0;
    for cases in groups.values() {
        for batch in cases.chunks(BATCH) {
            let batch: Vec<&Case> = batch.iter().collect();
            let mut objdump = Command::new("llvm-objdump-19");
            objdump.arg("-d");
            let theirs = run(objdump, &dir, &batch);
            let mut ours = inlay();
            ours.arg("disasm");
            let ours = run(ours, &dir, &batch);
            let (theirs, ours) = (per_file(&theirs), per_file(&ours));
            for case in &batch {
                listed += 1;
                let (a, b) = (ours.get(case.file.as_str()), theirs.get(case.file.as_str()));
                if a.is_some() && a == b {
                    continue;
                }
                let seed = &seeds[case.seed];
                failures.push(format!(
                    "{} (from {}, flips {:?}):\n{}",
                    dir.join(&case.file).display(),
                    seed.name,
                    case.flips
                        .iter()
                        .map(|f| format!("{:#x}={:02x?}", f.at - seed.text.start, f.bytes))
                        .collect::<Vec<_>>(),
                    first_difference(a.unwrap_or(&""), b.unwrap_or(&""))
                ));
            }
        }
    }
    assert_eq!(listed, 3 * per_target, "every damaged file was listed");
    assert!(
        failures.is_empty(),
        "seed {seed_value}: {} of {listed} damaged listings differ from llvm-objdump-19 -d \
         (files kept in {}; flips are .text offsets), first ones:\n{}",
        failures.len(),
        dir.display(),
        failures[..failures.len().min(10)].join("\n")
    );
    std::fs::remove_dir_all(&dir).ok();
}
