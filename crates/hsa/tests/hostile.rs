//! Hostile programs (tests/c/hostile.c) end as they end under ROCr, in
//! bounded time: a kernel that faults with and without a queue error
//! callback and a system event handler, a kernel that never ends (with and
//! without INLAY_DISPATCH_TIMEOUT), a queue destroyed and the runtime shut
//! down under a running kernel, and value functions given bad handles.
//!
//! What "as ROCr" means comes from ROCr's source (rocm-systems,
//! projects/rocr-runtime/runtime/hsa-runtime/core/runtime):
//! - `Runtime::VMFaultHandler` (runtime.cpp): a GPU memory fault goes to the
//!   system event handlers; unless one returns HSA_STATUS_SUCCESS it prints
//!   "Memory access fault by GPU node-N ... on address 0x...". and calls
//!   `abort()`. The queue callback is not involved (`AqlQueue::ExceptionHandler`
//!   suppresses HSA_STATUS_ERROR_MEMORY_FAULT).
//! - `AqlQueue::ExceptionHandler` / `DynamicQueueEventsHandler`
//!   (amd_aql_queue.cpp): other queue errors go to the queue's callback:
//!   a null or invalid code object as HSA_STATUS_ERROR_INVALID_CODE_OBJECT,
//!   an illegal instruction as HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION, a wave
//!   abort or trap as HSA_STATUS_ERROR_EXCEPTION.
//! - `Queue::DefaultErrorHandler` (queue.cpp), the callback of a queue
//!   created without one: prints "Queue at 0x... inactivated due to async
//!   error:\n\t<hsa_status_string>" and aborts.
//! - `handleExceptionT` (hsa.cpp): a value function whose handle does not
//!   convert (`Signal::Convert` throws) aborts the process.
//!
//! A kernel that faulted also gets Inlay's own report on standard error
//! (kernel, workgroup, wave, lane, PC, instruction, address, nearest
//! allocation), under ROCr's line where ROCr prints one; the instruction is
//! checked against llvm-objdump-19's listing of the kernel.

mod common;
use common::{run_bounded, CProgram, Ended};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

/// Wall-clock bound of every case: generous for a loaded 2-core CI machine,
/// short of "hangs".
const BOUND: Duration = Duration::from_secs(90);
const SIGABRT: i32 = 6;
/// What hostile.c's store_lane makes lane BAD_LANE store to.
const BAD_ADDRESS: &str = "0x7e5700000040";
const BAD_LANE: u32 = 37;

struct Setup {
    program: CProgram,
    kernels: PathBuf,
    /// llvm-objdump-19 -d of the kernels: (offset, instruction text).
    listing: Vec<(u64, String)>,
}

/// Builds the kernels (tests/kernels/hostile.s, with clang-19 and ld.lld-19)
/// and the C program once for all tests; None when a tool is missing (and
/// allowed to be).
fn setup() -> Option<&'static Setup> {
    static SETUP: OnceLock<Option<Setup>> = OnceLock::new();
    SETUP
        .get_or_init(|| {
            let tools = ["clang-19", "ld.lld-19", "llvm-objdump-19"];
            for t in tools {
                if !common::oracle_available(t, common::which(t).is_some()) {
                    return None;
                }
            }
            let program = common::compile_c("hostile")?;
            let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernels/hostile.s");
            let obj = program.dir.join("hostile.o");
            let kernels = program.dir.join("hostile.hsaco");
            let run = |cmd: &mut Command| {
                let out = cmd.output().expect("run the toolchain");
                assert!(
                    out.status.success(),
                    "{cmd:?}:\n{}",
                    String::from_utf8_lossy(&out.stderr)
                );
                String::from_utf8_lossy(&out.stdout).into_owned()
            };
            run(Command::new("clang-19")
                .args(["-target", "amdgcn-amd-amdhsa", "-mcpu=gfx90a", "-c"])
                .arg(&src)
                .arg("-o")
                .arg(&obj));
            run(Command::new("ld.lld-19")
                .arg("-shared")
                .arg(&obj)
                .arg("-o")
                .arg(&kernels));
            let text = run(Command::new("llvm-objdump-19").arg("-d").arg(&kernels));
            let listing = text
                .lines()
                .filter_map(|l| {
                    let (inst, comment) = l.split_once("//")?;
                    let off = comment.trim().split(':').next()?;
                    let off = u64::from_str_radix(off, 16).ok()?;
                    Some((off, inst.trim().to_string()))
                })
                .collect();
            Some(Setup {
                program,
                kernels,
                listing,
            })
        })
        .as_ref()
}

