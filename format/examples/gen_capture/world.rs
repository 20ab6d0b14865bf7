//! The modelled program: its modules, about 1,500 functions with C++-style names, source
//! files and lines, the layered call graph, and the kernel paths it enters.

use super::*;

pub(crate) const M_EXE: usize = 0;
pub(crate) const M_LIBC: usize = 1;
pub(crate) const M_STDCXX: usize = 2;
pub(crate) const M_LIBM: usize = 3;
pub(crate) const M_LIBZ: usize = 4;
pub(crate) const M_CRYPTO: usize = 5;
pub(crate) const M_VDSO: usize = 6;
pub(crate) const M_KERNEL: usize = 7;
pub(crate) const M_KMOD: usize = 8;

pub(crate) const MODULES: &[(ModuleKind, &str)] = &[
    (ModuleKind::Elf, "/opt/renderd/bin/renderd"),
    (ModuleKind::Elf, "/usr/lib/x86_64-linux-gnu/libc.so.6"),
    (
        ModuleKind::Elf,
        "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30",
    ),
    (ModuleKind::Elf, "/usr/lib/x86_64-linux-gnu/libm.so.6"),
    (ModuleKind::Elf, "/usr/lib/x86_64-linux-gnu/libz.so.1.2.13"),
    (ModuleKind::Elf, "/usr/lib/x86_64-linux-gnu/libcrypto.so.3"),
    (ModuleKind::Vdso, "[vdso]"),
    (ModuleKind::Kernel, "[kernel.kallsyms]"),
    (ModuleKind::KernelModule, "nf_conntrack"),
];

#[derive(Debug, Clone)]
pub(crate) struct Func {
    pub(crate) module: usize,
    pub(crate) name: String,
    /// Source file (None: no debug info for this module).
    pub(crate) file: Option<String>,
    pub(crate) line: u32,
    /// File offset of the function's first byte, and its size.
    pub(crate) base: u64,
    pub(crate) size: u64,
    /// Exe layer in the call graph (0 = entry points); libraries use 100.
    pub(crate) layer: usize,
    pub(crate) callees: Vec<usize>,
    /// Kernel path this function enters (index into `KERNEL_PATHS`), for syscall wrappers.
    pub(crate) syscall: Option<usize>,
}

/// Kernel paths, root (entry) first.
pub(crate) const KERNEL_PATHS: &[&[&str]] = &[
    &[
        "entry_SYSCALL_64_after_hwframe",
        "do_syscall_64",
        "__x64_sys_write",
        "ksys_write",
        "vfs_write",
        "ext4_buffered_write_iter",
        "generic_perform_write",
        "copy_page_from_iter_atomic",
        "copy_user_enhanced_fast_string",
    ],
    &[
        "entry_SYSCALL_64_after_hwframe",
        "do_syscall_64",
        "__x64_sys_read",
        "ksys_read",
        "vfs_read",
        "ext4_file_read_iter",
        "filemap_read",
        "copy_page_to_iter",
        "_copy_to_iter",
    ],
    &[
        "entry_SYSCALL_64_after_hwframe",
        "do_syscall_64",
        "__x64_sys_epoll_wait",
        "do_epoll_wait",
        "ep_poll",
        "schedule_hrtimeout_range_clock",
        "schedule",
        "__schedule",
        "finish_task_switch.isra.0",
    ],
    &[
        "entry_SYSCALL_64_after_hwframe",
        "do_syscall_64",
        "__x64_sys_futex",
        "do_futex",
        "futex_wake",
        "wake_up_q",
        "try_to_wake_up",
        "_raw_spin_unlock_irqrestore",
    ],
    &[
        "entry_SYSCALL_64_after_hwframe",
        "do_syscall_64",
        "__x64_sys_sendto",
        "__sys_sendto",
        "tcp_sendmsg",
        "tcp_sendmsg_locked",
        "tcp_push",
        "__tcp_push_pending_frames",
        "tcp_write_xmit",
        "__tcp_transmit_skb",
        "ip_queue_xmit",
        "__ip_queue_xmit",
        "ip_output",
        "nf_hook_slow",
        "nf_conntrack_in",
    ],
    &[
        "entry_SYSCALL_64_after_hwframe",
        "do_syscall_64",
        "__x64_sys_mmap",
        "ksys_mmap_pgoff",
        "vm_mmap_pgoff",
        "do_mmap",
        "mmap_region",
        "vma_merge",
    ],
];
/// Entered from any user leaf: page faults and the timer interrupt.
pub(crate) const KERNEL_ASYNC: &[&[&str]] = &[
    &[
        "asm_exc_page_fault",
        "exc_page_fault",
        "do_user_addr_fault",
        "handle_mm_fault",
        "__handle_mm_fault",
        "do_anonymous_page",
        "clear_page_erms",
    ],
    &[
        "asm_sysvec_apic_timer_interrupt",
        "sysvec_apic_timer_interrupt",
        "__sysvec_apic_timer_interrupt",
        "hrtimer_interrupt",
        "__hrtimer_run_queues",
        "tick_sched_timer",
        "update_process_times",
        "scheduler_tick",
        "task_tick_fair",
    ],
];
/// Kernel-module symbols (module `nf_conntrack`).
pub(crate) const KMOD_SYMS: &[&str] = &[
    "nf_conntrack_in",
    "nf_ct_get_tuple",
    "__nf_conntrack_find_get",
];

