//! Ctrl-C and SIGTERM set a flag the recording loop polls, so it can finish the capture.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

pub static STOP: AtomicBool = AtomicBool::new(false);

/// A child the stop is passed on to (SIGTERM) as it comes, so that its parent can block
/// in waiting for it rather than wake to look at [`STOP`] (0: none). Whoever sets it
/// clears it before the child is reaped: a pid is not reused before then.
pub static FORWARD: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
    let child = FORWARD.load(Ordering::SeqCst);
    if child > 0 {
        // SAFETY: kill(2) is async-signal-safe; the pid is an unreaped child (see FORWARD).
        unsafe {
            libc::kill(child, libc::SIGTERM);
        }
    }
}

/// Installs the handlers for SIGINT and SIGTERM (a second signal changes nothing: the
/// capture is still finished, because losing it would be worse than waiting).
pub fn install() {
    let handler: extern "C" fn(libc::c_int) = on_signal;
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only touches atomics and calls kill(2): async-signal-safe.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = handler as usize;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}
