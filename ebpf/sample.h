/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * The one definition of what hotspot's BPF program writes into the `events`
 * ring buffer and its maps. The recorder's side is generated from this file
 * (recorder/build.rs: every HS_ constant, every struct hs_ and its asserted
 * size), so a change here needs no second edit there; keep to the forms
 * recorder/build.rs names, and rebuild the object with tools/build-bpf.
 *
 * Every record starts with a `struct hs_header` (48 bytes). Task events
 * (fork/exec/exit) are the header alone. An HS_KIND_SAMPLE record is, with
 * no padding anywhere:
 *
 *   struct hs_header        48 bytes
 *   struct hs_user_regs     48 bytes: user ip/sp/bp/rbx/r11, stack_len, flags
 *   user_depth   x u64      the kernel's frame-pointer walk of the user
 *                           stack, leaf first (the first is the user PC)
 *   kernel_depth x u64      kernel frames, leaf first
 *   [struct hs_python       8 bytes, only when flags has HS_PYTHON: a sample
 *    depth x hs_python_frame  of a process registered in `python_procs`,
 *                           16 bytes each: its Python frames, newest first]
 *   stack_len    x u8       the user stack: the bytes at sp .. sp + stack_len,
 *                           up to the top of its frames (see HS_STACK_END_MAPPING)
 *
 * so it is exactly 96 + 8 * (user_depth + kernel_depth) [+ 8 + 16 * depth]
 * + stack_len bytes long: ring space follows the real stack depth and the
 * bytes really copied, never the cap.
 *
 * An HS_KIND_OFF_CPU record is laid out like a sample, then a struct
 * hs_off_cpu (8 bytes) right after the last stack byte: 104 + 8 * depths +
 * stack_len bytes. Its registers are always the task's saved ones
 * (HS_REGS_TASK or HS_REGS_NONE): it is taken in the thread's own context as
 * it comes back on the CPU, where its user stack is the one it blocked with.
 * An HS_KIND_THREAD_TIMES record is the header and a struct hs_thread (120
 * bytes).
 *
 * Two programs write samples. hs_sample (frame-pointer mode, stack_cap 0)
 * leaves the registers zero, flags = HS_REGS_NONE | HS_STACK_END_CAP (the
 * copy is "capped" at 0 bytes) and stack_len 0. hs_sample_stack fills the
 * registers and copies the stack; it walks the frame-pointer chain only when
 * the copy cannot reach the top of the stack (otherwise user_depth is 0: the
 * copy holds every frame and the chain would be redundant).
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
	/* --off-cpu: a traced thread came back on the CPU after enough blocked
	 * time to make an off-CPU sample due: the stack it blocked in, then a
	 * struct hs_off_cpu. time_ns is when it was switched back in. */
	HS_KIND_OFF_CPU = 5,
	/* --off-cpu: a traced thread exited: the header and its struct
	 * hs_thread, accounted up to time_ns (= last_ns). */
	HS_KIND_THREAD_TIMES = 6,
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

_Static_assert(sizeof(struct hs_header) == 48, "a 48-byte header");

/* Largest stack copy (the loader's stack_cap is at most this), and its unit. */
#define HS_MAX_STACK 65536
#define HS_PAGE_SIZE 4096

/* hs_user_regs.flags, bits 0-1: where the registers come from. */
#define HS_REGS_MASK 0x3
#define HS_REGS_NONE 0 /* no user registers (fp mode, or a task with no user context): all are 0 */
#define HS_REGS_PERF 1 /* the tick hit user mode: the interrupted registers */
#define HS_REGS_TASK 2 /* the tick hit kernel mode: the task's saved user registers */

/* hs_user_regs.flags, bits 4-7: why the stack copy stopped. */
#define HS_STACK_END_SHIFT 4
#define HS_STACK_END_MASK (0xf << HS_STACK_END_SHIFT)
/*
 * At the top of the stack: the copy holds every frame. That is the end of
 * sp's mapping, or lower where the mapping's top holds no frames: the main
 * thread's stops at the word above its initial sp (mm->start_stack: argc;
 * above are argv, envp, auxv, a random gap and the strings), a thread's at
 * its thread pointer (above and just below are its TCB and TLS).
 */
