//! `inlay run` stands between the shell and the program: signals sent to
//! `inlay` reach the program, and `inlay` ends as the program ended.

use std::process::ExitStatus;
use std::sync::atomic::{AtomicI32, Ordering};

/// Signals passed on to the program.
const FORWARDED: &[libc::c_int] = &[libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// The program's process id, once started (0 before).
static CHILD: AtomicI32 = AtomicI32::new(0);

extern "C" fn forward(signal: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    let child = CHILD.load(Ordering::Relaxed);
    // A signal the terminal sent (Ctrl-C) went to the whole foreground
    // process group, the program included: passing it on would deliver it twice.
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
    let from_terminal = !info.is_null() && unsafe { (*info).si_code } == libc::SI_KERNEL;
    if child > 0 && !from_terminal {
        // SAFETY: kill is async-signal-safe; `child` is our child's id.
        unsafe { libc::kill(child, signal) };
    }
}

fn mask(how: libc::c_int) {
    // SAFETY: the set is initialised by sigemptyset before use; changing the
    // calling thread's mask has no memory effects.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for &s in FORWARDED {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(how, &set, std::ptr::null_mut());
    }
}

/// Catches the forwarded signals and holds them until [`started`] names the
/// program. The child inherits the mask: it calls [`unblock_in_child`].
pub fn hold() {
    mask(libc::SIG_BLOCK);
    for &signal in FORWARDED {
        // SAFETY: installs a handler that only reads an atomic and calls
        // kill; the struct is zeroed, then the fields sigaction reads are set.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            let handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                forward;
            action.sa_sigaction = handler as libc::sighandler_t;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// In the child, just before exec: the program starts with the signals
/// unblocked (exec resets the handlers to their defaults). Only a system call.
pub fn unblock_in_child() {
    mask(libc::SIG_UNBLOCK);
}

/// The program runs as `pid`: held signals and any that follow go to it.
pub fn started(pid: u32) {
    CHILD.store(i32::try_from(pid).unwrap_or(0), Ordering::Relaxed);
    mask(libc::SIG_UNBLOCK);
}

/// Starting the program failed: signals act on `inlay` itself again.
pub fn release() {
    for &signal in FORWARDED {
        // SAFETY: restores the default action.
        unsafe { libc::signal(signal, libc::SIG_DFL) };
    }
    mask(libc::SIG_UNBLOCK);
}

/// Ends `inlay` as the program ended: with its exit code, or killed by the
/// same signal (so a shell sees "terminated by SIGINT", not a number).
pub fn exit_like(status: ExitStatus) -> ! {
    use std::os::unix::process::ExitStatusExt;
    if let Some(code) = status.code() {
        std::process::exit(code);
    }
    let signal = status.signal().unwrap_or(libc::SIGKILL);
    // SAFETY: restores the default action, makes sure no core file of ours
    // is written (the program's own was, if any), unblocks and raises the
    // signal; all plain system calls.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        let no_core = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::setrlimit(libc::RLIMIT_CORE, &no_core);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signal);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(signal);
    }
    // A signal whose default is not to end the process: say so as shells do.
    std::process::exit(128 + signal)
}
