// An LD_PRELOAD sampler: real programs' stacks as the kernel side will copy them, for the
// tests and the benchmark (a ptrace-free stand-in for the BPF program).
//
// HS_SAMPLE_DIR=DIR HS_SAMPLES=N LD_PRELOAD=sampler.so PROGRAM...: every 2 ms of CPU
// (ITIMER_PROF), the interrupted thread's registers and live stack are written to
// DIR/sample-NNNN.dump (dumper.c's format) until N samples are written. The registers
// come from the signal's ucontext: the sample is of the interrupted code, not of the
// handler, exactly what the BPF program sees on a timer tick in user mode.
#define _GNU_SOURCE
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/time.h>
#include <ucontext.h>

#include "dump.h"

static long wanted;
static atomic_long taken;
static atomic_flag busy = ATOMIC_FLAG_INIT;

static void on_tick(int sig, siginfo_t *info, void *uc_)
{
    (void)sig;
    (void)info;
    ucontext_t *uc = uc_;
    // Threads share the static buffers of dump.h: one sample at a time, others skip.
    if (atomic_flag_test_and_set(&busy))
        return;
    long n = atomic_load(&taken);
    if (n < wanted) {
        char name[32] = "sample-0000";
        for (int i = 10, v = (int)n; i >= 7; i--, v /= 10)
            name[i] = (char)('0' + v % 10);
        struct hs_regs r = {
            .ip = (uint64_t)uc->uc_mcontext.gregs[REG_RIP],
            .sp = (uint64_t)uc->uc_mcontext.gregs[REG_RSP],
            .bp = (uint64_t)uc->uc_mcontext.gregs[REG_RBP],
            .rbx = (uint64_t)uc->uc_mcontext.gregs[REG_RBX],
            .r11 = (uint64_t)uc->uc_mcontext.gregs[REG_R11],
        };
        write_dump(name, &r);
        atomic_store(&taken, n + 1);
    }
    atomic_flag_clear(&busy);
}

__attribute__((constructor)) static void start(void)
{
    dir = getenv("HS_SAMPLE_DIR");
    const char *n = getenv("HS_SAMPLES");
    if (!dir || !n)
        return;
    wanted = atol(n);
    uint64_t lo, hi;
    write_vdso(&lo, &hi);
    if (wanted > 9999)
        wanted = 9999;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_tick;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPROF, &sa, NULL);
    struct itimerval it = {{0, 2000}, {0, 2000}};
    setitimer(ITIMER_PROF, &it, NULL);
}
