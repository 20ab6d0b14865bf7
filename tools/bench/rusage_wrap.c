/*
 * rusage_wrap OUT CMD ARGS...: runs CMD as a child, waits for it, and writes to OUT
 *
 *   <user s> <sys s> <wall s> <exit status>
 *
 * where user and sys are the CPU time of CMD and every descendant it waited for, plus
 * this wrapper's own (tiny) share. Scenario 7 of tools/bench/run launches the targets
 * through it, under each profiler, so that the profiler's own CPU is its wait4 total
 * minus this figure (wait4 on a profiler that launched a command counts the command too).
 * Built by tools/bench/run with the plain flags; it sleeps in wait4 while CMD runs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double tv(struct timeval t) { return (double)t.tv_sec + (double)t.tv_usec * 1e-6; }

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s OUT CMD [ARGS...]\n", argv[0]);
        return 2;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 127;
    }
    if (pid == 0) {
        execvp(argv[2], argv + 2);
        perror(argv[2]);
        _exit(127);
    }
    /* A Ctrl-C reaches the whole process group: let CMD decide, report what it used. */
    signal(SIGINT, SIG_IGN);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            perror("waitpid");
            return 127;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    struct rusage self, kids;
    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &kids);
    FILE *f = fopen(argv[1], "w");
    if (f) {
        fprintf(f, "%.6f %.6f %.6f %d\n", tv(self.ru_utime) + tv(kids.ru_utime),
                tv(self.ru_stime) + tv(kids.ru_stime),
                (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9,
                status);
        fclose(f);
    }
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}
