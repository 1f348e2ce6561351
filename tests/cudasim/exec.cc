/* SPDX-License-Identifier: MIT */
/* cudasim's kernel execution: a launch runs block after block; a block's threads are fibers on
 * the host thread that drains the stream, run in thread order until each exits or stops at a
 * synchronisation point (__syncthreads or a warp shuffle). When every thread has stopped, the
 * scheduler resolves the warps' shuffles, else releases the barrier, checking CUDA's rules:
 *   - a barrier is reached by every thread of the block, at the same __syncthreads (file, line),
 *     and by no block whose threads partly exited;
 *   - a shuffle is executed by every lane its mask names, with the same mask, and reads only
 *     lanes of the mask.
 * A broken rule aborts with the kernel, block, lane and line (az_sim_fail): the test fails.
 *
 * Fibers switch with a six-register swap on x86-64 (swapcontext's signal-mask syscall would cost
 * more than the kernels' work) and with ucontext elsewhere; under ASan the switches are
 * announced to the sanitizer so that it follows the stacks. */
#include "tests/cudasim/cudasim_impl.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define AZ_SIM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AZ_SIM_ASAN 1
#endif
#endif
#ifdef AZ_SIM_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

uint3 threadIdx, blockIdx;
dim3 blockDim, gridDim;

#if defined(__x86_64__)
/* Save the callee-saved registers and the stack pointer in *save, resume the context at to. */
extern "C" void az_sim_switch(void **save, void *to) __attribute__((visibility("hidden")));
__asm__(".text\n"
	".globl az_sim_switch\n"
	".hidden az_sim_switch\n"
	".type az_sim_switch, @function\n"
	"az_sim_switch:\n"
	"\tpushq %rbp\n\tpushq %rbx\n\tpushq %r12\n\tpushq %r13\n\tpushq %r14\n\tpushq %r15\n"
	"\tmovq %rsp, (%rdi)\n"
	"\tmovq %rsi, %rsp\n"
	"\tpopq %r15\n\tpopq %r14\n\tpopq %r13\n\tpopq %r12\n\tpopq %rbx\n\tpopq %rbp\n"
	"\tret\n"
	".size az_sim_switch, .-az_sim_switch\n");
#define AZ_SIM_ASM_SWITCH 1
#endif

