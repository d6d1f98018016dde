//! `inlay run --tool ...` end to end: a C program written against the HSA API
//! (the fixture kernels in the flow of LLVM libc's loader, results checked
//! by the program itself) runs with instrumentation tools attached. The
//! program must still pass (instrumented kernels compute what the originals
//! do), every count must equal the virtual GPU's own count of the same
//! dispatch, kernel-args must print each launch's geometry and the
//! arguments as the kernel read them, and mem-trace must record every
//! lane's address at every memory access.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::*;

/// Compiles crates/hsa/tests/c/kernels.c against the headers and our runtime,
/// once per test binary: the tests run in parallel, and one test exec'ing the
/// program while another's gcc rewrites it fails with ETXTBSY.
fn kernels_program() -> Option<PathBuf> {
    static BUILT: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    BUILT.get_or_init(build_kernels_program).clone()
}

fn build_kernels_program() -> Option<PathBuf> {
    let cc_present = Command::new("gcc").arg("--version").output().is_ok();
    let headers = std::path::Path::new("/usr/include/hsa/hsa.h").is_file();
    if missing(
        "gcc and Debian's HSA headers (libhsa-runtime-dev)",
        cc_present && headers,
    ) {
        return None;
    }
    let dir = std::env::temp_dir().join(format!("inlay-run-tools-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let link = dir.join("libhsa-runtime64.so");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(runtime_library(), &link).expect("symlink");
    let exe = dir.join("kernels");
    let src = root().join("crates/hsa/tests/c/kernels.c");
    let out = Command::new("gcc")
        .args(["-std=gnu11", "-O1", "-o"])
        .arg(&exe)
        .arg(&src)
        .arg(format!("-L{}", dir.display()))
        .args(["-lhsa-runtime64", "-lpthread", "-lm"])
        .output()
        .expect("gcc");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(exe)
}

/// Runs the program under `inlay run` with `args`; returns (stdout, stderr).
fn run(exe: &PathBuf, tool_args: &[&str]) -> (String, String) {
    let fixtures = root().join("fixtures/gfx90a/v5");
    let out = inlay_run()
        .args(tool_args)
        .arg("--")
        .arg(exe)
        .arg(&fixtures)
        .output()
        .expect("inlay run");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success() && stdout.contains("PASS"),
        "{tool_args:?}: the program failed under instrumentation ({:?})\n{stdout}\n{stderr}",
        out.status
    );
    (stdout, stderr)
}

/// The program launches 9 kernels; the 8th faults on purpose.
const LAUNCHES: usize = 9;
const FAULTING: &str = "kernel 7 ";

#[test]
fn instr_count_and_opcode_hist_match_the_virtual_gpu() {
    let Some(exe) = kernels_program() else {
        return;
    };
    for (mode, count) in [
        ("block", "wave"),
        ("instruction", "wave"),
        ("block", "thread"),
    ] {
        let opt = format!("mode={mode}");
        let count_opt = format!("count={count}");
        let json = std::env::temp_dir().join(format!(
            "inlay-run-tools-{}-{mode}-{count}.jsonl",
            std::process::id()
        ));
        let json_opt = format!("json={}", json.display());
        let (_, stderr) = run(
            &exe,
            &[
                "--tool",
                "instr-count",
                "--tool",
                "opcode-hist",
                "--tool-opt",
                &opt,
                "--tool-opt",
                &count_opt,
                "--tool-opt",
                &json_opt,
            ],
        );
        for tool in ["instr-count:", "opcode-hist:"] {
            let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with(tool)).collect();
            assert_eq!(lines.len(), LAUNCHES, "{tool} {mode}:\n{stderr}");
            for l in &lines {
                if l.contains(FAULTING) {
                    assert!(l.contains("memory fault"), "{l}");
                } else {
                    assert!(
                        l.ends_with("(the virtual GPU counted the same)")
                            && l.contains(&format!("hooks per {mode}")),
                        "{l}"
                    );
                }
            }
        }
        // JSON Lines: one record per launch and tool, counts as in the text.
        let records: Vec<serde_json::Value> = std::fs::read_to_string(&json)
            .expect("json output")
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON object per line"))
            .collect();
        let _ = std::fs::remove_file(&json);
        let counts: Vec<&serde_json::Value> = records
            .iter()
            .filter(|r| r["tool"] == "instr-count")
            .collect();
        assert_eq!(counts.len(), LAUNCHES);
        for r in counts.iter().filter(|r| r["error"].is_null()) {
            assert_eq!(r["instructions"], r["native_instructions"], "{r}");
            assert!(r["instructions"].as_u64().unwrap_or(0) > 0, "{r}");
        }
        for r in records
            .iter()
            .filter(|r| r["tool"] == "opcode-hist" && !r["matches_native"].is_null())
        {
            assert_eq!(r["matches_native"], true, "{r}");
        }
    }
}