/// Runs one case of hostile.c with extra environment variables.
fn case(name: &str, env: &[(&str, &str)]) -> Option<Ended> {
    let s = setup()?;
    let mut cmd = s.program.command();
    cmd.arg(name).arg(&s.kernels).env("INLAY_THREADS", "2");
    for (k, v) in env {
        cmd.env(k, v);
    }
    Some(run_bounded(cmd, BOUND))
}

fn show(e: &Ended) -> String {
    format!(
        "status {:?} after {:?}\nstdout:\n{}\nstderr:\n{}",
        e.status, e.took, e.stdout, e.stderr
    )
}

fn aborted(e: &Ended) {
    assert_eq!(e.status.signal(), Some(SIGABRT), "not aborted: {}", show(e));
}

fn passed(e: &Ended) {
    assert!(
        e.status.success() && e.stdout.lines().any(|l| l == "PASS"),
        "did not pass: {}",
        show(e)
    );
}

/// The "SAW ..." line the program printed, split into words.
fn saw(e: &Ended, first: &str) -> Vec<String> {
    let line = e
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("SAW ").filter(|l| l.starts_with(first)))
        .unwrap_or_else(|| panic!("no `SAW {first}` line: {}", show(e)));
    line.split_whitespace().map(str::to_string).collect()
}

/// The value after `key` on a SAW line.
fn field<'a>(words: &'a [String], key: &str) -> &'a str {
    let i = words
        .iter()
        .position(|w| w == key)
        .unwrap_or_else(|| panic!("no {key} in {words:?}"));
    &words[i + 1]
}

/// The listing's instruction of `kernel` whose text starts with `mnemonic`.
fn instruction(mnemonic: &str) -> (u64, String) {
    let s = setup().expect("set up");
    s.listing
        .iter()
        .find(|(_, t)| t.starts_with(mnemonic))
        .cloned()
        .unwrap_or_else(|| panic!("llvm-objdump-19 lists no {mnemonic}"))
}

/// Inlay's report of the out-of-bounds store: the kernel, the lane, the
/// instruction as llvm-objdump-19 prints it and its offset, the address.
fn check_store_report(stderr: &str) {
    let (offset, text) = instruction("global_store_dword");
    for want in [
        "inlay: kernel `store_lane`: memory fault".to_string(),
        format!("wave 0 lane {BAD_LANE}"),
        format!("(offset {offset:#x} in its code object): {text}"),
        format!("inlay:   address {BAD_ADDRESS}, nearest allocation 0x"),
    ] {
        assert!(stderr.contains(&want), "report lacks `{want}`:\n{stderr}");
    }
}

#[test]
fn fault_without_handlers_prints_rocrs_line_and_inlays_report_then_aborts() {
    for name in ["fault", "fault_callback", "fault_handler_declines"] {
        let Some(e) = case(name, &[]) else { return };
        aborted(&e);
        let rocr = format!("Memory access fault by GPU node-1 on address {BAD_ADDRESS}. Reason: Page not present or supervisor privilege.");
        assert!(e.stderr.contains(&rocr), "{name}: {}", show(&e));
        check_store_report(&e.stderr);
        // A memory fault never reaches the queue's error callback.
        assert!(!e.stdout.contains("SAW callback"), "{name}: {}", show(&e));
    }
}

