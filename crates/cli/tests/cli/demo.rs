//! `inlay demo`, the README's first command: it must succeed, and what it
//! reports must be the checks it says passed.

use crate::common;

use common::*;

#[test]
fn demo_runs_instruments_and_checks() {
    let out = inlay().arg("demo").output().expect("inlay demo");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "demo failed:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for want in [
        "vector_add",
        "c[i] = a[i] + b[i] for every i: yes, equal to the host's sums",
        "instrumented results equal the original's: yes, bit for bit",
        "(equal)",
    ] {
        assert!(text.contains(want), "demo output lacks {want:?}:\n{text}");
    }
}
