//! Ending the views when their terminal goes away: on SIGHUP, or on a hung-up terminal
//! that sent none.

use std::sync::atomic::Ordering;

use crate::signals;

/// SIGHUP (the terminal went away) stops like Ctrl-C, so the capture is finished and a
/// temporary one removed. So does a hung-up terminal that sent no SIGHUP (only the
/// session leader gets one: a view started from a shell in a closed tmux pane did not),
/// where reading input gives EOF forever and the views would spin instead of ending.
pub fn stop_on_hangup() {
    std::thread::spawn(|| {
        let mut fds = [libc::pollfd {
            fd: libc::STDIN_FILENO,
            events: 0,
            revents: 0,
        }];
        loop {
            // SAFETY: one valid pollfd; with no events asked, poll returns only for
            // POLLHUP, POLLERR or POLLNVAL, which are always reported.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), 1, -1) };
            if n > 0 {
                signals::STOP.store(true, Ordering::SeqCst);
                // crossterm reads a hung-up terminal's EOF (or any error but EAGAIN) in
                // a loop that never returns: an empty non-blocking pipe in its place
                // answers EAGAIN, so its poll times out and the views see `STOP` and end
                // (a live capture is then finished). The pipe's write end stays open so
                // the read keeps answering EAGAIN rather than EOF.
                // SAFETY: pipe2 fills the two-element array; dup2 replaces fds 0-2, which
                // only the views use, and only to reach the terminal that is gone.
                // Output goes to /dev/null: a write to the dead terminal fails with EIO,
                // and the standard library's eprintln (ratatui prints from a Drop) panics
                // on that, which would end the process before the capture is finished.
                unsafe {
                    let mut p = [0 as libc::c_int; 2];
                    if libc::pipe2(p.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) == 0 {
                        libc::dup2(p[0], libc::STDIN_FILENO);
                        libc::close(p[0]);
                    }
                    let null = libc::open(c"/dev/null".as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                    if null >= 0 {
                        libc::dup2(null, libc::STDOUT_FILENO);
                        libc::dup2(null, libc::STDERR_FILENO);
                        libc::close(null);
                    }
                }
                return;
            }
            if n < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                return;
            }
        }
    });
    extern "C" fn on_hup(_: libc::c_int) {
        signals::STOP.store(true, Ordering::SeqCst);
    }
    let handler: extern "C" fn(libc::c_int) = on_hup;
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = handler as usize;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGHUP, &sa, std::ptr::null_mut());
    }
}
