//! Shared helpers of the container tests: finding oracle tools, running them,
//! and building inputs with LLVM 19 at test time.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The path of `tool` on PATH (or an absolute path that exists). If it is
/// missing the test fails when INLAY_REQUIRE_ORACLES=1 (as in CI), and is
/// otherwise skipped with a note.
pub fn oracle(tool: &str) -> Option<PathBuf> {
    let found = if tool.starts_with('/') {
        Some(PathBuf::from(tool)).filter(|p| p.exists())
    } else {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join(tool))
                .find(|p| p.is_file())
        })
    };
    if found.is_none() {
        if std::env::var("INLAY_REQUIRE_ORACLES").as_deref() == Ok("1") {
            panic!("oracle {tool} is required (INLAY_REQUIRE_ORACLES=1) but missing");
        }
        eprintln!("note: skipping, oracle {tool} not found");
    }
    found
}

/// All of `tools` present, or None (after the same require/skip rule).
pub fn oracles(tools: &[&str]) -> Option<Vec<PathBuf>> {
    let found: Vec<_> = tools.iter().map(|t| oracle(t)).collect();
    found.into_iter().collect()
}

/// Runs a command, panicking with its stderr if it fails; returns stdout.
pub fn run(cmd: &mut Command) -> Vec<u8> {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

pub fn run_text(cmd: &mut Command) -> String {
    String::from_utf8(run(cmd)).expect("tool output is UTF-8")
}

/// A fresh scratch directory under /tmp for one test, named after the test and
/// this process. Directories that earlier, finished runs left behind are removed.
pub fn scratch(test: &str) -> PathBuf {
    let tmp = std::env::temp_dir();
    let prefix = format!("inlay-container-{test}-");
    for old in std::fs::read_dir(&tmp).into_iter().flatten().flatten() {
        let name = old.file_name().to_string_lossy().into_owned();
        let pid = name
            .strip_prefix(&prefix)
            .and_then(|p| p.parse::<u32>().ok());
        if pid.is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists()) {
            let _ = std::fs::remove_dir_all(old.path());
        }
    }
    let dir = tmp.join(format!("{prefix}{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

/// A minimal code object for `mcpu` (with `mattr` features) whose kernels are
/// named `kernels`, assembled by llvm-mc-19 and linked by ld.lld-19.
pub fn code_object(dir: &Path, mcpu: &str, mattr: &str, kernels: &[&str]) -> Vec<u8> {
    let mut asm = String::from(".text\n");
    for k in kernels {
        asm += &format!(".globl {k}\n.p2align 8\n.type {k},@function\n{k}:\n  s_endpgm\n");
    }
    asm += ".rodata\n";
    for k in kernels {
        asm += &format!(
            ".p2align 6\n.amdhsa_kernel {k}\n  .amdhsa_next_free_vgpr 1\n  .amdhsa_next_free_sgpr 1\n"
        );
        if mcpu.starts_with("gfx90a") || mcpu.starts_with("gfx94") {
            asm += "  .amdhsa_accum_offset 4\n";
        }
        asm += ".end_amdhsa_kernel\n";
    }
    let stem = format!("{mcpu}{}", mattr.replace([',', '+', '-'], "_"));
    let s = dir.join(format!("{stem}.s"));
    let o = dir.join(format!("{stem}.o"));
    let hsaco = dir.join(format!("{stem}.hsaco"));
    std::fs::write(&s, asm).unwrap();
    let mut mc = Command::new("llvm-mc-19");
    mc.args(["-triple", "amdgcn-amd-amdhsa", "-filetype=obj"])
        .arg(format!("-mcpu={mcpu}"));
    if !mattr.is_empty() {
        mc.arg(format!("-mattr={mattr}"));
    }
    run(mc.arg(&s).arg("-o").arg(&o));
    run(Command::new("ld.lld-19")
        .arg("-shared")
        .arg(&o)
        .arg("-o")
        .arg(&hsaco));
    std::fs::read(hsaco).unwrap()
}

/// Bundles `inputs` (ID, bytes) with clang-offload-bundler-19 into `out`.
pub fn bundle(dir: &Path, inputs: &[(&str, &[u8])], compress: bool, out: &Path) {
    let mut cmd = Command::new("clang-offload-bundler-19");
    cmd.arg("-type=o");
    let ids: Vec<&str> = inputs.iter().map(|(id, _)| *id).collect();
    cmd.arg(format!("-targets={}", ids.join(",")));
    for (i, (_, bytes)) in inputs.iter().enumerate() {
        let path = dir.join(format!("input{i}"));
        std::fs::write(&path, bytes).unwrap();
        cmd.arg(format!("-input={}", path.display()));
    }
    cmd.arg(format!("-output={}", out.display()));
    if compress {
        cmd.arg("-compress");
    }
    run(&mut cmd);
}

/// The bundle IDs clang-offload-bundler-19 lists for `input`, sorted.
pub fn bundler_list(input: &Path) -> Vec<String> {
    let text = run_text(
        Command::new("clang-offload-bundler-19")
            .args(["--list", "-type=o"])
            .arg(format!("-input={}", input.display())),
    );
    let mut ids: Vec<String> = text.lines().map(str::to_string).collect();
    ids.sort();
    ids
}

/// The bytes clang-offload-bundler-19 extracts for `id` from `input`.
pub fn bundler_unbundle(dir: &Path, input: &Path, id: &str) -> Vec<u8> {
    let out = dir.join(format!("unbundled-{}", id.replace([':', '/'], "_")));
    run(Command::new("clang-offload-bundler-19")
        .args(["--unbundle", "-type=o"])
        .arg(format!("-targets={id}"))
        .arg(format!("-input={}", input.display()))
        .arg(format!("-output={}", out.display())));
    std::fs::read(out).unwrap()
}
