// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * hotspot's kernel side: cpu_clock perf_event programs that record the user
 * and kernel stacks of traced processes (hs_sample_stack: user registers and
 * a copy of the live user stack for the recorder to unwind; hs_sample: the
 * kernel's frame-pointer walk only, for --call-graph fp and kernels before
 * 5.17), raw tracepoints that keep the set of traced processes in step with
 * fork/exec/exit, and a program the recorder runs on demand to name kernel
 * addresses. With --off-cpu also sched_switch, which keeps each traced
 * thread's exact on-CPU and blocked times, and sched_exit_tp (or, before 6.16,
 * a kprobe on finish_task_switch), which takes the stack a thread blocked in
 * once its blocked time makes an off-CPU sample due.
 *
 * Loaded by recorder/src/bpf/load.rs, attached by bpf/sampler.rs; record layout
 * in sample.h. Rebuild with tools/build-bpf and commit the object.
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
/* Most stack bytes hs_sample_stack copies (1..HS_MAX_STACK; hs_sample ignores it). */
volatile const __u32 stack_cap = HS_MAX_STACK;
/* --off-cpu: hs_exit also reports thread times (the switch programs are loaded only then). */
volatile const __u8 off_cpu = 0;
/* The blocked time one off-CPU sample stands for: 1e9 / freq, one CPU sample's worth. */
volatile const __u64 period_ns = 1000000000ULL / 499;

/*
 * Only the fields we read. preserve_access_index makes clang emit CO-RE
 * relocations, so the loader patches in this kernel's real offsets from its
 * BTF instead of trusting a layout fixed at build time. The recorder relocates
 * against a subset of that BTF: a field read here must also be listed in
 * FIELDS in recorder/src/bpf/btf_subset/mod.rs.
 */
typedef struct {
	int counter;
} atomic_t;

struct signal_struct {
	atomic_t live;
} __attribute__((preserve_access_index));

struct mm_struct {
	unsigned long start_stack; /* the main thread's initial sp: where argc is */
} __attribute__((preserve_access_index));

struct thread_struct {
	unsigned long fsbase; /* the thread pointer, saved at the last switch */
} __attribute__((preserve_access_index));

/* The scheduler's entity of a task: its run time total, what schedstat's first field is. */
struct sched_entity {
	unsigned long long sum_exec_runtime;
} __attribute__((preserve_access_index));

/* Its scheduling statistics (CONFIG_SCHED_INFO): what schedstat's second field is. */
struct sched_info {
	unsigned long long run_delay;
} __attribute__((preserve_access_index));

struct task_struct {
	unsigned int flags;
	int pid;
	int tgid;
	unsigned long long start_time; /* CLOCK_MONOTONIC ns of its creation */
	struct signal_struct *signal;
	struct mm_struct *mm;
	struct thread_struct thread;
	struct sched_entity se;
	struct sched_info sched_info;
} __attribute__((preserve_access_index));

/* Its layout changes between releases (both are nested in anonymous unions since 6.12). */
struct vm_area_struct {
	unsigned long vm_start;
	unsigned long vm_end;
} __attribute__((preserve_access_index));

/* A frame-pointer sample record as it is built before being copied into the ring. */
struct hs_sample_buf {
	struct hs_header hdr;
	struct hs_user_regs regs;
	__u64 frames[HS_MAX_USER_FRAMES + HS_MAX_KERNEL_FRAMES];
	/* Room for the Python part (HS_PYTHON) and an off-CPU record's tail after the deepest frames. */
	struct hs_python python_room;
	struct hs_python_frame python_frames_room[HS_MAX_PYTHON_FRAMES];
	struct hs_off_cpu tail_room;
};

#define HS_HEAD_MAX (sizeof(struct hs_sample_buf))

/*
 * A stack sample record under construction. The stack is copied first, to its
 * fixed place; whether the frame-pointer walk is wanted is known only then.
 * The header, registers and frames are built in `rec` and moved right before
 * the copy, so that the finished record is one contiguous block ending at
 * stack + stack_len, handed to the ring in one call. The page of slack after
 * the stack lets the verifier accept a page-sized copy at any offset below
 * the cap.
 */
struct hs_stack_buf {
	__u8 head[HS_HEAD_MAX];
	__u8 stack[HS_MAX_STACK + HS_PAGE_SIZE];
	struct hs_sample_buf rec;
	/* The bytes to copy from rec.regs.sp, for copy_page (never in a record). */
	__u64 copy_len;
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
 * 72 KiB per CPU is over the 32 KiB limit of a PERCPU_ARRAY value, so this is
 * a plain ARRAY indexed by CPU number; the loader sets max_entries to the
 * number of possible CPUs (1 when hs_sample_stack is not loaded). Each CPU
 * only touches its own slot, and perf_event programs do not nest on a CPU.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* overridden by the loader */
	__type(key, __u32);
	__type(value, struct hs_stack_buf);
} stack_scratch SEC(".maps");

/*
 * The stack mapping each thread's sp was last found in, per CPU, in slots by
 * tid. bpf_find_vma costs ~150 ns of BPF time, and more outside it: called
 * with interrupts off (a perf_event program always is), it releases the mmap
 * lock from an irq_work, one more interrupt per sample. A thread's stack
 * mapping rarely changes, so the copy uses the cached range while sp is in
 * it, and asks again after HS_VMA_CACHE_NS in case the mapping was replaced.
 */
#define HS_VMA_CACHE_SLOTS 64
#define HS_VMA_CACHE_NS (250 * 1000 * 1000ULL)

struct hs_vma_slot {
	__u32 tid;
	__u32 tgid;
	__u64 start;
	__u64 end;
	__u64 time_ns; /* when bpf_find_vma returned this range */
};

