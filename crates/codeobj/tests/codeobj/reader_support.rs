//! Shared by the reader, writer and oracle tests (included with `#[path]`):
//! finding LLVM tools, building tiny code objects with clang-19 at test time, and
//! listing the committed fixtures.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// OpenCL C with kernels, a local and a hidden device function, a global variable and a constant table.
pub const SAMPLE: &str = r#"
#define gid() (__builtin_amdgcn_workgroup_id_x() * 64 + __builtin_amdgcn_workitem_id_x())
__attribute__((noinline)) static float helper(float x) { return x * 3.0f + 1.0f; }
__attribute__((noinline)) float ext_helper(float x) { return helper(x) - 2.0f; }
__global float gvar[16];
__constant int ctab[4] = {1, 2, 3, 4};
__kernel void add(__global float *a, __global const float *b, int n) {
    int i = gid();
    if (i < n) a[i] = ext_helper(b[i]) + gvar[i & 15] + ctab[i & 3];
}
__kernel void scale(__global float *restrict a, float s) { a[gid()] *= s; }
__kernel void __attribute__((reqd_work_group_size(64, 1, 1))) lds(__global int *out, __local int *tmp) {
    __local int buf[256];
    buf[__builtin_amdgcn_workitem_id_x()] = out[gid()];
    tmp[0] = 1;
    __builtin_amdgcn_s_barrier();
    out[gid()] = buf[255 - __builtin_amdgcn_workitem_id_x()] + tmp[0];
}
"#;

/// Path of an installed LLVM tool, or `None` (and a note) when it is missing and
/// oracles are not required. With INLAY_REQUIRE_ORACLES=1 a missing tool fails the test.
pub fn tool(name: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        if std::env::var("INLAY_REQUIRE_ORACLES").as_deref() == Ok("1") {
            panic!("oracle tool {name} is required (INLAY_REQUIRE_ORACLES=1) but not installed");
        }
        eprintln!("note: {name} not installed; skipping oracle comparison");
    }
    found
}

static BUILD_LOCK: Mutex<()> = Mutex::new(());

/// This test process's scratch directory under the system temp dir. Directories
/// left by earlier test processes that have exited are removed on first use.
pub fn scratch_dir() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let prefix = "inlay-codeobj-tests-";
        if let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                let Some(pid) = name.strip_prefix(prefix) else {
                    continue;
                };
                if !Path::new("/proc").join(pid).exists() {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
        let dir = std::env::temp_dir().join(format!("{prefix}{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    })
    .clone()
}

/// Compiles `src` for `cpu` and code object version `cov`; `link` makes a .hsaco
/// (shared object), otherwise a relocatable .o. Cached per test process.
pub fn build(src: &str, cpu: &str, cov: u32, link: bool) -> Option<Vec<u8>> {
    let clang = tool("clang-19")?;
    let _guard = BUILD_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let dir = scratch_dir();
    let hash = src
        .bytes()
        .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
    let stem = format!("{hash:x}-{cpu}-v{cov}-{}", if link { "so" } else { "o" });
    let out = dir.join(format!("{stem}.{}", if link { "hsaco" } else { "o" }));
    if !out.exists() {
        let src_path = dir.join(format!("{stem}.cl"));
        std::fs::write(&src_path, src).unwrap();
        let mut cmd = Command::new(clang);
        cmd.args(["-target", "amdgcn-amd-amdhsa", &format!("-mcpu={cpu}")])
            .arg(format!("-mcode-object-version={cov}"))
            .args(["-nogpulib", "-O2", "-cl-std=CL2.0", "-x", "cl"]);
        if !link {
            cmd.arg("-c");
        }
        let status = cmd.arg(&src_path).arg("-o").arg(&out).status().unwrap();
        assert!(status.success(), "clang-19 failed for {cpu} v{cov}");
    }
    Some(std::fs::read(out).unwrap())
}

/// Writes bytes to a temporary file (for handing to LLVM tools).
pub fn temp_file(name: &str, bytes: &[u8]) -> PathBuf {
    let p = scratch_dir().join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// Runs a tool and returns its stdout (panics with stderr on failure).
pub fn run(tool: &Path, args: &[&str], file: &Path) -> String {
    let out = Command::new(tool).args(args).arg(file).output().unwrap();
    assert!(
        out.status.success(),
        "{} {:?} {} failed: {}",
        tool.display(),
        args,
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Code objects under the repository's `fixtures/` (empty if none are there yet).
pub fn fixtures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let mut found = Vec::new();
    let mut stack = vec![root];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if matches!(p.extension().and_then(|x| x.to_str()), Some("hsaco" | "o")) {
                found.push(p);
            }
        }
    }
    found.sort();
    found
}

/// Every code object this test run can get: built samples plus fixtures, by name.
pub fn corpus() -> Vec<(String, Vec<u8>)> {
    let mut all = Vec::new();
    for (cpu, cov) in [
        ("gfx90a", 5),
        ("gfx90a", 4),
        ("gfx908", 5),
        ("gfx942", 6),
        ("gfx1100", 5),
        ("gfx9-generic", 6),
    ] {
        for link in [false, true] {
            if let Some(b) = build(SAMPLE, cpu, cov, link) {
                all.push((
                    format!("sample-{cpu}-v{cov}.{}", if link { "hsaco" } else { "o" }),
                    b,
                ));
            }
        }
    }
    for p in fixtures() {
        all.push((p.display().to_string(), std::fs::read(&p).unwrap()));
    }
    all
}

/// Corrupted variants per input in the no-panic tests (INLAY_FUZZ_ITERS overrides).
pub fn fuzz_iterations() -> usize {
    std::env::var("INLAY_FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300)
}

/// A byte to corrupt: anywhere, or (as often) in the headers and tables that
/// validation guards (ELF header, program headers, section header table).
pub fn corruption_offset(bytes: &[u8], random: u64) -> usize {
    let len = bytes.len() as u64;
    let shoff = bytes
        .get(40..48)
        .map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap()));
    let at = match random % 3 {
        0 => (random >> 8) % len,
        1 => (random >> 8) % 64.min(len).max(1) + if random & 0x80 != 0 { 64 } else { 0 },
        _ if shoff < len => shoff + (random >> 8) % (len - shoff),
        _ => (random >> 8) % len,
    };
    at.min(len - 1) as usize
}
