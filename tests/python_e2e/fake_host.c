/* A process that only looks like it runs CPython: it loads a fake libpython
 * (testkit's FakePython), fills the interpreter's pthread key with a crafted
 * thread state whose frame chain loops on itself and whose code object is
 * unmapped memory, and spins in the fake eval loop.
 * argv: lib tss tstate_frame cframe_frame thread_id frame_previous frame_code seconds */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static unsigned char tstate[4096] __attribute__((aligned(64)));
static unsigned char cframe[4096] __attribute__((aligned(64)));
static unsigned char frame[4096] __attribute__((aligned(64)));

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

__attribute__((noinline)) long spin(int (*eval)(int *, int), double seconds)
{
	static int buf[4096];
	long sum = 0;
	for (int i = 0; i < 4096; i++)
		buf[i] = i;
	double end = now() + seconds;
	while (now() < end)
		sum += eval(buf, 4096);
	return sum;
}

int main(int argc, char **argv)
{
	if (argc != 9)
		return 2;
	void *h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return 1;
	}
	unsigned char *rt = dlsym(h, "_PyRuntime");
	int (*eval)(int *, int) = (int (*)(int *, int))dlsym(h, "_PyEval_EvalFrameDefault");
	if (!rt || !eval)
		return 1;
	long tss = atol(argv[2]), ts_frame = atol(argv[3]), cf_frame = atol(argv[4]),
	     thread_id = atol(argv[5]), previous = atol(argv[6]), code = atol(argv[7]);
	pthread_key_t key;
	pthread_key_create(&key, 0);
	*(int *)(rt + tss) = 1;
	*(unsigned *)(rt + tss + 4) = key;
	*(unsigned long *)(tstate + thread_id) = (unsigned long)pthread_self();
	*(void **)(tstate + ts_frame) = cframe;
	*(void **)(cframe + cf_frame) = frame;
	*(void **)(frame + previous) = frame;
	*(unsigned long *)(frame + code) = 0x10; /* never mapped */
	pthread_setspecific(key, tstate);
	printf("%ld\n", spin(eval, atof(argv[8])));
	return 0;
}