struct hs_vma_cache {
	struct hs_vma_slot slot[HS_VMA_CACHE_SLOTS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hs_vma_cache);
} vma_cache SEC(".maps");

/*
 * --off-cpu: the same three for the off-CPU sampler. It runs with interrupts
 * on (at the end of __schedule), so a tick's perf_event program can run in
 * the middle of it on the same CPU: sharing the tick's scratch would let the
 * one overwrite the other's record. The loader sizes off_stack_scratch like
 * stack_scratch when --off-cpu copies stacks, and to 1 entry otherwise.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hs_sample_buf);
} off_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1); /* overridden by the loader */
	__type(key, __u32);
	__type(value, struct hs_stack_buf);
} off_stack_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hs_vma_cache);
} off_vma_cache SEC(".maps");

/*
 * --off-cpu: tid -> its times, for every traced thread seen switching. A hash
 * rather than task storage: the recorder reads it whole at the end, for the
 * threads still alive; the exit program deletes a thread's entry.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768); /* overridden by the loader */
	__type(key, __u32);
	__type(value, struct hs_thread);
} threads SEC(".maps");

/*
 * --off-cpu: the monotonic ns accounting starts from, written by the recorder
 * before it attaches (a thread blocked or running at the start is accounted
 * from here). A map, not a constant: the session's start is known only after
 * the object is loaded.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} session SEC(".maps");

/*
 * --off-cpu: the off-CPU sample sched_switch found due for the thread it
 * switched in on this CPU, for hs_off_cpu(_stack) to take when that thread
 * returns from __schedule right after, on the same CPU. periods 0: none due.
 */
struct hs_due {
	__u32 tid;
	struct hs_off_cpu off;
	__u64 time_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hs_due);
} due SEC(".maps");

/*
 * A value the program stored in its scratch map, loaded back from there. To
 * the verifier a value loaded from a map is any value of its type, however it
 * was computed: the paths that computed it differently (with their own exact
 * ranges) then look alike from here on, and the rest of the program is
 * verified once instead of once per path. The caller bounds it again.
 */
#define reread(x) (*(volatile typeof(x) *)&(x))

#include "python.bpf.h"

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

/*
 * `wake`: BPF_RB_FORCE_WAKEUP for an event the recorder acts on at once (a
 * chosen target's end ends the recording; a new program may be an interpreter
 * to walk: exec_wakeup), else 0: the ring's own rule, which
 * wakes it only when it had read everything before (samples do not wake it:
 * sample_wakeup), and its next poll (within a second) reads the event.
 */
static __always_inline void emit_task_event(__u32 kind, __u32 pid, __u32 tid, __u64 wake)
{
	struct hs_header hdr = {};

	hdr.kind = kind;
	hdr.cpu = bpf_get_smp_processor_id();
	hdr.time_ns = bpf_ktime_get_ns();
	hdr.pid = pid;
	hdr.tid = tid;
	bpf_get_current_comm(hdr.comm, sizeof(hdr.comm));
	if (bpf_ringbuf_output(&events, &hdr, sizeof(hdr), wake))
		count_lost(HS_LOST_TASK_EVENTS);
}

static __always_inline void fill_header(struct hs_header *hdr, __u32 kind, __u32 tgid,
					__u32 tid, __u64 time_ns)
{
	hdr->kind = kind;
	hdr->cpu = bpf_get_smp_processor_id();
	hdr->time_ns = time_ns;
	hdr->pid = tgid;
	hdr->tid = tid;
	bpf_get_current_comm(hdr->comm, sizeof(hdr->comm));
}

/*
 * The kernel's walks of the stacks, packed into `frames`: the user
 * frame-pointer chain (when `want_user`), the kernel frames right after it
 * (when `in_kernel`: a tick in user mode has none, and asking costs ~50 ns),
 * so the record has no holes. Sets the header's depths; returns the bytes
 * written.
 *
 * A failed walk (no user context, unreadable frame) is an empty stack, not a
 * reason to drop the sample: the tick still happened.
 */
static __always_inline __u64 walk_frames(void *ctx, __u64 *frames, int want_user, int in_kernel,
					 struct hs_header *hdr)
{
	long user_len = 0, kernel_len = 0;
	__u64 user_depth = 0, kernel_depth;

	if (want_user) {
		user_len = bpf_get_stack(ctx, frames, HS_MAX_USER_FRAMES * sizeof(__u64),
					 BPF_F_USER_STACK);
		user_depth = user_len > 0 ? (__u64)user_len / sizeof(__u64) : 0;
		if (user_depth > HS_MAX_USER_FRAMES)
			user_depth = HS_MAX_USER_FRAMES;
	}
	if (in_kernel)
		kernel_len = bpf_get_stack(ctx, &frames[user_depth],
					   HS_MAX_KERNEL_FRAMES * sizeof(__u64), 0);
	kernel_depth = kernel_len > 0 ? (__u64)kernel_len / sizeof(__u64) : 0;
	if (kernel_depth > HS_MAX_KERNEL_FRAMES)
		kernel_depth = HS_MAX_KERNEL_FRAMES;
	hdr->user_depth = user_depth;
	hdr->kernel_depth = kernel_depth;
	return (user_depth + kernel_depth) * sizeof(__u64);
}

/* A CPL of 3 in the code segment selector is user mode. */
static __always_inline int tick_in_kernel(struct bpf_perf_event_data *ctx)
{
	return (ctx->regs.cs & 3) != 3;
}

/* Frame-pointer mode: today's cost, and every kernel from 5.8. */
/*
 * A frame-pointer record of kind HS_KIND_SAMPLE or, with `off`, HS_KIND_OFF_CPU
 * (the off-CPU tail right after the frames): the kernel's walks of both
 * stacks, no registers, no copy. Shared by the tick and the switch.
 */
