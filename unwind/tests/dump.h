// Writing dumps of a stack (see dumper.c for the format), shared by dumper.c and the
// LD_PRELOAD sampler sampler.c. Only raw syscalls and static buffers: dumps are taken in
// signal handlers.
#ifndef HS_DUMP_H
#define HS_DUMP_H

#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noclone))

static const char *dir;
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

// The registers a dump starts from (the ones the BPF program copies).
struct hs_regs {
    uint64_t ip, sp, bp, rbx, r11;
};

NOINLINE static void write_dump(const char *name, const struct hs_regs *r)
{
    uint64_t sp = r->sp;
    size_t maps_len = read_maps();
    uint64_t end = mapping_end(maps_len, sp);
    uint64_t header[8];
    memcpy(&header[0], "HSDUMP02", 8);
    header[1] = r->ip;
    header[2] = sp;
    header[3] = r->bp;
    header[4] = r->rbx;
    header[5] = r->r11;
    header[6] = end - sp;
    header[7] = maps_len;
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

// Writes the vDSO's image to DIR/vdso.so (it exists only in memory; the tests load it as
// a module) and returns its mapping.
static void write_vdso(uint64_t *vdso_lo, uint64_t *vdso_hi)
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
            *vdso_lo = lo;
            *vdso_hi = hi;
            int fd = create("vdso.so");
            write_all(fd, (const void *)lo, hi - lo);
            close(fd);
            return;
        }
        p++;
    }
    die("no [vdso] mapping");
}

#endif