#define HS_STACK_END_MAPPING (1 << HS_STACK_END_SHIFT)
#define HS_STACK_END_CAP (2 << HS_STACK_END_SHIFT)     /* at stack_cap (or the mapping end was unknown) */
#define HS_STACK_END_FAULT (3 << HS_STACK_END_SHIFT)   /* at a page that could not be read (not resident) */
#define HS_STACK_END_NO_VMA (4 << HS_STACK_END_SHIFT)  /* sp is in no mapping (or no user context): nothing copied */

/*
 * hs_user_regs.flags, bit 8: the end of sp's mapping was not known because
 * bpf_find_vma found the mmap lock taken (-EBUSY); the copy went to the cap
 * or the first unreadable page.
 */
#define HS_STACK_VMA_BUSY (1 << 8)

/*
 * hs_user_regs.flags, bit 9: the process is registered as Python (its entry
 * in `python_procs`): a struct hs_python and its frames follow the kernel
 * frames, whether or not the walk found any.
 */
#define HS_PYTHON (1 << 9)

/*
 * The user registers unwinding starts from: ip, sp and bp, and the two others
 * that real CFI computes a frame's CFA from: r11 in LLVM's inline stack
 * probe of a frame larger than a page (a loop touching each page on the way
 * down, CFA = r11 + frame size; 16 rows of librustc_driver), rbx in ld.so's
 * _dl_runtime_resolve (CFA = rbx + 56, after realigning rsp). Without them a
 * sample taken there ends at its first frame.
 */
struct hs_user_regs {
	__u64 ip;
	__u64 sp;
	__u64 bp;
	__u64 rbx;
	__u64 r11;
	__u32 stack_len; /* bytes of stack after the frames */
	__u32 flags;     /* HS_REGS_* | HS_STACK_END_* | HS_STACK_VMA_BUSY */
};

_Static_assert(sizeof(struct hs_user_regs) == 48, "48-byte registers");

/* Indices of the per-CPU `lost` counter array. */
#define HS_LOST_SAMPLES 0     /* samples the ring buffer had no room for */
#define HS_LOST_TASK_EVENTS 1 /* fork/exec/exit records lost, or children not followed */
/* Off-CPU samples and thread-times records the ring had no room for, and
 * switches of threads the `threads` map had no room for. */
#define HS_LOST_OFF_CPU 2
/* Switches out of a thread whose switch back in was not seen (see switched_out). */
#define HS_LOST_SWITCHES 3
#define HS_LOST_NR 4

/*
 * A thread's state while off the CPU, as the capture's state column codes it:
 * taken at the switch out from sched_switch's preempt flag and prev_state.
 */
#define HS_STATE_ON_CPU 0
#define HS_STATE_SLEEPING 1        /* S: TASK_INTERRUPTIBLE, and stopped/traced */
#define HS_STATE_UNINTERRUPTIBLE 2 /* D: the TASK_UNINTERRUPTIBLE bit (disk I/O, KILLABLE, IDLE) */
#define HS_STATE_RUNNABLE 3        /* R: preempted, or switched out while TASK_RUNNING */

/* The tail of an HS_KIND_OFF_CPU record. */
struct hs_off_cpu {
	__u32 periods; /* period_ns multiples its blocked time crossed in this wait (>= 1) */
	__u32 state;   /* HS_STATE_* of this wait */
};

_Static_assert(sizeof(struct hs_off_cpu) == 8, "an 8-byte off-CPU tail");

/*
 * One traced thread's exact times (--off-cpu), kept in the `threads` map by
 * tid and updated at each of its switches; an HS_KIND_THREAD_TIMES record
 * carries it at the thread's exit, and the recorder reads the map for the
 * threads still alive at the end. Always on_cpu + sleeping + uninterruptible
 * + runnable = last - first.
 */
struct hs_thread {
	__u64 first_ns;           /* accounted from: the session start, or the thread's start if later */
	__u64 last_ns;            /* accounted to: its last switch (its exit in a record) */
	__u64 on_cpu_ns;
	__u64 sleeping_ns;
	__u64 uninterruptible_ns;
	__u64 runnable_ns;
	__u64 pending_ns;         /* blocked time not yet in an off-CPU sample (< period_ns) */
	__u32 tgid;
	__u32 state;              /* HS_STATE_* since last_ns */
	/*
	 * At its last switch out, the kernel's total that splits an interval
	 * whose switch in is not seen (split_total in hotspot.bpf.c): its
	 * run-queue wait total (sched_info.run_delay) when it left runnable, else
	 * its run-time total (se.sum_exec_runtime).
	 */
	__u64 total_ns;
};