static __always_inline int fp_sample(void *ctx, struct hs_sample_buf *buf, __u32 kind, __u32 tgid,
				     __u32 tid, __u64 now, int in_kernel,
				     const struct hs_off_cpu *off)
{
	struct hs_python_buf *py = python_walk(tgid, tid, off != 0);
	__u64 size, frames, tail = 0, py_len = 0;

	frames = walk_frames(ctx, buf->frames, 1, in_kernel, &buf->hdr);
	/* Always true; stated so that the verifier can bound the writes after the frames. */
	if (frames > sizeof(buf->frames))
		return 0;
	if (py) {
		py_len = python_part_len(py);
		bpf_probe_read_kernel((__u8 *)buf->frames + frames, py_len, &py->head);
	}
	size = sizeof(struct hs_header) + sizeof(struct hs_user_regs) + frames + py_len;
	if (off) {
		__builtin_memcpy((__u8 *)buf->frames + frames + py_len, off, sizeof(*off));
		tail = sizeof(*off);
	}
	size += tail;
	fill_header(&buf->hdr, kind, tgid, tid, now);
	buf->regs.ip = 0;
	buf->regs.sp = 0;
	buf->regs.bp = 0;
	buf->regs.rbx = 0;
	buf->regs.r11 = 0;
	buf->regs.stack_len = 0;
	buf->regs.flags = HS_REGS_NONE | HS_STACK_END_CAP | (py ? HS_PYTHON : 0);

	/*
	 * Copy only the used part. The explicit clamp is what lets the verifier
	 * prove the length never exceeds the scratch value.
	 */
	if (size > sizeof(*buf))
		size = sizeof(*buf);
	if (bpf_ringbuf_output(&events, buf, size, sample_wakeup()))
		count_lost(off ? HS_LOST_OFF_CPU : HS_LOST_SAMPLES);
	return 0;
}

SEC("perf_event")
int hs_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	__u32 tid = (__u32)id;

	__u32 zero = 0;
	struct hs_sample_buf *buf;

	/* tid 0 is the per-CPU idle task: its ticks are not work. */
	if (tid == 0 || !is_traced(tgid))
		return 0;
	buf = bpf_map_lookup_elem(&scratch, &zero);
	if (!buf)
		return 0;
	return fp_sample(ctx, buf, HS_KIND_SAMPLE, tgid, tid, bpf_ktime_get_ns(), tick_in_kernel(ctx),
			 0);
}

/*
 * The user registers a task saved on entering the kernel (syscall, fault,
 * interrupt), which are where its user stack is. Returns HS_REGS_TASK, or
 * HS_REGS_NONE for a task with no user context.
 */
static __always_inline __u32 task_user_regs(struct task_struct *task, struct hs_user_regs *out)
{
	/* The uapi pt_regs: its layout is the kernel's. */
	struct pt_regs saved;

	/*
	 * Read through a helper, not direct loads of the BTF pointer: the
	 * kernel's cs shares a union with FRED's fields, which the verifier's
	 * BTF walk does not let an 8-byte load cross.
	 */
	if (bpf_probe_read_kernel(&saved, sizeof(saved), (void *)bpf_task_pt_regs(task)))
		return HS_REGS_NONE;
	/* A kernel thread's saved registers are zero: not user mode. */
	if ((saved.cs & 3) != 3)
		return HS_REGS_NONE;
	out->ip = saved.rip;
	out->sp = saved.rsp;
	out->bp = saved.rbp;
	out->rbx = saved.rbx;
	out->r11 = saved.r11;
	return HS_REGS_TASK;
}

/*
 * The user registers of the interrupted task: the tick's own when it hit user
 * mode, else the task's saved ones. Returns HS_REGS_*.
 */
static __always_inline __u32 user_regs(struct bpf_perf_event_data *ctx, struct task_struct *task,
				       struct hs_user_regs *out)
{
	/*
	 * All read up front, with nothing between: given a branch between
	 * them, clang keeps a ctx + offset pointer around, which the verifier
	 * refuses ("dereference of modified ctx ptr"). (ctx->regs is a kernel
	 * pt_regs; the uapi one has its layout.)
	 */
	__u64 cs = ctx->regs.cs, ip = ctx->regs.rip, sp = ctx->regs.rsp, bp = ctx->regs.rbp,
	      bx = ctx->regs.rbx, r11 = ctx->regs.r11;

	if ((cs & 3) == 3) {
		out->ip = ip;
		out->sp = sp;
		out->bp = bp;
		out->rbx = bx;
		out->r11 = r11;
		return HS_REGS_PERF;
	}
	return task_user_regs(task, out);
}

struct vma_range {
	__u64 start;
	__u64 end;
};

static long vma_range_cb(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	struct vma_range *r = data;

	r->start = vma->vm_start;
	r->end = vma->vm_end;
	return 0;
}

/*
 * The end of the mapping that holds `sp`: from `cache` (the caller's), else from
 * bpf_find_vma (and cached). 0 when the mapping end is not known: *err is
 * then bpf_find_vma's error (-EBUSY: mmap lock taken; -ENOENT: no mapping).
 */
static __always_inline __u64 stack_mapping_end(struct hs_vma_cache *cache,
					       struct task_struct *task, __u32 tgid, __u32 tid,
					       __u64 sp, __u64 now, long *err)
{
	struct hs_vma_slot *slot = 0;
	struct vma_range range = {};

	*err = 0;
	if (cache) {
		slot = &cache->slot[tid & (HS_VMA_CACHE_SLOTS - 1)];
		if (slot->tid == tid && slot->tgid == tgid && now - slot->time_ns < HS_VMA_CACHE_NS &&
		    sp >= slot->start && sp < slot->end)
			return slot->end;
	}
	*err = bpf_find_vma(task, sp, vma_range_cb, &range, 0);
	if (*err || range.end <= sp)
		return 0;
	if (slot) {
		slot->tid = tid;
		slot->tgid = tgid;
		slot->start = range.start;
		slot->end = range.end;
		slot->time_ns = now;
	}
	return range.end;
}

