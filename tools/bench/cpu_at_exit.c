/*
 * cpu_at_exit.so: an LD_PRELOAD library for scenario 7 of tools/bench/run.
 *
 * When the process exits (exit(), or returning from main), it appends one line to the
 * file named by $HS_BENCH_CPU_LOG:
 *
 *   <pid> <user seconds> <system seconds> <executable path>
 *
 * with the CPU time the process (all its threads) has used, from getrusage(RUSAGE_SELF).
 * The benchmark launches each target directly under each profiler (a launcher process in
 * between, or an exec through env/sh, makes perf's DWARF unwinder lose the frames below
 * main: its model keeps the maps of the image before exec), so the profiler's own CPU is
 * its wait4 total (which counts the command it launched) minus what the target's
 * processes report here. The profilers load the library too (they pass the environment
 * on); their lines are told apart by executable path.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

__attribute__((destructor)) static void hs_bench_cpu_at_exit(void)
{
    const char *path = getenv("HS_BENCH_CPU_LOG");
    if (!path || !*path)
        return;
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return;
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    char line[4300];
    int len = snprintf(line, sizeof line, "%d %ld.%06ld %ld.%06ld %s\n", (int)getpid(),
                       (long)ru.ru_utime.tv_sec, (long)ru.ru_utime.tv_usec,
                       (long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec, exe);
    if (len <= 0)
        return;
    if (len > (int)sizeof line)
        len = sizeof line;
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    /* One write with O_APPEND: lines of processes exiting together do not interleave. */
    ssize_t w = write(fd, line, (size_t)len);
    (void)w;
    close(fd);
}
