//! A `/dev/kfd` for programs on machines without one.
//!
//! ROCm tools such as rocminfo open `/dev/kfd` read-write before they call the
//! runtime. Inlay's runtime needs no driver, so when the machine has no usable
//! `/dev/kfd`, `inlay run` starts the program in a private user and mount
//! namespace (no root needed) whose `/dev` is a tmpfs holding the usual device
//! nodes of the real `/dev` and a `/dev/kfd` that is `/dev/null`. Inside it the
//! program runs as the namespace's root user.
//!
//! The namespace is made in the child between fork and exec, so the program
//! is the process `inlay run` started (signals reach it, its exit status is
//! its own) and a program that cannot be run fails with the system's error,
//! not a wrapper's. If the kernel refuses (user namespaces disabled, as in some
//! containers), the program runs without the stand-in and `inlay run` says so.

use std::ffi::{CString, OsStr};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Character devices bound from the real /dev (when present there).
const NODES: &[&str] = &["null", "zero", "full", "random", "urandom", "tty"];
/// Directories bound from the real /dev.
const DIRS: &[&str] = &["shm", "pts", "mqueue"];
/// Links every /dev has.
const LINKS: &[(&str, &str)] = &[
    ("/proc/self/fd", "fd"),
    ("/proc/self/fd/0", "stdin"),
    ("/proc/self/fd/1", "stdout"),
    ("/proc/self/fd/2", "stderr"),
    ("pts/ptmx", "ptmx"),
];

/// The steps of entering the namespace, named in the note when one fails.
const STEPS: &[&str] = &[
    "creating a user and mount namespace",
    "writing /proc/self/setgroups",
    "writing /proc/self/uid_map",
    "writing /proc/self/gid_map",
    "making mounts private",
    "binding /dev elsewhere",
    "mounting a tmpfs on /dev",
    "binding device nodes into the new /dev",
    "binding /dev/null at /dev/kfd",
];
const STEP_TMPFS: u8 = 6;

/// True if this machine's `/dev/kfd` opens read-write (then no stand-in is needed).
pub fn usable() -> bool {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kfd")
        .is_ok()
}

/// Everything the child needs, prepared before fork: between fork and exec it
/// may not allocate, only make system calls.
pub struct Namespace {
    /// An empty directory where the real /dev stays reachable inside.
    old_dev: CString,
    uid_map: CString,
    gid_map: CString,
    /// (source in the real /dev, path in the new /dev) for nodes and directories.
    nodes: Vec<(CString, CString)>,
    dirs: Vec<(CString, CString)>,
    /// (target, link in the new /dev).
    links: Vec<(CString, CString)>,
    kfd: (CString, CString),
    /// Where the child writes which step failed (step, errno): the write end
    /// of a close-on-exec pipe.
    report: RawFd,
}

/// The parent's end of the report pipe.
pub struct Report {
    read: OwnedFd,
    write: Option<OwnedFd>,
}

fn c_path(path: impl AsRef<OsStr>) -> io::Result<CString> {
    CString::new(path.as_ref().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))
}

