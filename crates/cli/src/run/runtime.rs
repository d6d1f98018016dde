//! Which runtime a program gets, and the directory that hands it over.
//!
//! Cargo names the built library `libhsa_runtime64.so` and puts it beside the
//! `inlay` binary; programs ask the dynamic loader for `libhsa-runtime64.so.1`.
//! Each build of the runtime gets its own directory of stand-ins, next to the
//! library (`target/<profile>/inlay-run/`): `lib/libhsa-runtime64.so.1` links
//! to that build's library, `bin/lsmod` tells ROCm tools that amdgpu is loaded,
//! `olddev/` is where the kfd namespace keeps the real /dev. Two checkouts, two
//! profiles or two test runs never share one, so none loads another's runtime.
//! Where the library's directory is read-only, the directory is made under the
//! temp dir instead, named after the library's path.

use std::path::{Path, PathBuf};

const BUILT_NAME: &str = "libhsa_runtime64.so";
pub const SONAME: &str = "libhsa-runtime64.so.1";
/// Names the library to run with instead of the one next to `inlay`.
pub const LIBRARY_VAR: &str = "INLAY_HSA_LIBRARY";

const LSMOD: &str = "#!/bin/sh\n# Inlay: the virtual GPU needs no kernel driver, but ROCm tools look for one.\necho 'Module                  Size  Used by'\necho 'amdgpu                     1  0'\n";

/// The runtime library of this build and its directory of stand-ins.
pub struct Runtime {
    pub library: PathBuf,
    dir: PathBuf,
}

impl Runtime {
    /// Finds the library (`$INLAY_HSA_LIBRARY`, else next to the `inlay`
    /// binary, or one level up for binaries in target/<profile>/deps) and
    /// makes its directory of stand-ins.
    pub fn find() -> Result<Runtime, String> {
        let library = match std::env::var_os(LIBRARY_VAR).filter(|v| !v.is_empty()) {
            Some(path) => {
                let path = PathBuf::from(path);
                if !path.is_file() {
                    return Err(format!("{LIBRARY_VAR}={}: no such file", path.display()));
                }
                path
            }
            None => beside_inlay()?,
        };
        let library = library
            .canonicalize()
            .map_err(|e| format!("{}: {e}", library.display()))?;
        let beside = library.with_file_name("inlay-run");
        let dir = match prepare(&beside, &library) {
            Ok(()) => beside,
            Err(_) => {
                let temp = temp_dir_for(&library)?;
                prepare(&temp, &library)?;
                temp
            }
        };
        Ok(Runtime { library, dir })
    }

    /// Holds `libhsa-runtime64.so.1`: first on the program's LD_LIBRARY_PATH.
    pub fn lib_dir(&self) -> PathBuf {
        self.dir.join("lib")
    }

    /// Holds the driver stand-ins: first on the program's PATH.
    pub fn bin_dir(&self) -> PathBuf {
        self.dir.join("bin")
    }

    /// Where the kfd namespace keeps the real /dev.
    pub fn old_dev(&self) -> PathBuf {
        self.dir.join("olddev")
    }
}

fn beside_inlay() -> Result<PathBuf, String> {
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot locate the inlay binary: {e}"))?;
    let dir = exe
        .parent()
        .ok_or_else(|| "the inlay binary has no directory".to_string())?;
    [dir.join(BUILT_NAME), dir.join("..").join(BUILT_NAME)]
        .into_iter()
        .find(|p| p.is_file())
        .ok_or_else(|| {
            format!(
                "{BUILT_NAME} not found next to {}; build it with `cargo build -p inlay-hsa` (same profile as inlay), or name one with {LIBRARY_VAR}",
                exe.display()
            )
        })
}

/// Fills `dir` for `library`; every step is idempotent, and links are
/// replaced atomically, so concurrent runs of one build agree.
fn prepare(dir: &Path, library: &Path) -> Result<(), String> {
    let cannot = |what: &str, path: &Path, e: std::io::Error| {
        format!("cannot {what} {}: {e}", path.display())
    };
    for sub in ["lib", "bin", "olddev"] {
        let path = dir.join(sub);
        std::fs::create_dir_all(&path).map_err(|e| cannot("create", &path, e))?;
    }
    let link = dir.join("lib").join(SONAME);
    if std::fs::read_link(&link).ok().as_deref() != Some(library) {
        // Made beside it and renamed over, so a concurrent run never sees none.
        let tmp = dir
            .join("lib")
            .join(format!(".{SONAME}.{}", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        std::os::unix::fs::symlink(library, &tmp).map_err(|e| cannot("link", &tmp, e))?;
        std::fs::rename(&tmp, &link).map_err(|e| cannot("place", &link, e))?;
    }
    let lsmod = dir.join("bin").join("lsmod");
    if std::fs::read_to_string(&lsmod).ok().as_deref() != Some(LSMOD) {
        use std::os::unix::fs::PermissionsExt;
        let tmp = dir
            .join("bin")
            .join(format!(".lsmod.{}", std::process::id()));
        std::fs::write(&tmp, LSMOD).map_err(|e| cannot("write", &tmp, e))?;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| cannot("make executable", &tmp, e))?;
        std::fs::rename(&tmp, &lsmod).map_err(|e| cannot("place", &lsmod, e))?;
    }
    Ok(())
}

/// `<temp>/inlay-<uid>/run-<hash of the library's path>`, in a directory only
/// we own (so nobody else can plant links in it).
fn temp_dir_for(library: &Path) -> Result<PathBuf, String> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    let base = std::env::temp_dir().join(format!("inlay-{uid}"));
    let _ = std::fs::DirBuilder::new().mode(0o700).create(&base);
    let owned = std::fs::symlink_metadata(&base)
        .is_ok_and(|m| m.is_dir() && m.uid() == uid && m.mode() & 0o022 == 0);
    if !owned {
        return Err(format!(
            "{} is not a directory of ours (uid {uid}, not writable by others)",
            base.display()
        ));
    }
    // FNV-1a: stable across runs and Rust versions.
    let hash = library
        .as_os_str()
        .as_encoded_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
    Ok(base.join(format!("run-{hash:016x}")))
}
