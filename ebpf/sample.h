/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * The one definition of what hotspot's BPF program writes into the `events`
 * ring buffer. recorder/src/bpf/raw.rs mirrors `struct hs_header` byte for byte
 * and asserts its size, so any change here must be made there too (and the
 * object rebuilt with tools/build-bpf).
 *
 * Every record starts with a `struct hs_header`. Only HS_KIND_SAMPLE records
 * carry more: `user_depth` u64 user frames (leaf first; the first one is the
 * interrupted PC) followed by `kernel_depth` u64 kernel frames (leaf first).
 * The record is exactly 48 + 8 * (user_depth + kernel_depth) bytes long, so
 * ring space is proportional to the real stack depth.
 */
#ifndef HOTSPOT_SAMPLE_H
#define HOTSPOT_SAMPLE_H

#include <linux/types.h>

/* kernel.perf_event_max_stack defaults to 127: deeper stacks are cut there. */
#define HS_MAX_USER_FRAMES 127
#define HS_MAX_KERNEL_FRAMES 127

#define HS_COMM_LEN 16

enum hs_kind {
	/* A timer tick interrupted a traced thread: header + stacks. */
	HS_KIND_SAMPLE = 1,
	/* A traced process forked a process that is now traced too:
	 * pid = parent's tgid, tid = child's tgid. */
	HS_KIND_FORK = 2,
	/* A traced process called execve: pid = tgid, tid = the thread that
	 * exec'd, comm = the new command name. */
	HS_KIND_EXEC = 3,
	/* The last thread of a traced process exited: pid = tgid, tid = that
	 * thread. */
	HS_KIND_EXIT = 4,
};

struct hs_header {
	__u32 kind;          /* enum hs_kind */
	__u32 cpu;           /* CPU the record was written on */
	__u64 time_ns;       /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	__u32 pid;           /* tgid (see enum hs_kind for FORK) */
	__u32 tid;
	char comm[HS_COMM_LEN]; /* thread name, NUL padded */
	__u32 user_depth;    /* number of user frames that follow */
	__u32 kernel_depth;  /* number of kernel frames after the user ones */
};

_Static_assert(sizeof(struct hs_header) == 48, "raw.rs expects a 48-byte header");

/* Indices of the per-CPU `lost` counter array. */
#define HS_LOST_SAMPLES 0     /* samples the ring buffer had no room for */
#define HS_LOST_TASK_EVENTS 1 /* fork/exec/exit records lost, or children not followed */
#define HS_LOST_NR 2

/*
 * What hs_ksym leaves in its one-entry `ksym_out` map: the "%pS" text of one
 * kernel address, NUL-terminated, and bpf_snprintf's result (the length the
 * full text needs, NUL included; more than HS_KSYM_LEN means truncated;
 * negative is an error).
 */
#define HS_KSYM_LEN 512 /* KSYM_NAME_LEN on 6.1+, plus room for +off/size [mod] */

struct hs_ksym {
	__s64 len;
	char name[HS_KSYM_LEN];
};

#endif /* HOTSPOT_SAMPLE_H */