struct frame_limits {
	__u64 args;   /* above the main thread's argc (mm->start_stack); 0 without an mm */
	__u64 fsbase; /* the thread pointer */
};

/*
 * What frames_top needs from the task, read at the top of hs_sample_stack,
 * before its first branch: the verifier checks a load of a pointer from a BTF
 * task (task->mm) by searching the kernel's BTF (127,000 types here) by name
 * for the field's trust annotations, ~1.1 ms each time it checks that load;
 * after the branches, it checked it once for each path there.
 */
static __always_inline void frame_limits(struct task_struct *task, struct frame_limits *l)
{
	struct mm_struct *mm = task->mm;

	/* The word at start_stack (argc) is the last the entry code reads. */
	l->args = mm ? mm->start_stack + sizeof(__u64) : 0;
	l->fsbase = task->thread.fsbase;
}

/*
 * Where the frames end in the mapping that holds sp, which ends at `end`.
 * The top of a mapping holds no frames: the main thread's stack ends in its
 * arguments, environment and auxiliary vector above its initial sp
 * (mm->start_stack, where argc is), a thread's in its thread control block
 * and TLS, at and below the thread pointer (glibc and musl put both at the
 * top of the thread's stack mapping). They cost 2.4 KB a sample on a glibc
 * thread, and on the main thread up to 8 KiB of random gap under the strings
 * besides: python3 copies 1.8 KB a sample to here, where copies to the
 * mapping end averaged 5.7 KB (shared/notes/unwinding.md). The copy ends at
 * the first of these that lies above sp.
 */
static __always_inline __u64 frames_top(const struct frame_limits *l, __u64 sp, __u64 end)
{
	__u64 top = end;

	if (l->args > sp && l->args < top)
		top = l->args;
	if (l->fsbase > sp && l->fsbase < top)
		top = l->fsbase;
	return top;
}

/*
 * Where page `i` of the copy starts, from sp: the first ends at sp's page
 * boundary, the others are whole pages.
 */
static __always_inline __u64 page_off(__u64 sp, __u64 i)
{
	return i == 0 ? 0 : HS_PAGE_SIZE - (sp & (HS_PAGE_SIZE - 1)) + (i - 1) * HS_PAGE_SIZE;
}

/*
 * bpf_loop's callback: copies page `i` of the stack (the bytes from sp +
 * page_off(i) to the next page boundary, or to buf->copy_len) into
 * buf->stack. Returns 1, ending the loop, at a page that cannot be read: the
 * copy then ends where that page starts (rec.regs.stack_len), for that reason
 * (HS_STACK_END_FAULT).
 *
 * A call depends only on `i` and on what it reads from the scratch map, not
 * on the calls before it, so the verifier checks the body once for any `i`.
 * The C loop it replaces carried the offset from one page to the next: the
 * verifier checked each page of each path to it with its own exact offsets,
 * 421,884 instructions and ~160 ms at every start.
 */
static long copy_page(__u64 i, struct hs_stack_buf **ctx)
{
	struct hs_stack_buf *buf = *ctx;
	__u64 sp = buf->rec.regs.sp, len = buf->copy_len, off, chunk;

	/* HS_MAX_STACK from an sp in mid-page spans one page more. */
	if (i > HS_MAX_STACK / HS_PAGE_SIZE)
		return 1;
	off = page_off(sp, i);
	chunk = i == 0 ? HS_PAGE_SIZE - (sp & (HS_PAGE_SIZE - 1)) : HS_PAGE_SIZE;
	if (off >= len)
		return 1;
	if (chunk > len - off)
		chunk = len - off;
	/*
	 * Always false; stated so that the verifier can bound the write. The
	 * barrier keeps clang from dropping the test on chunk (it knows chunk
	 * <= HS_PAGE_SIZE already). 6.1's verifier learns no upper bound from
	 * the comparison of two registers above (chunk = len - off stays
	 * "umin=1", unbounded) and refused the copy's length as possibly
	 * negative; 6.12's accepted it without the test.
	 */
	asm volatile("" : "+r"(chunk));
	if (off >= HS_MAX_STACK || chunk > HS_PAGE_SIZE)
		return 1;
	if (bpf_probe_read_user(buf->stack + off, chunk, (void *)(sp + off))) {
		buf->rec.regs.stack_len = off;
		buf->rec.regs.flags = (buf->rec.regs.flags & ~HS_STACK_END_MASK) | HS_STACK_END_FAULT;
		return 1;
	}
	return 0;
}

/*
 * Copies buf->copy_len bytes of user stack from rec.regs.sp to buf->stack, a
 * page at a time: bpf_probe_read_user is all or nothing and cannot fault a
 * page in, so one non-resident page must end the copy without losing the
 * pages before it. Sets rec.regs.stack_len to the bytes copied.
 */
static __always_inline void copy_stack(struct hs_stack_buf *buf)
{
	__u64 sp = buf->rec.regs.sp, len = buf->copy_len;

	buf->rec.regs.stack_len = len;
	if (len == 0 || len > HS_MAX_STACK)
		return;
	/* One call per page the copy spans (at most HS_MAX_STACK / HS_PAGE_SIZE + 1). */
	bpf_loop((sp + len - 1) / HS_PAGE_SIZE - sp / HS_PAGE_SIZE + 1, copy_page, &buf, 0);
}

