//! Frames and stacks: the threads' roles and CPU demand, and random walks down the call
//! graph (into the kernel where a path enters it) that make the catalogue of stacks.

use super::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum FrameKey {
    /// (function, file offset)
    User(usize, u64),
    /// (module, symbol, offset)
    Kernel(usize, &'static str, u64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Main,
    Compositor,
    Worker,
    Io,
    Gc,
}

pub(crate) fn roles(threads: usize) -> Vec<Role> {
    let mut v = vec![Role::Main, Role::Compositor];
    if threads >= 4 {
        v.push(Role::Io);
    }
    if threads >= 5 {
        v.push(Role::Gc);
    }
    while v.len() < threads {
        v.push(Role::Worker);
    }
    v
}

pub(crate) fn thread_name(role: Role, i: usize) -> String {
    match role {
        Role::Main => "renderd".into(),
        Role::Compositor => "compositor".into(),
        Role::Io => "io-loop".into(),
        Role::Gc => "gc-sweeper".into(),
        Role::Worker => format!("worker-{i}"),
    }
}

/// CPU demand: the chance the thread wants a CPU when one is being handed out.
pub(crate) fn demand(role: Role) -> f64 {
    match role {
        Role::Main => 0.9,
        Role::Compositor => 0.6,
        Role::Worker => 0.95,
        Role::Io => 0.35,
        Role::Gc => 0.25,
    }
}

/// A return address inside `caller` for its call to `callee`.
pub(crate) fn call_site(w: &World, caller: usize, callee: usize) -> u64 {
    let f = &w.funcs[caller];
    let slots = (f.size / 8).max(2);
    f.base + 5 + 8 * (hash2(caller as u64, callee as u64) % (slots - 1))
}

/// One random stack for `role`, leaf first.
pub(crate) fn walk(w: &World, role: Role, rng: &mut Rng) -> Vec<FrameKey> {
    let id = |n: &str| w.id(n);
    // Root-first chain of functions, then user frames.
    let mut chain: Vec<usize> = match role {
        Role::Main => vec![
            id("_start"),
            id("__libc_start_main_impl"),
            id("__libc_start_call_main"),
            id("main"),
            id("renderd::app::EventLoop::run()"),
        ],
        _ => vec![
            id("clone3"),
            id("start_thread"),
            id("execute_native_thread_routine"),
            id("renderd::pool::Worker::run()"),
        ],
    };
    let depth_target = 3 + rng.index(match role {
        Role::Main | Role::Compositor => 22,
        Role::Worker => 16,
        Role::Io | Role::Gc => 8,
    });
    // The role picks its own part of the graph: a role-specific first callee.
    let mut cur = *chain.last().unwrap_or(&0);
    let mut steps = 0;
    loop {
        let callees = &w.funcs[cur].callees;
        if callees.is_empty() || steps >= depth_target {
            break;
        }
        let next = if steps == 0 {
            let salt = match role {
                Role::Main => 0,
                Role::Compositor => 1,
                Role::Worker => 2,
                Role::Io => 3,
                Role::Gc => 4,
            };
            // Each role's stacks start from a third of the entry callees.
            let k = callees.len();
            let third = (k / 3).max(1);
            callees[(salt * 5 + rng.index(third)) % k]
        } else if role == Role::Io && rng.chance(0.2) {
            *rng.pick(&[
                id("__GI___libc_write"),
                id("__GI___libc_read"),
                id("epoll_wait"),
                id("__send"),
            ])
        } else {
            *rng.pick(callees)
        };
        chain.push(next);
        cur = next;
        steps += 1;
        // Library code often is the leaf; the program's own code is, often enough.
        let stop = if w.funcs[cur].layer == 100 { 0.5 } else { 0.15 };
        if rng.chance(stop) {
            break;
        }
    }
    let mut frames: Vec<FrameKey> = Vec::new();
    // Kernel part (leaf first).
    let leaf = *chain.last().unwrap_or(&0);
    if let Some(p) = w.funcs[leaf].syscall {
        let path = KERNEL_PATHS[p];
        let cut = 2 + rng.index(path.len() - 1);
        kernel_frames(&path[..cut], rng, &mut frames);
    } else if rng.chance(0.04) {
        let path = *rng.pick(KERNEL_ASYNC);
        let cut = 2 + rng.index(path.len() - 1);
        kernel_frames(&path[..cut], rng, &mut frames);
    }
    // User part: the leaf at a hot offset, callers at their call sites.
    let lf = &w.funcs[leaf];
    let hot = hash2(leaf as u64, rng.index(6) as u64) % (lf.size / 4).max(1);
    frames.push(FrameKey::User(leaf, lf.base + 4 * hot));
    for i in (0..chain.len() - 1).rev() {
        frames.push(FrameKey::User(
            chain[i],
            call_site(w, chain[i], chain[i + 1]),
        ));
    }
    frames
}

pub(crate) fn kernel_frames(root_first: &[&'static str], rng: &mut Rng, out: &mut Vec<FrameKey>) {
    for (i, &sym) in root_first.iter().enumerate().rev() {
        let module = if KMOD_SYMS.contains(&sym) {
            M_KMOD
        } else {
            M_KERNEL
        };
        let offset = if i + 1 == root_first.len() {
            0x10 + 4 * rng.index(24) as u64
        } else {
            hash2(sym.len() as u64, sym.as_bytes()[sym.len() / 2] as u64) % 0x200
        };
        out.push(FrameKey::Kernel(module, sym, offset));
    }
}
