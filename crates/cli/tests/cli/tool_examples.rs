//! The example tools (examples/tools/*) end to end: each is built with its
//! own Makefile and run by `inlay run --tool ./NAME.so` on the HSA programs
//! of the test suite, and what it prints is checked against an oracle — the
//! built-in tools (themselves checked against the virtual GPU's own
//! counts), the dispatch packets, llvm-objdump's listing and values the
//! test computes. Tools run two at a time where that gives the oracle, so
//! several tools sharing one instrumented copy is tested too.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::*;

/// Builds example `name` with its Makefile (nothing to do when it is up
/// to date), once per test binary: tests run in parallel, and one running
/// the library while another's make rewrites it would fail. None when the
/// toolchain is missing.
pub(crate) fn example(name: &'static str) -> Option<PathBuf> {
    static BUILT: OnceLock<std::sync::Mutex<BTreeMap<&'static str, Option<PathBuf>>>> =
        OnceLock::new();
    let mut built = BUILT
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    built
        .entry(name)
        .or_insert_with(|| make_example(name))
        .clone()
}

fn make_example(name: &str) -> Option<PathBuf> {
    let have_make = Command::new("make").arg("--version").output().is_ok();
    let have_cc = Command::new("cc").arg("--version").output().is_ok();
    if tool_missing("clang-19") || missing("make and a C compiler", have_make && have_cc) {
        return None;
    }
    let bitcode = Path::new("/usr/lib/x86_64-linux-gnu/amdgcn/bitcode/ockl.bc").is_file();
    if missing("ROCm's device libraries (rocm-device-libs)", bitcode) {
        return None;
    }
    let dir = root().join("examples/tools").join(name);
    let out = Command::new("make")
        .arg("-s")
        .arg("-C")
        .arg(&dir)
        .output()
        .expect("make");
    assert!(
        out.status.success(),
        "make -C {}: {}{}",
        dir.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(dir.join(format!("{name}.so")))
}

/// Runs `exe` on the v5 fixtures under `inlay run` with `args`: (stdout,
/// stderr). The program must succeed.
fn run(exe: &Path, args: &[&str]) -> (String, String) {
    let out = inlay_run()
        .args(args)
        .arg("--")
        .arg(exe)
        .arg(root().join("fixtures/gfx90a/v5"))
        .output()
        .expect("inlay run");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success() && (stdout.contains("PASS") || stdout.contains("FAIL")),
        "{args:?}: the program failed ({:?})\n{stdout}\n{stderr}",
        out.status
    );
    (stdout, stderr)
}

/// `prefix: kernel N NAME: COUNT ...` lines: launch index → count, or None
/// for launches the tool could not count.
pub(crate) fn counts(stderr: &str, prefix: &str) -> BTreeMap<u64, Option<u64>> {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix(prefix)?.strip_prefix(": kernel "))
        .map(|rest| {
            let (index, rest) = rest.split_once(' ').expect("index");
            let after = rest.rsplit_once(": ").map(|x| x.1).unwrap_or_default();
            let n = after.split(' ').next().and_then(|n| n.parse().ok());
            (index.parse().expect("launch index"), n)
        })
        .collect()
}

/// kernels.c launches 9 kernels; the 8th (index 7) faults on purpose.
const FAULTING: u64 = 7;

#[test]
fn instr_count_equals_the_built_in_instr_count() {
    let (Some(tool), Some(kernels), Some(shapes)) = (
        example("instr_count"),
        hsa_program("kernels"),
        hsa_program("launch_shapes"),
    ) else {
        return;
    };
    let tool = tool.to_string_lossy().into_owned();
    for exe in [&kernels, &shapes] {
        // Both tools at once: their hooks share one copy of each kernel.
        let (_, stderr) = run(exe, &["--tool", &tool, "--tool", "instr-count"]);
        let mine = counts(&stderr, "instr_count");
        let builtin = counts(&stderr, "instr-count");
        assert!(mine.len() >= 4, "{stderr}");
        assert_eq!(
            mine.keys().collect::<Vec<_>>(),
            builtin.keys().collect::<Vec<_>>(),
            "{stderr}"
        );
        for (launch, n) in &mine {
            if exe == &kernels && *launch == FAULTING {
                assert_eq!(*n, None, "{stderr}");
                continue;
            }
            assert!(n.is_some_and(|n| n > 0), "launch {launch}: {stderr}");
            assert_eq!(*n, builtin[launch], "launch {launch}:\n{stderr}");
        }
        // The built-in tool agreed with the virtual GPU on every launch it counted.
        assert!(
            stderr
                .lines()
                .filter(|l| l.starts_with("instr-count: kernel") && !l.contains("no count"))
                .all(|l| l.ends_with("(the virtual GPU counted the same)")),
            "{stderr}"
        );
    }
}