/*
 * Stack mode (the default): the sample also carries the user registers and the
 * live user stack, from sp to the top of its frames (see frames_top), at most
 * stack_cap bytes, for the recorder to unwind with the modules' CFI. Needs
 * bpf_find_vma and bpf_loop (5.17).
 *
 * The record of kind `kind` once the caller has put the user registers in
 * buf->rec.regs (`flags`: HS_REGS_* of them) and read the task's frame limits:
 * shared by the tick (hs_sample_stack) and the switch (hs_off_cpu_stack), which
 * only differ in where the registers come from and in the off-CPU tail `off`
 * (written right after the stack).
 */
static __always_inline int stack_sample(void *ctx, struct hs_stack_buf *buf,
					struct hs_vma_cache *cache, struct task_struct *task,
					const struct frame_limits *limits, __u32 flags, __u32 kind,
					__u32 tgid, __u32 tid, __u64 now, const struct hs_off_cpu *off)
{
	struct hs_sample_buf *rec = &buf->rec;
	__u64 len = 0, copied, user_depth, kernel_depth, head, start, vma_end, tail = 0, py_len = 0,
	      py_start;
	struct hs_python_buf *py;
	__u32 end;
	long err;

	if (flags == HS_REGS_NONE) {
		rec->regs.ip = 0;
		rec->regs.sp = 0;
		rec->regs.bp = 0;
		rec->regs.rbx = 0;
		rec->regs.r11 = 0;
		end = HS_STACK_END_NO_VMA;
	} else {
		/*
		 * The stack's mapping ends the copy: past it lies other memory. The
		 * lookup only trylocks the mmap lock; when it is taken, copy up to
		 * the cap and let the first unreadable page end it.
		 */
		len = stack_cap;
		vma_end = stack_mapping_end(cache, task, tgid, tid, rec->regs.sp, now, &err);
		if (vma_end)
			vma_end = frames_top(limits, rec->regs.sp, vma_end);
		if (vma_end) {
			if (vma_end - rec->regs.sp <= len) {
				len = vma_end - rec->regs.sp;
				end = HS_STACK_END_MAPPING;
			} else {
				end = HS_STACK_END_CAP;
			}
		} else if (err == -16 /* EBUSY */) {
			end = HS_STACK_END_CAP;
			flags |= HS_STACK_VMA_BUSY;
		} else {
			len = 0;
			end = HS_STACK_END_NO_VMA;
		}
		if (len > HS_MAX_STACK)
			len = HS_MAX_STACK;
	}

	/*
	 * What to copy and why it ends, written down; the rest of the program
	 * reads them back (see reread), so the verifier checks it once rather
	 * than once for each way here (registers from the tick or the task, the
	 * mapping cached or looked up, the copy ended by the top, the cap or
	 * nothing to copy), each with its own exact values.
	 */
	rec->regs.flags = flags | end;
	buf->copy_len = len;
	copy_stack(buf);
	flags = reread(rec->regs.flags);

	/*
	 * The frame-pointer chain is only of use past the end of the copy: the
	 * recorder splices it on when the copy could not hold the whole stack
	 * (capped, or ended by a page it could not read). Walking it anyway cost
	 * 0.5-0.7 us a sample (4999 Hz, 4 frames).
	 */
	walk_frames(ctx, rec->frames, (flags & HS_STACK_END_MASK) != HS_STACK_END_MAPPING,
		    (flags & HS_REGS_MASK) != HS_REGS_PERF, &rec->hdr);
	fill_header(&rec->hdr, kind, tgid, tid, now);
	py = python_walk(tgid, tid, off != 0);
	if (py) {
		rec->regs.flags = flags | HS_PYTHON;
		py_len = python_part_len(py);
	}

	/* The record's size, from the record (the bounds hold for any: sample.h). */
	user_depth = reread(rec->hdr.user_depth);
	kernel_depth = reread(rec->hdr.kernel_depth);
	copied = reread(rec->regs.stack_len);
	if (user_depth > HS_MAX_USER_FRAMES || kernel_depth > HS_MAX_KERNEL_FRAMES ||
	    copied > HS_MAX_STACK)
		return 0;
	head = sizeof(struct hs_header) + sizeof(struct hs_user_regs) +
	       (user_depth + kernel_depth) * sizeof(__u64);
	/* The page of slack after the stack has room for the tail. */
	if (off) {
		__builtin_memcpy(&buf->stack[copied], off, sizeof(*off));
		tail = sizeof(*off);
	}

	/*
	 * Stated for the verifier: head is at most the whole of rec, less the
	 * room of the Python part, which goes right after it. The offsets are
	 * computed as numbers first (the barrier keeps clang from folding them
	 * into pointer arithmetic the verifier cannot bound).
	 */
	if (head > HS_HEAD_MAX - HS_PY_PART_MAX || py_len > HS_PY_PART_MAX)
		return 0;
	start = HS_HEAD_MAX - head - py_len;
	asm volatile("" : "+r"(start));
	if (start > HS_HEAD_MAX)
		return 0;
	if (bpf_probe_read_kernel(&buf->head[start], head, rec))
		return 0;
	if (py) {
		py_start = HS_HEAD_MAX - py_len;
		asm volatile("" : "+r"(py_start));
		if (py_start > HS_HEAD_MAX)
			return 0;
		if (bpf_probe_read_kernel(&buf->head[py_start], py_len, &py->head))
			return 0;
	}
	if (bpf_ringbuf_output(&events, &buf->head[start], head + py_len + copied + tail,
			       sample_wakeup()))
		count_lost(off ? HS_LOST_OFF_CPU : HS_LOST_SAMPLES);
	return 0;
}

