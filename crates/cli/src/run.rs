//! `inlay run -- COMMAND [ARGS...]` and `inlay env`: run HSA programs against
//! Inlay's drop-in `libhsa-runtime64.so.1` instead of ROCr.
//!
//! Cargo names the built library `libhsa_runtime64.so` and puts it beside the
//! `inlay` binary. The dynamic loader looks for the SONAME
//! `libhsa-runtime64.so.1`, so we keep a per-user directory under the temp
//! dir holding a symlink of that name and put it first on LD_LIBRARY_PATH.
//! Nothing is installed and no root is needed.
//!
//! ROCm tools such as rocminfo check for the kernel driver before they call the
//! runtime (`lsmod | grep amdgpu`, opening `/dev/kfd` read-write). Inlay's runtime
//! needs neither, so `inlay run` provides stand-ins: an `lsmod` on PATH that lists
//! amdgpu and, when the machine has no usable `/dev/kfd`, a private user and mount
//! namespace (`unshare -Urm`, no root needed) whose `/dev/kfd` is `/dev/null`.
//! Inside it the program runs as the namespace's root user.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

const BUILT_NAME: &str = "libhsa_runtime64.so";
const SONAME: &str = "libhsa-runtime64.so.1";

/// The built drop-in library: next to the `inlay` binary (or one level up,
/// for binaries run from target/<profile>/deps).
fn built_library() -> Result<PathBuf, String> {
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot locate the inlay binary: {e}"))?;
    let dir = exe.parent().ok_or("the inlay binary has no directory")?;
    let candidates = [dir.join(BUILT_NAME), dir.join("..").join(BUILT_NAME)];
    candidates.iter().find(|p| p.is_file()).cloned().ok_or_else(|| {
        format!(
            "{BUILT_NAME} not found next to {}; build it with `cargo build -p inlay-hsa` (same profile as inlay)",
            exe.display()
        )
    })
}

