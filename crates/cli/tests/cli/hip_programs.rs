//! The project's HIP programs (crates/cli/tests/hip) under `inlay run`, with
//! Debian's HIP 5.2 runtime (`libamdhip64`) and AMD's libraries on top of
//! Inlay's `libhsa-runtime64.so.1`.
//!
//! Each program checks its own results against the same computation on the
//! host and ends with `NAME: PASS`. They are built at test time the way a
//! Debian user builds them:
//!
//! ```text
//! hipcc --offload-arch=gfx90a -O2 PROGRAM.hip -o PROGRAM [-lrocsparse|-lhipsparse|-lrocrand]
//! clang++-19 -x hip --offload-arch=gfx90a -mcode-object-version=4 -O2 \
//!     --rocm-device-lib-path=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode PROGRAM.hip -o PROGRAM -lamdhip64
//! ```
//!
//! (hipcc is Debian's, on clang-15; clang-19 needs the code object version:
//! its default, v5, is more than HIP 5.2's comgr reads.) Every program runs
//! again under each tool (instr-count, opcode-hist, mem-trace, kernel-args):
//! it must still pass, and every count must equal the virtual GPU's own.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use common::*;

const BITCODE: &str = "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode";

/// A test program: its source under tests/hip and the libraries it links.
struct Program {
    name: &'static str,
    source: &'static str,
    libs: &'static [&'static str],
}

const PROGRAMS: &[Program] = &[
    Program {
        name: "runtime_api",
        source: "runtime_api.hip",
        libs: &[],
    },
    Program {
        name: "host_memory",
        source: "host_memory.hip",
        libs: &[],
    },
    Program {
        name: "module_api",
        source: "module_api.hip",
        libs: &[],
    },
    Program {
        name: "rocsparse_csrmv",
        source: "rocsparse_csrmv.cpp",
        libs: &["-lrocsparse"],
    },
    Program {
        name: "hipsparse_csrmv",
        source: "hipsparse_csrmv.cpp",
        libs: &["-lhipsparse"],
    },
    Program {
        name: "rocrand_sobol",
        source: "rocrand_sobol.cpp",
        libs: &["-lrocrand"],
    },
    Program {
        name: "pitched",
        source: "pitched.hip",
        libs: &[],
    },
    Program {
        name: "hostcall",
        source: "hostcall.hip",
        libs: &[],
    },
    Program {
        name: "cooperative",
        source: "cooperative.hip",
        libs: &[],
    },
];

/// Programs also built with clang-19 (code object v4) and run.
const CLANG19: &[&str] = &["runtime_api", "host_memory"];

fn sources() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hip")
}

/// Where this test binary builds its programs.
fn build_dir() -> PathBuf {
    std::env::temp_dir().join(format!("inlay-hip-programs-{}", std::process::id()))
}

fn hipcc(src: &Path, out: &Path, libs: &[&str]) -> Command {
    let mut c = Command::new("hipcc");
    c.args(["--offload-arch=gfx90a", "-O2"])
        .arg(src)
        .arg("-o")
        .arg(out)
        .args(libs);
    c
}

fn clang19(src: &Path, out: &Path, extra: &[&str]) -> Command {
    let mut c = Command::new("clang++-19");
    c.args(["-x", "hip", "--offload-arch=gfx90a", "-O2"])
        .arg(format!("--rocm-device-lib-path={BITCODE}"))
        .args(extra)
        .arg(src)
        .arg("-o")
        .arg(out)
        .arg("-lamdhip64");
    c
}