#[test]
fn fault_handled_by_a_system_event_handler_continues_with_inlays_report() {
    let Some(e) = case("fault_handler", &[]) else {
        return;
    };
    passed(&e);
    let w = saw(&e, "callback");
    assert_eq!(field(&w, "callback"), "0", "callback called: {}", show(&e));
    assert_eq!(field(&w, "events"), "1");
    assert_eq!(field(&w, "address"), BAD_ADDRESS);
    // The completion signal is left alone.
    assert_eq!(field(&w, "signal"), "1");
    assert!(!e.stderr.contains("Memory access fault"), "{}", show(&e));
    check_store_report(&e.stderr);
}

#[test]
fn queue_errors_without_a_callback_print_rocrs_lines_and_abort() {
    for (name, status, report) in [
        (
            "null_kernel",
            "HSA_STATUS_ERROR_INVALID_CODE_OBJECT",
            "kernel dispatch with a null kernel_object".to_string(),
        ),
        (
            "illegal",
            "HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION",
            format!(
                "(offset {:#x} in its code object): {}",
                instruction(".long").0,
                instruction(".long").1
            ),
        ),
    ] {
        let Some(e) = case(name, &[]) else { return };
        aborted(&e);
        assert!(
            e.stderr.contains("inactivated due to async error:\n\t")
                && e.stderr.contains(&format!("\t{status}:")),
            "{name}: {}",
            show(&e)
        );
        assert!(
            e.stderr.contains(&report),
            "{name}: no `{report}`: {}",
            show(&e)
        );
    }
}

#[test]
fn queue_errors_go_to_the_callback_and_the_program_continues() {
    // HSA_STATUS_ERROR_INVALID_CODE_OBJECT, HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION.
    for (name, status) in [
        ("null_kernel_callback", "0x1010"),
        ("illegal_callback", "0x2a"),
    ] {
        let Some(e) = case(name, &[]) else { return };
        passed(&e);
        let w = saw(&e, "callback");
        assert_eq!(field(&w, "callback"), "1", "{name}: {}", show(&e));
        assert_eq!(field(&w, "status"), status, "{name}");
        assert_eq!(field(&w, "signal"), "1", "{name}: completion signal moved");
        assert!(!e.stderr.contains("inactivated"), "{name}: {}", show(&e));
        // A kernel that ran and faulted is reported; a packet that never
        // started a kernel is the callback's alone.
        let (offset, text) = instruction(".long");
        let report = format!("(offset {offset:#x} in its code object): {text}");
        assert_eq!(
            e.stderr.contains(&report),
            name == "illegal_callback",
            "{name}: {}",
            show(&e)
        );
    }
}

#[test]
fn a_spinning_kernel_ends_when_released_and_a_time_limit_does_not_touch_it() {
    let Some(e) = case("spin_released", &[("INLAY_DISPATCH_TIMEOUT", "60")]) else {
        return;
    };
    passed(&e);
}

#[test]
fn a_time_limit_ends_a_kernel_that_never_ends() {
    let Some(e) = case(
        "spin_timeout_callback",
        &[("INLAY_DISPATCH_TIMEOUT", "0.5")],
    ) else {
        return;
    };
    passed(&e);
    let w = saw(&e, "callback");
    assert_eq!(field(&w, "callback"), "1", "{}", show(&e));
    assert_eq!(field(&w, "status"), "0x1016"); // HSA_STATUS_ERROR_EXCEPTION
    assert_eq!(field(&w, "signal"), "1");
    let after: f64 = field(&w, "after").parse().expect("seconds");
    assert!(after >= 0.5, "ended before its limit: {after} s");
    assert!(
        e.stderr
            .contains("inlay: kernel `spin`: time limit of 0.5 s reached"),
        "{}",
        show(&e)
    );

    // Without a callback: ROCr's default handler, with Inlay's report of
    // where the waves were (an instruction of the loop).
    let Some(e) = case("spin_timeout", &[("INLAY_DISPATCH_TIMEOUT", "0.5")]) else {
        return;
    };
    aborted(&e);
    assert!(
        e.stderr.contains("\tHSA_STATUS_ERROR_EXCEPTION:")
            && e.stderr
                .contains("inlay: kernel `spin`: time limit of 0.5 s reached"),
        "{}",
        show(&e)
    );
    let s = setup().expect("set up");
    let loop_start = instruction("global_load_dword").0;
    let loop_end = instruction("s_cbranch_scc1").0;
    let at = s
        .listing
        .iter()
        .filter(|(o, _)| (loop_start..=loop_end).contains(o))
        .any(|(o, t)| {
            e.stderr
                .contains(&format!("(offset {o:#x} in its code object): {t}"))
        });
    assert!(
        at,
        "the report names no instruction of the loop: {}",
        show(&e)
    );
}