/// Per launch, executions by opcode as the built-in opcode-hist counted
/// them, from its JSON Lines.
fn histograms(json: &Path) -> BTreeMap<u64, BTreeMap<String, u64>> {
    std::fs::read_to_string(json)
        .expect("json output")
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("JSON"))
        .filter(|r| r["tool"] == "opcode-hist" && r["histogram"].is_object())
        .map(|r| {
            let h = r["histogram"]
                .as_object()
                .expect("histogram")
                .iter()
                .map(|(k, v)| (k.clone(), v.as_u64().expect("count")))
                .collect();
            (r["launch"].as_u64().expect("launch"), h)
        })
        .collect()
}

#[test]
fn instr_count_per_thread_counts_vector_lanes_and_scalar_waves() {
    let (Some(tool), Some(exe)) = (example("instr_count"), hsa_program("kernels")) else {
        return;
    };
    let tool = tool.to_string_lossy().into_owned();
    let dir = std::env::temp_dir();
    let lanes = dir.join(format!("inlay-examples-lanes-{}.jsonl", std::process::id()));
    let waves = dir.join(format!("inlay-examples-waves-{}.jsonl", std::process::id()));
    let (_, stderr) = run(
        &exe,
        &[
            "--tool",
            &tool,
            "--tool-opt",
            "instr_count:count=thread",
            "--tool",
            "opcode-hist",
            "--tool-opt",
            "opcode-hist:count=thread",
            "--tool-opt",
            &format!("json={}", lanes.display()),
        ],
    );
    let (_, _) = run(
        &exe,
        &[
            "--tool",
            "opcode-hist",
            "--tool-opt",
            &format!("json={}", waves.display()),
        ],
    );
    let (lanes_h, waves_h) = (histograms(&lanes), histograms(&waves));
    let _ = std::fs::remove_file(&lanes);
    let _ = std::fs::remove_file(&waves);
    let mine = counts(&stderr, "instr_count");
    let lane_access = ["v_readlane_b32", "v_readfirstlane_b32", "v_writelane_b32"];
    let mut checked = 0;
    for (launch, n) in &mine {
        if *launch == FAULTING {
            continue;
        }
        // Vector instructions count their lanes, scalar and lane-access
        // ones the wave.
        let want: u64 = lanes_h[launch]
            .iter()
            .filter(|(op, _)| !op.starts_with("s_") && !lane_access.contains(&op.as_str()))
            .map(|(_, n)| n)
            .sum::<u64>()
            + waves_h[launch]
                .iter()
                .filter(|(op, _)| op.starts_with("s_") || lane_access.contains(&op.as_str()))
                .map(|(_, n)| n)
                .sum::<u64>();
        assert_eq!(*n, Some(want), "launch {launch}:\n{stderr}");
        checked += 1;
    }
    assert!(checked >= 8, "{stderr}");
}

/// `Kernel N - NAME: Total Grid Size Dims (HSA): (X, Y, Z) Workgroup Dims
/// (HSA): (X, Y, Z) : GridDim (HIP): (X, Y, Z)` lines: (launch, name,
/// grid, workgroup, gridDim or None).
type GridLine = (u64, String, [u64; 3], [u64; 3], Option<[u64; 3]>);

fn grid_lines(stderr: &str) -> Vec<GridLine> {
    let triple = |s: &str| -> Option<[u64; 3]> {
        let s = s.trim().strip_prefix('(')?.strip_suffix(')')?;
        let v: Vec<u64> = s.split(", ").filter_map(|n| n.parse().ok()).collect();
        v.try_into().ok()
    };
    stderr
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("Kernel ")?;
            let (index, rest) = rest.split_once(" - ")?;
            let (name, rest) = rest.split_once(": Total Grid Size Dims (HSA): ")?;
            let (grid, rest) = rest.split_once(" Workgroup Dims (HSA): ")?;
            let (wg, dim) = rest.split_once(" : GridDim (HIP): ")?;
            Some((
                index.parse().ok()?,
                name.to_string(),
                triple(grid)?,
                triple(wg)?,
                triple(dim),
            ))
        })
        .collect()
}