/// Runs compiler commands two at a time (the CI machine has two cores);
/// panics with the compiler's output if one fails.
fn compile_all(jobs: Vec<(String, Command)>) {
    let mut jobs = jobs.into_iter();
    loop {
        let batch: Vec<(String, Command)> = jobs.by_ref().take(2).collect();
        if batch.is_empty() {
            return;
        }
        let running: Vec<(String, std::process::Child)> = batch
            .into_iter()
            .map(|(what, mut c)| {
                let child = c
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap_or_else(|e| panic!("{what}: {e}"));
                (what, child)
            })
            .collect();
        for (what, child) in running {
            let out = child.wait_with_output().expect("compiler");
            assert!(
                out.status.success(),
                "{what} failed:\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// The built programs (hipcc, and clang-19 for those in [`CLANG19`]), or
/// None when the compilers are missing (and allowed to be).
fn built() -> Option<&'static BTreeMap<String, PathBuf>> {
    static BUILT: OnceLock<Option<BTreeMap<String, PathBuf>>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            if tool_missing("hipcc") || tool_missing("clang++-19") {
                return None;
            }
            let dir = build_dir();
            std::fs::create_dir_all(&dir).expect("build dir");
            let mut jobs = Vec::new();
            let mut built = BTreeMap::new();
            for p in PROGRAMS {
                let out = dir.join(p.name);
                jobs.push((
                    format!("hipcc {}", p.source),
                    hipcc(&sources().join(p.source), &out, p.libs),
                ));
                built.insert(p.name.to_string(), out);
            }
            for name in CLANG19 {
                let p = PROGRAMS.iter().find(|p| p.name == *name).expect("program");
                let out = dir.join(format!("{name}-clang19"));
                let mut c = clang19(
                    &sources().join(p.source),
                    &out,
                    &["-mcode-object-version=4"],
                );
                c.args(p.libs);
                jobs.push((format!("clang++-19 {}", p.source), c));
                built.insert(format!("{name}-clang19"), out);
            }
            compile_all(jobs);
            Some(built)
        })
        .as_ref()
}

/// Runs a built program under `inlay run` with `tool_args`, with a time limit.
fn run(exe: &Path, name: &str, tool_args: &[&str]) -> Output {
    let mut c = inlay_run();
    c.args(tool_args).arg("--").arg(exe);
    if name.starts_with("module_api") {
        c.arg(root().join("fixtures/gfx90a/v4"));
    }
    // A hung program must fail the test, not the CI job.
    let mut timed = Command::new("timeout");
    timed.arg("300").arg(c.get_program()).args(c.get_args());
    for (key, value) in c.get_envs() {
        if let Some(value) = value {
            timed.env(key, value);
        }
    }
    timed.output().expect("inlay run")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The program passed: exit 0 and its PASS line.
fn assert_passed(name: &str, what: &str, out: &Output) {
    let stdout = text(&out.stdout);
    let program = name.trim_end_matches("-clang19");
    assert!(
        out.status.success() && stdout.contains(&format!("{program}: PASS")),
        "{name} {what}: {:?}\n{stdout}\n{}",
        out.status,
        text(&out.stderr)
    );
}

/// What hostcall.hip's say_hello prints, computed here.
fn expected_hello() -> Vec<String> {
    let mut lines: Vec<String> = (0..8)
        .map(|t| {
            let v = 40 + t;
            let parity = if t % 2 == 1 { "odd" } else { "even" };
            format!("hello from thread {t}: {v} squared is {}, {parity}", v * v)
        })
        .collect();
    lines.sort();
    lines
}

fn hello_lines(stdout: &str) -> Vec<String> {
    let mut lines: Vec<String> = stdout
        .lines()
        .filter(|l| l.starts_with("hello from"))
        .map(str::to_string)
        .collect();
    lines.sort();
    lines
}

#[test]
fn programs_pass_under_inlay_run() {
    let Some(built) = built() else { return };
    for (name, exe) in built {
        let out = run(exe, name, &[]);
        assert_passed(name, "under inlay run", &out);
        // Their code objects are ones HIP 5.2 loads: nothing to warn about.
        assert!(
            !text(&out.stderr).contains("inlay: warning"),
            "{name}: {}",
            text(&out.stderr)
        );
        if name == "hostcall" {
            assert_eq!(hello_lines(&text(&out.stdout)), expected_hello());
        }
    }
}

/// The lines a tool printed (its text goes to standard error).
fn tool_lines<'a>(stderr: &'a str, prefix: &str) -> Vec<&'a str> {
    stderr.lines().filter(|l| l.starts_with(prefix)).collect()
}

/// Each program again under each tool: it still passes (the instrumented
/// kernels compute what the originals do), every launch is reported, and
/// every count equals the virtual GPU's own count of the same dispatch.
#[test]
fn programs_pass_under_each_tool() {
    let Some(built) = built() else { return };
    // Every pair is run, so that one failure does not hide the others.
    let mut failed = Vec::new();
    for p in PROGRAMS {
        for tool in ["instr-count", "opcode-hist", "mem-trace", "kernel-args"] {
            let exe = &built[p.name];
            let check = std::panic::AssertUnwindSafe(|| check_under_tool(p, exe, tool));
            if std::panic::catch_unwind(check).is_err() {
                failed.push(format!("{} under {tool}", p.name));
            }
        }
    }
    assert!(failed.is_empty(), "failed (see above): {failed:?}");
}