_Static_assert(sizeof(struct hs_thread) == 72, "a 72-byte hs_thread");

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

_Static_assert(sizeof(struct hs_ksym) == 8 + HS_KSYM_LEN, "no padding in hs_ksym");

/*
 * Python frames (python.bpf.h). The recorder registers each process it
 * recognises as a CPython interpreter it supports in the `python_procs` hash
 * (tgid -> struct hs_python_proc) and removes it at exit; every sample of
 * such a process walks the sampled thread's Python frames, as
 * hotspot-python's WalkDescription documents the walk, and carries them.
 */

/* Most Python frames one sample can carry (the loader's python_frames is at most this). */
#define HS_MAX_PYTHON_FRAMES 1024

/* hs_python.end: why the walk stopped. */
#define HS_PY_END_BOTTOM 0       /* at the thread's oldest frame (or it runs no Python now) */
#define HS_PY_END_CAP 1          /* python_frames reached with frames left (or a loop): add a marker */
#define HS_PY_END_FAULT 2        /* a frame could not be read: the frames before it are kept */
#define HS_PY_END_NO_STATE 3     /* the thread has no thread state (it never ran Python), or no key yet */
#define HS_PY_END_FOREIGN 4      /* the state found is not this thread's (its thread_id is not the FS base) */
#define HS_PY_END_STATE_FAULT 5  /* the key, its slot or the thread state could not be read */

/* hs_python_frame.flags */
#define HS_PY_FRAME_ENTRY 1 /* the oldest frame of its eval-loop call (see WalkDescription) */

struct hs_python {
	__u32 depth; /* frames that follow */
	__u32 end;   /* HS_PY_END_* */
};

_Static_assert(sizeof(struct hs_python) == 8, "an 8-byte Python header");

/* One Python frame as the walk reports it (hotspot_python::FrameRecord). */
struct hs_python_frame {
	__u64 code;  /* the code object's address */
	/*
	 * The frame's position: f_lasti (3.8-3.10, a C int: sign-extend it), or
	 * the instruction pointer less `code` (3.11+, walk.instr_size 8), which
	 * fits 32 bits in any real code object.
	 */
	__u32 instr;
	__u32 flags; /* HS_PY_FRAME_* */
};

_Static_assert(sizeof(struct hs_python_frame) == 16, "a 16-byte Python frame");

/*
 * The `python_procs` value: where the interpreter's state is in the process
 * and how to walk it. `runtime` is _PyRuntime's address in the process; the
 * next 32 bytes are hotspot-python's WalkDescription::to_bytes, the last 8
 * its TsdLayout::to_bytes (glibc's thread-specific data), field for field.
 */
struct hs_python_proc {
	__u64 runtime;
	__u8 layout;           /* WalkDescription's layout version (1) */
	__u8 major;
	__u8 minor;
	__u8 walk_flags;       /* 1: tstate_frame points to a _PyCFrame (cframe_frame) */
	__u32 runtime_tss;     /* Py_tss_t in _PyRuntime: int initialised, then the key */
	__u16 tstate_frame;
	__u16 cframe_frame;
	__u16 tstate_thread_id;
	__u16 frame_previous;
	__u16 frame_code;
	__u16 frame_instr;
	__u16 frame_entry;
	__u16 frame_size;      /* bytes read per frame, covering every field above */
	__u8 instr_size;       /* 4 (f_lasti) or 8 (a pointer) */
	__u8 entry_mode;       /* 0 every frame, 1 flag byte, 2 shim owner */
	__u8 entry_value;
	__u8 reserved0;
	__u32 reserved1;
	__u16 tsd_specific;    /* struct pthread's `specific` */
	__u8 tsd_per_block;
	__u8 tsd_key_data_size;
	__u16 tsd_first_block; /* struct pthread's specific_1stblock, 0 when unknown */
	__u8 tsd_key_data_data;
	__u8 tsd_blocks;
};

_Static_assert(sizeof(struct hs_python_proc) == 48, "a 48-byte Python process entry");

#endif /* HOTSPOT_SAMPLE_H */
