//! Writes a large, realistic, deterministic capture through the format crate, for the
//! benchmarks (`tools/bench/run`: opening a big capture, time to first frame, re-fold).
//!
//! ```sh
//! cargo run --release -p hotspot-format --example gen_capture -- -o big.hsp \
//!     [--samples 5000000] [--stacks 2000] [--threads 8] [--cpus 8] [--hz 4999] \
//!     [--seed 1] [--zipf 1.1]
//! ```
//!
//! What it models (the same seed always gives the same bytes):
//! - one process (`renderd`, pid 31337) with `--threads` threads in roles: a main thread
//!   (event loop, layout, rendering), a compositor, workers (codecs, compression, hashing,
//!   JSON), an I/O thread (mostly in syscalls) and a GC thread; each thread has its own
//!   CPU demand, and threads are scheduled on `--cpus` CPUs with ~4 ms time slices, so
//!   CPUs are sometimes idle (no sample) and threads migrate;
//! - modules: the executable, libc, libstdc++, libm, libz, libcrypto, the vDSO, the kernel
//!   and a kernel module, each with a build-id; about 1,500 functions with C++-style
//!   demangled names, source files and lines, some frames with inlined functions; kernel
//!   frames as symbol + offset (syscall paths, page faults, timer interrupts);
//! - a catalogue of `--stacks` distinct stacks (4 to ~40 frames), built by random walks
//!   down a layered call graph from each role's entry points; each thread draws its stacks
//!   from a Zipf(`--zipf`) distribution over its role's stacks, re-ranked in each of four
//!   phases (the profile shifts over time, as a real program's does);
//! - timestamps: each CPU's timer fires on an exact grid of period 1e9/`--hz` ns (grids of
//!   different CPUs offset by a fixed phase) plus normal jitter of σ = 2 µs, CLOCK_MONOTONIC
//!   nanoseconds from an uptime of ~5000 s;
//! - definitions (modules, frames, symbols, strings, stacks) are written when a stack is
//!   first sampled, and a block is flushed every second of recorded time, as
//!   `hotspot record` does.
//!
//! Prints one JSON line with what it wrote.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufWriter, Write};

use hotspot_format::{
    Frame, FrameAddr, InlinedFn, Module, ModuleKind, Process, Record, Sample, SessionHeader,
    SourceLoc, Stack, Symbol, Thread, Writer,
};

/// splitmix64.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in (0, 1].
    fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
    fn chance(&mut self, p: f64) -> bool {
        self.unit() <= p
    }
    fn normal(&mut self) -> f64 {
        let (u1, u2) = (self.unit(), self.unit());
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }
}

fn hash2(a: u64, b: u64) -> u64 {
    Rng(a.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ b).next_u64()
}

#[derive(Debug, Clone)]
struct Config {
    out: String,
    samples: u64,
    stacks: usize,
    threads: usize,
    cpus: usize,
    hz: u64,
    seed: u64,
    zipf: f64,
}

fn parse_args() -> Result<Config, String> {
    let mut c = Config {
        out: String::new(),
        samples: 5_000_000,
        stacks: 2000,
        threads: 8,
        cpus: 8,
        hz: 4999,
        seed: 1,
        zipf: 1.1,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().ok_or_else(|| format!("{a} needs a value"));
        let num = |s: String| s.parse::<u64>().map_err(|e| format!("{s}: {e}"));
        match a.as_str() {
            "-o" | "--out" => c.out = val()?,
            "--samples" => c.samples = num(val()?)?,
            "--stacks" => c.stacks = num(val()?)? as usize,
            "--threads" => c.threads = num(val()?)? as usize,
            "--cpus" => c.cpus = num(val()?)? as usize,
            "--hz" => c.hz = num(val()?)?,
            "--seed" => c.seed = num(val()?)?,
            "--zipf" => {
                let s = val()?;
                c.zipf = s.parse().map_err(|e| format!("{s}: {e}"))?;
            }
            "-h" | "--help" => {
                return Err("usage: gen_capture -o FILE [--samples N] [--stacks K] \
                            [--threads T] [--cpus C] [--hz HZ] [--seed S] [--zipf S]"
                    .into());
            }
            _ => return Err(format!("unknown argument {a}")),
        }
    }
    if c.out.is_empty() {
        return Err("-o FILE is required".into());
    }
    if c.threads < 2 || c.cpus < 1 || c.hz < 1 || c.stacks < 20 {
        return Err("need --threads ≥ 2, --cpus ≥ 1, --hz ≥ 1, --stacks ≥ 20".into());
    }
    Ok(c)
}