/// A directory whose `libhsa-runtime64.so.1` is a symlink to the built library.
pub fn library_dir() -> Result<PathBuf, String> {
    let lib = built_library()?;
    let lib = lib
        .canonicalize()
        .map_err(|e| format!("{}: {e}", lib.display()))?;
    let user = std::env::var("USER").unwrap_or_else(|_| "user".into());
    let dir = std::env::temp_dir()
        .join(format!("inlay-{user}"))
        .join("lib");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let link = dir.join(SONAME);
    if std::fs::read_link(&link).ok().as_deref() != Some(lib.as_path()) {
        // Make the new link beside it and rename over, so a concurrent run never sees none.
        let tmp = dir.join(format!(".{SONAME}.{}", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        std::os::unix::fs::symlink(&lib, &tmp)
            .map_err(|e| format!("cannot link {}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, &link)
            .map_err(|e| format!("cannot place {}: {e}", link.display()))?;
    }
    Ok(dir)
}

/// LD_LIBRARY_PATH with `dir` first, keeping what the user had.
fn library_path(dir: &Path) -> OsString {
    let mut value = OsString::from(dir);
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH").filter(|v| !v.is_empty()) {
        value.push(":");
        value.push(old);
    }
    value
}

/// Mounts a private /dev whose kfd is /dev/null, then runs "$@".
const KFD_NAMESPACE_SCRIPT: &str = r#"set -e
old="$INLAY_OLD_DEV"; mkdir -p "$old"
mount --rbind /dev "$old"
mount -t tmpfs none /dev
for n in null zero full random urandom tty; do
    if [ -e "$old/$n" ]; then touch /dev/$n; mount --bind "$old/$n" /dev/$n; fi
done
for d in shm pts; do
    if [ -d "$old/$d" ]; then mkdir -p /dev/$d; mount --rbind "$old/$d" /dev/$d; fi
done
touch /dev/kfd; mount --bind "$old/null" /dev/kfd
exec "$@"
"#;

/// A directory holding an `lsmod` that lists amdgpu, put first on the program's PATH.
fn driver_stub_dir(lib_dir: &Path) -> Result<PathBuf, String> {
    let bin = lib_dir.with_file_name("bin");
    std::fs::create_dir_all(&bin).map_err(|e| format!("cannot create {}: {e}", bin.display()))?;
    let lsmod = bin.join("lsmod");
    let script = "#!/bin/sh\n# Inlay: the virtual GPU needs no kernel driver, but ROCm tools look for one.\necho 'Module                  Size  Used by'\necho 'amdgpu                     1  0'\n";
    if std::fs::read_to_string(&lsmod).ok().as_deref() != Some(script) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(&lsmod, script)
            .map_err(|e| format!("cannot write {}: {e}", lsmod.display()))?;
        std::fs::set_permissions(&lsmod, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| format!("cannot make {} executable: {e}", lsmod.display()))?;
    }
    Ok(bin)
}

fn kfd_usable() -> bool {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kfd")
        .is_ok()
}

/// Runs `command` against the drop-in runtime and returns its exit code
/// (128 + signal number if a signal ended it, as shells report).
/// Runs `command` against Inlay's runtime, with `tools` attached (passed
/// to the runtime in `INLAY_TOOL` and `INLAY_TOOL_OPTS`).
pub fn run(command: &[OsString], tools: &[String], tool_opts: &[String]) -> Result<i32, String> {
    let (program, args) = command
        .split_first()
        .ok_or("usage: inlay run [--tool NAME [--tool-opt KEY=VALUE]...] -- COMMAND [ARGS...]")?;
    if let Some(bad) = tool_opts
        .iter()
        .find(|o| !o.contains('=') || o.contains(';'))
    {
        return Err(format!(
            "--tool-opt {bad}: expected KEY=VALUE (without ';')"
        ));
    }
    // A HIP program whose GPU code its HIP runtime cannot load fails
    // obscurely; say why first (and run it anyway: the user may know better).
    if let Some(exe) = crate::hip_compat::resolve(Path::new(program)) {
        for problem in crate::hip_compat::problems(&exe) {
            eprintln!("inlay: warning: {problem}");
        }
    }
    let dir = library_dir()?;
    let mut path = OsString::from(driver_stub_dir(&dir)?);
    if let Some(old) = std::env::var_os("PATH") {
        path.push(":");
        path.push(old);
    }
    let mut cmd = if kfd_usable() {
        Command::new(program)
    } else {
        let mut c = Command::new("unshare");
        c.args(["-Urm", "sh", "-c", KFD_NAMESPACE_SCRIPT, "sh"])
            .arg(program);
        c.env("INLAY_OLD_DEV", dir.with_file_name("olddev"));
        c
    };
    if !tools.is_empty() {
        cmd.env("INLAY_TOOL", tools.join(","));
        cmd.env("INLAY_TOOL_OPTS", tool_opts.join(";"));
    }
    let status = cmd
        .args(args)
        .env("LD_LIBRARY_PATH", library_path(&dir))
        .env("PATH", path)
        .status()
        .map_err(|e| format!("cannot run {}: {e}", program.to_string_lossy()))?;
    if let Some(code) = status.code() {
        return Ok(code);
    }
    use std::os::unix::process::ExitStatusExt;
    Ok(128 + status.signal().unwrap_or(0))
}

/// Shell lines that do what `inlay run` does, for the current shell.
pub fn env_lines() -> Result<String, String> {
    let dir = library_dir()?;
    let quoted = dir.to_string_lossy().replace('\'', r"'\''");
    Ok(format!(
        "# Inlay's HSA runtime ({SONAME}) for programs started from this shell\nexport LD_LIBRARY_PATH='{quoted}'${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}\n"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_path_puts_our_directory_first() {
        let v = library_path(Path::new("/x/lib"));
        assert!(v.to_string_lossy().starts_with("/x/lib"));
    }

    #[test]
    fn run_without_a_command_is_an_error() {
        assert!(run(&[], &[], &[]).is_err());
    }
}