/// One program under one tool (see [`programs_pass_under_each_tool`]).
fn check_under_tool(p: &Program, exe: &Path, tool: &str) {
    let json = build_dir().join(format!("{}-{tool}.jsonl", p.name));
    let json_opt = format!("json={}", json.display());
    let out = run(exe, p.name, &["--tool", tool, "--tool-opt", &json_opt]);
    assert_passed(p.name, tool, &out);
    let stdout = text(&out.stdout);
    if p.name == "hostcall" {
        assert_eq!(hello_lines(&stdout), expected_hello(), "{tool}");
    }
    let stderr = text(&out.stderr);
    let records: Vec<serde_json::Value> = std::fs::read_to_string(&json)
        .expect("json output")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON object per line"))
        .collect();
    let _ = std::fs::remove_file(&json);
    // Every launch of the program is there, the blit kernels HIP
    // runs for copies and fills among them.
    assert!(
        !records.is_empty(),
        "{} {tool}: no launches\n{stderr}",
        p.name
    );
    for r in &records {
        assert!(r["error"].is_null(), "{} {tool}: {r}\n{stderr}", p.name);
    }
    match tool {
        "instr-count" | "opcode-hist" => {
            let lines = tool_lines(&stderr, &format!("{tool}:"));
            assert_eq!(lines.len(), records.len(), "{} {tool}\n{stderr}", p.name);
            for l in lines {
                assert!(
                    l.ends_with("(the virtual GPU counted the same)"),
                    "{} {tool}: {l}",
                    p.name
                );
            }
            for r in &records {
                if tool == "instr-count" {
                    assert_eq!(r["instructions"], r["native_instructions"], "{r}");
                } else {
                    assert_eq!(r["matches_native"], true, "{r}");
                }
            }
        }
        "mem-trace" => {
            let lines = tool_lines(&stderr, "mem-trace: kernel");
            assert_eq!(lines.len(), records.len(), "{} {tool}\n{stderr}", p.name);
            for l in lines {
                assert!(
                    l.ends_with("(the virtual GPU counted the same lanes)"),
                    "{} mem-trace: {l}",
                    p.name
                );
            }
        }
        _ => {
            if p.name == "runtime_api" {
                // Kernels as HIP users know them: demangled, with
                // HIP's grid in workgroups; HIP's own blit kernels
                // (the copies and fills) there too, and marked.
                let heads = tool_lines(&stderr, "Kernel ");
                assert!(
                    heads.iter().any(|h| h.contains(" - block_sums(float const*, float*, int): Total Grid Size Dims (4096, 1, 1) Workgroup Dims (256, 1, 1) : GridDim (16, 1, 1)")),
                    "{stderr}"
                );
                assert!(
                    heads
                        .iter()
                        .any(|h| h.contains(" - transpose(int const*, int*, int, int): ")
                            && h.ends_with("GridDim (5, 6, 1)")),
                    "{stderr}"
                );
                assert!(
                    heads
                        .iter()
                        .any(|h| h.contains(" - __amd_rocclr_")
                            && h.contains(" [ROCclr blit kernel]: ")),
                    "{stderr}"
                );
            }
            for r in &records {
                assert_eq!(r["source"], "read by the kernel", "{r}");
                for a in r["args"].as_array().expect("args") {
                    assert!(
                        a["read_by_kernel"] == true && a["matches_host"] == true,
                        "{r}"
                    );
                }
            }
        }
    }
}

/// The example tools (examples/tools) on every HIP program, beside the
/// built-in tools they are checked against, all four in one process (their
/// hooks share one instrumented copy of each kernel): the program still
/// passes, and on every launch — HIP's blit kernels, hostcall, cooperative
/// and library kernels among them — `instr_count` counts what the built-in
/// `instr-count` counts and `mem_trace` records what `mem-trace` records.
#[test]
fn example_tools_agree_with_the_built_in_tools_on_hip_programs() {
    use crate::tool_examples::{counts, example, trace_lines};
    let (Some(built), Some(count), Some(trace)) =
        (built(), example("instr_count"), example("mem_trace"))
    else {
        return;
    };
    let (count, trace) = (
        count.to_string_lossy().into_owned(),
        trace.to_string_lossy().into_owned(),
    );
    let mut failed = Vec::new();
    for p in PROGRAMS {
        let check = std::panic::AssertUnwindSafe(|| {
            // Each built-in tool after its example: their blocks of lines
            // then do not interleave.
            let tools = [
                "--tool",
                count.as_str(),
                "--tool",
                "instr-count",
                "--tool",
                trace.as_str(),
                "--tool",
                "mem-trace",
            ];
            let out = run(&built[p.name], p.name, &tools);
            assert_passed(p.name, "under the example tools", &out);
            let stderr = text(&out.stderr);
            let (mine, builtin) = (
                counts(&stderr, "instr_count"),
                counts(&stderr, "instr-count"),
            );
            assert!(!mine.is_empty(), "{}: no launches\n{stderr}", p.name);
            assert_eq!(mine, builtin, "{}: instruction counts\n{stderr}", p.name);
            assert!(
                mine.values().all(Option::is_some),
                "{}: a launch not counted\n{stderr}",
                p.name
            );
            let (mine, builtin) = (
                trace_lines(&stderr, "mem_trace"),
                trace_lines(&stderr, "mem-trace"),
            );
            assert_eq!(
                mine.keys().collect::<Vec<_>>(),
                builtin.keys().collect::<Vec<_>>(),
                "{}: traced launches\n{stderr}",
                p.name
            );
            // The example keeps a fixed number of accesses per launch and
            // says when a launch made more; only whole traces compare.
            let full: Vec<u64> = stderr
                .lines()
                .filter(|l| {
                    l.starts_with("mem_trace: kernel ")
                        && l.ends_with("(trace full: accesses lost)")
                })
                .filter_map(|l| {
                    l["mem_trace: kernel ".len()..]
                        .split(' ')
                        .next()?
                        .parse()
                        .ok()
                })
                .collect();
            assert!(
                full.len() < mine.len(),
                "{}: no whole trace\n{stderr}",
                p.name
            );
            for (launch, lines) in &mine {
                if !full.contains(launch) {
                    assert_eq!(
                        lines, &builtin[launch],
                        "{} launch {launch}: memory trace\n{stderr}",
                        p.name
                    );
                }
            }
            assert!(
                !stderr.contains(": no trace (kernel "),
                "{}: a call was refused\n{stderr}",
                p.name
            );
        });
        if std::panic::catch_unwind(check).is_err() {
            failed.push(p.name);
        }
    }
    assert!(failed.is_empty(), "failed (see above): {failed:?}");
}