#[test]
fn a_bad_time_limit_fails_hsa_init_with_a_message() {
    let Some(e) = case("spin_released", &[("INLAY_DISPATCH_TIMEOUT", "soon")]) else {
        return;
    };
    assert!(!e.status.success(), "{}", show(&e));
    assert!(
        e.stderr
            .contains("INLAY_DISPATCH_TIMEOUT: `soon` is not a number of seconds"),
        "{}",
        show(&e)
    );
}

#[test]
fn destroying_a_queue_or_shutting_down_under_a_running_kernel_returns_promptly() {
    let Some(e) = case("spin_destroy", &[]) else {
        return;
    };
    passed(&e);
    let w = saw(&e, "destroy");
    let took: f64 = field(&w, "took").parse().expect("seconds");
    assert!(took < 5.0, "hsa_queue_destroy took {took} s");
    // Torn down, not failed: no callback, the completion signal left alone.
    assert_eq!(field(&w, "signal"), "1");
    assert_eq!(field(&w, "callback"), "0");

    let Some(e) = case("spin_shutdown", &[]) else {
        return;
    };
    passed(&e);
    let w = saw(&e, "shut");
    let took: f64 = field(&w, "took").parse().expect("seconds");
    assert!(took < 5.0, "hsa_shut_down took {took} s");
    assert_eq!(field(&w, "callback"), "0");

    let Some(e) = case("spin_exit", &[]) else {
        return;
    };
    passed(&e);
}

/// The library's value functions (see `common::value_functions`), from its
/// dynamic symbols (nm -D).
fn value_functions() -> Option<Vec<String>> {
    let nm = common::which("nm");
    if !common::oracle_available("nm (binutils)", nm.is_some()) {
        return None;
    }
    let out = Command::new(nm?)
        .args(["-D", "--defined-only"])
        .arg(common::cdylib())
        .output()
        .ok()?;
    let names: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .filter_map(|n| n.strip_suffix("@@ROCR_1"))
        .map(str::to_string)
        .collect();
    Some(common::value_functions(&names))
}

#[test]
fn value_functions_given_bad_handles_abort_saying_what_was_wrong() {
    let (Some(s), Some(names)) = (setup(), value_functions()) else {
        return;
    };
    assert!(
        names.len() > 70,
        "only {} value functions: {names:?}",
        names.len()
    );
    let mut cmd = s.program.command();
    cmd.arg("misuse").args(&names).env("INLAY_THREADS", "1");
    let e = run_bounded(cmd, BOUND);
    passed(&e);
    let kinds = ["zero", "never created", "destroyed"];
    for (i, name) in names.iter().enumerate() {
        let kind = i % 3;
        let line = e
            .stdout
            .lines()
            .find(|l| l.starts_with(&format!("MISUSE {name} {kind} ")))
            .unwrap_or_else(|| panic!("{name} not tried: {}", show(&e)));
        assert!(
            line.contains(&format!("signal {SIGABRT}: inlay: {name}: ")),
            "{name} with a {} handle: {line}",
            kinds[kind]
        );
        let what = if name.starts_with("hsa_queue_") {
            "is not a queue"
        } else {
            "is not a signal"
        };
        assert!(line.contains(what), "{name}: {line}");
    }
}