// ---------------------------------------------------------------------------------------
// Modules and functions.

const M_EXE: usize = 0;
const M_LIBC: usize = 1;
const M_STDCXX: usize = 2;
const M_LIBM: usize = 3;
const M_LIBZ: usize = 4;
const M_CRYPTO: usize = 5;
const M_VDSO: usize = 6;
const M_KERNEL: usize = 7;
const M_KMOD: usize = 8;

const MODULES: &[(ModuleKind, &str)] = &[
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
struct Func {
    module: usize,
    name: String,
    /// Source file (None: no debug info for this module).
    file: Option<String>,
    line: u32,
    /// File offset of the function's first byte, and its size.
    base: u64,
    size: u64,
    /// Exe layer in the call graph (0 = entry points); libraries use 100.
    layer: usize,
    callees: Vec<usize>,
    /// Kernel path this function enters (index into `KERNEL_PATHS`), for syscall wrappers.
    syscall: Option<usize>,
}

/// Kernel paths, root (entry) first.
const KERNEL_PATHS: &[&[&str]] = &[
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
const KERNEL_ASYNC: &[&[&str]] = &[
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
const KMOD_SYMS: &[&str] = &[
    "nf_conntrack_in",
    "nf_ct_get_tuple",
    "__nf_conntrack_find_get",
];

struct World {
    funcs: Vec<Func>,
    by_name: HashMap<String, usize>,
}

impl World {
    fn add(&mut self, f: Func) -> usize {
        let id = self.funcs.len();
        self.by_name.insert(f.name.clone(), id);
        self.funcs.push(f);
        id
    }
    fn id(&self, name: &str) -> usize {
        self.by_name[name]
    }
}

const NAMESPACES: &[&str] = &[
    "net", "http", "json", "render", "layout", "text", "image", "codec", "db", "cache", "sched",
    "pool", "log", "config", "util", "gc", "alloc", "crypto", "compress", "script", "font",
    "style", "dom", "paint", "ipc",
];
const CLASSES: &[&str] = &[
    "Parser", "Encoder", "Decoder", "Buffer", "Session", "Request", "Queue", "Table", "Shaper",
    "Glyph", "Tile", "Raster", "Path", "Stream", "Index", "Node", "Tree", "Pool", "Arena",
    "Hasher", "Lexer", "Cursor", "Frame", "Batch", "Page", "Cache", "Writer", "Reader", "Atlas",
    "Builder", "Visitor", "Matcher",
];
const METHODS: &[&str] = &[
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
const INLINE_HELPERS: &[&str] = &[
    "renderd::util::Span<unsigned char>::operator[](unsigned long) const",
    "std::vector<float, std::allocator<float> >::size() const",
    "renderd::util::load_le32(unsigned char const*)",
    "std::__atomic_base<unsigned long>::fetch_add(unsigned long, std::memory_order)",
    "renderd::util::SmallVec<int, 8ul>::push_back(int const&)",
    "std::min<unsigned long>(unsigned long const&, unsigned long const&)",
    "renderd::util::Hash64::mix(unsigned long)",
    "std::unique_ptr<renderd::dom::Node, std::default_delete<renderd::dom::Node> >::get() const",
];

fn snake(s: &str) -> String {
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
fn build_world(rng: &mut Rng) -> World {
    let mut w = World {
        funcs: Vec::new(),
        by_name: HashMap::new(),
    };
    let mut next_off = [0x1_2000u64; 9];
    let mut lib =
        |w: &mut World, rng: &mut Rng, module: usize, name: &str, syscall: Option<usize>| {
            let size = 0x40 + 16 * rng.below(0x80) as u64;
            let base = next_off[module];
            next_off[module] += size + 16 * rng.below(8) as u64;
            let (file, line) = match module {
                // Debian's libc6/libstdc++ ship without line tables unless -dbg packages are in.
                M_LIBZ => (
                    Some(format!("./{}.c", name.trim_end_matches("_z"))),
                    1 + rng.below(1800) as u32,
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
        let size = 0x80 + 16 * rng.below(0x40) as u64;
        let base = next_off[M_EXE];
        next_off[M_EXE] += size + 16;
        w.add(Func {
            module: M_EXE,
            name: name.into(),
            file: Some("src/main.cpp".into()),
            line: 10 + rng.below(300) as u32,
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
        let arity = rng.below(3);
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
        let size = 0x40 + 16 * rng.below(0x100) as u64;
        let base = next_off[M_EXE];
        next_off[M_EXE] += size + 16 * rng.below(4) as u64;
        let id = w.add(Func {
            module: M_EXE,
            name,
            file: Some(format!("src/{ns}/{}.cpp", snake(class))),
            line: 20 + rng.below(2400) as u32,
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
            let n = 1 + rng.below(5);
            let mut callees = Vec::new();
            for _ in 0..n {
                let r = rng.unit();
                if l + 1 < LAYERS && r < 0.7 {
                    let target = (l + 1 + rng.below(2)).min(LAYERS - 1);
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

// ---------------------------------------------------------------------------------------
// Frames and stacks.

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum FrameKey {
    /// (function, file offset)
    User(usize, u64),
    /// (module, symbol, offset)
    Kernel(usize, &'static str, u64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Main,
    Compositor,
    Worker,
    Io,
    Gc,
}

fn roles(threads: usize) -> Vec<Role> {
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

fn thread_name(role: Role, i: usize) -> String {
    match role {
        Role::Main => "renderd".into(),
        Role::Compositor => "compositor".into(),
        Role::Io => "io-loop".into(),
        Role::Gc => "gc-sweeper".into(),
        Role::Worker => format!("worker-{i}"),
    }
}

/// CPU demand: the chance the thread wants a CPU when one is being handed out.
fn demand(role: Role) -> f64 {
    match role {
        Role::Main => 0.9,
        Role::Compositor => 0.6,
        Role::Worker => 0.95,
        Role::Io => 0.35,
        Role::Gc => 0.25,
    }
}

/// A return address inside `caller` for its call to `callee`.
fn call_site(w: &World, caller: usize, callee: usize) -> u64 {
    let f = &w.funcs[caller];
    let slots = (f.size / 8).max(2);
    f.base + 5 + 8 * (hash2(caller as u64, callee as u64) % (slots - 1))
}

/// One random stack for `role`, leaf first.
fn walk(w: &World, role: Role, rng: &mut Rng) -> Vec<FrameKey> {
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
    let depth_target = 3 + rng.below(match role {
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
            callees[(salt * 5 + rng.below(third)) % k]
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
        let cut = 2 + rng.below(path.len() - 1);
        kernel_frames(&path[..cut], rng, &mut frames);
    } else if rng.chance(0.04) {
        let path = *rng.pick(KERNEL_ASYNC);
        let cut = 2 + rng.below(path.len() - 1);
        kernel_frames(&path[..cut], rng, &mut frames);
    }
    // User part: the leaf at a hot offset, callers at their call sites.
    let lf = &w.funcs[leaf];
    let hot = hash2(leaf as u64, rng.below(6) as u64) % (lf.size / 4).max(1);
    frames.push(FrameKey::User(leaf, lf.base + 4 * hot));
    for i in (0..chain.len() - 1).rev() {
        frames.push(FrameKey::User(
            chain[i],
            call_site(w, chain[i], chain[i + 1]),
        ));
    }
    frames
}

fn kernel_frames(root_first: &[&'static str], rng: &mut Rng, out: &mut Vec<FrameKey>) {
    for (i, &sym) in root_first.iter().enumerate().rev() {
        let module = if KMOD_SYMS.contains(&sym) {
            M_KMOD
        } else {
            M_KERNEL
        };
        let offset = if i + 1 == root_first.len() {
            0x10 + 4 * rng.below(24) as u64
        } else {
            hash2(sym.len() as u64, sym.as_bytes()[sym.len() / 2] as u64) % 0x200
        };
        out.push(FrameKey::Kernel(module, sym, offset));
    }
}

// ---------------------------------------------------------------------------------------
// Writing.

struct Emitter {
    frame_ids: HashMap<FrameKey, u32>,
    modules_written: [bool; 9],
    stack_ids: Vec<Option<u32>>,
    next_stack: u32,
}

impl Emitter {
    fn frame<W: Write>(
        &mut self,
        w: &World,
        key: FrameKey,
        out: &mut Writer<W>,
        build_ids: &[Vec<u8>],
    ) -> Result<u32, hotspot_format::FormatError> {
        if let Some(&id) = self.frame_ids.get(&key) {
            return Ok(id);
        }
        let id = self.frame_ids.len() as u32;
        let module = match key {
            FrameKey::User(f, _) => w.funcs[f].module,
            FrameKey::Kernel(m, _, _) => m,
        };
        if !self.modules_written[module] {
            self.modules_written[module] = true;
            let (kind, path) = MODULES[module];
            out.push(Record::Module(Module {
                id: module as u32,
                kind,
                path: path.into(),
                build_id: build_ids[module].clone(),
            }))?;
        }
        match key {
            FrameKey::User(f, off) => {
                out.push(Record::Frame(Frame {
                    id,
                    module: module as u32,
                    addr: FrameAddr::FileOffset(off),
                }))?;
                let func = &w.funcs[f];
                let function = out.intern(&func.name);
                let file = func.file.as_deref().map(|s| out.intern(s));
                let line = if file.is_some() {
                    func.line + ((off - func.base) / 12) as u32
                } else {
                    0
                };
                // Some exe frames sit inside an inlined helper.
                let h = hash2(f as u64, off);
                let inlined = if func.module == M_EXE && h.is_multiple_of(7) {
                    let helper = INLINE_HELPERS[(h >> 8) as usize % INLINE_HELPERS.len()];
                    let hf = out.intern("src/util/inline.h");
                    vec![InlinedFn {
                        function: out.intern(helper),
                        loc: SourceLoc {
                            file: Some(hf),
                            line: 30 + ((h >> 16) % 400) as u32,
                        },
                    }]
                } else {
                    Vec::new()
                };
                out.push(Record::Symbol(Symbol {
                    frame: id,
                    function,
                    loc: SourceLoc { file, line },
                    inlined,
                }))?;
            }
            FrameKey::Kernel(_, sym, offset) => {
                let symbol = out.intern(sym);
                out.push(Record::Frame(Frame {
                    id,
                    module: module as u32,
                    addr: FrameAddr::KernelSymbol { symbol, offset },
                }))?;
                out.push(Record::Symbol(Symbol {
                    frame: id,
                    function: symbol,
                    loc: SourceLoc::default(),
                    inlined: Vec::new(),
                }))?;
            }
        }
        self.frame_ids.insert(key, id);
        Ok(id)
    }
}

fn zipf_cdf(n: usize, s: f64) -> Vec<f64> {
    let w: Vec<f64> = (1..=n).map(|k| 1.0 / (k as f64).powf(s)).collect();
    let total: f64 = w.iter().sum();
    let mut acc = 0.0;
    w.into_iter()
        .map(|x| {
            acc += x / total;
            acc
        })
        .collect()
}

fn main() {
    let cfg = match parse_args() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("gen_capture: {e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(&cfg) {
        eprintln!("gen_capture: {e}");
        std::process::exit(1);
    }
}

fn run(cfg: &Config) -> Result<(), Box<dyn std::error::Error>> {
    let mut rng = Rng(cfg.seed);
    let world = build_world(&mut rng);
    let build_ids: Vec<Vec<u8>> = (0..MODULES.len())
        .map(|m| (0..20).map(|b| hash2(m as u64 + 77, b) as u8).collect())
        .collect();

    // The stack catalogue, split between roles.
    let roles = roles(cfg.threads);
    let role_kinds = [
        Role::Main,
        Role::Compositor,
        Role::Worker,
        Role::Io,
        Role::Gc,
    ];
    let share = |r: Role| match r {
        Role::Main => 0.3,
        Role::Compositor => 0.15,
        Role::Worker => 0.35,
        Role::Io => 0.1,
        Role::Gc => 0.1,
    };
    let present: Vec<Role> = role_kinds
        .iter()
        .copied()
        .filter(|r| roles.contains(r))
        .collect();
    let total_share: f64 = present.iter().map(|&r| share(r)).sum();
    let mut catalogue: Vec<Vec<FrameKey>> = Vec::new();
    let mut seen: HashMap<Vec<FrameKey>, usize> = HashMap::new();
    let mut role_stacks: BTreeMap<u8, Vec<usize>> = BTreeMap::new();
    for (ri, &r) in present.iter().enumerate() {
        let want = if ri + 1 == present.len() {
            cfg.stacks - catalogue.len()
        } else {
            ((cfg.stacks as f64) * share(r) / total_share).round() as usize
        };
        let mut mine = Vec::new();
        let mut tries = 0;
        while mine.len() < want && tries < want * 200 {
            tries += 1;
            let s = walk(&world, r, &mut rng);
            if s.len() > 1024 || seen.contains_key(&s) {
                continue;
            }
            seen.insert(s.clone(), catalogue.len());
            mine.push(catalogue.len());
            catalogue.push(s);
        }
        role_stacks.insert(r as u8, mine);
    }

    // Per thread and phase: a ranking of its role's stacks (a shared base order, re-ranked
    // a little per thread and more per phase).
    const PHASES: usize = 4;
    let mut base_perm: BTreeMap<u8, Vec<usize>> = BTreeMap::new();
    for (&r, v) in &role_stacks {
        let mut p = v.clone();
        for i in (1..p.len()).rev() {
            p.swap(i, rng.below(i + 1));
        }
        base_perm.insert(r, p);
    }
    let rankings: Vec<Vec<Vec<usize>>> = roles
        .iter()
        .map(|&r| {
            (0..PHASES)
                .map(|_| {
                    let mut p = base_perm[&(r as u8)].clone();
                    let n = p.len();
                    for _ in 0..(n / 3).max(1) {
                        let (a, b) = (rng.below(n), rng.below(n));
                        p.swap(a, b);
                    }
                    p
                })
                .collect()
        })
        .collect();
    let cdfs: Vec<Vec<f64>> = roles
        .iter()
        .map(|&r| zipf_cdf(role_stacks[&(r as u8)].len().max(1), cfg.zipf))
        .collect();

    // Session and process.
    let pid = 31337u32;
    let start_mono = 5_012_345_678_901u64;
    let start_wall = 1_750_000_000_000_000_000u64;
    let session = SessionHeader {
        host: "bench-host".into(),
        kernel_release: "6.1.0-27-amd64".into(),
        arch: "x86_64".into(),
        cpus: cfg.cpus as u32,
        page_size: 4096,
        freq_hz: cfg.hz as u32,
        targets: vec![pid],
        all_processes: false,
        command_line: vec![
            "hotspot".into(),
            "record".into(),
            "-F".into(),
            cfg.hz.to_string(),
            "-o".into(),
            "renderd.hsp".into(),
            pid.to_string(),
        ],
        start_wall_ns: start_wall,
        start_mono_ns: start_mono,
        recorder_version: format!("gen_capture (seed {})", cfg.seed),
    };
    let file = std::fs::File::create(&cfg.out)?;
    let mut out = Writer::new(BufWriter::with_capacity(1 << 20, file), session)?;
    out.push(Record::Process(Process {
        pid,
        ppid: 1,
        name: "renderd".into(),
        cmdline: vec![
            "/opt/renderd/bin/renderd".into(),
            "--config".into(),
            "/etc/renderd.toml".into(),
        ],
        exe: MODULES[M_EXE].1.into(),
        start_ns: start_mono - 3_600_000_000_000,
    }))?;
    let tids: Vec<u32> = (0..roles.len() as u32).map(|i| pid + i).collect();
    let mut worker_no = 0;
    for (i, &r) in roles.iter().enumerate() {
        let name = thread_name(r, worker_no);
        if r == Role::Worker {
            worker_no += 1;
        }
        out.push(Record::Thread(Thread {
            tid: tids[i],
            pid,
            name,
            time_ns: start_mono - 3_600_000_000_000 + i as u64 * 1_000_000,
        }))?;
    }

    let mut em = Emitter {
        frame_ids: HashMap::new(),
        modules_written: [false; 9],
        stack_ids: vec![None; catalogue.len()],
        next_stack: 0,
    };

    // Scheduling: each CPU runs a thread (or idles); re-decided every ~4 ms.
    let period = 1_000_000_000 / cfg.hz;
    let reschedule_p = (1.0 / (cfg.hz as f64 * 0.004)).min(1.0);
    let cpu_phase: Vec<u64> = (0..cfg.cpus)
        .map(|c| (c as u64 * period * 7 / 11 + hash2(c as u64, 3) % 1000) % period)
        .collect();
    let mut on_cpu: Vec<Option<usize>> = vec![None; cfg.cpus];
    let mut tick: u64 = 0;
    let mut written: u64 = 0;
    let mut next_flush = start_mono + 1_000_000_000;
    let mut batch: Vec<Sample> = Vec::with_capacity(cfg.cpus);
    while written < cfg.samples {
        let phase = ((written * PHASES as u64) / cfg.samples) as usize;
        batch.clear();
        for cpu in 0..cfg.cpus {
            if tick == 0 || rng.chance(reschedule_p) {
                let cur = on_cpu[cpu].take();
                // Offer the CPU to a random thread not running elsewhere (up to 3 tries).
                let mut chosen = None;
                for _ in 0..3 {
                    let t = rng.below(roles.len());
                    if on_cpu.contains(&Some(t)) {
                        continue;
                    }
                    if rng.chance(demand(roles[t])) {
                        chosen = Some(t);
                        break;
                    }
                }
                on_cpu[cpu] = chosen.or(cur.filter(|_| rng.chance(0.5)));
            }
            let Some(t) = on_cpu[cpu] else { continue };
            let grid = start_mono + cpu_phase[cpu] + tick * period;
            let jitter = (rng.normal() * 2000.0).round() as i64;
            let u = rng.unit();
            let cdf = &cdfs[t];
            let rank = cdf.partition_point(|&c| c < u).min(cdf.len() - 1);
            let key = rankings[t][phase][rank];
            batch.push(Sample {
                time_ns: grid.wrapping_add_signed(jitter),
                tid: tids[t],
                cpu: cpu as u32,
                stack: key as u32, // catalogue index for now
            });
        }
        batch.sort_by_key(|s| s.time_ns);
        for s in batch.iter_mut() {
            if written >= cfg.samples {
                break;
            }
            let key = s.stack as usize;
            let id = match em.stack_ids[key] {
                Some(id) => id,
                None => {
                    let mut frames = Vec::with_capacity(catalogue[key].len());
                    for &fk in &catalogue[key] {
                        frames.push(em.frame(&world, fk, &mut out, &build_ids)?);
                    }
                    let id = em.next_stack;
                    em.next_stack += 1;
                    out.push(Record::Stack(Stack { id, frames }))?;
                    em.stack_ids[key] = Some(id);
                    id
                }
            };
            s.stack = id;
            if s.time_ns >= next_flush {
                out.flush_block()?;
                next_flush += 1_000_000_000;
            }
            out.push_sample(*s)?;
            written += 1;
        }
        tick += 1;
    }
    let end_mono = start_mono + tick * period;
    let end_wall = start_wall + tick * period;
    let mut file = out.finish(end_wall, end_mono, 0)?;
    file.flush()?;
    drop(file);
    let size = std::fs::metadata(&cfg.out)?.len();
    println!(
        "{{\"path\":\"{}\",\"samples\":{},\"distinct_stacks\":{},\"stack_catalogue\":{},\"frames\":{},\"threads\":{},\"cpus\":{},\"hz\":{},\"seconds\":{:.3},\"bytes\":{},\"bytes_per_sample\":{:.3},\"seed\":{}}}",
        cfg.out.replace('\\', "\\\\").replace('"', "\\\""),
        written,
        em.next_stack,
        catalogue.len(),
        em.frame_ids.len(),
        roles.len(),
        cfg.cpus,
        cfg.hz,
        (tick * period) as f64 / 1e9,
        size,
        size as f64 / written as f64,
        cfg.seed,
    );
    Ok(())
}
