// Dumps its own registers, live stack and /proc/self/maps at chosen points, so the
// unwinder can be tested on real stacks without BPF or root (unwind/tests/common).
//
// Usage: dumper DIR. Writes DIR/NAME.dump for each scenario below, and DIR/vdso.so (the
// vDSO image, which exists only in memory). Built twice by the tests: plain `-O2 -g` (no
// frame pointers) and with `-fno-omit-frame-pointer` (where gcc still leaves small leaf
// functions frameless).
//
// A dump: "HSDUMP01", then ip, sp, bp, stack length, maps length (u64, little-endian),
// then the stack bytes from sp to the end of the mapping holding sp, then the maps text.
// Everything is written with raw syscalls (open, read, write): dumps are also taken in
// signal handlers.
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noclone))

static const char *dir;
static volatile long sink;
static char maps[1 << 17];

static void die(const char *what)
{
    write(2, what, strlen(what));
    write(2, "\n", 1);
    _exit(1);
}

static size_t read_maps(void)
{
    int fd = open("/proc/self/maps", O_RDONLY);
    if (fd < 0)
        die("open maps");
    size_t len = 0;
    for (;;) {
        ssize_t n = read(fd, maps + len, sizeof maps - len);
        if (n < 0)
            die("read maps");
        if (n == 0)
            break;
        len += (size_t)n;
        if (len == sizeof maps)
            die("maps too large");
    }
    close(fd);
    return len;
}