/// Builds one program apart (not run with the others).
fn build_one(name: &str, cmd: Command) -> PathBuf {
    let out = build_dir().join(name);
    std::fs::create_dir_all(build_dir()).expect("build dir");
    compile_all(vec![(name.to_string(), cmd)]);
    out
}

/// A kernel storing past the end of its buffer. What ROCr and HIP 5.2 do on
/// a real MI210: the GPU's page fault reaches ROCr's VM fault handler
/// (Runtime::VMFaultHandler), which prints "Memory access fault by GPU
/// node-N ... on address ..." and aborts the process; HIP gets no error to
/// return (the program cannot report one itself). Inlay does the same, and
/// its report names the kernel, the lane, the faulting instruction and the
/// address; the store is refused, so the host-visible buffer after the
/// faulting one is intact (the program's SIGABRT handler checks it and exits
/// with 3).
#[test]
fn a_faulting_kernel_is_reported_and_ends_the_program_as_hip_does() {
    if built().is_none() {
        return;
    }
    let src = sources().join("fault.hip");
    let exe = build_one("fault", hipcc(&src, &build_dir().join("fault"), &[]));
    let out = run(&exe, "fault", &[]);
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("fault: HIP aborted the process; neighbour intact"),
        "{stderr}"
    );
    let address = stdout
        .split("first bad address ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .expect("the program prints the first bad address");
    // ROCr's message, then Inlay's report: the kernel and the address, the
    // lane, the faulting store.
    assert!(
        stderr.contains(&format!(
            "Memory access fault by GPU node-1 on address {address}"
        )),
        "{stderr}"
    );
    let report: Vec<&str> = stderr.lines().filter(|l| l.starts_with("inlay:")).collect();
    assert!(
        report
            .iter()
            .any(|l| l.contains("store_shifted") && l.contains(address)),
        "no report naming the kernel and {address}:\n{stderr}"
    );
    assert!(report.iter().any(|l| l.ends_with(" lane 0")), "{report:?}");
    assert!(
        report
            .iter()
            .any(|l| l.contains("pc ") && l.contains("global_store_dword")),
        "{report:?}"
    );
}

/// `inlay run` says when a program carries GPU code HIP 5.2 cannot use,
/// and what to rebuild with: clang-19's default code object v5, and
/// kernels that call printf built by clang-19 (hidden enqueue arguments).
#[test]
fn inlay_run_names_code_objects_hip_cannot_load() {
    if built().is_none() {
        return;
    }
    let src = sources().join("runtime_api.hip");
    let v5 = build_one(
        "runtime_api-v5",
        clang19(&src, &build_dir().join("runtime_api-v5"), &[]),
    );
    let out = run(&v5, "runtime_api-v5", &[]);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("carries only code object v5 or later for gfx90a")
            && stderr.contains("-mcode-object-version=4"),
        "{stderr}"
    );
    assert!(
        !out.status.success(),
        "a v5-only program cannot run on HIP 5.2"
    );

    let src = sources().join("hostcall.hip");
    let exe = build_one(
        "hostcall-clang19",
        clang19(
            &src,
            &build_dir().join("hostcall-clang19"),
            &["-mcode-object-version=4"],
        ),
    );
    let out = run(&exe, "hostcall-clang19", &[]);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("hidden_default_queue/hidden_completion_action")
            && stderr.contains("say_hello(int)")
            && stderr.contains("Debian's hipcc"),
        "{stderr}"
    );
}