impl Namespace {
    /// Plans the namespace, keeping the real /dev at `old_dev` (an empty
    /// directory, created here) inside it.
    pub fn plan(old_dev: &Path) -> io::Result<(Namespace, Report)> {
        std::fs::create_dir_all(old_dev)?;
        let old = |name: &str| c_path(old_dev.join(name));
        let new = |name: &str| c_path(Path::new("/dev").join(name));
        let present = |name: &&&str| Path::new("/dev").join(name).exists();
        let mut fds = [0 as RawFd; 2];
        // SAFETY: `fds` is an array of two ints, as pipe2 requires.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: pipe2 succeeded, so both descriptors are open and ours alone.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // SAFETY: getuid and getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        let namespace = Namespace {
            old_dev: c_path(old_dev)?,
            uid_map: c_path(format!("0 {uid} 1\n"))?,
            gid_map: c_path(format!("0 {gid} 1\n"))?,
            nodes: NODES
                .iter()
                .filter(present)
                .map(|n| Ok((old(n)?, new(n)?)))
                .collect::<io::Result<_>>()?,
            dirs: DIRS
                .iter()
                .filter(present)
                .map(|n| Ok((old(n)?, new(n)?)))
                .collect::<io::Result<_>>()?,
            links: LINKS
                .iter()
                .map(|(target, link)| Ok((c_path(target)?, new(link)?)))
                .collect::<io::Result<_>>()?,
            kfd: (old("null")?, new("kfd")?),
            report: write.as_raw_fd(),
        };
        Ok((
            namespace,
            Report {
                read,
                write: Some(write),
            },
        ))
    }

    /// Enters the namespace: called in the child between fork and exec. On
    /// failure it undoes what it can, writes the step to the report pipe and
    /// returns, so the program still runs (without a /dev/kfd).
    pub fn enter(&self) {
        if let Err((step, errno)) = self.try_enter() {
            if step >= STEP_TMPFS {
                // SAFETY: a NUL-terminated literal; detaching our own tmpfs
                // brings back the real /dev for the program.
                unsafe { libc::umount2(c"/dev".as_ptr(), libc::MNT_DETACH) };
            }
            let mut message = [0u8; 5];
            message[0] = step;
            message[1..].copy_from_slice(&errno.to_le_bytes());
            // SAFETY: writes 5 bytes from a local array to our pipe; write is
            // async-signal-safe. If it fails the parent just learns nothing.
            unsafe { libc::write(self.report, message.as_ptr().cast(), message.len()) };
        }
    }

    fn try_enter(&self) -> Result<(), (u8, i32)> {
        let check = |step: u8, ok: bool| {
            if ok {
                Ok(())
            } else {
                Err((step, io::Error::last_os_error().raw_os_error().unwrap_or(0)))
            }
        };
        // SAFETY (every call below): arguments are NUL-terminated strings
        // prepared before fork, or null where the call allows it; these are
        // plain system calls, safe between fork and exec.
        check(
            0,
            unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) } == 0,
        )?;
        check(1, write_file(c"/proc/self/setgroups", b"deny"))?;
        check(
            2,
            write_file(c"/proc/self/uid_map", self.uid_map.as_bytes()),
        )?;
        check(
            3,
            write_file(c"/proc/self/gid_map", self.gid_map.as_bytes()),
        )?;
        let none = std::ptr::null::<libc::c_char>();
        let private = libc::MS_REC | libc::MS_PRIVATE;
        check(
            4,
            unsafe { libc::mount(none, c"/".as_ptr(), none, private, std::ptr::null()) } == 0,
        )?;
        check(5, bind(c"/dev", &self.old_dev, true))?;
        check(
            STEP_TMPFS,
            unsafe {
                libc::mount(
                    c"tmpfs".as_ptr(),
                    c"/dev".as_ptr(),
                    c"tmpfs".as_ptr(),
                    libc::MS_NOSUID,
                    c"mode=755".as_ptr().cast(),
                )
            } == 0,
        )?;
        for (source, target) in &self.nodes {
            check(7, create_file(target) && bind(source, target, false))?;
        }
        for (source, target) in &self.dirs {
            check(
                7,
                unsafe { libc::mkdir(target.as_ptr(), 0o755) } == 0 && bind(source, target, true),
            )?;
        }
        for (target, link) in &self.links {
            check(
                7,
                unsafe { libc::symlink(target.as_ptr(), link.as_ptr()) } == 0,
            )?;
        }
        check(
            8,
            create_file(&self.kfd.1) && bind(&self.kfd.0, &self.kfd.1, false),
        )
    }
}

impl Report {
    /// After the program started: why it has no /dev/kfd, if entering the
    /// namespace failed.
    pub fn failure(mut self) -> Option<String> {
        // Our copy of the write end; the child's closed at exec.
        drop(self.write.take());
        let mut message = [0u8; 5];
        // SAFETY: reads at most 5 bytes into a local array from our pipe.
        let n = unsafe { libc::read(self.read.as_raw_fd(), message.as_mut_ptr().cast(), 5) };
        if n != 5 {
            return None;
        }
        let step = STEPS.get(usize::from(message[0])).copied().unwrap_or("?");
        let errno = i32::from_le_bytes([message[1], message[2], message[3], message[4]]);
        Some(format!(
            "{step} failed: {}",
            io::Error::from_raw_os_error(errno)
        ))
    }
}

/// Writes `data` to the file `path` (open, write, close: async-signal-safe).
fn write_file(path: &std::ffi::CStr, data: &[u8]) -> bool {
    // SAFETY: `path` is NUL-terminated; `data` is a live slice; the descriptor
    // is closed before returning.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return false;
        }
        let written = libc::write(fd, data.as_ptr().cast(), data.len());
        libc::close(fd);
        written == data.len() as isize
    }
}

/// Creates an empty file to bind a device node onto.
fn create_file(path: &std::ffi::CStr) -> bool {
    // SAFETY: `path` is NUL-terminated; the descriptor is closed at once.
    unsafe {
        let fd = libc::open(
            path.as_ptr(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_CLOEXEC,
            0o666,
        );
        fd >= 0 && libc::close(fd) == 0
    }
}

fn bind(source: &std::ffi::CStr, target: &std::ffi::CStr, recursive: bool) -> bool {
    let flags = libc::MS_BIND | if recursive { libc::MS_REC } else { 0 };
    let none = std::ptr::null::<libc::c_char>();
    // SAFETY: both paths are NUL-terminated; no filesystem type or data.
    unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            none,
            flags,
            std::ptr::null(),
        ) == 0
    }
}
