// Dumps its own registers, live stack and /proc/self/maps at chosen points, so the
// unwinder can be tested on real stacks without BPF or root (unwind/tests/common).
//
// Usage: dumper DIR. Writes DIR/NAME.dump for each scenario below, and DIR/vdso.so (the
// vDSO image, which exists only in memory). Built twice by the tests: plain `-O2 -g` (no
// frame pointers) and with `-fno-omit-frame-pointer` (where gcc still leaves small leaf
// functions frameless).
//
// A dump: "HSDUMP02", then ip, sp, bp, rbx, r11, stack length, maps length (u64,
// little-endian),
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

#include "dump.h"

static volatile long sink;

// Takes a dump of its caller's stack as it is at this point: the registers are this
// function's own, read by the asm, so the unwinder starts inside hs_dump.
NOINLINE void hs_dump(const char *name)
{
    struct hs_regs r;
    __asm__ volatile("lea 0(%%rip), %%rax\n\t"
                     "mov %%rax, 0(%0)\n\t"
                     "mov %%rsp, 8(%0)\n\t"
                     "mov %%rbp, 16(%0)\n\t"
                     "mov %%rbx, 24(%0)\n\t"
                     "mov %%r11, 32(%0)\n\t"
                     :
                     : "r"(&r)
                     : "rax", "memory");
    write_dump(name, &r);
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

// --- stack realignment with a dynamic frame: gcc's DRAP (r10 holds the CFA in the
// prologue, then CFA = [rbp - 8], rbp saved at [rbp])
NOINLINE int drap(int n)
{
    char vla[n];
    _Alignas(64) char buf[64];
    memset(vla, 1, (size_t)n);
    memset(buf, 2, sizeof buf);
    hs_dump("drap");
    sink += vla[n - 1] + buf[3];
    return n;
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
    struct hs_regs r = {
        .ip = (uint64_t)uc->uc_mcontext.gregs[REG_RIP],
        .sp = (uint64_t)uc->uc_mcontext.gregs[REG_RSP],
        .bp = (uint64_t)uc->uc_mcontext.gregs[REG_RBP],
        .rbx = (uint64_t)uc->uc_mcontext.gregs[REG_RBX],
        .r11 = (uint64_t)uc->uc_mcontext.gregs[REG_R11],
    };
    uint64_t ip = r.ip;
    if (done)
        return;
    switch (mode) {
    case LEAF:
        if (ip >= (uint64_t)__start_hs_leaf && ip < (uint64_t)__stop_hs_leaf) {
            write_dump("leaf", &r);
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
            write_dump("vdso", &r);
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

    sink += drap(100);

    jit_caller();

    write_vdso(&vdso_lo, &vdso_hi);
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
