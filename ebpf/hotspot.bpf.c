// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * hotspot's kernel side: a cpu_clock perf_event program that records the
 * user and kernel stacks of traced processes, raw tracepoints that keep the
 * set of traced processes in step with fork/exec/exit, and a program the
 * recorder runs on demand to name kernel addresses.
 *
 * Loaded and attached by recorder/src/bpf/sampler.rs; record layout in
 * sample.h. Rebuild with tools/build-bpf and commit the object.
 */
#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "sample.h"

/*
 * bpf_get_stack is GPL-only and tracing programs need a GPL-compatible
 * licence; "Dual MIT/GPL" is one the kernel accepts and matches our MIT.
 */
char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* Set by the loader before the object is verified; frozen afterwards. */
volatile const __u8 all_processes = 0;
volatile const __u8 follow_children = 0;
volatile const __u32 self_tgid = 0;

/*
 * Only the fields we read. preserve_access_index makes clang emit CO-RE
 * relocations, so the loader patches in this kernel's real offsets from its
 * BTF instead of trusting a layout fixed at build time. The recorder relocates
 * against a subset of that BTF: a field read here must also be listed in
 * FIELDS in recorder/src/bpf/btf_subset.rs.
 */
typedef struct {
	int counter;
} atomic_t;

struct signal_struct {
	atomic_t live;
} __attribute__((preserve_access_index));

struct task_struct {
	int pid;
	int tgid;
	struct signal_struct *signal;
} __attribute__((preserve_access_index));

/* A sample record as it is built before being copied into the ring. */
struct hs_sample_buf {
	struct hs_header hdr;
	__u64 frames[HS_MAX_USER_FRAMES + HS_MAX_KERNEL_FRAMES];
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20); /* overridden by the loader */
} events SEC(".maps");

/* tgid -> 1: the processes to sample when all_processes is off. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u8);
} targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HS_LOST_NR);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

/*
 * Too big for the 512-byte BPF stack; per-CPU because perf_event programs do
 * not nest on one CPU, so each CPU's slot is ours for the whole tick.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hs_sample_buf);
} scratch SEC(".maps");

/*
 * Wake the reader only once a quarter of the ring holds data: it drains on its own
 * timer anyway (at least every 100 ms), and a wakeup per sample would cost it a
 * syscall and a context switch per sample.
 */
static __always_inline __u64 sample_wakeup(void)
{
	__u64 avail = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
	__u64 size = bpf_ringbuf_query(&events, BPF_RB_RING_SIZE);

	return avail >= size / 4 ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

static __always_inline void count_lost(__u32 index)
{
	__u64 *counter = bpf_map_lookup_elem(&lost, &index);

	if (counter)
		*counter += 1; /* per-CPU slot: no other writer, no atomic needed */
}

static __always_inline int is_traced(__u32 tgid)
{
	/* The recorder itself would only measure its own draining. */
	if (tgid == self_tgid)
		return 0;
	if (all_processes)
		return 1;
	return bpf_map_lookup_elem(&targets, &tgid) != 0;
}

static __always_inline void emit_task_event(__u32 kind, __u32 pid, __u32 tid)
{
	struct hs_header hdr = {};

	hdr.kind = kind;
	hdr.cpu = bpf_get_smp_processor_id();
	hdr.time_ns = bpf_ktime_get_ns();
	hdr.pid = pid;
	hdr.tid = tid;
	bpf_get_current_comm(hdr.comm, sizeof(hdr.comm));
	if (bpf_ringbuf_output(&events, &hdr, sizeof(hdr), 0))
		count_lost(HS_LOST_TASK_EVENTS);
}

SEC("perf_event")
int hs_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	__u32 tid = (__u32)id;
	__u32 zero = 0;
	struct hs_sample_buf *buf;
	long user_len, kernel_len;
	__u64 user_depth, kernel_depth, size;

	/* tid 0 is the per-CPU idle task: its ticks are not work. */
	if (tid == 0 || !is_traced(tgid))
		return 0;

	buf = bpf_map_lookup_elem(&scratch, &zero);
	if (!buf)
		return 0;

	/*
	 * A failed walk (no user context, unreadable frame) is an empty stack,
	 * not a reason to drop the sample: the tick still happened.
	 */
	user_len = bpf_get_stack(ctx, buf->frames, HS_MAX_USER_FRAMES * sizeof(__u64),
				 BPF_F_USER_STACK);
	user_depth = user_len > 0 ? (__u64)user_len / sizeof(__u64) : 0;
	if (user_depth > HS_MAX_USER_FRAMES)
		user_depth = HS_MAX_USER_FRAMES;

	/* Packed right after the user frames so the record has no holes. */
	kernel_len = bpf_get_stack(ctx, &buf->frames[user_depth],
				   HS_MAX_KERNEL_FRAMES * sizeof(__u64), 0);
	kernel_depth = kernel_len > 0 ? (__u64)kernel_len / sizeof(__u64) : 0;
	if (kernel_depth > HS_MAX_KERNEL_FRAMES)
		kernel_depth = HS_MAX_KERNEL_FRAMES;

	buf->hdr.kind = HS_KIND_SAMPLE;
	buf->hdr.cpu = bpf_get_smp_processor_id();
	buf->hdr.time_ns = bpf_ktime_get_ns();
	buf->hdr.pid = tgid;
	buf->hdr.tid = tid;
	bpf_get_current_comm(buf->hdr.comm, sizeof(buf->hdr.comm));
	buf->hdr.user_depth = user_depth;
	buf->hdr.kernel_depth = kernel_depth;

	/*
	 * Copy only the used part. The explicit clamp is what lets the verifier
	 * prove the length never exceeds the scratch value.
	 */
	size = sizeof(struct hs_header) + (user_depth + kernel_depth) * sizeof(__u64);
	if (size > sizeof(*buf))
		size = sizeof(*buf);
	if (bpf_ringbuf_output(&events, buf, size, sample_wakeup()))
		count_lost(HS_LOST_SAMPLES);
	return 0;
}

