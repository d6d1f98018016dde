//! `inlay run` as a process between the shell and the program: the program's
//! exit status and signals pass through, a program that cannot be run is
//! Inlay's own clear error, `--timeout` reaches the runtime's variable, each
//! build gets its own runtime directory, and `inlay env` gives a shell what
//! `inlay run` gives a program.

mod common;

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

fn sh(script: &str) -> Command {
    let mut cmd = inlay_run();
    cmd.args(["--", "sh", "-c", script]);
    cmd
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn the_programs_exit_code_is_inlays() {
    for code in [0, 1, 7, 255] {
        let status = sh(&format!("exit {code}")).status().unwrap();
        assert_eq!(status.code(), Some(code));
    }
}

#[test]
fn a_program_that_cannot_run_is_inlays_own_error() {
    let dir = std::env::temp_dir().join(format!("inlay-run-cannot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let not_executable = dir.join("data");
    std::fs::write(&not_executable, "just data").unwrap();
    for (program, code, says) in [
        (
            dir.join("no-such-program"),
            127,
            "No such file or directory",
        ),
        (not_executable, 126, "Permission denied"),
        (dir.clone(), 126, "Permission denied"),
    ] {
        let out = inlay_run().arg("--").arg(&program).output().unwrap();
        let stderr = text(&out.stderr);
        // As sh and env(1) exit: 127 when not found, 126 when not runnable.
        assert_eq!(
            out.status.code(),
            Some(code),
            "{}: {stderr}",
            program.display()
        );
        assert_eq!(
            stderr.trim_end(),
            format!(
                "inlay: cannot run {}: {says} (os error {})",
                program.display(),
                if code == 127 { 2 } else { 13 }
            ),
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// Starts `script` under `inlay run`, waits for it to print "ready", sends
/// `signal` to inlay (not to the program) and returns how inlay ended and
/// what the program printed.
fn signal_inlay(script: &str, signal: i32) -> (std::process::ExitStatus, String) {
    use std::io::{BufRead, BufReader};
    let mut child = sh(script).stdout(Stdio::piped()).spawn().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert_eq!(line, "ready\n");
    // SAFETY: sends a signal to our own child process.
    assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
    let started = Instant::now();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    let status = child.wait().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the program ignored the signal"
    );
    (status, rest)
}

#[test]
fn sigint_and_sigterm_reach_the_program() {
    for (signal, name) in [(libc::SIGINT, "INT"), (libc::SIGTERM, "TERM")] {
        // A program that handles the signal: its own exit code comes back.
        let script = format!(
            "trap 'echo got {name}; exit 42' {name}; echo ready; while :; do sleep 0.05; done"
        );
        let (status, printed) = signal_inlay(&script, signal);
        assert_eq!(printed, format!("got {name}\n"));
        assert_eq!(status.code(), Some(42), "SIG{name}");
        // A program the signal ends: inlay ends by the same signal.
        let (status, _) = signal_inlay("echo ready; exec sleep 60", signal);
        assert_eq!(status.signal(), Some(signal), "SIG{name}: {status:?}");
    }
}

#[test]
fn timeout_sets_the_runtimes_variable_and_bad_ones_are_refused() {
    let out = inlay_run()
        .args([
            "--timeout",
            "2.5",
            "--",
            "sh",
            "-c",
            "echo \"$INLAY_DISPATCH_TIMEOUT\"",
        ])
        .env_remove("INLAY_DISPATCH_TIMEOUT")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "2.5\n");
    let marker = std::env::temp_dir().join(format!("inlay-timeout-ran-{}", std::process::id()));
    for bad in ["0", "-1", "soon", "1e3", "2,5", ""] {
        let out = inlay_run()
            .args(["--timeout", bad, "--", "touch"])
            .arg(&marker)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "--timeout {bad:?}");
        assert!(text(&out.stderr).starts_with(&format!("inlay: --timeout {bad}:")));
        assert!(!marker.exists(), "--timeout {bad:?}: the program ran");
    }
}

/// What the program is given: the runtime under ROCr's name first on
/// LD_LIBRARY_PATH, an lsmod listing amdgpu first on PATH, a /dev/kfd that
/// opens read-write.
const SHOW: &str = r#"lib="${LD_LIBRARY_PATH%%:*}/libhsa-runtime64.so.1"; readlink -f "$lib"; lsmod | grep -c '^amdgpu '; : <> /dev/kfd && echo kfd"#;

fn library_copy(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let lib = dir.join("libhsa_runtime64.so");
    std::fs::copy(runtime_library(), &lib).unwrap();
    lib.canonicalize().unwrap()
}

#[test]
fn each_build_gets_its_own_runtime_even_concurrently() {
    let base = std::env::temp_dir().join(format!("inlay-builds-{}", std::process::id()));
    let builds: Vec<PathBuf> = ["a", "b"]
        .iter()
        .map(|b| library_copy(&base.join(b)))
        .collect();
    // Both builds' programs run at once, each several times.
    let children: Vec<_> = (0..6)
        .map(|i| {
            let lib = &builds[i % 2];
            let child = inlay()
                .args(["run", "--", "sh", "-c", SHOW])
                .env("INLAY_HSA_LIBRARY", lib)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            (lib, child)
        })
        .collect();
    for (lib, child) in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(text(&out.stdout), format!("{}\n1\nkfd\n", lib.display()));
    }
    // Each build's directory sits beside its library.
    for lib in &builds {
        let link = lib.with_file_name("inlay-run/lib/libhsa-runtime64.so.1");
        assert_eq!(std::fs::read_link(&link).unwrap(), *lib);
    }
    std::fs::remove_dir_all(&base).ok();
}

#[test]
fn env_gives_a_shell_what_run_gives_a_program() {
    let lib = runtime_library().canonicalize().unwrap();
    let env = inlay()
        .arg("env")
        .env("INLAY_HSA_LIBRARY", &lib)
        .output()
        .unwrap();
    assert!(env.status.success(), "{}", text(&env.stderr));
    let lines = text(&env.stdout);
    // The lines, evaluated by a shell, give its programs the runtime and lsmod.
    let script = format!("{lines}\nlib=\"${{LD_LIBRARY_PATH%%:*}}/libhsa-runtime64.so.1\"; readlink -f \"$lib\"; lsmod | grep -c '^amdgpu '");
    let out = Command::new("sh").args(["-c", &script]).output().unwrap();
    assert!(out.status.success(), "{lines}\n{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), format!("{}\n1\n", lib.display()));
    // What it cannot give, it says: a /dev/kfd needs a new process.
    let kfd_usable = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kfd")
        .is_ok();
    if !kfd_usable {
        assert!(
            text(&env.stderr).contains("inlay: note: this machine has no usable /dev/kfd"),
            "{}",
            text(&env.stderr)
        );
    }
    // `inlay run` gives the same runtime, and a /dev/kfd.
    let run = sh(SHOW).output().unwrap();
    assert_eq!(text(&run.stdout), format!("{}\n1\nkfd\n", lib.display()));
}
