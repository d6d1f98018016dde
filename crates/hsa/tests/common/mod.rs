//! Shared by the oracle tests: finding the drop-in library,
//! a directory that holds it under ROCr's file name, and oracle policy.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// When a tool is missing: fail under INLAY_REQUIRE_ORACLES=1 (CI), else skip with a note.
/// Returns false when the caller should skip.
pub fn oracle_available(what: &str, present: bool) -> bool {
    if present {
        return true;
    }
    if std::env::var("INLAY_REQUIRE_ORACLES").as_deref() == Ok("1") {
        panic!("oracle missing: {what} (INLAY_REQUIRE_ORACLES=1)");
    }
    eprintln!("note: skipping, oracle missing: {what}");
    false
}

pub fn which(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
}

/// The runtime library this test binary was built with. Cargo builds it
/// (crate-type cdylib beside the rlib, see Cargo.toml) into the directory of
/// the test binaries before linking them, so it is never older than the test;
/// a missing one fails the test instead of falling back to another build.
pub fn cdylib() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let lib = exe.with_file_name("libhsa_runtime64.so");
    assert!(
        lib.is_file(),
        "{} is missing: cargo builds it with the tests of inlay-hsa (run them with cargo test)",
        lib.display()
    );
    lib
}

/// A fresh directory with `libhsa-runtime64.so.1` (and `.so` for linking) pointing at our library.
pub fn lib_dir(name: &str) -> PathBuf {
    let lib = cdylib();
    let dir = std::env::temp_dir().join(format!("inlay-hsa-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    for link in ["libhsa-runtime64.so.1", "libhsa-runtime64.so"] {
        std::os::unix::fs::symlink(&lib, dir.join(link)).expect("symlink");
    }
    dir
}

/// A C compiler: gcc, cc or clang-19, whichever is installed.
pub fn c_compiler() -> Option<PathBuf> {
    ["gcc", "cc", "clang-19", "clang"]
        .iter()
        .find_map(|t| which(t))
}

pub fn hsa_headers_present() -> bool {
    Path::new("/usr/include/hsa/hsa.h").is_file()
        && Path::new("/usr/include/hsa/hsa_ext_amd.h").is_file()
}

/// A C program of tests/c compiled against Debian's HSA headers and our
/// library, in a directory of its own that also holds the library.
pub struct CProgram {
    pub exe: PathBuf,
    pub dir: PathBuf,
}

impl CProgram {
    /// The program, ready to run with our library.
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(&self.exe);
        cmd.env("LD_LIBRARY_PATH", &self.dir);
        cmd
    }
}

impl Drop for CProgram {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Compiles tests/c/NAME.c; `None` when the compiler or headers are missing
/// (and allowed to be).
pub fn compile_c(name: &str) -> Option<CProgram> {
    let Some(cc) = c_compiler() else {
        oracle_available("a C compiler (gcc)", false);
        return None;
    };
    if !oracle_available(
        "/usr/include/hsa headers (libhsa-runtime-dev)",
        hsa_headers_present(),
    ) {
        return None;
    }
    // Tests of one binary run in parallel: each program gets its own directory.
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = lib_dir(&format!("{name}-{run}"));
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/c")
        .join(format!("{name}.c"));
    let exe = dir.join(name);
    let out = Command::new(&cc)
        .args(["-std=gnu11", "-O1", "-Wall", "-o"])
        .arg(&exe)
        .arg(&src)
        .arg(format!("-L{}", dir.display()))
        .args(["-lhsa-runtime64", "-lpthread", "-ldl", "-lm"])
        .output()
        .expect("run the C compiler");
    assert!(
        out.status.success(),
        "compiling {name}.c failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(CProgram { exe, dir })
}

/// Compiles tests/c/NAME.c against Debian's HSA headers and our library,
/// runs it with `args` and asserts it exits 0 printing PASS; returns its
/// standard output, or `None` when the compiler or headers are missing (and allowed to be).
pub fn run_c_program(name: &str, args: &[String]) -> Option<String> {
    let program = compile_c(name)?;
    let run = program
        .command()
        .args(args)
        .env("INLAY_LOG", "1")
        .output()
        .expect("run the C program");
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    assert!(
        run.status.success() && stdout.contains("PASS"),
        "{name} {args:?} failed ({:?}):\n{stdout}\n{}",
        run.status,
        String::from_utf8_lossy(&run.stderr)
    );
    Some(stdout)
}

/// How a child process ended, what it printed, and how long it took.
pub struct Ended {
    pub status: std::process::ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub took: std::time::Duration,
}

/// Runs `cmd` to its end, killing it (and failing the test) if it is still
/// running after `bound`: a hang is a failure, never a stalled CI.
pub fn run_bounded(mut cmd: Command, bound: std::time::Duration) -> Ended {
    use std::io::Read;
    use std::process::Stdio;
    let start = std::time::Instant::now();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the program");
    // Drain both pipes on threads so a chatty child never blocks on them.
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let out_t = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out.read_to_end(&mut s);
        s
    });
    let err_t = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        s
    });
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait for the program") {
            break st;
        }
        if start.elapsed() > bound {
            let _ = child.kill();
            let _ = child.wait();
            let so = String::from_utf8_lossy(&out_t.join().unwrap_or_default()).into_owned();
            let se = String::from_utf8_lossy(&err_t.join().unwrap_or_default()).into_owned();
            panic!("{cmd:?} still running after {bound:?}: killed\nstdout:\n{so}\nstderr:\n{se}");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    let took = start.elapsed();
    Ended {
        status,
        stdout: String::from_utf8_lossy(&out_t.join().unwrap_or_default()).into_owned(),
        stderr: String::from_utf8_lossy(&err_t.join().unwrap_or_default()).into_owned(),
        took,
    }
}

/// The exports among `names` that return a value or nothing rather than a
/// status: the signal and queue operations. Given a bad handle they cannot
/// report it; ROCr aborts (tests/hostile.rs checks that we do too).
pub fn value_functions(names: &[String]) -> Vec<String> {
    const STATUS_RETURNING: [&str; 9] = [
        "hsa_signal_create",
        "hsa_signal_destroy",
        "hsa_signal_group_create",
        "hsa_signal_group_destroy",
        "hsa_signal_group_wait_any_relaxed",
        "hsa_signal_group_wait_any_scacquire",
        "hsa_queue_create",
        "hsa_queue_destroy",
        "hsa_queue_inactivate",
    ];
    let mut v: Vec<String> = names
        .iter()
        .filter(|n| n.starts_with("hsa_signal_") || n.starts_with("hsa_queue_"))
        .filter(|n| !STATUS_RETURNING.contains(&n.as_str()))
        .cloned()
        .collect();
    v.sort();
    v.dedup();
    v
}