static uint64_t hex(const char **p)
{
    uint64_t v = 0;
    for (;; (*p)++) {
        char c = **p;
        if (c >= '0' && c <= '9')
            v = v * 16 + (uint64_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v = v * 16 + (uint64_t)(c - 'a' + 10);
        else
            return v;
    }
}

// The end of the mapping that holds addr (what the BPF side finds with bpf_find_vma).
static uint64_t mapping_end(size_t len, uint64_t addr)
{
    const char *p = maps, *end = maps + len;
    while (p < end) {
        uint64_t lo = hex(&p);
        p++; // '-'
        uint64_t hi = hex(&p);
        if (lo <= addr && addr < hi)
            return hi;
        while (p < end && *p != '\n')
            p++;
        p++;
    }
    die("no mapping holds sp");
    return 0;
}

static void write_all(int fd, const void *buf, size_t len)
{
    const char *b = buf;
    while (len) {
        ssize_t n = write(fd, b, len);
        if (n <= 0)
            die("write");
        b += n;
        len -= (size_t)n;
    }
}

static int create(const char *name)
{
    char path[4096];
    size_t d = strlen(dir), n = strlen(name);
    if (d + n + 2 > sizeof path)
        die("path too long");
    memcpy(path, dir, d);
    path[d] = '/';
    memcpy(path + d + 1, name, n + 1);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        die("create dump");
    return fd;
}

NOINLINE static void write_dump(const char *name, uint64_t ip, uint64_t sp, uint64_t bp)
{
    size_t maps_len = read_maps();
    uint64_t end = mapping_end(maps_len, sp);
    uint64_t header[6];
    memcpy(&header[0], "HSDUMP01", 8);
    header[1] = ip;
    header[2] = sp;
    header[3] = bp;
    header[4] = end - sp;
    header[5] = maps_len;
    char file[256];
    size_t n = strlen(name);
    if (n + 6 > sizeof file)
        die("name too long");
    memcpy(file, name, n);
    memcpy(file + n, ".dump", 6);
    int fd = create(file);
    write_all(fd, header, sizeof header);
    // The stack from sp up: write_dump's own frame lies below sp, so none of it changes.
    write_all(fd, (const void *)sp, end - sp);
    write_all(fd, maps, maps_len);
    close(fd);
}

// Takes a dump of its caller's stack as it is at this point: the registers are this
// function's own, read by the asm, so the unwinder starts inside hs_dump.
NOINLINE void hs_dump(const char *name)
{
    uint64_t r[3];
    __asm__ volatile("lea 0(%%rip), %%rax\n\t"
                     "mov %%rax, 0(%0)\n\t"
                     "mov %%rsp, 8(%0)\n\t"
                     "mov %%rbp, 16(%0)\n\t"
                     :
                     : "r"(r)
                     : "rax", "memory");
    write_dump(name, r[0], r[1], r[2]);
    __asm__ volatile("" ::: "memory"); // r stays live: no tail call
}

// --- a plain call chain: main -> chain_a -> chain_b -> chain_c -> hs_dump
NOINLINE int chain_c(int x)
{
    hs_dump("chain");
    sink += x;
    return x + 1;
}

NOINLINE int chain_b(int x)
{
    int r = chain_c(x + 1);
    sink += r;
    return r * 2;
}

NOINLINE int chain_a(int x)
{
    int r = chain_b(x + 1);
    sink += r;
    return r * 3;
}

// --- a thread: start_thread -> thread_main -> thread_work -> hs_dump
NOINLINE static int thread_work(int x)
{
    hs_dump("thread");
    sink += x;
    return x;
}

NOINLINE static void *thread_main(void *arg)
{
    int r = thread_work((int)(intptr_t)arg);
    sink += r;
    return NULL;
}

// --- 200 frames of recursion
NOINLINE int recurse(int n)
{
    volatile int keep = n; // a frame per call, and work after it: no loop, no tail call
    if (n == 0)
        hs_dump("recursion");
    else
        recurse(n - 1);
    return keep;
}

// --- samples taken by a timer signal, as the kernel would take them
enum mode { IDLE, LEAF, SIGNAL, VDSO };
static volatile sig_atomic_t mode, done;
static uint64_t vdso_lo, vdso_hi;

// Linker-defined bounds of the sections holding the functions the timer must interrupt.
extern char __start_hs_leaf[], __stop_hs_leaf[];
extern char __start_hs_spin[], __stop_hs_spin[];

// A leaf without a frame even under -fno-omit-frame-pointer (gcc leaves leaves frameless).
__attribute__((noinline, noclone, section("hs_leaf"))) long leaf_spin(long n)
{
    long s = 0;
    for (long i = 0; i < n; i++) {
        s += i * i;
        __asm__ volatile("" : "+r"(s));
    }
    return s;
}

NOINLINE long route(long n)
{
    long r = leaf_spin(n);
    sink += r;
    return r + 1;
}

NOINLINE long dispatch(long n)
{
    long r = route(n);
    sink += r;
    return r + 2;
}

// Interrupted by the timer for the signal-frame dump.
__attribute__((noinline, noclone, section("hs_spin"))) long signal_spin(long n)
{
    long s = 0;
    for (long i = 0; i < n; i++) {
        s += i ^ (s >> 3);
        __asm__ volatile("" : "+r"(s));
    }
    return s;
}

NOINLINE long signal_caller(long n)
{
    long r = signal_spin(n);
    sink += r;
    return r + 3;
}

NOINLINE long vdso_caller(long n)
{
    struct timespec ts;
    long s = 0;
    for (long i = 0; i < n; i++) {
        clock_gettime(CLOCK_MONOTONIC, &ts);
        s += ts.tv_nsec;
    }
    sink += s;
    return s;
}

// The signal handler: for LEAF and VDSO, dumps the interrupted registers (a sample as the
// kernel takes it); for SIGNAL, dumps from inside the handler itself, so the unwinder has
// to cross __restore_rt.
NOINLINE static void on_tick(int sig, siginfo_t *info, void *uc_)
{
    (void)sig;
    (void)info;
    ucontext_t *uc = uc_;
    uint64_t ip = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
    uint64_t sp = (uint64_t)uc->uc_mcontext.gregs[REG_RSP];
    uint64_t bp = (uint64_t)uc->uc_mcontext.gregs[REG_RBP];
    if (done)
        return;
    switch (mode) {
    case LEAF:
        if (ip >= (uint64_t)__start_hs_leaf && ip < (uint64_t)__stop_hs_leaf) {
            write_dump("leaf", ip, sp, bp);
            done = 1;
        }
        break;
    case SIGNAL:
        if (ip >= (uint64_t)__start_hs_spin && ip < (uint64_t)__stop_hs_spin) {
            hs_dump("signal");
            done = 1;
        }
        break;
    case VDSO:
        if (ip >= vdso_lo && ip < vdso_hi) {
            write_dump("vdso", ip, sp, bp);
            done = 1;
        }
        break;
    default:
        break;
    }
}

NOINLINE static void sampled(enum mode m, long (*work)(long), const char *what)
{
    done = 0;
    mode = m;
    // Up to 20 s of CPU at 2 ms ticks: each tick lands in the wanted code with high odds.
    for (int i = 0; i < 20000 && !done; i++)
        sink += work(200000);
    mode = IDLE;
    if (!done)
        die(what);
}

// The vDSO's executable mapping, and its image written out for the test to load.
static void find_vdso(void)
{
    uint64_t base = getauxval(AT_SYSINFO_EHDR);
    if (!base)
        die("no vDSO");
    size_t len = read_maps();
    const char *p = maps, *end = maps + len;
    while (p < end) {
        const char *line = p;
        uint64_t lo = hex(&p);
        p++;
        uint64_t hi = hex(&p);
        while (p < end && *p != '\n')
            p++;
        if (lo == base && p - line > 6 && memcmp(p - 6, "[vdso]", 6) == 0) {
            vdso_lo = lo;
            vdso_hi = hi;
            int fd = create("vdso.so");
            write_all(fd, (const void *)lo, hi - lo);
            close(fd);
            return;
        }
        p++;
    }
    die("no [vdso] mapping");
}

// --- JIT-like code: an anonymous executable page with a frame pointer, calling back.
NOINLINE static void jit_callback(void)
{
    hs_dump("jit");
    sink += 1;
}

NOINLINE static void jit_caller(void)
{
    // push %rbp; mov %rsp,%rbp; call *%rdi; pop %rbp; ret
    static const unsigned char code[] = {0x55, 0x48, 0x89, 0xe5, 0xff, 0xd7, 0x5d, 0xc3};
    long page = sysconf(_SC_PAGESIZE);
    unsigned char *mem = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        die("mmap");
    memcpy(mem, code, sizeof code);
    if (mprotect(mem, (size_t)page, PROT_READ | PROT_EXEC))
        die("mprotect");
    ((void (*)(void (*)(void)))mem)(jit_callback);
    sink += 2;
    munmap(mem, (size_t)page);
}

int main(int argc, char **argv)
{
    if (argc != 2)
        die("usage: dumper DIR");
    dir = argv[1];

    sink += chain_a(1);

    pthread_t t;
    if (pthread_create(&t, NULL, thread_main, (void *)(intptr_t)7))
        die("pthread_create");
    pthread_join(t, NULL);

    sink += recurse(200);

    jit_caller();

    find_vdso();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_tick;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGPROF, &sa, NULL))
        die("sigaction");
    struct itimerval it = {{0, 2000}, {0, 2000}};
    if (setitimer(ITIMER_PROF, &it, NULL))
        die("setitimer");
    sampled(LEAF, dispatch, "no tick landed in leaf_spin");
    sampled(SIGNAL, signal_caller, "no tick landed in signal_spin");
    sampled(VDSO, vdso_caller, "no tick landed in the vDSO");
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_PROF, &off, NULL);
    return 0;
}
