/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * Python frames: for a sample of a process the recorder registered in
 * `python_procs` (a CPython 3.8-3.13 it recognised), the sampled thread's
 * Python frames, found through the interpreter's pthread key and walked from
 * the newest, as hotspot-python's WalkDescription documents (its Rust twin,
 * WalkDescription::walk, is the specification this follows):
 *
 *   key     = *(u32 *)(runtime + runtime_tss + 4), if the int before it is 1
 *   tstate  = the thread's value for key in glibc's thread-specific data,
 *             reached from the thread pointer (the task's FS base)
 *   check     *(u64 *)(tstate + tstate_thread_id) == FS base (pthread_self)
 *             (the state a thread's earlier sample found is tried first:
 *             python_threads; the key is asked when it gives no frame)
 *   frame   = *(u64 *)(tstate + tstate_frame) [then + cframe_frame, 3.11/3.12]
 *   per frame: frame_size bytes read once; code, instr, previous, entry byte
 *
 * The key's value is the thread's state whether or not it holds the GIL (the
 * thread-local _Py_tss_tstate of 3.12+ is NULL in a thread that released
 * it). Every read is bpf_probe_read_user (the target's memory is untrusted):
 * a read that fails ends the walk with the frames so far and a reason, never
 * the sample; the walk stops at python_frames (a loop in the chain too).
 * Costs a process that is not registered one hash lookup.
 *
 * Included by hotspot.bpf.c, whose samplers call python_walk and copy what
 * it found after the kernel frames (HS_PYTHON).
 */
#ifndef HOTSPOT_PYTHON_BPF_H
#define HOTSPOT_PYTHON_BPF_H

/*
 * Most Python frames a sample carries (1..HS_MAX_PYTHON_FRAMES): --python-frames. 0: no
 * walk at all, not even the lookup, which is how the loader drops the walk from every
 * sampler when a kernel refuses them with it (a frozen constant: the verifier never
 * sees the code behind the test on it).
 */
volatile const __u32 python_frames = 128;

/* Bytes of one frame, and of a thread state's two fields, read at most. */
#define HS_PY_READ_MAX 256

/*
 * Bytes of the thread's data stack one read takes (3.11+), frames below the one
 * wanted included: the frames of one eval-loop call lie there one after the other,
 * each older one below, so one read serves several frames. A read costs ~100 ns
 * whatever its size (up to a page), the frames' bytes a few. A page rather than
 * 1 KiB: the walk of a 30-deep stack (3.11, 3.12; timed inside the program)
 * took 1250-1400 ns rather than 1530-1825 ns, of a 3-deep one up to 90 ns more.
 */
#define HS_PY_WINDOW 4096

/* The Python part of a record, at most. */
#define HS_PY_PART_MAX (sizeof(struct hs_python) + HS_MAX_PYTHON_FRAMES * sizeof(struct hs_python_frame))

/* tgid -> how to walk its Python frames; written and removed by the recorder. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct hs_python_proc);
} python_procs SEC(".maps");

/*
 * One walk: the record's Python part (head and frames, contiguous, copied
 * as they are), then the walk's own state. Per CPU, one slot for the tick's
 * samplers and one for the off-CPU ones, which a tick can interrupt.
 */
struct hs_python_buf {
	struct hs_python head;
	struct hs_python_frame frames[HS_MAX_PYTHON_FRAMES];
	struct hs_python_proc proc; /* the process's entry, copied */
	__u64 frame;                /* the next frame to read */
	__u64 window;               /* the process address read[0] was read from */
	__u64 window_len;           /* bytes of read[] that hold it (0: none) */
	/* A thread state's fields, or frames: one frame's bytes past the window, at most. */
	__u8 read[HS_PY_WINDOW + HS_PY_READ_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct hs_python_buf);
} python_scratch SEC(".maps");

/*
 * The u64 at `off` of what was read from `base` on (base <= HS_PY_WINDOW); 0 past
 * HS_PY_READ_MAX (never, for a real layout).
 */
static __always_inline __u64 py_u64(struct hs_python_buf *b, __u64 base, __u32 off)
{
	if (off > HS_PY_READ_MAX - sizeof(__u64))
		return 0;
	return *(__u64 *)(b->read + base + off);
}

static __always_inline __u32 py_u32(struct hs_python_buf *b, __u64 base, __u32 off)
{
	if (off > HS_PY_READ_MAX - sizeof(__u32))
		return 0;
	return *(__u32 *)(b->read + base + off);
}

/*
 * tid -> the thread state its process's pthread key last gave it. The key's way
 * to the state costs two or three user reads before the state's own (the
 * runtime's key, the thread's data block, the slot); a known state costs one
 * hash lookup: a 3-deep walk took 520-710 ns rather than 800-960 ns (3.11,
 * 3.12; timed inside the program), a 30-deep one 300 ns less. It is
 * trusted only as far as the read of the state that is needed anyway checks
 * it: its thread_id is this thread's FS base and it has a frame. A thread
 * state is freed only once its frames are gone (CPython clears it first), so
 * a freed one, or one the thread no longer uses, reads as "no frame" and the
 * key is asked again; so is a state whose memory now holds another thread's.
 * Entries go when the thread exits or execs (hs_exit, hs_exec); when the map
 * is full a thread is looked up by its key each sample, as before.
 */
struct hs_python_thread {
	__u64 tstate;
	__u32 tgid;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct hs_python_thread);
} python_threads SEC(".maps");

/*
 * The thread state at `tstate`, if it is the current thread's (its thread_id
 * is the FS base, pthread_self), and its current frame into b->frame (0:
 * none); HS_PY_END_BOTTOM, or why not.
 */
static __always_inline __u32 python_state_frame(struct hs_python_buf *b, __u64 tstate, __u64 fs)
{
	struct hs_python_proc *p = &b->proc;
	__u32 lo, hi;
	__u64 frame;

	b->frame = 0;
	/* thread_id and the frame pointer, in one read from the lower to the higher. */
	lo = p->tstate_frame < p->tstate_thread_id ? p->tstate_frame : p->tstate_thread_id;
	hi = p->tstate_frame < p->tstate_thread_id ? p->tstate_thread_id : p->tstate_frame;
	if (hi - lo > HS_PY_READ_MAX - sizeof(__u64))
		return HS_PY_END_STATE_FAULT;
	if (bpf_probe_read_user(b->read, hi - lo + sizeof(__u64), (void *)(tstate + lo)))
		return HS_PY_END_STATE_FAULT;
	if (py_u64(b, 0, p->tstate_thread_id - lo) != fs)
		return HS_PY_END_FOREIGN;
	frame = py_u64(b, 0, p->tstate_frame - lo);
	if (frame && (p->walk_flags & 1)) {
		if (bpf_probe_read_user(&frame, sizeof(frame), (void *)(frame + p->cframe_frame)))
			return HS_PY_END_STATE_FAULT;
	}
	b->frame = frame;
	return HS_PY_END_BOTTOM;
}

/*
 * The thread state the interpreter's pthread key holds for the thread whose
 * thread pointer is `fs`, into *tstate; HS_PY_END_BOTTOM when there is one,
 * else why not.
 */
static __always_inline __u32 python_keyed_state(struct hs_python_buf *b, __u64 fs, __u64 *tstate)
{
	struct hs_python_proc *p = &b->proc;
	__u32 tss[2], key, per = p->tsd_per_block;
	__u64 at, block;

	*tstate = 0;
	if (bpf_probe_read_user(tss, sizeof(tss), (void *)(p->runtime + p->runtime_tss)))
		return HS_PY_END_STATE_FAULT;
	key = tss[1];
	if (tss[0] != 1 || per == 0 || key >= per * p->tsd_blocks)
		return HS_PY_END_NO_STATE;
	if (p->tsd_first_block && key < per) {
		at = fs + p->tsd_first_block + (__u64)p->tsd_key_data_size * key + p->tsd_key_data_data;
	} else {
		if (bpf_probe_read_user(&block, sizeof(block),
					(void *)(fs + p->tsd_specific + 8 * (__u64)(key / per))))
			return HS_PY_END_STATE_FAULT;
		if (!block)
			return HS_PY_END_NO_STATE;
		at = block + (__u64)p->tsd_key_data_size * (key % per) + p->tsd_key_data_data;
	}
	if (bpf_probe_read_user(tstate, sizeof(*tstate), (void *)at))
		return HS_PY_END_STATE_FAULT;
	if (!*tstate)
		return HS_PY_END_NO_STATE;
	return HS_PY_END_BOTTOM;
}

/*
 * The current frame of thread `tid` of `tgid` into b->frame (0: none); returns
 * HS_PY_END_BOTTOM when there is one to walk from or the thread runs no Python,
 * else why not. The thread state known from an earlier sample first, the
 * pthread key when that gives no frame.
 */
static __always_inline __u32 python_thread_frame(struct hs_python_buf *b, __u32 tgid, __u32 tid,
						 __u64 fs)
{
	struct hs_python_thread *known = bpf_map_lookup_elem(&python_threads, &tid);
	struct hs_python_thread fresh = {};
	__u64 tstate;
	__u32 end;

	b->window_len = 0; /* read[] holds no frames from here on */
	if (known && known->tgid == tgid) {
		end = python_state_frame(b, known->tstate, fs);
		if (end == HS_PY_END_BOTTOM && b->frame)
			return end;
	}
	b->frame = 0;
	end = python_keyed_state(b, fs, &tstate);
	if (end != HS_PY_END_BOTTOM)
		return end;
	end = python_state_frame(b, tstate, fs);
	if (end == HS_PY_END_BOTTOM && !(known && known->tgid == tgid && known->tstate == tstate)) {
		fresh.tstate = tstate;
		fresh.tgid = tgid;
		/* Full or busy (another program on this CPU holds the bucket): asked again next time. */
		bpf_map_update_elem(&python_threads, &tid, &fresh, BPF_ANY);
	}
	return end;
}

/* A thread exits or execs: the state it had is no longer its. */
static __always_inline void python_thread_gone(__u32 tid)
{
	if (python_frames)
		bpf_map_delete_elem(&python_threads, &tid);
}

/*
 * Where the `size` bytes of the frame at `frame` are in b->read: already there when
 * the window read for a newer frame holds them, else read, with the bytes below it
 * down to HS_PY_WINDOW before its end (3.11+, `window`) but not past the start of its
 * page (which may be the first of its mapping). -1 when they cannot be read.
 */
static __always_inline long python_frame_bytes(struct hs_python_buf *b, __u64 frame, __u64 size,
					       int window)
{
	__u64 at = frame - b->window, len = b->window_len, start;

	if (len >= size && at <= len - size)
		return at;
	start = frame;
	if (window) {
		start = frame & ~(__u64)(HS_PAGE_SIZE - 1);
		if (frame + size - start > HS_PY_WINDOW)
			start = frame + size - HS_PY_WINDOW;
	}
	len = frame + size - start;
	/* Always false; stated for the verifier (see copy_page on 6.1 and registers). */
	asm volatile("" : "+r"(len));
	if (len > HS_PY_WINDOW || len == 0)
		return -1;
	if (bpf_probe_read_user(b->read, len, (void *)start)) {
		/* A hole below the frame (never within one page): the frame alone. */
		b->window_len = 0;
		if (start == frame || bpf_probe_read_user(b->read, size, (void *)frame))
			return -1;
		start = frame;
		len = size;
	}
	b->window = start;
	b->window_len = len;
	return frame - start;
}

/*
 * bpf_loop's callback: one frame. Sets head.end and returns 1 when the walk
 * is over (the oldest frame passed, the cap reached, a frame unreadable);
 * when the loop runs out first (shim frames alone, a loop in the chain),
 * head.end stays HS_PY_END_CAP.
 */
static long python_frame_cb(__u64 i, struct hs_python_buf **ctx)
{
	struct hs_python_buf *b = *ctx;
	struct hs_python_proc *p = &b->proc;
	__u64 frame = b->frame, code, instr, previous;
	__u32 depth = b->head.depth, size = p->frame_size, off;
	long at;
	__u8 entry;

	if (!frame) {
		b->head.end = HS_PY_END_BOTTOM;
		return 1;
	}
	if (depth >= python_frames || depth >= HS_MAX_PYTHON_FRAMES)
		return 1; /* head.end is HS_PY_END_CAP */
	at = size == 0 || size > HS_PY_READ_MAX ?
		     -1 :
		     python_frame_bytes(b, frame, size, p->instr_size == 8);
	/* Stated for the verifier: at is the frame's place in the window, or -1. */
	asm volatile("" : "+r"(at));
	if (at < 0 || at > HS_PY_WINDOW) {
		b->head.end = HS_PY_END_FAULT;
		return 1;
	}
	code = py_u64(b, at, p->frame_code);
	previous = py_u64(b, at, p->frame_previous);
	if (p->instr_size == 4)
		instr = py_u32(b, at, p->frame_instr);
	else
		instr = py_u64(b, at, p->frame_instr) - code;
	off = p->frame_entry;
	entry = off < HS_PY_READ_MAX ? b->read[at + off] : 0;
	b->frame = previous;

	if (p->entry_mode == 2 && entry == p->entry_value) {
		/* A shim (3.12+): no Python frame; the frame walked before it was an entry. */
		if (depth > 0) {
			/*
			 * The mask is a no-op (depth is 1..HS_MAX_PYTHON_FRAMES - 1 here, a power
			 * of two less one), stated for Linux 6.1's verifier: it learns no lower
			 * bound from depth != 0, so depth - 1 may be -1 to it, which the 32-bit
			 * truncation turns into 0..2^32-1 ("R7 unbounded memory access", the
			 * refusal of every sampler on Debian 12's 6.1.0-57). The barrier keeps
			 * clang from dropping the mask as implied.
			 */
			__u32 last = depth - 1;

			asm volatile("" : "+r"(last));
			last &= HS_MAX_PYTHON_FRAMES - 1;
			b->frames[last].flags |= HS_PY_FRAME_ENTRY;
		}
		return 0;
	}
	b->frames[depth].code = code;
	b->frames[depth].instr = (__u32)instr;
	b->frames[depth].flags = p->entry_mode == 0 || (p->entry_mode == 1 && entry) ?
					 HS_PY_FRAME_ENTRY :
					 0;
	b->head.depth = depth + 1;
	return 0;
}

/*
 * The Python frames of the current thread of `tgid`, when the recorder
 * registered it; 0 otherwise (one map lookup). `slot`: 0 for the tick's
 * samplers, 1 for the off-CPU ones. Runs in the sampled thread's context, so
 * the current task's FS base is its thread pointer.
 */
static __always_inline struct hs_python_buf *python_walk(__u32 tgid, __u32 tid, __u32 slot)
{
	struct hs_python_proc *proc;
	struct hs_python_buf *b;
	__u64 fs;

	if (python_frames == 0)
		return 0;
	proc = bpf_map_lookup_elem(&python_procs, &tgid);
	if (!proc)
		return 0;
	b = bpf_map_lookup_elem(&python_scratch, &slot);
	if (!b)
		return 0;
	b->proc = *proc;
	b->head.depth = 0;
	fs = bpf_get_current_task_btf()->thread.fsbase;
	b->head.end = python_thread_frame(b, tgid, tid, fs);
	if (b->head.end == HS_PY_END_BOTTOM && b->frame) {
		b->head.end = HS_PY_END_CAP;
		/* Shim frames (one per eval-loop call) take iterations too: twice the cap. */
		bpf_loop(2 * python_frames + 2, python_frame_cb, &b, 0);
	}
	return b;
}

/* Bytes of the Python part `b` holds (at most HS_PY_PART_MAX). */
static __always_inline __u64 python_part_len(struct hs_python_buf *b)
{
	__u64 depth = reread(b->head.depth);

	if (depth > HS_MAX_PYTHON_FRAMES)
		depth = HS_MAX_PYTHON_FRAMES;
	return sizeof(struct hs_python) + depth * sizeof(struct hs_python_frame);
}

#endif /* HOTSPOT_PYTHON_BPF_H */
