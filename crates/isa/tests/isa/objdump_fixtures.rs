//! Oracle: inlay's listing is byte-identical to `llvm-objdump-19 -d` on every
//! fixture code object (fixtures/<target>/v<N>/*.hsaco, all three targets).
use crate::support;

use std::path::{Path, PathBuf};

fn fixtures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let mut v = Vec::new();
    for t in ["gfx908", "gfx90a", "gfx942"] {
        for ver in ["v4", "v5"] {
            if let Ok(rd) = std::fs::read_dir(root.join(t).join(ver)) {
                for e in rd.flatten() {
                    if e.path().extension().is_some_and(|x| x == "hsaco") {
                        v.push(e.path());
                    }
                }
            }
        }
    }
    v.sort();
    v
}

#[test]
fn listing_matches_llvm_objdump_on_fixtures() {
    if !support::have_tool("llvm-objdump-19") {
        return;
    }
    let files = fixtures();
    assert!(!files.is_empty(), "no fixtures found under fixtures/");
    let mut targets = std::collections::HashSet::new();
    let mut failures = Vec::new();
    for f in &files {
        let data = std::fs::read(f).unwrap();
        targets.insert(support::target_of(&data).expect("fixture target"));
        let name = f.file_name().unwrap().to_str().unwrap();
        let ours = support::inlay_listing(&data, name).expect("listing");
        let theirs = support::objdump(f).expect("llvm-objdump-19 ran");
        let (checked, bad) = support::round_trip(&data);
        assert!(
            checked > 0 && bad.is_empty(),
            "{}: encode(decode(x)) != x: {:?}",
            f.display(),
            &bad[..bad.len().min(3)]
        );
        let (n, ex) = support::diff_lines(&ours, &theirs, 3);
        if n > 0 {
            failures.push(format!("{}: {n} lines differ, e.g. {:?}", f.display(), ex));
        }
    }
    assert_eq!(
        targets.len(),
        3,
        "fixtures should cover gfx908, gfx90a and gfx942"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
