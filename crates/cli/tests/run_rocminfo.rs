//! `inlay run -- rocminfo`: Debian's unmodified rocminfo, run through the command a
//! user types, lists the CPU agent and the virtual gfx90a with its ISA.

mod common;

use std::process::Command;

use common::*;

#[test]
fn rocminfo_runs_under_inlay_run() {
    let present = Command::new("sh")
        .args(["-c", "command -v rocminfo"])
        .output()
        .is_ok_and(|o| o.status.success());
    if missing("rocminfo (Debian package rocminfo)", present) {
        return;
    }
    let out = inlay_run()
        .args(["--", "rocminfo"])
        .output()
        .expect("inlay run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "rocminfo failed: {:?}\n{text}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let values = |label: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| l.trim_start().strip_prefix(label))
            .map(|v| v.trim().to_string())
            .collect()
    };
    let names = values("Name:");
    assert!(
        names.iter().any(|n| n == "gfx90a"),
        "agent names: {names:?}"
    );
    assert!(
        names
            .iter()
            .any(|n| n == "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"),
        "ISA names: {names:?}"
    );
    let devices = values("Device Type:");
    assert!(
        devices.iter().any(|d| d == "CPU") && devices.iter().any(|d| d == "GPU"),
        "device types: {devices:?}"
    );
}
