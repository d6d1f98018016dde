//! Inputs the fuzzer (or its findings) turned up, kept as tests.

use std::path::Path;
use std::time::Instant;

use inlay_codeobj::container::walk;

fn regression(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/regressions/codeobj")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Bundles whose entries cover their own bundle used to expand into 10^8 nested
/// entries (fan-out 10, depth 8). Overlapping entries are now rejected up front.
#[test]
fn self_covering_bundle_entries_are_rejected_quickly() {
    for name in [
        "bundle-fanout-2.bin",
        "bundle-fanout-10.bin",
        "oom-self-nested-bundle.bin",
    ] {
        let data = regression(name);
        let start = Instant::now();
        let items: Vec<_> = walk(&data, name).take(10_000).collect();
        assert!(
            items.len() < 10_000,
            "{name}: walk still fans out ({} items)",
            items.len()
        );
        assert!(
            items
                .iter()
                .any(|i| i.as_ref().is_err_and(|e| e.what.contains("overlaps"))),
            "{name}: the overlap is reported"
        );
        assert!(
            start.elapsed().as_secs() < 5,
            "{name}: took {:?}",
            start.elapsed()
        );
    }
}