#[test]
fn kernel_args_prints_geometry_and_arguments() {
    let Some(exe) = kernels_program() else {
        return;
    };
    let json = std::env::temp_dir().join(format!("inlay-kernel-args-{}.jsonl", std::process::id()));
    let json_opt = format!("json={}", json.display());
    let (_, stderr) = run(&exe, &["--tool", "kernel-args", "--tool-opt", &json_opt]);
    // Every argument of every launch was read by the kernel's own hooks and
    // equals what the caller put in the segment.
    let records = std::fs::read_to_string(&json).expect("json output");
    let _ = std::fs::remove_file(&json);
    let mut args = 0;
    for r in records
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("JSON"))
    {
        assert_eq!(r["source"], "read by the kernel", "{r}");
        for a in r["args"].as_array().expect("args") {
            assert!(
                a["read_by_kernel"] == true && a["matches_host"] == true,
                "{r}"
            );
            args += 1;
        }
    }
    let printed = stderr.lines().filter(|l| l.starts_with("  arg ")).count();
    assert!(
        args == printed && args > LAUNCHES,
        "{args} arguments recorded, {printed} printed"
    );
    let heads: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("Kernel "))
        .collect();
    assert_eq!(heads.len(), LAUNCHES, "{stderr}");
    // kernels.c: vector_add over 1000 elements in workgroups of 256;
    // matmul_tiled over 48 x 48 work-items in 16 x 16 groups.
    assert_eq!(
        heads[0],
        "Kernel 0 - vector_add: Total Grid Size Dims (1000, 1, 1) Workgroup Dims (256, 1, 1) : GridDim (4, 1, 1)"
    );
    assert!(heads[5].starts_with(
        "Kernel 5 - matmul_tiled: Total Grid Size Dims (48, 48, 1) Workgroup Dims (16, 16, 1) : GridDim (3, 3, 1)"
    ), "{}", heads[5]);
    // vector_add's fourth argument is n = 1000; matmul's m, n, k are 37, 45, 29.
    let after = |head: &str| -> Vec<String> {
        stderr
            .lines()
            .skip_while(|l| *l != head)
            .skip(1)
            .take_while(|l| l.starts_with("  arg "))
            .map(str::to_string)
            .collect()
    };
    let va = after(heads[0]);
    assert_eq!(va.len(), 4, "{va:?}");
    assert!(va[0].contains("0x") && va[3].ends_with(": 1000"), "{va:?}");
    let mm = after(heads[5]);
    assert_eq!(mm.len(), 6, "{mm:?}");
    assert!(
        mm[3].ends_with(": 37") && mm[4].ends_with(": 45") && mm[5].ends_with(": 29"),
        "{mm:?}"
    );
}

#[test]
fn mem_trace_records_every_access() {
    let Some(exe) = kernels_program() else {
        return;
    };
    let json = std::env::temp_dir().join(format!("inlay-mem-trace-{}.jsonl", std::process::id()));
    let json_opt = format!("json={}", json.display());
    let (_, stderr) = run(
        &exe,
        &[
            "--tool",
            "mem-trace",
            "--tool-opt",
            "dump=1",
            "--tool-opt",
            &json_opt,
        ],
    );
    let heads: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("mem-trace: "))
        .collect();
    assert_eq!(heads.len(), LAUNCHES, "{stderr}");
    let sites = |head: &str| -> Vec<String> {
        stderr
            .lines()
            .skip_while(|l| *l != head)
            .skip(1)
            .take_while(|l| l.starts_with("  0x"))
            .map(str::to_string)
            .collect()
    };
    for h in &heads {
        if h.contains(FAULTING) {
            // The trace holds the accesses up to the fault, the faulting
            // store's lanes among them.
            let at = h
                .split("bytes at ")
                .nth(1)
                .and_then(|r| r.split(':').next())
                .expect("fault address");
            assert!(h.contains("the dispatch failed"), "{h}");
            assert!(
                sites(h)
                    .iter()
                    .any(|s| s.contains("global_store_dword") && s.contains(at)),
                "{h}\n{stderr}"
            );
        } else {
            assert!(
                h.ends_with("(the virtual GPU counted the same lanes)"),
                "{h}"
            );
        }
    }
    // vector_add over 1000 floats: three accesses of 1000 consecutive
    // elements each, 4 bytes apart.
    assert!(
        heads[0].contains(": 48 wave records, 3000 lane accesses at 3 instructions"),
        "{}",
        heads[0]
    );
    for s in sites(heads[0]) {
        let range = s.rsplit(' ').next().expect("range");
        let (lo, hi) = range.split_once("..=").expect("low..=high");
        let parse = |x: &str| u64::from_str_radix(x.trim_start_matches("0x"), 16).expect("hex");
        assert!(s.contains(": 1000 lanes, "), "{s}");
        assert_eq!(parse(hi) - parse(lo), 4 * 999, "{s}");
    }
    // dump=1: every record, with one address per enabled lane.
    let text = std::fs::read_to_string(&json).expect("json output");
    let _ = std::fs::remove_file(&json);
    let dumped: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .filter(|r: &serde_json::Value| r["launch"] == 0 && !r["exec"].is_null())
        .collect();
    assert_eq!(dumped.len(), 48);
    for r in &dumped {
        let exec = r["exec"].as_u64().expect("exec");
        assert_eq!(
            r["addresses"].as_array().expect("addresses").len(),
            exec.count_ones() as usize,
            "{r}"
        );
    }
}