#[test]
fn kernarg_access_reads_grid_dim_in_every_launch_shape() {
    let (Some(tool), Some(counter), Some(kernels), Some(shapes)) = (
        example("kernarg_access"),
        example("instr_count"),
        hsa_program("kernels"),
        hsa_program("launch_shapes"),
    ) else {
        return;
    };
    let tool = tool.to_string_lossy().into_owned();
    let counter = counter.to_string_lossy().into_owned();
    let mut dims_seen = std::collections::BTreeSet::new();
    let mut names = Vec::new();
    for exe in [&kernels, &shapes] {
        // Two hook modules in one copy (both define HIP's weak
        // __cxa_pure_virtual), beside a built-in tool whose counts the
        // second must still equal.
        let (stdout, stderr) = run(
            exe,
            &["--tool", &tool, "--tool", &counter, "--tool", "instr-count"],
        );
        let (mine, builtin) = (
            counts(&stderr, "instr_count"),
            counts(&stderr, "instr-count"),
        );
        assert_eq!(mine, builtin, "{stderr}");
        assert!(
            mine.values().filter(|n| n.is_some()).count() >= 5,
            "{stderr}"
        );
        assert!(stdout.contains("PASS"), "{stdout}");
        let lines = grid_lines(&stderr);
        assert!(lines.len() >= 5, "{stderr}");
        for (launch, name, grid, wg, dim) in lines {
            if exe == &kernels && launch == FAULTING {
                continue;
            }
            // HIP's gridDim: workgroups per dimension, a partial one included.
            let want = [0, 1, 2].map(|d| grid[d].div_ceil(wg[d]));
            assert_eq!(dim, Some(want), "launch {launch} {name}:\n{stderr}");
            // Dimensions of more than one work-item (a 1x1x1 launch has none).
            dims_seen.insert(grid.iter().filter(|&&g| g > 1).count());
            names.push(name);
        }
    }
    // 1-, 2- and 3-D launches, a kernel without implicit arguments
    // (histogram_total), names demangled.
    assert!(
        [1, 2, 3].iter().all(|d| dims_seen.contains(d)),
        "{dims_seen:?}"
    );
    assert!(names.iter().any(|n| n == "histogram_total"), "{names:?}");
    assert!(
        names.iter().any(|n| n
            == "void reduce_sum<unsigned int>(unsigned int const*, unsigned int*, unsigned int)"),
        "{names:?}"
    );
}

/// Per launch, the per-instruction lines a mem-trace tool printed after its
/// `PREFIX: kernel N ...` line.
pub(crate) fn trace_lines(stderr: &str, prefix: &str) -> BTreeMap<u64, Vec<String>> {
    let mut out: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    let mut current = None;
    for l in stderr.lines() {
        if let Some(rest) = l
            .strip_prefix(prefix)
            .and_then(|r| r.strip_prefix(": kernel "))
        {
            let index: u64 = rest
                .split(' ')
                .next()
                .and_then(|n| n.parse().ok())
                .expect("index");
            out.entry(index).or_default();
            current = Some(index);
        } else if let (Some(i), true) = (current, l.starts_with("  0x")) {
            out.entry(i).or_default().push(l.to_string());
        } else {
            current = None;
        }
    }
    out
}

#[test]
fn mem_trace_records_what_the_built_in_mem_trace_records() {
    let (Some(tool), Some(exe)) = (example("mem_trace"), hsa_program("kernels")) else {
        return;
    };
    let tool = tool.to_string_lossy().into_owned();
    // The built-in tool prints its lines after the example's: run them in
    // this order so that their blocks of lines do not interleave.
    let (_, stderr) = run(&exe, &["--tool", &tool, "--tool", "mem-trace"]);
    let mine = trace_lines(&stderr, "mem_trace");
    let builtin = trace_lines(&stderr, "mem-trace");
    assert_eq!(mine.len(), 9, "{stderr}");
    // Every launch but the faulting one is traced, as the built-in tool
    // traces it: no call may be refused.
    assert!(
        !stderr.contains(": no trace (kernel "),
        "a call was refused:\n{stderr}"
    );
    let mut compared = 0;
    for (launch, lines) in &mine {
        if *launch == FAULTING {
            continue;
        }
        assert!(!lines.is_empty(), "launch {launch}:\n{stderr}");
        assert_eq!(lines, &builtin[launch], "launch {launch}:\n{stderr}");
        compared += 1;
    }
    assert_eq!(
        compared,
        mine.len() - 1,
        "{compared} launches traced:\n{stderr}"
    );
    assert!(
        stderr
            .lines()
            .filter(|l| l.starts_with("mem-trace: kernel") && !l.contains("failed"))
            .all(|l| l.ends_with("(the virtual GPU counted the same lanes)")),
        "{stderr}"
    );
}