namespace {

#ifdef AZ_SIM_ASAN
constexpr size_t STACK_BYTES = 512 << 10;
#else
constexpr size_t STACK_BYTES = 128 << 10;
#endif
constexpr unsigned MAX_THREADS = 1024;
constexpr size_t TOP_FRAMES = 16 << 10; /* covers fiber_entry's and yield's frames */

enum tstate { T_RUN, T_BAR, T_SHFL, T_DONE };

/* A suspended execution context: the stack pointer az_sim_switch saved, else a ucontext. */
struct context {
#ifdef AZ_SIM_ASM_SWITCH
	void *sp;
#else
	ucontext_t uc;
#endif
};

/* Save the running context in *save and resume *to. */
void switch_context(context *save, context *to)
{
#ifdef AZ_SIM_ASM_SWITCH
	az_sim_switch(&save->sp, to->sp);
#else
	swapcontext(&save->uc, &to->uc);
#endif
}

struct fiber {
	context ctx;
	char *stack;
	enum tstate st;
	uint3 tid;
	const char *file; /* the __syncthreads it waits at */
	int line;
	enum az_sim_shfl_op op; /* the shuffle it waits at */
	unsigned mask;
	int arg, width;
	uint64_t val, out;
	void *asan_fake;
};

/* The block being run (under the device lock). */
struct block_run {
	const char *name;
	const std::function<void()> *body;
	fiber *f, *cur;
	unsigned n;
	context sched; /* the scheduler's, while a fiber runs */
	void *sched_fake;
	const void *sched_bottom;
	size_t sched_size;
	uint8_t *dyn; /* dynamic shared memory, NULL when the launch asked for none */
};

block_run *cur_run;
fiber fibers[MAX_THREADS];

/* Fiber stacks, mapped once, with a guard page below each. */
char *stack_of(unsigned i)
{
	static char *stacks[MAX_THREADS];

	if (!stacks[i]) {
		void *m = mmap(NULL, STACK_BYTES, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (m == MAP_FAILED)
			az_sim_fail("cannot map a fiber stack");
		(void)mprotect(m, 4096, PROT_NONE);
		stacks[i] = (char *)m;
	}
	return stacks[i];
}

void where(const fiber *f, char *buf, size_t len)
{
	snprintf(buf, len, "kernel %s block (%u,%u,%u) thread (%u,%u,%u)", cur_run->name,
		 blockIdx.x, blockIdx.y, blockIdx.z, f->tid.x, f->tid.y, f->tid.z);
}

/* Leave fiber f for the scheduler; returns when the scheduler resumes f. */
void yield(fiber *f)
{
	block_run *r = cur_run;
#ifdef AZ_SIM_ASAN
	__sanitizer_start_switch_fiber(f->st == T_DONE ? NULL : &f->asan_fake, r->sched_bottom,
				       r->sched_size);
#endif
	switch_context(&f->ctx, &r->sched);
#ifdef AZ_SIM_ASAN
	__sanitizer_finish_switch_fiber(f->asan_fake, &r->sched_bottom, &r->sched_size);
#endif
}

void fiber_entry(void)
{
	block_run *r = cur_run;
	fiber *f = r->cur;

#ifdef AZ_SIM_ASAN
	__sanitizer_finish_switch_fiber(NULL, &r->sched_bottom, &r->sched_size);
#endif
	(*r->body)();
	f->st = T_DONE;
	yield(f);
	az_sim_fail("a finished fiber was resumed");
}

#ifndef AZ_SIM_ASM_SWITCH
void fiber_entry_uc(void)
{
	fiber_entry();
}
#endif

void fiber_start(fiber *f, unsigned i, uint3 tid)
{
	char *stack = stack_of(i);

#ifdef AZ_SIM_ASAN
	/* A finished fiber never returned from fiber_entry: the redzones of the frames at the top
	 * of its stack (fiber_entry, yield) are still poisoned. The kernel's own frames below
	 * returned and were unpoisoned then. */
	ASAN_UNPOISON_MEMORY_REGION(stack + STACK_BYTES - TOP_FRAMES, TOP_FRAMES);
#endif
	f->stack = stack;
	f->st = T_RUN;
	f->tid = tid;
	f->asan_fake = NULL;
#ifdef AZ_SIM_ASM_SWITCH
	/* The frame az_sim_switch pops: six registers, then fiber_entry as the return address,
	 * placed so that fiber_entry starts with the stack aligned as after a call. */
	void **sp = (void **)((uintptr_t)(stack + STACK_BYTES) & ~(uintptr_t)15);

	*--sp = NULL;
	*--sp = (void *)fiber_entry;
	for (int k = 0; k < 6; k++)
		*--sp = NULL;
	f->ctx.sp = sp;
#else
	getcontext(&f->ctx.uc);
	f->ctx.uc.uc_stack.ss_sp = stack + 4096;
	f->ctx.uc.uc_stack.ss_size = STACK_BYTES - 4096;
	f->ctx.uc.uc_link = NULL;
	makecontext(&f->ctx.uc, fiber_entry_uc, 0);
#endif
}

void resume(block_run *r, fiber *f)
{
	r->cur = f;
	threadIdx = f->tid;
#ifdef AZ_SIM_ASAN
	__sanitizer_start_switch_fiber(&r->sched_fake, f->stack + 4096, STACK_BYTES - 4096);
#endif
	switch_context(&r->sched, &f->ctx);
#ifdef AZ_SIM_ASAN
	__sanitizer_finish_switch_fiber(r->sched_fake, NULL, NULL);
#endif
	r->cur = NULL;
}

/* The lane a shuffle of lane l reads, by CUDA's rules (its own when out of its segment). */
unsigned shfl_source(const fiber *f, unsigned l)
{
	unsigned w = (unsigned)f->width, seg = l & ~(w - 1);

	switch (f->op) {
	case AZ_SIM_SHFL_IDX:
		return seg + ((unsigned)f->arg & (w - 1));
	case AZ_SIM_SHFL_UP:
		return (l - seg) >= (unsigned)f->arg ? l - (unsigned)f->arg : l;
	case AZ_SIM_SHFL_DOWN:
		return (l - seg) + (unsigned)f->arg < w ? l + (unsigned)f->arg : l;
	default: {
		unsigned s = l ^ (unsigned)f->arg;
		return (s & ~(w - 1)) > seg ? l : s;
	}
	}
}

/* Resolve the shuffles the stopped warps wait at; false when none waits. */
bool resolve_shuffles(block_run *r)
{
	bool any = false;
	char at[160];

	for (unsigned w0 = 0; w0 < r->n; w0 += 32) {
		unsigned lanes = r->n - w0 < 32 ? r->n - w0 : 32, first = 32;

		for (unsigned l = 0; l < lanes; l++)
			if (r->f[w0 + l].st == T_SHFL && first == 32)
				first = l;
		if (first == 32)
			continue;
		unsigned mask = r->f[w0 + first].mask;

		where(&r->f[w0 + first], at, sizeof(at));
		if (lanes < 32 && (mask >> lanes) != 0)
			az_sim_fail("%s: shuffle mask 0x%08x names lanes past the block's end "
				    "(%u lanes in this warp)", at, mask, lanes);
		for (unsigned l = 0; l < lanes; l++) {
			fiber *f = &r->f[w0 + l];
			bool named = (mask >> l) & 1u;

			if (f->st == T_SHFL && f->mask != mask)
				az_sim_fail("%s: lanes %u and %u shuffle with masks 0x%08x and 0x%08x",
					    at, first, l, mask, f->mask);
			if (f->st == T_SHFL && !named)
				az_sim_fail("%s: lane %u shuffles with a mask 0x%08x without it", at,
					    l, mask);
			if (named && f->st == T_DONE)
				az_sim_fail("%s: lane %u, named in shuffle mask 0x%08x, exited", at,
					    l, mask);
			if (named && f->st == T_BAR)
				az_sim_fail("%s: lane %u, named in shuffle mask 0x%08x, waits at "
					    "__syncthreads (%s:%d) instead", at, l, mask, f->file,
					    f->line);
		}
		for (unsigned l = 0; l < lanes; l++) {
			fiber *f = &r->f[w0 + l];

			if (f->st != T_SHFL)
				continue;
			if (f->width < 1 || f->width > 32 || (f->width & (f->width - 1)))
				az_sim_fail("%s: lane %u: shuffle width %d", at, l, f->width);
			unsigned src = shfl_source(f, l);

			if (src >= lanes || !((mask >> src) & 1u))
				az_sim_fail("%s: lane %u reads lane %u, outside mask 0x%08x", at, l,
					    src, mask);
			f->out = r->f[w0 + src].val;
		}
		for (unsigned l = 0; l < lanes; l++)
			if (r->f[w0 + l].st == T_SHFL)
				r->f[w0 + l].st = T_RUN;
		any = true;
	}
	return any;
}

/* Release the block's barrier; false when every thread has exited. */
bool release_barrier(block_run *r)
{
	const fiber *bar = NULL, *done = NULL;
	char at[160];

	for (unsigned i = 0; i < r->n; i++) {
		if (r->f[i].st == T_BAR && !bar)
			bar = &r->f[i];
		if (r->f[i].st == T_DONE && !done)
			done = &r->f[i];
	}
	if (!bar)
		return false;
	where(bar, at, sizeof(at));
	if (done)
		az_sim_fail("%s: __syncthreads (%s:%d) not reached by thread (%u,%u,%u), which "
			    "exited", at, bar->file, bar->line, done->tid.x, done->tid.y,
			    done->tid.z);
	for (unsigned i = 0; i < r->n; i++) {
		fiber *f = &r->f[i];

		if (f->line != bar->line || strcmp(f->file, bar->file) != 0)
			az_sim_fail("%s: waits at __syncthreads %s:%d, thread (%u,%u,%u) at a "
				    "different one, %s:%d", at, bar->file, bar->line, f->tid.x,
				    f->tid.y, f->tid.z, f->file, f->line);
		f->st = T_RUN;
	}
	return true;
}

void run_block(block_run *r, dim3 block)
{
	unsigned i = 0;

	for (unsigned z = 0; z < block.z; z++)
		for (unsigned y = 0; y < block.y; y++)
			for (unsigned x = 0; x < block.x; x++, i++)
				fiber_start(&r->f[i], i, uint3{x, y, z});
	do {
		do {
			for (unsigned t = 0; t < r->n; t++)
				if (r->f[t].st == T_RUN)
					resume(r, &r->f[t]);
		} while (resolve_shuffles(r));
	} while (release_barrier(r));
}

fiber *current(const char *what)
{
	if (!cur_run || !cur_run->cur)
		az_sim_fail("%s called outside a kernel", what);
	return cur_run->cur;
}

} /* namespace */

void az_sim_syncthreads(const char *file, int line)
{
	fiber *f = current("__syncthreads");

	f->st = T_BAR;
	f->file = file;
	f->line = line;
	yield(f);
}

uint64_t az_sim_shfl(enum az_sim_shfl_op op, unsigned mask, uint64_t bits, int arg, int width)
{
	fiber *f = current("a warp shuffle");

	f->st = T_SHFL;
	f->op = op;
	f->mask = mask;
	f->arg = arg;
	f->width = width;
	f->val = bits;
	yield(f);
	return f->out;
}

void *az_sim_dynamic_shared(void)
{
	current("dynamic shared memory");
	return cur_run->dyn;
}

void az_sim_run_grid(const char *name, dim3 grid, dim3 block, size_t smem,
		     const std::function<void()> &body)
{
	block_run r = {};

	r.name = name;
	r.body = &body;
	r.f = fibers;
	r.n = block.x * block.y * block.z;
	r.dyn = smem ? (uint8_t *)malloc(smem) : NULL;
	gridDim = grid;
	blockDim = block;
	cur_run = &r;
	for (unsigned z = 0; z < grid.z; z++) {
		for (unsigned y = 0; y < grid.y; y++) {
			for (unsigned x = 0; x < grid.x; x++) {
				blockIdx = uint3{x, y, z};
				if (r.dyn)
					memset(r.dyn, 0xff, smem); /* uninitialised: NaN */
				run_block(&r, block);
			}
		}
	}
	cur_run = NULL;
	free(r.dyn);
}

void az_sim_launch_enqueue(const char *name, dim3 grid, dim3 block, size_t smem, cudaStream_t s,
			   std::function<void()> body)
{
	unsigned long long threads = (unsigned long long)block.x * block.y * block.z;
	cudaError_t e;

	if (threads == 0 || threads > MAX_THREADS || block.z > 64 || grid.x == 0 ||
	    grid.x > 0x7fffffffu || grid.y == 0 || grid.y > 65535 || grid.z == 0 ||
	    grid.z > 65535 || smem > (48 << 10)) {
		az_sim_note("launch of %s: invalid configuration grid (%u,%u,%u) block (%u,%u,%u) "
			    "shared %zu", name, grid.x, grid.y, grid.z, block.x, block.y, block.z,
			    smem);
		az_sim_set_error(cudaErrorInvalidConfiguration);
		return;
	}
	e = az_sim_enqueue(s, name, [=]() { az_sim_run_grid(name, grid, block, smem, body); });
	(void)e; /* an error is already the last error */
}