/*
 * Raw tracepoints rather than the classic ones: the classic fork tracepoint
 * only reports child_pid, which for CLONE_THREAD is a thread id, and needs
 * tracefs. Raw rather than tp_btf: attaching a tp_btf program needs the
 * kernel's BTF parsed in user space a second time (the loader already parses
 * it once for the CO-RE relocations below), ~30 ms of CPU and ~18 MB at start.
 * The task fields are read with CO-RE (bpf_probe_read_kernel at this
 * kernel's offsets).
 */
SEC("raw_tp/sched_process_fork")
int BPF_PROG(hs_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 parent_tgid = BPF_CORE_READ(parent, tgid);
	__u32 child_pid = BPF_CORE_READ(child, pid);
	__u32 child_tgid = BPF_CORE_READ(child, tgid);
	__u8 one = 1;

	/* A new thread joins its creator's group: nothing new to follow. */
	if (child_pid != child_tgid)
		return 0;
	if (!is_traced(parent_tgid))
		return 0;
	if (!all_processes) {
		if (!follow_children)
			return 0;
		/* Before the child first runs, so none of its ticks are missed. */
		if (bpf_map_update_elem(&targets, &child_tgid, &one, BPF_ANY)) {
			count_lost(HS_LOST_TASK_EVENTS);
			return 0;
		}
	}
	emit_task_event(HS_KIND_FORK, parent_tgid, child_tgid);
	return 0;
}

SEC("raw_tp/sched_process_exec")
int BPF_PROG(hs_exec, struct task_struct *task)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;

	if (!is_traced(tgid))
		return 0;
	/* comm is already the new program's name at this point. */
	emit_task_event(HS_KIND_EXEC, tgid, (__u32)id);
	return 0;
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(hs_exit, struct task_struct *task)
{
	__u32 tgid = BPF_CORE_READ(task, tgid);
	__u32 tid = BPF_CORE_READ(task, pid);

	if (!is_traced(tgid))
		return 0;
	/*
	 * do_exit has already taken this thread out of signal->live; zero means
	 * it was the last one, i.e. the process is gone. Checking for the group
	 * leader instead would misfire when the leader exits before its
	 * threads. (Newer kernels pass group_dead as an argument; reading the
	 * counter also works on the ones that do not.)
	 */
	if (BPF_CORE_READ(task, signal, live.counter) != 0)
		return 0;
	bpf_map_delete_elem(&targets, &tgid);
	emit_task_event(HS_KIND_EXIT, tgid, tid);
	return 0;
}

/*
 * Kernel symbol names, one address at a time, formatted by the kernel itself
 * ("%pS": name+0xoffset/0xsize [module]). Never attached: the recorder runs
 * it with BPF_PROG_TEST_RUN, passing the address as the first context word,
 * so it never reads /proc/kallsyms (~120,000 lines formatted by the kernel and
 * parsed by us, ~60 ms of CPU) to name the few dozen addresses a profile has.
 * The section name only tells the loader the program type.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hs_ksym);
} ksym_out SEC(".maps");

SEC("raw_tp/hs_ksym")
int hs_ksym(__u64 *ctx)
{
	__u32 zero = 0;
	struct hs_ksym *out = bpf_map_lookup_elem(&ksym_out, &zero);
	__u64 args[1];

	if (!out)
		return 0;
	args[0] = ctx[0];
	out->len = bpf_snprintf(out->name, sizeof(out->name), "%pS", args, sizeof(args));
	return 0;
}