/// The address and destination VGPR of vector_add's `v_add_f32`, from
/// llvm-objdump-19's listing of the fixture.
fn vector_add_add() -> Option<(u64, u16)> {
    if tool_missing("llvm-objdump-19") {
        return None;
    }
    let out = Command::new("llvm-objdump-19")
        .args(["-d", "--no-show-raw-insn"])
        .arg(root().join("fixtures/gfx90a/v5/vector_add.hsaco"))
        .output()
        .expect("llvm-objdump-19");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("v_add_f32"))
        .expect("vector_add has a v_add_f32");
    // `v_add_f32_e32 v1, v1, v2 // 000000001A34: ...`
    let (insn, comment) = line.split_once("//").expect("address comment");
    let addr =
        u64::from_str_radix(comment.trim().split(':').next().expect("addr"), 16).expect("hex");
    let dst = insn
        .split_whitespace()
        .nth(1)
        .and_then(|d| d.trim_end_matches(',').strip_prefix('v'))
        .and_then(|n| n.parse().ok())
        .expect("a VGPR destination");
    Some((addr, dst))
}

/// The 1-D vector_add results launch_shapes.c printed (bits per element).
fn printed_values(stdout: &str) -> Vec<u32> {
    stdout
        .lines()
        .skip_while(|l| !l.starts_with("vector_add 1d:"))
        .skip(1)
        .take_while(|l| !l.starts_with("vector_add 2d:"))
        .flat_map(|l| l.split_whitespace())
        .map(|w| u32::from_str_radix(w, 16).expect("hex bits"))
        .collect()
}

#[test]
fn reg_write_flips_the_bit_it_is_asked_to() {
    let (Some(tool), Some(exe), Some((addr, dst))) = (
        example("reg_write"),
        hsa_program("launch_shapes"),
        vector_add_add(),
    ) else {
        return;
    };
    let tool = tool.to_string_lossy().into_owned();
    // launch_shapes.c: a[i] = i / 4, b[i] = 1000 - i / 2, c = a + b.
    let sum = |i: usize| (i as f32) * 0.25 + (1000.0 - (i as f32) * 0.5);
    for bit in [31u32, 0, 22] {
        let (stdout, stderr) = run(
            &exe,
            &[
                "--tool",
                &tool,
                "--tool-opt",
                "reg_write:kernel=vector_add",
                "--tool-opt",
                &format!("reg_write:pc={addr:#x}"),
                "--tool-opt",
                &format!("reg_write:reg=v{dst}"),
                "--tool-opt",
                &format!("reg_write:bit={bit}"),
            ],
        );
        let got = printed_values(&stdout);
        assert_eq!(got.len(), 1000, "{stdout}");
        for (i, &g) in got.iter().enumerate() {
            assert_eq!(
                g,
                sum(i).to_bits() ^ (1 << bit),
                "bit {bit}, element {i}:\n{stderr}"
            );
        }
        // Every vector_add launch was hit in every element; histogram_total
        // was left alone.
        assert!(
            stdout.contains("vector_add 1d: 0 of 1000 right"),
            "{stdout}"
        );
        assert!(stdout.contains("vector_add 2d: 0 of 128 right"), "{stdout}");
        assert!(stdout.contains("vector_add 3d: 0 of 64 right"), "{stdout}");
        assert!(
            stdout.contains("histogram_total 3d: 700 (want 700)"),
            "{stdout}"
        );
        let reports = stderr
            .lines()
            .filter(|l| l.starts_with("reg_write: kernel"))
            .count();
        assert_eq!(reports, 3, "{stderr}");
    }
}