SEC("perf_event")
int hs_sample_stack(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	__u32 tid = (__u32)id;
	__u32 cpu = bpf_get_smp_processor_id(), zero = 0;
	struct frame_limits limits;
	struct task_struct *task;
	struct hs_stack_buf *buf;
	__u64 now;
	__u32 flags;

	if (tid == 0 || !is_traced(tgid))
		return 0;
	now = bpf_ktime_get_ns();

	buf = bpf_map_lookup_elem(&stack_scratch, &cpu);
	if (!buf)
		return 0;
	task = bpf_get_current_task_btf();
	frame_limits(task, &limits);
	flags = user_regs(ctx, task, &buf->rec.regs);
	return stack_sample(ctx, buf, bpf_map_lookup_elem(&vma_cache, &zero), task, &limits, flags,
			    HS_KIND_SAMPLE, tgid, tid, now, 0);
}

/*
 * --off-cpu. sched_switch keeps each traced thread's exact times in `threads`
 * (on the CPU, and off it by the state it left in) and adds each wait to the
 * thread's pending blocked time; each time that crosses period_ns an off-CPU
 * sample is due, standing for pending / period_ns periods (the remainder is
 * kept), so short waits count and every sample weighs the same time. The
 * sample's stack is taken right after the switch (sched_exit_tp, or a kprobe
 * on finish_task_switch: see off_cpu_fp), in the thread's own context as it
 * comes back: at sched_switch the current task is the one leaving, and the
 * one coming back has no stack to read yet. There its user stack and saved
 * registers are those it blocked with, and its kernel stack is the path it
 * blocked in (... -> schedule -> __schedule).
 *
 * A thread's entry is only ever touched on the CPU it switches on, and the
 * switch in on another CPU waits for the switch out to finish (the
 * scheduler's p->on_cpu), so updates need no atomics.
 */

/* TASK_* and PF_* of include/linux/sched.h: stable ABI of the tracepoint. */
#define HS_TASK_RUNNING 0x0
#define HS_TASK_UNINTERRUPTIBLE 0x2
#define HS_PF_EXITING 0x4

/* The state a thread leaves the CPU in (see HS_STATE_*). */
static __always_inline __u32 switch_state(int preempt, unsigned int prev_state)
{
	if (preempt || prev_state == HS_TASK_RUNNING)
		return HS_STATE_RUNNABLE;
	if (prev_state & HS_TASK_UNINTERRUPTIBLE)
		return HS_STATE_UNINTERRUPTIBLE;
	return HS_STATE_SLEEPING;
}

/*
 * Adds the time since the thread's last switch to the total of the state it
 * was in; returns it.
 */
static __always_inline __u64 account(struct hs_thread *t, __u64 now)
{
	__u64 d = now > t->last_ns ? now - t->last_ns : 0;

	switch (t->state) {
	case HS_STATE_ON_CPU:
		t->on_cpu_ns += d;
		break;
	case HS_STATE_SLEEPING:
		t->sleeping_ns += d;
		break;
	case HS_STATE_UNINTERRUPTIBLE:
		t->uninterruptible_ns += d;
		break;
	default:
		t->runnable_ns += d;
		break;
	}
	t->last_ns = now;
	return d;
}

/*
 * A thread's entry at its first switch: accounted from the session's start or
 * its own, whichever is later. Its state until then (set by the caller) is on
 * the CPU when first seen leaving it, else S (a wait in progress at the
 * start) or R (a new thread waiting for its first run). *born_late: it
 * started after the session. 0: not to be accounted (it is exiting: its exit
 * record is written, or the session is not set).
 */
static __always_inline int new_thread(struct task_struct *task, __u32 tgid, __u64 now,
				      struct hs_thread *t, int *born_late)
{
	__u32 zero = 0;
	__u64 *session_start = bpf_map_lookup_elem(&session, &zero);
	__u64 start, born;

	if (!session_start || BPF_CORE_READ(task, flags) & HS_PF_EXITING)
		return 0;
	start = *session_start;
	born = BPF_CORE_READ(task, start_time);
	__builtin_memset(t, 0, sizeof(*t));
	t->tgid = tgid;
	*born_late = born > start;
	t->first_ns = *born_late ? born : start;
	if (t->first_ns > now)
		t->first_ns = now;
	t->last_ns = t->first_ns;
	return 1;
}

/*
 * The kernel's own total that splits an interval whose switch in was not seen
 * (see switched_out), for a thread that left the CPU in `state`: after a
 * preemption its run-queue wait total (sched_info.run_delay), after a sleep
 * its run-time total (se.sum_exec_runtime, which does not move off the CPU).
 * One probe read per traced switch out: reading both at every switch out
 * cost 291 ns of BPF time per target switch in the ping-pong benchmark
 * (scenario 9), against 274 ns with one.
 */
static __always_inline __u64 split_total(struct task_struct *task, __u32 state)
{
	if (state == HS_STATE_RUNNABLE)
		return BPF_CORE_READ(task, sched_info.run_delay);
	return BPF_CORE_READ(task, se.sum_exec_runtime);
}

/*
 * A thread found on the CPU (switching out, or exiting) by an entry that says
 * it is off the CPU: its switch back in was not seen (about once in 150 waits
 * of a thread alternating 10 ms of spinning and of nanosleep, with no program
 * run missed by the kernel's count; why is not known). The interval is the
 * rest of the wait, then the unseen run, split by the kernel's own accounting:
 * after a preemption the run-queue wait total says how long the wait was,
 * after a sleep the run-time total how long the run was. A VM's stolen time
 * (left out of the run-time total) so lands on the run after a preemption, as
 * in every interval on the CPU, and on the wait after a sleep. Counted as
 * unseen switches. Accounted to `now`, on the CPU.
 */
static __always_inline void close_unseen_run(struct hs_thread *t, struct task_struct *task,
					     __u64 now)
{
	__u64 gap, ran, total;

	gap = now > t->last_ns ? now - t->last_ns : 0;
	total = split_total(task, t->state);
	total = total > t->total_ns ? total - t->total_ns : 0;
	if (t->state == HS_STATE_RUNNABLE)
		ran = total < gap ? gap - total : 0;
	else
		ran = total;
	if (ran > gap)
		ran = gap;
	t->pending_ns += account(t, now - ran);
	t->state = HS_STATE_ON_CPU;
	account(t, now);
	count_lost(HS_LOST_SWITCHES);
}

