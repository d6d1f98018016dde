//! `inlay run -- COMMAND [ARGS...]` and `inlay env`: run programs against
//! Inlay's drop-in `libhsa-runtime64.so.1` instead of ROCr.
//!
//! The program gets this build's runtime and driver stand-ins (see
//! `runtime`), a `/dev/kfd` when the machine has none (see `kfd`), tools and
//! a dispatch time limit through environment variables the runtime reads.
//! `inlay run` passes SIGINT, SIGTERM, SIGHUP and SIGQUIT on to the program
//! and ends as it ended (see `signals`). Nothing is installed and no root is
//! needed.

mod kfd;
mod runtime;
mod signals;

use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::process::{Command, ExitCode};

use runtime::{Runtime, SONAME};

/// The variable the runtime reads for a dispatch time limit, in seconds.
const TIMEOUT_VAR: &str = "INLAY_DISPATCH_TIMEOUT";

/// `PATH`-like `value` with `dir` first, keeping what was there.
fn prepend(dir: &Path, value: Option<OsString>) -> OsString {
    let mut out = OsString::from(dir);
    if let Some(old) = value.filter(|v| !v.is_empty()) {
        out.push(":");
        out.push(old);
    }
    out
}

/// A time limit as `--timeout` takes it: a decimal number of seconds above 0
/// (`2`, `2.5`, `.5`).
fn valid_timeout(secs: &str) -> bool {
    let (whole, fraction) = secs.split_once('.').unwrap_or((secs, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    digits(whole)
        && digits(fraction)
        && !(whole.is_empty() && fraction.is_empty())
        && !(secs.contains('.') && fraction.is_empty())
        && secs.bytes().any(|b| (b'1'..=b'9').contains(&b))
}

/// Runs `command` against Inlay's runtime, with `tools` attached (checked
/// first, then passed to the runtime in `INLAY_TOOL` and `INLAY_TOOL_OPTS`) and `timeout` as the
/// dispatch time limit. Ends the process as the program ended; returns only
/// if the program could not be run.
pub fn run(
    command: &[OsString],
    tools: &[String],
    tool_opts: &[String],
    timeout: Option<&str>,
) -> ExitCode {
    let fail = |what: String| {
        eprintln!("inlay: {what}");
        ExitCode::FAILURE
    };
    let Some((program, args)) = command.split_first() else {
        return fail("usage: inlay run [--tool NAME [--tool-opt KEY=VALUE]...] [--timeout SECS] -- COMMAND [ARGS...]".into());
    };
    if let Some(secs) = timeout.filter(|s| !valid_timeout(s)) {
        return fail(format!(
            "--timeout {secs}: expected a number of seconds above 0, such as 10 or 2.5"
        ));
    }
    let runtime = match Runtime::find() {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    // Tools and their options are refused now, not inside the program.
    let tool_env = match crate::tools::tool_env(tools, tool_opts, &runtime.library) {
        Ok(t) => t,
        Err(e) => return fail(e),
    };
    // A HIP program whose GPU code its HIP runtime cannot load fails
    // obscurely; say why first (and run it anyway: the user may know better).
    if let Some(exe) = crate::hip_compat::resolve(Path::new(program)) {
        for problem in crate::hip_compat::problems(&exe) {
            eprintln!("inlay: warning: {problem}");
        }
    }
    let mut cmd = Command::new(program);
    cmd.args(args)
        .env(
            "LD_LIBRARY_PATH",
            prepend(&runtime.lib_dir(), std::env::var_os("LD_LIBRARY_PATH")),
        )
        .env(
            "PATH",
            prepend(&runtime.bin_dir(), std::env::var_os("PATH")),
        );
    if let Some(t) = &tool_env {
        cmd.env("INLAY_TOOL", &t.tools);
        cmd.env("INLAY_TOOL_OPTS", &t.options);
    }
    if let Some(secs) = timeout {
        cmd.env(TIMEOUT_VAR, secs);
    }
    let mut namespace = None;
    if !kfd::usable() {
        match kfd::Namespace::plan(&runtime.old_dev()) {
            Ok(planned) => namespace = Some(planned),
            Err(e) => note_no_kfd(program, &format!("cannot prepare it: {e}")),
        }
    }
    let (namespace, report) = namespace.unzip();
    use std::os::unix::process::CommandExt;
    // SAFETY: between fork and exec the closure only makes system calls on
    // data prepared before fork (no allocation, no locks), as pre_exec requires.
    unsafe {
        cmd.pre_exec(move || {
            if let Some(namespace) = &namespace {
                namespace.enter();
            }
            signals::unblock_in_child();
            Ok(())
        })
    };
    signals::hold();
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => {
            signals::release();
            eprintln!("inlay: cannot run {}: {e}", program.to_string_lossy());
            // As shells and env(1) report it: 127 not found, 126 not runnable.
            return ExitCode::from(if e.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            });
        }
    };
    signals::started(child.id());
    if let Some(why) = report.and_then(kfd::Report::failure) {
        note_no_kfd(program, &why);
    }
    match child.wait() {
        Ok(status) => signals::exit_like(status),
        Err(e) => fail(format!("waiting for {}: {e}", program.to_string_lossy())),
    }
}

fn note_no_kfd(program: &OsStr, why: &str) {
    eprintln!(
        "inlay: note: {} runs without a /dev/kfd stand-in ({why}); HSA and HIP programs do not need one, but ROCm tools that open /dev/kfd themselves (rocminfo) will refuse to start",
        program.to_string_lossy()
    );
}

/// `inlay env`: shell lines that give programs started from this shell what
/// `inlay run` gives them, and a note on standard error about what they
/// cannot give (a /dev/kfd needs a namespace, which only a new process gets).
pub fn env() -> ExitCode {
    let runtime = match Runtime::find() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("inlay: {e}");
            return ExitCode::FAILURE;
        }
    };
    let quote = |p: &Path| format!("'{}'", p.to_string_lossy().replace('\'', r"'\''"));
    println!(
        "# Inlay's HSA runtime ({SONAME} -> {}) for programs started from this shell",
        runtime.library.display()
    );
    println!(
        "export LD_LIBRARY_PATH={}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}",
        quote(&runtime.lib_dir())
    );
    println!("# an lsmod that lists amdgpu, for ROCm tools that look for the driver");
    println!("export PATH={}:\"$PATH\"", quote(&runtime.bin_dir()));
    println!("# a time limit for every kernel dispatch (seconds), as `inlay run --timeout`:");
    println!("# export {TIMEOUT_VAR}=10");
    if !kfd::usable() {
        eprintln!(
            "inlay: note: this machine has no usable /dev/kfd and a shell cannot be given one; HSA and HIP programs do not need it, but ROCm tools that open it (rocminfo) do: run them with `inlay run -- rocminfo`, or start a shell that has one with `inlay run -- $SHELL`"
        );
    }
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prepend_puts_our_directory_first() {
        let v = prepend(Path::new("/x/lib"), Some("/usr/lib".into()));
        assert_eq!(v, "/x/lib:/usr/lib");
        assert_eq!(prepend(Path::new("/x"), Some("".into())), "/x");
        assert_eq!(prepend(Path::new("/x"), None), "/x");
    }

    #[test]
    fn timeouts_are_decimal_seconds_above_zero() {
        for ok in ["1", "2.5", ".5", "0.25", "10", "007"] {
            assert!(valid_timeout(ok), "{ok}");
        }
        for bad in [
            "", "0", "0.0", ".", "1.", "-1", "1e3", "inf", "nan", "2,5", " 1", "1s",
        ] {
            assert!(!valid_timeout(bad), "{bad}");
        }
    }
}
