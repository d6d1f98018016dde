//! Checks liveness over a corpus against an independent oracle.
//!
//!     cargo run --release -p inlay-instrument --example check_liveness -- FILES...
//!
//! For every kernel without calls: for each register, the instructions before
//! which it is live are found by a backward search from its reads over the
//! instruction-level control flow, stopping at writes. Scalar registers must
//! match the analysis exactly. For VGPRs/AGPRs that search (where every write
//! kills, ignoring EXEC) gives a lower bound: the EXEC-aware analysis must
//! report at least those. Prints mismatches (first few) and totals.

use inlay_codeobj::CodeObject;
use inlay_instrument::regs::{bit_name, bits_of, NUM_BITS, VGPR_BASE};
use inlay_instrument::Analysis;

/// Vector (register, instruction) pairs: live by the EXEC-blind search, and
/// live by the analysis (its extra ones are the price of EXEC masking).
#[derive(Default)]
struct VectorCounts {
    blind: usize,
    ours: usize,
}

fn check(a: &Analysis, ctx: &str, bad: &mut usize, vc: &mut VectorCounts) -> usize {
    let p = &a.program;
    let n = p.insts.len();
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
    for b in &p.blocks {
        for (k, pr) in preds[b.insts.start + 1..b.insts.end].iter_mut().enumerate() {
            pr.push(b.insts.start + k);
        }
        for s in &b.succs {
            preds[p.blocks[*s].insts.start].push(b.insts.end - 1);
        }
    }
    let mut reads: Vec<Vec<usize>> = vec![Vec::new(); NUM_BITS as usize];
    let mut kills = vec![vec![false; n]; NUM_BITS as usize];
    for (i, ins) in p.insts.iter().enumerate() {
        for u in inlay_isa::info(&ins.inst).used_registers() {
            let Some((b, len)) = bits_of(&u.register) else {
                continue;
            };
            for bit in b..b + len {
                if u.access.reads() {
                    reads[bit as usize].push(i);
                }
                if u.access == inlay_isa::Access::Write {
                    kills[bit as usize][i] = true;
                }
            }
        }
    }
    let mut checked = 0;
    let read_bits: Vec<u16> = (0..NUM_BITS)
        .filter(|b| !reads[*b as usize].is_empty())
        .collect();
    let mut oracle: Vec<Vec<bool>> = Vec::with_capacity(read_bits.len());
    for &bit in &read_bits {
        let r = &reads[bit as usize];
        let mut live = vec![false; n];
        let mut stack: Vec<usize> = r.clone();
        for i in r {
            live[*i] = true;
        }
        while let Some(i) = stack.pop() {
            for &q in &preds[i] {
                if !live[q] && !kills[bit as usize][q] {
                    live[q] = true;
                    stack.push(q);
                }
            }
        }
        oracle.push(live);
    }
    let mut union = inlay_instrument::RegSet::new();
    for (i, ins) in p.insts.iter().enumerate() {
        let l = a.live_before(i);
        union.union_with(&l.any());
        let any = l.any();
        for (k, &bit) in read_bits.iter().enumerate() {
            checked += 1;
            let want = oracle[k][i];
            let wrong = if bit < VGPR_BASE {
                l.active.contains(bit) != want
            } else {
                vc.blind += want as usize;
                vc.ours += any.contains(bit) as usize;
                want && !any.contains(bit)
            };
            if wrong {
                *bad += 1;
                if *bad <= 10 {
                    println!(
                        "MISMATCH {ctx}: {} before {:#x}: oracle {want}",
                        bit_name(bit),
                        ins.addr
                    );
                }
            }
        }
    }
    // A register nothing reads is never live.
    for bit in union.iter() {
        if reads[bit as usize].is_empty() {
            *bad += 1;
            if *bad <= 10 {
                println!("MISMATCH {ctx}: {} live but never read", bit_name(bit));
            }
        }
    }
    checked + n * (NUM_BITS as usize - read_bits.len())
}

fn main() {
    let files: Vec<String> = std::env::args().skip(1).collect();
    let (mut kernels, mut skipped, mut points, mut bad) = (0usize, 0usize, 0usize, 0usize);
    let mut failed = 0usize;
    let mut vc = VectorCounts::default();
    let mut exec_kinds: std::collections::BTreeMap<String, usize> = Default::default();
    for (k, path) in files.iter().enumerate() {
        eprint!("\r[{}/{}] {path}   ", k + 1, files.len());
        let Ok(bytes) = std::fs::read(path) else {
            continue;
        };
        let Ok(co) = CodeObject::parse(&bytes) else {
            continue;
        };
        for kern in &co.kernels {
            let a = match inlay_instrument::analyse(&co, kern.name) {
                Ok(a) => a,
                Err(e) => {
                    failed += 1;
                    if failed <= 5 {
                        println!("not lifted: {path} {}: {e}", kern.name);
                    }
                    continue;
                }
            };
            for ins in &a.program.insts {
                let e = inlay_instrument::liveness::exec_effect(&ins.inst);
                if e != inlay_instrument::ExecEffect::None {
                    let key = format!("{e:?} {}", ins.inst.mnemonic());
                    *exec_kinds.entry(key).or_default() += 1;
                }
            }
            if !a.program.calls.is_empty() {
                skipped += 1;
                continue;
            }
            kernels += 1;
            points += check(&a, &format!("{path} {}", kern.name), &mut bad, &mut vc);
        }
    }
    eprintln!();
    println!(
        "{kernels} kernels checked ({skipped} with calls skipped, {failed} not lifted), \
         {points} (register, instruction) pairs, {bad} mismatches"
    );
    println!(
        "vector registers live (register, instruction pairs): {} by the EXEC-blind search, \
         {} by the analysis ({:+.1}%)",
        vc.blind,
        vc.ours,
        (vc.ours as f64 / vc.blind.max(1) as f64 - 1.0) * 100.0
    );
    let mut kinds: Vec<_> = exec_kinds.into_iter().collect();
    kinds.sort_by_key(|k| std::cmp::Reverse(k.1));
    println!("EXEC writes by kind:");
    for (k, n) in kinds.iter().take(12) {
        println!("  {n:>8}  {k}");
    }
    if bad > 0 || failed > 0 {
        std::process::exit(1);
    }
}