static __always_inline void switched_out(struct task_struct *prev, __u32 tid, __u32 tgid,
					 __u32 state, __u64 now)
{
	struct hs_thread *t = bpf_map_lookup_elem(&threads, &tid);
	struct hs_thread fresh;
	int born_late;

	if (t) {
		if (t->state != HS_STATE_ON_CPU)
			close_unseen_run(t, prev, now);
		else
			account(t, now);
		t->total_ns = split_total(prev, state);
		t->state = state;
		return;
	}
	if (!new_thread(prev, tgid, now, &fresh, &born_late))
		return;
	fresh.state = HS_STATE_ON_CPU;
	account(&fresh, now);
	fresh.state = state;
	fresh.total_ns = split_total(prev, state);
	if (bpf_map_update_elem(&threads, &tid, &fresh, BPF_NOEXIST))
		count_lost(HS_LOST_OFF_CPU);
}

/*
 * The wait that just ended goes into the pending blocked time; the periods it
 * completes make a sample due, which this CPU's `due` slot hands to the
 * off-CPU sampler (always written, so that a slot it missed is never taken
 * for a later switch).
 */
static __always_inline void wait_ended(struct hs_thread *t, __u32 tid, __u64 now)
{
	__u32 zero = 0, state = t->state;
	struct hs_due *slot = bpf_map_lookup_elem(&due, &zero);
	__u64 periods = 0;

	t->pending_ns += account(t, now);
	t->state = HS_STATE_ON_CPU;
	if (t->pending_ns >= period_ns) {
		periods = t->pending_ns / period_ns;
		t->pending_ns -= periods * period_ns;
		if (periods > 0xffffffff)
			periods = 0xffffffff;
	}
	if (!slot)
		return;
	slot->tid = tid;
	slot->off.periods = periods;
	slot->off.state = state;
	slot->time_ns = now;
}

static __always_inline void switched_in(struct task_struct *next, __u32 tid, __u32 tgid,
					__u64 now)
{
	struct hs_thread *t = bpf_map_lookup_elem(&threads, &tid);
	struct hs_thread fresh;
	int born_late;

	if (t) {
		if (t->state != HS_STATE_ON_CPU)
			wait_ended(t, tid, now);
		return;
	}
	if (!new_thread(next, tgid, now, &fresh, &born_late))
		return;
	fresh.state = born_late ? HS_STATE_RUNNABLE : HS_STATE_SLEEPING;
	wait_ended(&fresh, tid, now);
	if (bpf_map_update_elem(&threads, &tid, &fresh, BPF_NOEXIST))
		count_lost(HS_LOST_OFF_CPU);
}

/*
 * prev_state is an argument from 5.18 on. Raw, not tp_btf, like the task
 * programs below (see there). current is still prev here.
 */
SEC("raw_tp/sched_switch")
int BPF_PROG(hs_switch, _Bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	__u64 id = bpf_get_current_pid_tgid(), now = 0;
	__u32 prev_tid = (__u32)id, next_tid, next_tgid;

	/* tid 0 is the idle task (its tgid is 0 too, and no other task's is). */
	if (prev_tid != 0 && is_traced(id >> 32)) {
		now = bpf_ktime_get_ns();
		switched_out(prev, prev_tid, id >> 32, switch_state(preempt, prev_state), now);
	}
	next_tgid = BPF_CORE_READ(next, tgid);
	if (next_tgid == 0 || !is_traced(next_tgid))
		return 0;
	next_tid = BPF_CORE_READ(next, pid);
	if (!now)
		now = bpf_ktime_get_ns();
	switched_in(next, next_tid, next_tgid, now);
	return 0;
}

/*
 * The off-CPU sample due for the current thread on this CPU, taken out of the
 * slot: 0 when none is (the common case: a cheap exit for every other switch).
 */
static __always_inline int take_due(__u32 tid, struct hs_off_cpu *off, __u64 *time_ns)
{
	__u32 zero = 0;
	struct hs_due *slot = bpf_map_lookup_elem(&due, &zero);

	if (!slot || slot->tid != tid || slot->off.periods == 0)
		return 0;
	*off = slot->off;
	*time_ns = slot->time_ns;
	slot->off.periods = 0;
	return 1;
}

/*
 * The off-CPU sampler runs in the thread switched back in, in its own context,
 * right after the switch (and where a new thread's first run starts), and
 * takes the sample sched_switch made due for it, if any: its user stack and
 * saved registers are those it blocked with, its kernel stack the path it
 * blocked in (... -> schedule -> __schedule). The loader attaches one of two
 * programs, by what the kernel offers:
 *
 * - the raw tracepoint sched_exit_tp (6.16+), at the end of __schedule. With
 *   interrupts on: a tick can run the samplers in the middle of it, so the
 *   off-CPU samplers have scratch maps of their own;
 * - before 6.16, a kprobe on finish_task_switch (the kernel's name may carry a
 *   suffix, e.g. finish_task_switch.isra.0 in Debian's 6.1 and 6.12: the
 *   loader finds it), which the thread switched in calls first, with the run
 *   queue still locked and interrupts off. fentry would be cheaper, but where
 *   gcc cloned the function (.isra.0) its BTF has no finish_task_switch to
 *   attach to, and the 6.18 host refuses tracing programs anyway.
 *
 * Both read the same `due` slot and build the same record.
 */
