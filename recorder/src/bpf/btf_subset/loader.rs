//! A loader that does not parse the whole kernel BTF (aya 0.14's `EbpfLoader::new()` does,
//! even when the caller supplies its own with `.btf()`).

use aya::EbpfLoader;

/// `EbpfLoader::new()` without its parse of the whole kernel BTF, for a caller that
/// supplies the BTF to relocate against with `.btf()`.
///
/// The loader reads `/sys/kernel/btf/vmlinux` in `new()` and keeps `None` if that fails.
/// So `new()` runs on a short-lived thread that first installs a seccomp filter failing
/// every `open` of that thread (and of it alone: filters and `no_new_privs` are
/// per-thread, and the thread ends right after). Where that cannot be done (no seccomp),
/// this is plain `EbpfLoader::new()`: slower, same result once `.btf()` is set.
pub fn loader_without_kernel_btf<'a>() -> EbpfLoader<'a> {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("hotspot-loader".into())
            .spawn_scoped(scope, || deny_opens_in_this_thread().then(EbpfLoader::new))
            .ok()
            .and_then(|thread| thread.join().ok())
            .flatten()
    })
    .unwrap_or_else(EbpfLoader::new)
}

/// Makes every later `open`/`openat`/`openat2` of the calling thread fail with ENOENT.
/// Returns whether the filter is in place.
pub(super) fn deny_opens_in_this_thread() -> bool {
    let stmt = |code: u32, k: u32| libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    };
    let jump_if = |nr: libc::c_long| libc::sock_filter {
        code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
        jt: 0,
        jf: 1,
        k: nr as u32,
    };
    let deny = libc::SECCOMP_RET_ERRNO | (libc::ENOENT as u32 & libc::SECCOMP_RET_DATA);
    // seccomp_data.nr is the first word. The architecture is not checked: a foreign
    // calling convention only means an open is not denied, and the loader then parses.
    let mut filter = vec![stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0)];
    #[cfg(target_arch = "x86_64")]
    let denied = [libc::SYS_open, libc::SYS_openat, libc::SYS_openat2];
    #[cfg(not(target_arch = "x86_64"))]
    let denied = [libc::SYS_openat, libc::SYS_openat2];
    for nr in denied {
        filter.push(jump_if(nr));
        filter.push(stmt(libc::BPF_RET | libc::BPF_K, deny));
    }
    filter.push(stmt(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ALLOW));
    let prog = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_mut_ptr(),
    };
    // SAFETY: prctl with integer arguments, then with a pointer to `prog`, which points
    // to `filter`; both outlive the call (the kernel copies the program).
    unsafe {
        libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
            && libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER as libc::c_ulong,
                &prog as *const libc::sock_fprog,
            ) == 0
    }
}