pub(crate) struct World {
    pub(crate) funcs: Vec<Func>,
    pub(crate) by_name: HashMap<String, usize>,
}

impl World {
    pub(crate) fn add(&mut self, f: Func) -> usize {
        let id = self.funcs.len();
        self.by_name.insert(f.name.clone(), id);
        self.funcs.push(f);
        id
    }
    pub(crate) fn id(&self, name: &str) -> usize {
        self.by_name[name]
    }
}

pub(crate) const NAMESPACES: &[&str] = &[
    "net", "http", "json", "render", "layout", "text", "image", "codec", "db", "cache", "sched",
    "pool", "log", "config", "util", "gc", "alloc", "crypto", "compress", "script", "font",
    "style", "dom", "paint", "ipc",
];
pub(crate) const CLASSES: &[&str] = &[
    "Parser", "Encoder", "Decoder", "Buffer", "Session", "Request", "Queue", "Table", "Shaper",
    "Glyph", "Tile", "Raster", "Path", "Stream", "Index", "Node", "Tree", "Pool", "Arena",
    "Hasher", "Lexer", "Cursor", "Frame", "Batch", "Page", "Cache", "Writer", "Reader", "Atlas",
    "Builder", "Visitor", "Matcher",
];
pub(crate) const METHODS: &[&str] = &[
    "run",
    "step",
    "process",
    "flush",
    "push",
    "pop",
    "lookup",
    "insert",
    "encode",
    "decode",
    "parse_value",
    "visit",
    "layout",
    "measure",
    "draw",
    "blend",
    "hash",
    "compare",
    "resize",
    "grow",
    "tick",
    "poll",
    "dispatch",
    "handle",
    "commit",
    "scan",
    "read_chunk",
    "write_chunk",
    "apply",
    "merge",
    "emit",
    "resolve",
    "collect",
    "sweep",
    "mark",
    "split",
];
pub(crate) const INLINE_HELPERS: &[&str] = &[
    "renderd::util::Span<unsigned char>::operator[](unsigned long) const",
    "std::vector<float, std::allocator<float> >::size() const",
    "renderd::util::load_le32(unsigned char const*)",
    "std::__atomic_base<unsigned long>::fetch_add(unsigned long, std::memory_order)",
    "renderd::util::SmallVec<int, 8ul>::push_back(int const&)",
    "std::min<unsigned long>(unsigned long const&, unsigned long const&)",
    "renderd::util::Hash64::mix(unsigned long)",
    "std::unique_ptr<renderd::dom::Node, std::default_delete<renderd::dom::Node> >::get() const",
];

