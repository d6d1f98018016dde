//! Oracle: listing identical to `llvm-objdump-19 -d` on a sample of the code
//! objects in Debian's librocsparse (gfx908 and gfx90a), chosen by the test to
//! cover as many mnemonics as it can in a bounded number of bytes.
use crate::support;

use std::collections::HashSet;
use std::path::Path;

const SO: &str = "/usr/lib/x86_64-linux-gnu/librocsparse.so.0.1";
/// Byte budget per target for the sample (keeps llvm-objdump under ~20 s).
const BUDGET: u64 = 6 << 20;

#[test]
fn listing_matches_llvm_objdump_on_rocsparse_sample() {
    let so = Path::new(SO);
    if !so.exists() {
        if std::env::var("INLAY_REQUIRE_ORACLES").as_deref() == Ok("1") {
            panic!("{SO} is required (INLAY_REQUIRE_ORACLES=1) but missing");
        }
        eprintln!("note: {SO} not found; skipping");
        return;
    }
    if !support::have_tool("llvm-objdump-19") {
        return;
    }
    let entries = support::fatbin::entries(so).expect("read .hip_fatbin bundles");
    let dir = std::env::temp_dir().join(format!("inlay-isa-rocsparse-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut failures = Vec::new();
    for target in ["gfx908:xnack-", "gfx90a:xnack-"] {
        // Greedy cover: repeatedly take the object adding most new mnemonics per byte.
        let mut cands: Vec<(usize, Vec<u8>, HashSet<&str>)> = Vec::new();
        for (k, e) in entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.id.ends_with(target))
        {
            if e.size > 4 << 20 {
                continue;
            }
            let data = support::fatbin::read_entry(so, e).unwrap();
            let m = support::mnemonics(&data);
            cands.push((k, data, m));
        }
        assert!(!cands.is_empty(), "no {target} code objects in {SO}");
        let all: HashSet<&str> = cands.iter().flat_map(|c| c.2.iter().copied()).collect();
        let mut covered: HashSet<&str> = HashSet::new();
        let mut used = 0u64;
        let mut picked = Vec::new();
        loop {
            let best = cands
                .iter()
                .enumerate()
                .filter(|(_, c)| used + c.1.len() as u64 <= BUDGET)
                .map(|(i, c)| {
                    (
                        i,
                        c.2.difference(&covered).count() as f64 / c.1.len() as f64,
                    )
                })
                .filter(|(_, s)| *s > 0.0)
                .max_by(|a, b| a.1.total_cmp(&b.1));
            let Some((i, _)) = best else { break };
            let c = cands.swap_remove(i);
            used += c.1.len() as u64;
            covered.extend(c.2.iter().copied());
            picked.push(c);
        }
        eprintln!(
            "{target}: {} objects, {} bytes, {}/{} mnemonics",
            picked.len(),
            used,
            covered.len(),
            all.len()
        );
        for (k, data, _) in &picked {
            let name = format!("rocsparse_{k:03}_{}.hsaco", target.replace(':', "_"));
            let path = dir.join(&name);
            std::fs::write(&path, data).unwrap();
            let ours = support::inlay_listing(data, &name).expect("listing");
            let theirs = support::objdump(&path).expect("llvm-objdump-19 ran");
            let (n, ex) = support::diff_lines(&ours, &theirs, 3);
            if n > 0 {
                failures.push(format!("{name}: {n} lines differ, e.g. {ex:?}"));
            }
            let (_, bad) = support::round_trip(data);
            if !bad.is_empty() {
                failures.push(format!(
                    "{name}: encode(decode(x)) != x: {:?}",
                    &bad[..bad.len().min(3)]
                ));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
