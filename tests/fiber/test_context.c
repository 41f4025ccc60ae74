/* The fiber context switch: control moves where it should, and each context
 * gets back exactly the state the ABI says a call preserves.
 *
 *   ping_pong          two fibers switch to each other many times
 *   callee_saved       many live values across switches (plain C: the
 *                      compiler keeps them in callee-saved registers)
 *   callee_saved_asm   x86-64: rbx, rbp, r12-r15 set to known values in
 *                      assembly around the switch while the other side sets
 *                      its own (skipped elsewhere)
 *   fpu_per_context    a different rounding mode per context (MXCSR and the
 *                      x87 control word on x86-64, FPCR on aarch64)
 *   fpu_inherit        a new context starts in its creator's rounding mode
 *   deep_recursion     ~170 KiB of frames on a 256 KiB stack with a guard page
 *   alignment          16-byte stack alignment at entry and in callees
 *   many_contexts      10,000 contexts run round-robin to completion (under
 *                      TSan in waves of 4,000: its thread limit)
 *   migrate            a fiber suspended on one thread resumes on another */
#include <fenv.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "fiber/context.h"
#include "harness.h"

/* ------------------------------------------------------------ stacks */

typedef struct test_stack {
	void *map;
	size_t map_size;
	void *base; /* above the guard page */
	size_t size;
} test_stack;