static __always_inline int off_cpu_fp(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), time_ns;
	struct hs_sample_buf *buf;
	struct hs_off_cpu off;
	__u32 zero = 0;

	if (!take_due((__u32)id, &off, &time_ns))
		return 0;
	buf = bpf_map_lookup_elem(&off_scratch, &zero);
	if (!buf)
		return 0;
	return fp_sample(ctx, buf, HS_KIND_OFF_CPU, id >> 32, (__u32)id, time_ns, 1, &off);
}

static __always_inline int off_cpu_stack(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), time_ns;
	__u32 cpu = bpf_get_smp_processor_id(), zero = 0;
	struct frame_limits limits;
	struct task_struct *task;
	struct hs_stack_buf *buf;
	struct hs_off_cpu off;
	__u32 flags;

	if (!take_due((__u32)id, &off, &time_ns))
		return 0;
	buf = bpf_map_lookup_elem(&off_stack_scratch, &cpu);
	if (!buf)
		return 0;
	task = bpf_get_current_task_btf();
	frame_limits(task, &limits);
	flags = task_user_regs(task, &buf->rec.regs);
	return stack_sample(ctx, buf, bpf_map_lookup_elem(&off_vma_cache, &zero), task, &limits,
			    flags, HS_KIND_OFF_CPU, id >> 32, (__u32)id, time_ns, &off);
}

SEC("raw_tp/sched_exit_tp")
int BPF_PROG(hs_off_cpu, _Bool is_switch)
{
	return is_switch ? off_cpu_fp(ctx) : 0;
}

SEC("raw_tp/sched_exit_tp")
int BPF_PROG(hs_off_cpu_stack, _Bool is_switch)
{
	return is_switch ? off_cpu_stack(ctx) : 0;
}

/* Kernel program names keep 15 characters: these stay apart from the above. */
SEC("kprobe/finish_task_switch")
int hs_off_kp(struct pt_regs *ctx)
{
	return off_cpu_fp(ctx);
}

SEC("kprobe/finish_task_switch")
int hs_off_stack_kp(struct pt_regs *ctx)
{
	return off_cpu_stack(ctx);
}

/*
 * A traced thread exits (in its own context, on the CPU): its times, closed
 * now, go into the ring and its entry goes. Switches after this (do_exit may
 * still sleep, and switches out one last time) make no new entry: the task
 * is PF_EXITING.
 */
static __always_inline void thread_exited(struct task_struct *task, __u32 tgid, __u32 tid)
{
	struct {
		struct hs_header hdr;
		struct hs_thread t;
	} rec = {};
	struct hs_thread *t = bpf_map_lookup_elem(&threads, &tid);
	__u64 now;

	if (!t)
		return;
	now = bpf_ktime_get_ns();
	/* An exiting thread is on the CPU: after an unseen switch in, its last
	 * run is split off the wait as at a switch out (CI once saw a spinner's
	 * last 81 ms counted as R, against schedstat's 1.6 ms of wait). */
	if (t->state != HS_STATE_ON_CPU)
		close_unseen_run(t, task, now);
	else
		account(t, now);
	fill_header(&rec.hdr, HS_KIND_THREAD_TIMES, tgid, tid, now);
	rec.t = *t;
	bpf_map_delete_elem(&threads, &tid);
	if (bpf_ringbuf_output(&events, &rec, sizeof(rec), sample_wakeup()))
		count_lost(HS_LOST_OFF_CPU);
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
	emit_task_event(HS_KIND_FORK, parent_tgid, child_tgid, 0);
	return 0;
}

/*
 * When an exec last woke the reader with -a (any CPU: a race costs one more
 * wakeup). See exec_wakeup.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} exec_woke SEC(".maps");

/* With -a, an exec wakes the reader at most this often. */
#define HS_EXEC_WAKE_NS 5000000ULL

/*
 * An exec wakes the reader: the new program may be an interpreter, whose frames
 * are walked only once the recorder has read its mappings, and a short script
 * is gone a poll later. The ring's own rule would not wake it while samples
 * wait unread (they never wake it before a quarter is full): a python3 that a
 * busy shell exec'd (pyenv's shims, wrapper scripts) then had no Python frame
 * in its first 0.2 s (0 of ~110 samples named, 3 runs). With -a every exec on
 * the box comes here: at most one wakeup per HS_EXEC_WAKE_NS, so a box that
 * starts a thousand processes a second costs 200 more a second, not 1000.
 */
static __always_inline __u64 exec_wakeup(void)
{
	__u32 zero = 0;
	__u64 now, *last;

	if (!all_processes)
		return BPF_RB_FORCE_WAKEUP;
	last = bpf_map_lookup_elem(&exec_woke, &zero);
	if (!last)
		return 0;
	now = bpf_ktime_get_ns();
	if (now - *last < HS_EXEC_WAKE_NS)
		return 0;
	*last = now;
	return BPF_RB_FORCE_WAKEUP;
}

SEC("raw_tp/sched_process_exec")
int BPF_PROG(hs_exec, struct task_struct *task)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;

	if (!is_traced(tgid))
		return 0;
	python_thread_gone((__u32)id);
	/* comm is already the new program's name at this point. */
	emit_task_event(HS_KIND_EXEC, tgid, (__u32)id, exec_wakeup());
	return 0;
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(hs_exit, struct task_struct *task)
{
	__u32 tgid = BPF_CORE_READ(task, tgid);
	__u32 tid = BPF_CORE_READ(task, pid);

	/* Fires for every thread; its times are looked up by tid whether or not
	 * its process is still a target. */
	if (off_cpu)
		thread_exited(task, tgid, tid);
	if (!is_traced(tgid))
		return 0;
	python_thread_gone(tid);
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
	/* With -a no exit ends the recording: it can wait for the next poll. */
	emit_task_event(HS_KIND_EXIT, tgid, tid, all_processes ? 0 : BPF_RB_FORCE_WAKEUP);
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