/// `inlay run` with `args` around a program that would leave a marker file:
/// (exit code, stderr, whether the program ran).
fn refused(args: &[&str]) -> (i32, String, bool) {
    let marker = std::env::temp_dir().join(format!(
        "inlay-refused-{}-{}",
        std::process::id(),
        args.join("_").replace(['/', ' ', ':', '='], "-")
    ));
    let _ = std::fs::remove_file(&marker);
    let out = inlay_run()
        .args(args)
        .args(["--", "touch"])
        .arg(&marker)
        .output()
        .expect("inlay run");
    let ran = marker.exists();
    let _ = std::fs::remove_file(&marker);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        ran,
    )
}

#[test]
fn bad_tool_options_are_refused_before_the_program_starts() {
    let not_a_tool = "/usr/lib/x86_64-linux-gnu/libm.so.6";
    let cases: &[(&[&str], &str)] = &[
        (
            &["--tool", "instr-count", "--tool-opt", "mod=instruction"],
            "unknown tool option mod=instruction",
        ),
        (
            &["--tool-opt", "mode=block"],
            "--tool-opt mode=block given without --tool",
        ),
        (&["--tool", "nosuch"], "no tool named nosuch"),
        (
            &["--tool", "instr-count", "--tool-opt", "mode=sideways"],
            "mode=sideways: expected block or instruction",
        ),
        (
            &["--tool", "mem-trace", "--tool-opt", "capacity=0"],
            "capacity=0: expected MiB",
        ),
        (
            &["--tool", "instr-count", "--tool-opt", "mem-trace:dump=1"],
            "tool option for mem-trace, which is not attached",
        ),
        (
            &["--tool", "kernel-args", "--tool-opt", "mode=block"],
            "unknown tool option mode=block",
        ),
        (
            &["--tool", "instr-count", "--tool", "instr-count"],
            "named twice",
        ),
        (&["--tool", "./no/such/tool.so"], "No such file"),
        (&["--tool", not_a_tool], "exports no inlay_tool_init"),
        (
            &["--tool", "instr-count", "--tool-opt", "novalue"],
            "expected KEY=VALUE",
        ),
    ];
    for (args, want) in cases {
        if args.contains(&not_a_tool) && !std::path::Path::new(not_a_tool).exists() {
            continue;
        }
        let (code, stderr, ran) = refused(args);
        assert_eq!(code, 1, "{args:?}: {stderr}");
        assert!(!ran, "{args:?}: the program ran");
        assert!(
            stderr.contains(want),
            "{args:?}: want {want:?} in:\n{stderr}"
        );
        assert!(!stderr.contains("INVALID_ARGUMENT"), "{args:?}: {stderr}");
    }
    // Options several tools read reach them all; a scoped one reaches one.
    let (code, stderr, ran) = refused(&[
        "--tool",
        "instr-count",
        "--tool",
        "opcode-hist",
        "--tool-opt",
        "mode=instruction",
        "--tool-opt",
        "opcode-hist:count=thread",
    ]);
    assert!(code == 0 && ran, "{stderr}");
}

#[test]
fn two_tools_at_once_both_get_their_hooks() {
    let Some(exe) = kernels_program() else {
        return;
    };
    // instr-count's counts and mem-trace's lanes are each checked against
    // the virtual GPU's counts at the instructions of the copy that ran:
    // both can be right only if one copy carries both tools' hooks.
    let (_, stderr) = run(
        &exe,
        &[
            "--tool",
            "instr-count",
            "--tool",
            "mem-trace",
            "--tool-opt",
            "instr-count:mode=instruction",
        ],
    );
    for tool in ["instr-count: kernel", "mem-trace: kernel"] {
        let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with(tool)).collect();
        assert_eq!(lines.len(), LAUNCHES, "{stderr}");
        for l in lines.iter().filter(|l| !l.contains(FAULTING)) {
            assert!(
                l.ends_with("(the virtual GPU counted the same)")
                    || l.ends_with("(the virtual GPU counted the same lanes)"),
                "{l}"
            );
        }
    }
}
