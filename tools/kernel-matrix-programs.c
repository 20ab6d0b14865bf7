// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * The kernel matrix's program check (tools/kernel-matrix builds it with libbpf, statically,
 * into each guest's initramfs): hands every program of hotspot's BPF object to this
 * kernel's verifier, one object per program, and prints one line each,
 *
 *   hs-prog NAME python_frames=N ok insns=I
 *   hs-prog NAME python_frames=N refused err=E
 *
 * followed, for a refused program, by the verifier's whole log between
 * `hs-log-begin NAME` and `hs-log-end NAME` lines. hotspot itself only loads the programs a
 * recording needs, and reports the end of the log; this says whether each one would load,
 * and why not, in full. The host checks the lines (tests/kernel_matrix.rs).
 *
 * Usage: kernel-matrix-programs OBJECT [PYTHON_FRAMES…]   (default: 128)
 * The loader's other globals keep the object's defaults (the verifier sees them as
 * constants): python_frames is the one that changes a program's bounds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#define LOG_SIZE (64u << 20)

static char *log_buf;

static int quiet(enum libbpf_print_level level, const char *fmt, va_list args)
{
	(void)level;
	(void)fmt;
	(void)args;
	return 0;
}

/* Writes `value` into the .rodata global `name` before the object is loaded. */
static int set_rodata_u32(struct bpf_object *obj, const char *name, __u32 value)
{
	struct btf *btf = bpf_object__btf(obj);
	struct bpf_map *map = bpf_object__find_map_by_name(obj, ".rodata");
	const struct btf_var_secinfo *v;
	const struct btf_type *sec;
	size_t size;
	char *data;
	int id, i;

	if (!btf || !map)
		return -ENOENT;
	id = btf__find_by_name_kind(btf, ".rodata", BTF_KIND_DATASEC);
	if (id < 0)
		return id;
	sec = btf__type_by_id(btf, id);
	data = (char *)bpf_map__initial_value(map, &size);
	if (!data)
		return -ENOENT;
	v = btf_var_secinfos(sec);
	for (i = 0; i < btf_vlen(sec); i++, v++) {
		const struct btf_type *var = btf__type_by_id(btf, v->type);

		if (strcmp(btf__name_by_offset(btf, var->name_off), name) == 0) {
			if (v->size != sizeof(value) || v->offset + sizeof(value) > size)
				return -EINVAL;
			memcpy(data + v->offset, &value, sizeof(value));
			return 0;
		}
	}
	return -ENOENT;
}

/* Loads program `index` of `path` alone; 0 when the kernel took it. */
static int check(const char *path, int index, __u32 python_frames)
{
	struct bpf_object *obj = bpf_object__open_file(path, NULL);
	struct bpf_program *prog, *mine = NULL;
	const char *name;
	int i = 0, err, insns = -1;
	char *p;

	if (!obj) {
		printf("hs-prog-error cannot open %s\n", path);
		return -1;
	}
	bpf_object__for_each_program(prog, obj) {
		if (i++ == index)
			mine = prog;
		else
			bpf_program__set_autoload(prog, false);
	}
	if (!mine) {
		bpf_object__close(obj);
		return 1; /* past the last program */
	}
	name = bpf_program__name(mine);
	err = set_rodata_u32(obj, "python_frames", python_frames);
	if (err) {
		printf("hs-prog-error %s: no python_frames global (%d)\n", path, err);
		bpf_object__close(obj);
		return -1;
	}
	log_buf[0] = 0;
	bpf_program__set_log_buf(mine, log_buf, LOG_SIZE);
	bpf_program__set_log_level(mine, 1 | 4); /* the trace, and the statistics */
	err = bpf_object__load(obj);
	p = strstr(log_buf, "processed ");
	if (p)
		sscanf(p, "processed %d insns", &insns);
	if (err) {
		printf("hs-prog %s python_frames=%u refused err=%d insns=%d\n", name, python_frames,
		       err, insns);
		printf("hs-log-begin %s\n%s\nhs-log-end %s\n", name, log_buf, name);
	} else {
		printf("hs-prog %s python_frames=%u ok insns=%d\n", name, python_frames, insns);
	}
	fflush(stdout);
	bpf_object__close(obj);
	return 0;
}

int main(int argc, char **argv)
{
	const char *def[] = { "128" };
	const char **frames = argc > 2 ? (const char **)argv + 2 : def;
	int n = argc > 2 ? argc - 2 : 1, i, f, r, failed = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s OBJECT [PYTHON_FRAMES...]\n", argv[0]);
		return 2;
	}
	log_buf = malloc(LOG_SIZE);
	if (!log_buf)
		return 2;
	libbpf_set_print(quiet);
	for (f = 0; f < n; f++)
		for (i = 0; (r = check(argv[1], i, (__u32)strtoul(frames[f], NULL, 10))) != 1; i++)
			failed |= r != 0;
	return failed;
}