pub(crate) fn snake(s: &str) -> String {
    let mut o = String::new();
    for (i, ch) in s.chars().enumerate() {
        if ch.is_ascii_uppercase() {
            if i > 0 {
                o.push('_');
            }
            o.push(ch.to_ascii_lowercase());
        } else {
            o.push(ch);
        }
    }
    o
}

/// Builds the functions and the call graph.
pub(crate) fn build_world(rng: &mut Rng) -> World {
    let mut w = World {
        funcs: Vec::new(),
        by_name: HashMap::new(),
    };
    let mut next_off = [0x1_2000u64; 9];
    let mut lib =
        |w: &mut World, rng: &mut Rng, module: usize, name: &str, syscall: Option<usize>| {
            let size = 0x40 + 16 * rng.index(0x80) as u64;
            let base = next_off[module];
            next_off[module] += size + 16 * rng.index(8) as u64;
            let (file, line) = match module {
                // Debian's libc6/libstdc++ ship without line tables unless -dbg packages are in.
                M_LIBZ => (
                    Some(format!("./{}.c", name.trim_end_matches("_z"))),
                    1 + rng.index(1800) as u32,
                ),
                _ => (None, 0),
            };
            w.add(Func {
                module,
                name: name.to_string(),
                file,
                line,
                base,
                size,
                layer: 100,
                callees: Vec::new(),
                syscall,
            })
        };

    // Libraries: leaves and short internal chains.
    for (name, sc) in [
        ("__memmove_avx_unaligned_erms", None),
        ("__memset_avx2_unaligned_erms", None),
        ("__memcmp_avx2_movbe", None),
        ("__strlen_avx2", None),
        ("malloc", None),
        ("_int_malloc", None),
        ("free", None),
        ("_int_free", None),
        ("malloc_consolidate", None),
        ("pthread_mutex_lock", None),
        ("pthread_mutex_unlock", None),
        ("__lll_lock_wait", Some(3)),
        ("__GI___libc_write", Some(0)),
        ("__GI___libc_read", Some(1)),
        ("epoll_wait", Some(2)),
        ("__send", Some(4)),
        ("__mmap", Some(5)),
        ("clock_gettime@@GLIBC_2.17", None),
        ("qsort_r", None),
        ("msort_with_tmp.part.0", None),
        ("__libc_start_main_impl", None),
        ("__libc_start_call_main", None),
        ("start_thread", None),
        ("clone3", None),
        ("__strtod_internal", None),
        ("____strtod_l_internal", None),
        ("__vfprintf_internal", None),
    ] {
        lib(&mut w, rng, M_LIBC, name, sc);
    }
    let edges: &[(&str, &[&str])] = &[
        ("malloc", &["_int_malloc"]),
        ("_int_malloc", &["malloc_consolidate", "__mmap"]),
        ("free", &["_int_free"]),
        ("pthread_mutex_lock", &["__lll_lock_wait"]),
        ("qsort_r", &["msort_with_tmp.part.0"]),
        ("msort_with_tmp.part.0", &["__memmove_avx_unaligned_erms"]),
        ("__strtod_internal", &["____strtod_l_internal"]),
        (
            "__vfprintf_internal",
            &["__strlen_avx2", "__memmove_avx_unaligned_erms"],
        ),
    ];
    for name in [
        "operator new(unsigned long)",
        "operator delete(void*, unsigned long)",
        "std::_Rb_tree_increment(std::_Rb_tree_node_base const*)",
        "std::_Rb_tree_insert_and_rebalance(bool, std::_Rb_tree_node_base*, std::_Rb_tree_node_base*, std::_Rb_tree_node_base&)",
        "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::_M_mutate(unsigned long, unsigned long, char const*, unsigned long)",
        "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::_M_append(char const*, unsigned long)",
        "std::_Hash_bytes(void const*, unsigned long, unsigned long)",
        "std::__detail::_Prime_rehash_policy::_M_need_rehash(unsigned long, unsigned long, unsigned long) const",
        "execute_native_thread_routine",
        "std::condition_variable::wait(std::unique_lock<std::mutex>&)",
    ] {
        lib(&mut w, rng, M_STDCXX, name, None);
    }
    for name in [
        "__sin_fma",
        "__cos_fma",
        "__exp1",
        "__ieee754_log_fma",
        "__ieee754_pow_fma",
        "sincosf",
        "__fmaf",
    ] {
        lib(&mut w, rng, M_LIBM, name, None);
    }
    for name in [
        "deflate",
        "deflate_slow",
        "longest_match",
        "fill_window",
        "inflate",
        "inflate_fast",
        "adler32_z",
        "crc32_z",
    ] {
        lib(&mut w, rng, M_LIBZ, name, None);
    }
    for name in [
        "EVP_DigestUpdate",
        "sha256_block_data_order_avx2",
        "EVP_EncryptUpdate",
        "aesni_ctr32_encrypt_blocks",
        "CRYPTO_gcm128_encrypt_ctr32",
        "aesni_gcm_encrypt",
    ] {
        lib(&mut w, rng, M_CRYPTO, name, None);
    }
    lib(&mut w, rng, M_VDSO, "__vdso_clock_gettime", None);
    let more: &[(&str, &[&str])] = &[
        ("operator new(unsigned long)", &["malloc"]),
        ("operator delete(void*, unsigned long)", &["free"]),
        (
            "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::_M_mutate(unsigned long, unsigned long, char const*, unsigned long)",
            &[
                "operator new(unsigned long)",
                "__memmove_avx_unaligned_erms",
            ],
        ),
        (
            "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::_M_append(char const*, unsigned long)",
            &["__memmove_avx_unaligned_erms"],
        ),
        (
            "std::condition_variable::wait(std::unique_lock<std::mutex>&)",
            &["__lll_lock_wait"],
        ),
        ("deflate", &["deflate_slow"]),
        ("deflate_slow", &["longest_match", "fill_window"]),
        ("fill_window", &["__memmove_avx_unaligned_erms"]),
        ("inflate", &["inflate_fast", "adler32_z"]),
        ("EVP_DigestUpdate", &["sha256_block_data_order_avx2"]),
        (
            "EVP_EncryptUpdate",
            &["CRYPTO_gcm128_encrypt_ctr32", "aesni_ctr32_encrypt_blocks"],
        ),
        ("CRYPTO_gcm128_encrypt_ctr32", &["aesni_gcm_encrypt"]),
        ("clock_gettime@@GLIBC_2.17", &["__vdso_clock_gettime"]),
    ];
    for (from, tos) in edges.iter().chain(more) {
        let f = w.id(from);
        let tos: Vec<usize> = tos.iter().map(|t| w.id(t)).collect();
        w.funcs[f].callees.extend(tos);
    }
    let lib_entry: Vec<usize> = [
        "__memmove_avx_unaligned_erms",
        "__memset_avx2_unaligned_erms",
        "__memcmp_avx2_movbe",
        "__strlen_avx2",
        "malloc",
        "free",
        "pthread_mutex_lock",
        "pthread_mutex_unlock",
        "clock_gettime@@GLIBC_2.17",
        "qsort_r",
        "__strtod_internal",
        "__vfprintf_internal",
        "operator new(unsigned long)",
        "operator delete(void*, unsigned long)",
        "std::_Rb_tree_increment(std::_Rb_tree_node_base const*)",
        "std::_Rb_tree_insert_and_rebalance(bool, std::_Rb_tree_node_base*, std::_Rb_tree_node_base*, std::_Rb_tree_node_base&)",
        "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::_M_mutate(unsigned long, unsigned long, char const*, unsigned long)",
        "std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::_M_append(char const*, unsigned long)",
        "std::_Hash_bytes(void const*, unsigned long, unsigned long)",
        "std::__detail::_Prime_rehash_policy::_M_need_rehash(unsigned long, unsigned long, unsigned long) const",
        "__sin_fma",
        "__cos_fma",
        "__exp1",
        "__ieee754_log_fma",
        "__ieee754_pow_fma",
        "sincosf",
        "deflate",
        "inflate",
        "adler32_z",
        "crc32_z",
        "EVP_DigestUpdate",
        "EVP_EncryptUpdate",
    ]
    .iter()
    .map(|n| w.id(n))
    .collect();
    let io_entry: Vec<usize> = [
        "__GI___libc_write",
        "__GI___libc_read",
        "epoll_wait",
        "__send",
        "std::condition_variable::wait(std::unique_lock<std::mutex>&)",
    ]
    .iter()
    .map(|n| w.id(n))
    .collect();

    // The executable: entry points, then a layered graph of ~1,400 methods.
    for name in [
        "_start",
        "main",
        "renderd::app::EventLoop::run()",
        "renderd::pool::Worker::run()",
    ] {
        let size = 0x80 + 16 * rng.index(0x40) as u64;
        let base = next_off[M_EXE];
        next_off[M_EXE] += size + 16;
        w.add(Func {
            module: M_EXE,
            name: name.into(),
            file: Some("src/main.cpp".into()),
            line: 10 + rng.index(300) as u32,
            base,
            size,
            layer: 0,
            callees: Vec::new(),
            syscall: None,
        });
    }
    const LAYERS: usize = 10;
    let mut layers: Vec<Vec<usize>> = vec![Vec::new(); LAYERS];
    let mut seen = std::collections::HashSet::new();
    while layers.iter().map(Vec::len).sum::<usize>() < 1400 {
        let ns = *rng.pick(NAMESPACES);
        let class = *rng.pick(CLASSES);
        let method = *rng.pick(METHODS);
        let arity = rng.index(3);
        let params = [
            "",
            "unsigned long",
            "renderd::util::Span<unsigned char const>, unsigned long",
        ][arity];
        let name = format!("renderd::{ns}::{class}::{method}({params})");
        if !seen.insert(name.clone()) {
            continue;
        }
        // More functions in the middle layers than at the top.
        let layer = 1 + ((rng.unit().powf(0.7)) * (LAYERS - 1) as f64) as usize;
        let layer = layer.min(LAYERS - 1);
        let size = 0x40 + 16 * rng.index(0x100) as u64;
        let base = next_off[M_EXE];
        next_off[M_EXE] += size + 16 * rng.index(4) as u64;
        let id = w.add(Func {
            module: M_EXE,
            name,
            file: Some(format!("src/{ns}/{}.cpp", snake(class))),
            line: 20 + rng.index(2400) as u32,
            base,
            size,
            layer,
            callees: Vec::new(),
            syscall: None,
        });
        layers[layer].push(id);
    }
    for l in 1..LAYERS {
        for &f in &layers[l].clone() {
            let n = 1 + rng.index(5);
            let mut callees = Vec::new();
            for _ in 0..n {
                let r = rng.unit();
                if l + 1 < LAYERS && r < 0.7 {
                    let target = (l + 1 + rng.index(2)).min(LAYERS - 1);
                    callees.push(*rng.pick(&layers[target]));
                } else if r < 0.97 {
                    callees.push(*rng.pick(&lib_entry));
                } else {
                    callees.push(*rng.pick(&io_entry));
                }
            }
            callees.dedup();
            w.funcs[f].callees = callees;
        }
    }
    // Entry points.
    let main_loop = w.id("renderd::app::EventLoop::run()");
    let worker_run = w.id("renderd::pool::Worker::run()");
    let pick_n =
        |rng: &mut Rng, n: usize| -> Vec<usize> { (0..n).map(|_| *rng.pick(&layers[1])).collect() };
    w.funcs[main_loop].callees = pick_n(rng, 14);
    let ew = w.id("epoll_wait");
    w.funcs[main_loop].callees.push(ew);
    w.funcs[worker_run].callees = pick_n(rng, 18);
    let cv = w.id("std::condition_variable::wait(std::unique_lock<std::mutex>&)");
    w.funcs[worker_run].callees.push(cv);
    let start = w.id("_start");
    let lsm = w.id("__libc_start_main_impl");
    let lscm = w.id("__libc_start_call_main");
    let main = w.id("main");
    w.funcs[start].callees = vec![lsm];
    w.funcs[lsm].callees = vec![lscm];
    w.funcs[lscm].callees = vec![main];
    w.funcs[main].callees = vec![main_loop];
    w
}
