//! Debian's unmodified rocminfo, run against our library, must list both agents.
//!
//! rocminfo first checks the machine for a ROCm driver: `lsmod | grep amdgpu`
//! and opening /dev/kfd read-write. Neither concerns the runtime, so the test
//! provides both without root: a stub `lsmod` on PATH, and (when /dev/kfd is
//! absent) a private user+mount namespace whose /dev has /dev/null bound at
//! /dev/kfd. rocminfo itself and everything it asks the runtime are real.

use crate::common;
use std::process::Command;

const NAMESPACE_SCRIPT: &str = r#"set -e
old="$INLAY_NS_TMP/olddev"; mkdir -p "$old"
mount --rbind /dev "$old"
mount -t tmpfs none /dev
for n in null zero full random urandom; do touch /dev/$n; mount --bind "$old/$n" /dev/$n; done
touch /dev/kfd; mount --bind "$old/null" /dev/kfd
exec "$@"
"#;

fn run_rocminfo() -> Option<std::process::Output> {
    let rocminfo = common::which("rocminfo");
    if !common::oracle_available("rocminfo (Debian package rocminfo)", rocminfo.is_some()) {
        return None;
    }
    let dir = common::lib_dir("rocminfo");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).expect("stub dir");
    let lsmod = bin.join("lsmod");
    std::fs::write(&lsmod, "#!/bin/sh\necho 'amdgpu 1 0'\n").expect("stub lsmod");
    std::fs::set_permissions(&lsmod, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let kfd_ok = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kfd")
        .is_ok();
    let mut cmd = if kfd_ok {
        Command::new(rocminfo.unwrap())
    } else {
        let unshare = common::which("unshare");
        if !common::oracle_available(
            "unshare (util-linux) to provide /dev/kfd",
            unshare.is_some(),
        ) {
            return None;
        }
        let mut c = Command::new(unshare.unwrap());
        c.args(["-Urm", "sh", "-c", NAMESPACE_SCRIPT, "sh", "rocminfo"]);
        c.env("INLAY_NS_TMP", &dir);
        c
    };
    let out = cmd
        .env("PATH", path)
        .env("LD_LIBRARY_PATH", &dir)
        .output()
        .expect("run rocminfo");
    let _ = std::fs::remove_dir_all(&dir);
    Some(out)
}

#[test]
fn rocminfo_lists_cpu_and_gfx90a_agents_with_pools_and_isa() {
    let Some(out) = run_rocminfo() else { return };
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "rocminfo failed ({:?}):\n{text}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let field = |label: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| l.trim_start().strip_prefix(label))
            .map(|v| v.trim().to_string())
            .collect()
    };
    assert_eq!(field("Device Type:"), ["CPU", "GPU"], "{text}");
    assert!(field("Name:").iter().any(|n| n == "gfx90a"), "{text}");
    assert!(
        field("Name:")
            .iter()
            .any(|n| n == "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"),
        "{text}"
    );
    assert_eq!(field("Wavefront Size:"), ["64(0x40)"], "{text}");
    assert_eq!(field("Compute Unit:")[1], "104", "{text}");
    assert!(
        field("Uuid:")
            .iter()
            .any(|u| u.starts_with("GPU-") && u.len() == 20),
        "{text}"
    );
    let segments = field("Segment:");
    assert!(
        segments.contains(&"GLOBAL; FLAGS: KERNARG, FINE GRAINED".to_string()),
        "{text}"
    );
    assert!(
        segments.contains(&"GLOBAL; FLAGS: COARSE GRAINED".to_string()),
        "{text}"
    );
    assert!(segments.contains(&"GROUP".to_string()), "{text}");
    assert!(text.contains("*** Done ***"), "{text}");
}