static size_t page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/* A stack of size bytes with a PROT_NONE page below it. */
static test_stack stack_new(size_t size)
{
	test_stack s;
	s.map_size = size + page_size();
	s.map = mmap(NULL, s.map_size, PROT_READ | PROT_WRITE,
	             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	assert_true(s.map != MAP_FAILED);
	assert_int_equal(mprotect(s.map, page_size(), PROT_NONE), 0);
	s.base = (char *)s.map + page_size();
	s.size = size;
	return s;
}

static void stack_free(test_stack *s)
{
	assert_int_equal(munmap(s->map, s->map_size), 0);
}

/* ------------------------------------------------------------ ping_pong */

static weft__context pp_main, pp_a, pp_b;
static long pp_rounds, pp_count_a, pp_count_b;

static void pp_entry_a(void *arg)
{
	(void)arg;
	for (long i = 0; i < pp_rounds; i++) {
		WT_CHECK(pp_count_a == i && pp_count_b == i);
		pp_count_a++;
		weft__context_switch(&pp_a, &pp_b);
	}
	weft__context_switch(NULL, &pp_main);
}

static void pp_entry_b(void *arg)
{
	(void)arg;
	for (;;) {
		WT_CHECK(pp_count_b + 1 == pp_count_a);
		pp_count_b++;
		weft__context_switch(&pp_b, &pp_a);
	}
}

static void ping_pong(void)
{
	pp_rounds = WT_SANITIZER ? 100000 : 2000000;
	pp_count_a = pp_count_b = 0;
	test_stack sa = stack_new(64 * 1024), sb = stack_new(64 * 1024);
	weft__context_init_thread(&pp_main);
	weft__context_make(&pp_a, sa.base, sa.size, pp_entry_a, NULL);
	weft__context_make(&pp_b, sb.base, sb.size, pp_entry_b, NULL);
	weft__context_switch(&pp_main, &pp_a);
	assert_int_equal(pp_count_a, pp_rounds);
	assert_int_equal(pp_count_b, pp_rounds);
	weft__context_release(&pp_a);
	weft__context_release(&pp_b); /* never finished: released suspended */
	weft__context_release(&pp_main);
	stack_free(&sa);
	stack_free(&sb);
}

/* ------------------------------------------------------------ callee_saved */

static weft__context cs_main, cs_fiber;

/* Clobbers every register it can while the other side has live values. */
static __attribute__((noinline)) uint64_t cs_churn(uint64_t seed)
{
	uint64_t v[16];
	for (int i = 0; i < 16; i++)
		v[i] = seed * (uint64_t)(i + 3) + (seed >> (i + 1));
	uint64_t acc = 0;
	for (int r = 0; r < 8; r++)
		for (int i = 0; i < 16; i++)
			acc = acc * 31 + (v[i] ^ (v[(i + r) & 15] << 1));
	return acc;
}

static volatile double cs_sink;

static void cs_entry(void *arg)
{
	(void)arg;
	uint64_t seed = 0x9e3779b97f4a7c15u;
	for (;;) {
		seed = cs_churn(seed);
		double d = (double)(seed >> 11) * 0x1p-53;
		cs_sink = d * 3.5 + 1.25 * d * d;
		weft__context_switch(&cs_fiber, &cs_main);
	}
}

/* Values the compiler keeps live across the switch: integers in
 * callee-saved registers, doubles in d8-d15 on aarch64 (spilled on x86-64,
 * where no xmm register is callee-saved). */
static __attribute__((noinline)) void cs_round(uint64_t k, uint64_t *isum, double *dsum)
{
	uint64_t a = k + 1, b = k * 3, c = k ^ 0x5555, d = k << 7, e = ~k, f = k * k, g = k + 99,
	         h = k * 7 + 5;
	double x = (double)k * 0.5, y = (double)k + 0.25, z = 1.0 / ((double)k + 1.0),
	       w = (double)k * (double)k;
	weft__context_switch(&cs_main, &cs_fiber);
	*isum = a + 2 * b + 3 * c + 5 * d + 7 * e + 11 * f + 13 * g + 17 * h;
	*dsum = x + 2 * y + 3 * z + 5 * w;
}

static void callee_saved(void)
{
	test_stack s = stack_new(64 * 1024);
	weft__context_init_thread(&cs_main);
	weft__context_make(&cs_fiber, s.base, s.size, cs_entry, NULL);
	for (uint64_t k = 0; k < 10000; k++) {
		uint64_t isum;
		double dsum;
		cs_round(k, &isum, &dsum);
		uint64_t a = k + 1, b = k * 3, c = k ^ 0x5555, d = k << 7, e = ~k, f = k * k,
		         g = k + 99, h = k * 7 + 5;
		double x = (double)k * 0.5, y = (double)k + 0.25, z = 1.0 / ((double)k + 1.0),
		       w = (double)k * (double)k;
		assert_true(isum == a + 2 * b + 3 * c + 5 * d + 7 * e + 11 * f + 13 * g + 17 * h);
		double dexp = x + 2 * y + 3 * z + 5 * w; /* may contract differently */
		assert_true(fabs(dsum - dexp) <= 1e-12 * fabs(dexp) + 1e-12);
	}
	weft__context_release(&cs_fiber);
	weft__context_release(&cs_main);
	stack_free(&s);
}

/* ------------------------------------------------------------ callee_saved_asm */

#if defined(__x86_64__)
/* switch_with_magic(from, to, out, magic): sets rbx, rbp, r12-r15 to
 * magic+1 ... magic+6, calls weft__context_switch(from, to), and stores what
 * those registers hold when it returns in out[0..5]. Preserves them for its
 * own caller. */
void switch_with_magic(weft__context *from, weft__context *to, uint64_t *out, uint64_t magic);
__asm__(".text\n"
        ".p2align 4\n"
        "switch_with_magic:\n"
        "	pushq %rbx\n"
        "	pushq %rbp\n"
        "	pushq %r12\n"
        "	pushq %r13\n"
        "	pushq %r14\n"
        "	pushq %r15\n"
        "	pushq %rdx\n" /* out; rsp is now 16-byte aligned */
        "	leaq 1(%rcx), %rbx\n"
        "	leaq 2(%rcx), %rbp\n"
        "	leaq 3(%rcx), %r12\n"
        "	leaq 4(%rcx), %r13\n"
        "	leaq 5(%rcx), %r14\n"
        "	leaq 6(%rcx), %r15\n"
        "	call weft__context_switch\n"
        "	popq %rdx\n"
        "	movq %rbx, 0(%rdx)\n"
        "	movq %rbp, 8(%rdx)\n"
        "	movq %r12, 16(%rdx)\n"
        "	movq %r13, 24(%rdx)\n"
        "	movq %r14, 32(%rdx)\n"
        "	movq %r15, 40(%rdx)\n"
        "	popq %r15\n"
        "	popq %r14\n"
        "	popq %r13\n"
        "	popq %r12\n"
        "	popq %rbp\n"
        "	popq %rbx\n"
        "	ret\n");

static weft__context ca_main, ca_fiber;
#define CA_MAIN_MAGIC  0x1000000000000000u
#define CA_FIBER_MAGIC 0x2000000000000000u

static void ca_entry(void *arg)
{
	(void)arg;
	for (uint64_t round = 0;; round++) {
		uint64_t out[6];
		switch_with_magic(&ca_fiber, &ca_main, out, CA_FIBER_MAGIC + round * 16);
		for (int i = 0; i < 6; i++)
			WT_CHECK(out[i] == CA_FIBER_MAGIC + round * 16 + (uint64_t)i + 1);
	}
}

static void callee_saved_asm(void)
{
	test_stack s = stack_new(64 * 1024);
	weft__context_init_thread(&ca_main);
	weft__context_make(&ca_fiber, s.base, s.size, ca_entry, NULL);
	for (uint64_t round = 0; round < 1000; round++) {
		uint64_t out[6];
		switch_with_magic(&ca_main, &ca_fiber, out, CA_MAIN_MAGIC + round * 16);
		for (int i = 0; i < 6; i++)
			assert_true(out[i] == CA_MAIN_MAGIC + round * 16 + (uint64_t)i + 1);
	}
	weft__context_release(&ca_fiber);
	weft__context_release(&ca_main);
	stack_free(&s);
}
#else
static void callee_saved_asm(void)
{
	skip(); /* the plain-C case covers other architectures */
}
#endif

/* ------------------------------------------------------------ fpu */

static volatile double fp_one = 1.0, fp_three = 3.0;

static int current_round_check(int expected)
{
	/* fegetround, plus the two control registers on x86-64 directly
	 * (glibc's fegetround only reads the x87 control word). */
	if (fegetround() != expected)
		return 0;
#if defined(__x86_64__)
	unsigned mx = (_mm_getcsr() >> 13) & 3;
	uint16_t cw;
	__asm__ volatile("fnstcw %0" : "=m"(cw));
	unsigned x87 = (cw >> 10) & 3;
	/* FE_* are the x87 RC bits (<< 10) on x86. */
	if (mx != (unsigned)expected >> 10 || x87 != (unsigned)expected >> 10)
		return 0;
#endif
	return 1;
}

static weft__context fp_main, fp_a, fp_b;

typedef struct fp_fiber {
	weft__context *self;
	int mode;
	int rounds;
} fp_fiber;

static void fp_entry(void *arg)
{
	fp_fiber *f = arg;
	WT_CHECK(fesetround(f->mode) == 0);
	for (int i = 0; i < f->rounds; i++) {
		WT_CHECK(current_round_check(f->mode));
		/* Computes something in this mode each time. */
		volatile double q = fp_one / fp_three;
		WT_CHECK(f->mode != FE_UPWARD || q * 3.0 >= 1.0);
		weft__context_switch(f->self, &fp_main);
	}
	weft__context_switch(NULL, &fp_main);
}

static void fpu_per_context(void)
{
	const int rounds = 100;
	test_stack sa = stack_new(64 * 1024), sb = stack_new(64 * 1024);
	fp_fiber fa = {&fp_a, FE_UPWARD, rounds}, fb = {&fp_b, FE_DOWNWARD, rounds};
	weft__context_init_thread(&fp_main);
	weft__context_make(&fp_a, sa.base, sa.size, fp_entry, &fa);
	weft__context_make(&fp_b, sb.base, sb.size, fp_entry, &fb);
	assert_int_equal(fesetround(FE_TOWARDZERO), 0);
	for (int i = 0; i <= rounds; i++) {
		weft__context_switch(&fp_main, &fp_a);
		assert_true(current_round_check(FE_TOWARDZERO));
		weft__context_switch(&fp_main, &fp_b);
		assert_true(current_round_check(FE_TOWARDZERO));
	}
	assert_int_equal(fesetround(FE_TONEAREST), 0);
	weft__context_release(&fp_a);
	weft__context_release(&fp_b);
	weft__context_release(&fp_main);
	stack_free(&sa);
	stack_free(&sb);
	wt_check_async();
}

static int fi_seen;

static void fi_entry(void *arg)
{
	(void)arg;
	fi_seen = fegetround();
	WT_CHECK(current_round_check(FE_UPWARD));
	weft__context_switch(NULL, &fp_main);
}

static void fpu_inherit(void)
{
	test_stack s = stack_new(64 * 1024);
	weft__context_init_thread(&fp_main);
	assert_int_equal(fesetround(FE_UPWARD), 0);
	weft__context_make(&fp_a, s.base, s.size, fi_entry, NULL);
	assert_int_equal(fesetround(FE_TONEAREST), 0);
	weft__context_switch(&fp_main, &fp_a);
	assert_int_equal(fi_seen, FE_UPWARD);
	assert_true(current_round_check(FE_TONEAREST));
	weft__context_release(&fp_a);
	weft__context_release(&fp_main);
	stack_free(&s);
}

/* ------------------------------------------------------------ deep_recursion */

static weft__context dr_main, dr_fiber;
static uintptr_t dr_lowest;

static __attribute__((noinline)) uint64_t dr_recurse(int depth)
{
	volatile uint8_t buf[256];
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(depth + (int)i);
	if ((uintptr_t)buf < dr_lowest)
		dr_lowest = (uintptr_t)buf;
	uint64_t below = depth > 0 ? dr_recurse(depth - 1) : 0;
	uint64_t sum = below;
	for (size_t i = 0; i < sizeof(buf); i++)
		sum += buf[i];
	return sum;
}

static uint64_t dr_result;

static void dr_entry(void *arg)
{
	int depth = *(int *)arg;
	dr_result = dr_recurse(depth);
	/* A second time after a round trip through main: the frames are gone
	 * and reused. */
	weft__context_switch(&dr_fiber, &dr_main);
	dr_result += dr_recurse(depth);
	weft__context_switch(NULL, &dr_main);
}

static void deep_recursion(void)
{
	const size_t size = 256 * 1024;
	/* ~600 x (256 + frame) bytes: about 160 KiB; ASan's redzones make the
	 * frames half as big again. */
	int depth = WT_SANITIZER ? 400 : 600;
	test_stack s = stack_new(size);
	uint64_t expect = 0;
	for (int d = 0; d <= depth; d++)
		for (int i = 0; i < 256; i++)
			expect += (uint8_t)(d + i);
	dr_lowest = UINTPTR_MAX;
	weft__context_init_thread(&dr_main);
	weft__context_make(&dr_fiber, s.base, s.size, dr_entry, &depth);
	weft__context_switch(&dr_main, &dr_fiber);
	assert_true(dr_result == expect);
	weft__context_switch(&dr_main, &dr_fiber);
	assert_true(dr_result == 2 * expect);
	/* Without ASan's fake stack the frames were on the fiber's stack; say
	 * how deep they went. */
	uintptr_t top = (uintptr_t)s.base + size;
	if (dr_lowest >= (uintptr_t)s.base && dr_lowest < top) {
		print_message("deep_recursion: %zu KiB of the fiber's %zu KiB stack used\n",
		              (size_t)(top - dr_lowest) / 1024, size / 1024);
		assert_true(top - dr_lowest > 100 * 1024);
	} else {
		print_message("deep_recursion: frames outside the fiber stack (ASan fake stack)\n");
	}
	weft__context_release(&dr_fiber);
	weft__context_release(&dr_main);
	stack_free(&s);
}

/* ------------------------------------------------------------ alignment */

static weft__context al_main, al_fiber;
static uintptr_t al_frame_entry, al_frame_callee, al_local;

static __attribute__((noinline)) void al_callee(void)
{
	al_frame_callee = (uintptr_t)__builtin_frame_address(0);
	_Alignas(16) volatile char buf[16];
	al_local = (uintptr_t)buf;
#if defined(__x86_64__)
	/* movaps faults on a misaligned address. */
	__m128 v = _mm_set1_ps(1.5f);
	_Alignas(16) float out[4];
	_mm_store_ps(out, v);
	WT_CHECK(out[3] == 1.5f);
	__asm__ volatile("movaps %%xmm0, %0" : "=m"(*(__m128 *)out)::"xmm0");
#endif
	buf[0] = 1;
}

static void al_entry(void *arg)
{
	(void)arg;
	al_frame_entry = (uintptr_t)__builtin_frame_address(0);
	al_callee();
	weft__context_switch(&al_fiber, &al_main);
	al_callee(); /* again after a resume */
	weft__context_switch(NULL, &al_main);
}

static void alignment(void)
{
	test_stack s = stack_new(64 * 1024);
	/* Every misalignment of the stack top the caller might hand over. */
	for (size_t shift = 0; shift < 64; shift += 8) {
		weft__context_init_thread(&al_main);
		weft__context_make(&al_fiber, s.base, s.size - shift, al_entry, NULL);
		al_frame_entry = al_frame_callee = al_local = 1;
		weft__context_switch(&al_main, &al_fiber);
		/* The frame address is the saved-rbp slot (x86-64) or the frame
		 * record (aarch64): 16-byte aligned iff the stack pointer was
		 * aligned at the call, as the ABI requires. */
		assert_int_equal(al_frame_entry % 16, 0);
		assert_int_equal(al_frame_callee % 16, 0);
		assert_int_equal(al_local % 16, 0);
		al_frame_callee = al_local = 1;
		weft__context_switch(&al_main, &al_fiber);
		assert_int_equal(al_frame_callee % 16, 0);
		assert_int_equal(al_local % 16, 0);
		weft__context_release(&al_fiber);
		weft__context_release(&al_main);
	}
	stack_free(&s);
	wt_check_async();
}

/* ------------------------------------------------------------ many_contexts */

typedef struct mc_fiber {
	weft__context ctx;
	weft__context *sched;
	long steps, done;
	int finished;
} mc_fiber;

static void mc_entry(void *arg)
{
	mc_fiber *f = arg;
	for (long i = 0; i < f->steps; i++) {
		f->done++;
		weft__context_switch(&f->ctx, f->sched);
	}
	f->finished = 1;
	weft__context_switch(NULL, f->sched);
}

/* ThreadSanitizer (gcc's libtsan) dies past 8128 live threads, and every
 * made context is a TSan fiber, which counts as one: under TSan the 10,000
 * contexts run in waves of at most 4,000 alive at once. */
#if defined(__SANITIZE_THREAD__)
#define MC_WAVE 4000
#else
#define MC_WAVE 10000
#endif

static void many_contexts(void)
{
	const size_t n = 10000, wave = MC_WAVE, stack_size = 16 * 1024;
	const long steps = 5;
	char *stacks = mmap(NULL, wave * stack_size, PROT_READ | PROT_WRITE,
	                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	assert_true(stacks != MAP_FAILED);
	mc_fiber *f = calloc(n, sizeof(*f));
	assert_non_null(f);
	weft__context sched;
	weft__context_init_thread(&sched);
	for (size_t first = 0; first < n; first += wave) {
		size_t end = first + wave < n ? first + wave : n;
		for (size_t i = first; i < end; i++) {
			f[i].sched = &sched;
			f[i].steps = steps + (long)(i % 3); /* they finish at different rounds */
			weft__context_make(&f[i].ctx, stacks + (i - first) * stack_size, stack_size,
			                   mc_entry, &f[i]);
		}
		size_t live = end - first;
		long rounds = 0;
		while (live > 0) {
			rounds++;
			for (size_t i = first; i < end; i++) {
				if (f[i].finished)
					continue;
				weft__context_switch(&sched, &f[i].ctx);
				if (f[i].finished) {
					weft__context_release(&f[i].ctx);
					live--;
				}
			}
			assert_true(rounds <= steps + 3);
		}
		assert_int_equal(rounds, steps + 3);
	}
	for (size_t i = 0; i < n; i++)
		assert_int_equal(f[i].done, f[i].steps);
	weft__context_release(&sched);
	free(f);
	assert_int_equal(munmap(stacks, wave * stack_size), 0);
}

/* ------------------------------------------------------------ migrate */

typedef struct mg_state {
	weft__context fiber;
	weft__context *back; /* the thread context to return to, set by each thread */
	uint64_t token;
	int resumed_on_other;
} mg_state;

static void mg_entry(void *arg)
{
	mg_state *m = arg;
	uint64_t local = 0xfeedface; /* lives on the fiber's stack across threads */
	pid_t first = gettid();
	m->token = local;
	weft__context_switch(&m->fiber, m->back);
	m->resumed_on_other = first != gettid();
	m->token = local + 1;
	weft__context_switch(NULL, m->back);
}

static void *mg_thread(void *arg)
{
	mg_state *m = arg;
	weft__context self;
	weft__context_init_thread(&self);
	m->back = &self;
	weft__context_switch(&self, &m->fiber);
	weft__context_release(&self);
	return NULL;
}

static void migrate(void)
{
	test_stack s = stack_new(64 * 1024);
	mg_state m;
	memset(&m, 0, sizeof(m));
	weft__context_make(&m.fiber, s.base, s.size, mg_entry, &m);
	pthread_t t;
	wt_thread_start(&t, mg_thread, &m);
	wt_thread_join(t);
	assert_true(m.token == 0xfeedface);
	wt_thread_start(&t, mg_thread, &m);
	wt_thread_join(t);
	assert_true(m.token == 0xfeedface + 1);
	assert_true(m.resumed_on_other);
	weft__context_release(&m.fiber);
	stack_free(&s);
}

WT_CASES(WT_CASE(ping_pong), WT_CASE(callee_saved), WT_CASE(callee_saved_asm),
         WT_CASE(fpu_per_context), WT_CASE(fpu_inherit), WT_CASE(deep_recursion),
         WT_CASE(alignment), WT_CASE(many_contexts), WT_CASE(migrate));
