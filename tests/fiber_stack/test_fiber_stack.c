/* Fiber stacks (src/fiber/stack.c): the pool, the layout, the guard page,
 * the overflow handler and what happens at the mapping limit. Each case is
 * its own ctest entry (fiber_stack.<case>).
 *
 * The death cases fork: the child does the deed with its stderr on a pipe,
 * and the parent checks how it died and what it said. There is no context
 * switch yet, so an overflow is simulated by writing to the guard page of
 * the stack set as current, which is the fault a fiber running off the end
 * of its stack takes.
 *
 * Sanitizers: every case runs under ASan and TSan as it is, no ASAN_OPTIONS
 * needed. Both let an application replace their SIGSEGV handler (ASan's
 * allow_user_segv_handler defaults to 1); weft's handler passes faults that
 * are not overflows on to the one installed before it. A child resets
 * SIGSEGV to SIG_DFL first, because the previous handler in a cmocka test
 * is cmocka's. The RSS bound of many_stacks is not checked under TSan,
 * whose shadow of each mapping dwarfs the stack. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fiber/stack.h"
#include "harness.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#else
#define UNDER_ASAN 0
#endif
#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#else
#define UNDER_TSAN 0
#endif

static size_t pg(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/* ------------------------------------------------------------ helpers */

/* Resident pages of this process (second field of /proc/self/statm). */
static long resident_pages(void)
{
	FILE *f = fopen("/proc/self/statm", "re");
	if (!f)
		return -1;
	long size = 0, resident = -1;
	if (fscanf(f, "%ld %ld", &size, &resident) != 2)
		resident = -1;
	fclose(f);
	return resident;
}

static long vm_pages(void)
{
	FILE *f = fopen("/proc/self/statm", "re");
	if (!f)
		return -1;
	long size = -1;
	if (fscanf(f, "%ld", &size) != 1)
		size = -1;
	fclose(f);
	return size;
}

static long count_mappings(void)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	static char buf[1 << 16];
	long lines = 0;
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n; i++)
			lines += buf[i] == '\n';
	close(fd);
	return lines;
}

/* The [start, end) of the mapping (VMA) of /proc/self/maps holding addr. */
static bool vma_of(const void *addr, uintptr_t *start, uintptr_t *end)
{
	FILE *f = fopen("/proc/self/maps", "re");
	if (!f)
		return false;
	char line[512];
	bool found = false;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && (uintptr_t)addr >= lo &&
		    (uintptr_t)addr < hi) {
			*start = lo;
			*end = hi;
			found = true;
		}
	}
	fclose(f);
	return found;
}

/* Whether the kernel lets us read the byte at addr, asked without touching
 * it: write(2) from an address in a guard page fails with EFAULT. */
static bool readable(const void *addr)
{
	int fds[2];
	if (pipe(fds) != 0)
		fail_msg("pipe: %s", strerror(errno));
	ssize_t n = write(fds[1], addr, 1);
	int err = errno;
	close(fds[0]);
	close(fds[1]);
	if (n < 0 && err != EFAULT)
		fail_msg("write from %p: %s", addr, strerror(err));
	return n == 1;
}

static __attribute__((unused)) bool kernel_at_least(int major, int minor)
{
	struct utsname u;
	int ma = 0, mi = 0;
	if (uname(&u) != 0 || sscanf(u.release, "%d.%d", &ma, &mi) != 2)
		return false;
	return ma > major || (ma == major && mi >= minor);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------ children */

/* In a child, a failed check says why on stderr and exits 3. */
#define CHILD_CHECK(cond)                                                                   \
	do {                                                                                \
		if (!(cond)) {                                                              \
			dprintf(2, "child check failed at %s:%d: %s\n", __FILE__, __LINE__, \
			        #cond);                                                     \
			_exit(3);                                                           \
		}                                                                           \
	} while (0)

static const char *describe_status(int status)
{
	static char buf[64];
	if (WIFSIGNALED(status))
		snprintf(buf, sizeof(buf), "killed by signal %d (%s)", WTERMSIG(status),
		         strsignal(WTERMSIG(status)));
	else if (WIFEXITED(status))
		snprintf(buf, sizeof(buf), "exited %d", WEXITSTATUS(status));
	else
		snprintf(buf, sizeof(buf), "status %#x", status);
	return buf;
}

typedef struct child_result {
	int status;
	char err[8192]; /* the child's stderr */
} child_result;

/* Runs fn(arg) in a child with its stderr on a pipe; the child exits 0 when
 * fn returns. */
static void run_child(void (*fn)(void *), void *arg, child_result *r)
{
	int fds[2];
	if (pipe(fds) != 0)
		fail_msg("pipe: %s", strerror(errno));
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		fail_msg("fork: %s", strerror(errno));
	if (pid == 0) {
		close(fds[0]);
		dup2(fds[1], 2);
		close(fds[1]);
		fn(arg);
		_exit(0);
	}
	close(fds[1]);
	size_t len = 0;
	ssize_t n;
	while ((n = read(fds[0], r->err + len, sizeof(r->err) - 1 - len)) > 0 ||
	       (n < 0 && errno == EINTR))
		if (n > 0)
			len += (size_t)n;
	r->err[len] = 0;
	close(fds[0]);
	while (waitpid(pid, &r->status, 0) < 0)
		if (errno != EINTR)
			fail_msg("waitpid: %s", strerror(errno));
	print_message("[ child    ] %s, stderr:\n%s", describe_status(r->status), r->err);
}

static size_t count_of(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	return n;
}

/* ------------------------------------------------------------ pool */

static void reuse(void)
{
	weft__stack_pool p;
	assert_rc(0, weft__stack_pool_init(&p, 16384, 4));
	weft__stack *a = weft__stack_get(&p);
	assert_non_null(a);
	assert_int_equal(p.live, 1);
	weft__stack_put(&p, a);
	assert_int_equal(p.live, 0);
	assert_int_equal(p.cached, 1);
	weft__stack *b = weft__stack_get(&p);
	assert_ptr_equal(a, b); /* the same stack comes back */
	assert_int_equal(p.cached, 0);

	/* Beyond max_cached, stacks are unmapped. */
	weft__stack *s[8];
	s[0] = b;
	for (int i = 1; i < 8; i++) {
		s[i] = weft__stack_get(&p);
		assert_non_null(s[i]);
		for (int j = 0; j < i; j++)
			assert_ptr_not_equal(s[i], s[j]);
	}
	assert_int_equal(p.live, 8);
	void *maps[8];
	for (int i = 0; i < 8; i++)
		maps[i] = s[i]->map;
	for (int i = 0; i < 8; i++)
		weft__stack_put(&p, s[i]);
	assert_int_equal(p.live, 0);
	assert_int_equal(p.cached, 4);
	/* The first four put were cached; the rest are unmapped (readable()
	 * asks the kernel, so it does not fault on an unmapped address). */
	for (int i = 0; i < 4; i++)
		assert_true(readable((char *)maps[i] + pg()));
	for (int i = 4; i < 8; i++)
		assert_false(readable((char *)maps[i] + pg()));
	/* Cached stacks come back most recent first. */
	for (int i = 3; i >= 0; i--)
		assert_ptr_equal(weft__stack_get(&p), s[i]);
	for (int i = 0; i < 4; i++)
		weft__stack_put(&p, s[i]);

	/* max_cached 0: nothing kept but the pool's last stack (the reserve
	 * mapped at init), so a pool with none handed out has one to hand. */
	weft__stack_pool_destroy(&p);
	assert_rc(0, weft__stack_pool_init(&p, 8192, 0));
	assert_int_equal(p.cached, 1);
	a = weft__stack_get(&p);
	assert_non_null(a);
	b = weft__stack_get(&p);
	assert_non_null(b);
	assert_int_equal(p.cached, 0);
	weft__stack_put(&p, a); /* b is live: a goes */
	assert_int_equal(p.cached, 0);
	assert_null(p.free_list);
	weft__stack_put(&p, b); /* the last: kept */
	assert_int_equal(p.cached, 1);
	assert_ptr_equal(p.free_list, b);
	assert_ptr_equal(weft__stack_get(&p), b);
	weft__stack_put(&p, b);
	weft__stack_pool_destroy(&p);
}

static void rounding(void)
{
	const size_t page = pg();
	const size_t requests[] = {1,        64,       page - 64,       page - 63, page,
	                           page + 1, 3 * page, 16384,           16385,     65536,
	                           100000,   1 << 20,  (8u << 20) + 123};
	for (size_t i = 0; i < sizeof(requests) / sizeof(requests[0]); i++) {
		size_t req = requests[i];
		weft__stack_pool p;
		assert_rc(0, weft__stack_pool_init(&p, req, 1));
		weft__stack *s = weft__stack_get(&p);
		assert_non_null(s);
		print_message("request %zu: usable %zu, mapped %zu\n", req, s->size, s->map_size);
		assert_true(s->size >= req);
		/* Less than two pages of slack: an odd number of pages is
		 * mapped (stack.c: the cache's sets). */
		assert_true(s->size - req < 2 * page);
		assert_int_equal((s->map_size / page) % 2, 1);
		assert_int_equal(s->size, p.stack_size);
		assert_int_equal(s->map_size, p.map_size);
		assert_int_equal(s->map_size % page, 0);
		assert_int_equal((uintptr_t)s->map % page, 0);
		assert_int_equal(s->map_size, page + s->size + WEFT__STACK_DESC);
		assert_ptr_equal(s->base, (char *)s->map + page);
		assert_ptr_equal((char *)s->base + s->size, (char *)s);
		assert_int_equal((uintptr_t)s % 64, 0); /* the stack top */
		weft__stack_put(&p, s);
		weft__stack_pool_destroy(&p);
	}
	weft__stack_pool p;
	assert_rc(WEFT_EINVAL, weft__stack_pool_init(&p, 0, 1));
	assert_rc(WEFT_EINVAL, weft__stack_pool_init(&p, SIZE_MAX, 1));
	assert_rc(WEFT_EINVAL, weft__stack_pool_init(&p, SIZE_MAX - page, 1));
	assert_rc(WEFT_EINVAL, weft__stack_pool_init(NULL, 16384, 1));
}

static void usable_and_guard(void)
{
#ifndef WEFT_PORTABLE /* MADV_GUARD_INSTALL is Linux's (fiber/stack.c) */
	if (kernel_at_least(6, 13))
		assert_true(weft__stack_guard_in_mapping());
#else
	assert_false(weft__stack_guard_in_mapping());
#endif
	print_message("guard: %s\n", weft__stack_guard_in_mapping()
	                                     ? "MADV_GUARD_INSTALL (inside the mapping)"
	                                     : "mprotect(PROT_NONE) (a VMA of its own)");

	weft__stack_pool p;
	assert_rc(0, weft__stack_pool_init(&p, 65536, 2));
	weft__stack *s = weft__stack_get(&p);
	assert_non_null(s);
	weft__stack saved = *s;

	/* Writable end to end, and writing it all leaves the descriptor be. */
	unsigned char *b = s->base;
	memset(b, 0xa5, s->size);
	for (size_t i = 0; i < s->size; i += 997)
		assert_int_equal(b[i], 0xa5);
	assert_int_equal(b[s->size - 1], 0xa5);
	assert_memory_equal(&saved, s, sizeof(saved));

	/* The guard page traps, first byte to last; the usable area does not. */
	const size_t page = pg();
	assert_false(readable(s->map));
	assert_false(readable((char *)s->map + page / 2));
	assert_false(readable(b - 1));
	assert_true(readable(b));
	assert_true(readable(b + s->size - 1));

	/* With MADV_GUARD_INSTALL, guard and stack are one VMA. */
	uintptr_t lo, hi;
	assert_true(vma_of(b, &lo, &hi));
	if (weft__stack_guard_in_mapping()) {
		assert_true(lo <= (uintptr_t)s->map);
		assert_true(hi >= (uintptr_t)s->map + s->map_size);
	} else {
		assert_int_equal(lo, (uintptr_t)b);
	}

	/* A reused stack keeps its guard. */
	weft__stack_put(&p, s);
	weft__stack *again = weft__stack_get(&p);
	assert_ptr_equal(again, s);
	assert_false(readable(b - 1));
	weft__stack_put(&p, again);
	weft__stack_pool_destroy(&p);
}

/* ------------------------------------------------------------ overflow */

#define FAKE_TASK ((const void *)(uintptr_t)0x1234abcd)

typedef struct overflow_arg {
	size_t stack_size;
	int where;          /* 0: last guard byte, 1: first guard byte */
	bool on_thread;     /* fault on a second thread of the child */
	bool prior_handler; /* the child installs its own SIGSEGV handler first */
	bool elsewhere;     /* fault at a low address instead of the guard */
} overflow_arg;

static void prior_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)si, (void)uc;
	static const char msg[] = "prior handler ran\n";
	ssize_t w = write(2, msg, sizeof(msg) - 1);
	(void)w;
	_exit(42);
}

static void *fault_body(void *varg)
{
	const overflow_arg *a = varg;
	CHILD_CHECK(weft__stack_overflow_handler_install() == 0);
	CHILD_CHECK(weft__stack_overflow_handler_install() == 0); /* again: a no-op */
	stack_t ss;
	CHILD_CHECK(sigaltstack(NULL, &ss) == 0 && !(ss.ss_flags & SS_DISABLE));

	weft__stack_pool p;
	CHILD_CHECK(weft__stack_pool_init(&p, a->stack_size, 1) == 0);
	weft__stack *s = weft__stack_get(&p);
	CHILD_CHECK(s != NULL);
	dprintf(2, "stack size %zu\n", s->size);
	weft__stack_set_current(s, FAKE_TASK);
	volatile char *target = a->where == 0 ? (char *)s->base - 1 : (char *)s->map;
	if (a->elsewhere) {
		volatile uintptr_t low = 16; /* page 0, not NULL itself (UBSan) */
		target = (volatile char *)low;
	}
	*target = 1;
	dprintf(2, "survived the write\n");
	_exit(4);
}

static void fault_child(void *varg)
{
	const overflow_arg *a = varg;
	/* As in a program of its own: cmocka's handler (it reports a crash
	 * as a failed test) is not what a fault should reach. */
	signal(SIGSEGV, SIG_DFL);
	signal(SIGBUS, SIG_DFL);
	if (a->prior_handler) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = prior_segv;
		sa.sa_flags = SA_SIGINFO;
		sigemptyset(&sa.sa_mask);
		CHILD_CHECK(sigaction(SIGSEGV, &sa, NULL) == 0);
	}
	if (a->on_thread) {
		pthread_t t;
		CHILD_CHECK(pthread_create(&t, NULL, fault_body, varg) == 0);
		pthread_join(t, NULL);
		_exit(5);
	}
	fault_body(varg);
}

static void expect_overflow_report(const overflow_arg *a)
{
	child_result r;
	run_child(fault_child, (void *)a, &r);
	assert_true(WIFSIGNALED(r.status));
	assert_int_equal(WTERMSIG(r.status), SIGABRT);
	/* The usable size the child printed, then the report naming it. */
	size_t size = 0;
	const char *line = strstr(r.err, "stack size ");
	assert_non_null(line);
	assert_int_equal(sscanf(line, "stack size %zu", &size), 1);
	assert_true(size >= a->stack_size);
	char want[128];
	snprintf(want, sizeof(want), "weft: fiber task 0x1234abcd overflowed its %zu-byte stack",
	         size);
	assert_non_null(strstr(r.err, want));
	assert_non_null(strstr(r.err, "(fault at 0x"));
	assert_non_null(strstr(r.err, "); raise WEFT_STACK_SIZE\n"));
	assert_int_equal(count_of(r.err, "overflowed its"), 1);
}

static void overflow_death(void)
{
	overflow_arg a = {.stack_size = 16384, .where = 0};
	expect_overflow_report(&a);
	a.where = 1;
	a.stack_size = 1 << 20;
	expect_overflow_report(&a);
}

static void overflow_death_thread(void)
{
	overflow_arg a = {.stack_size = 16384, .where = 0, .on_thread = true};
	expect_overflow_report(&a);
}

static void *altstack_thread(void *arg)
{
	stack_t *ss = arg;
	WT_CHECK_RC(0, weft__stack_overflow_handler_install());
	WT_CHECK(sigaltstack(NULL, ss) == 0);
	WT_CHECK(!(ss->ss_flags & SS_DISABLE));
	WT_CHECK_RC(0, weft__stack_overflow_handler_install());
	stack_t again;
	WT_CHECK(sigaltstack(NULL, &again) == 0 && again.ss_sp == ss->ss_sp);
	return NULL;
}

/* Each thread gets an alternate signal stack once, gone when it exits
 * (weft's, by its key destructor; a sanitizer's, by the sanitizer). */
static void altstack_per_thread(void)
{
	for (int i = 0; i < 3; i++) {
		stack_t ss;
		memset(&ss, 0, sizeof(ss));
		pthread_t t;
		wt_thread_start(&t, altstack_thread, &ss);
		wt_thread_join(t);
		wt_check_async();
		assert_non_null(ss.ss_sp);
		assert_false(readable(ss.ss_sp));
		assert_false(readable((char *)ss.ss_sp + ss.ss_size - 1));
	}
}

/* A fault that is not an overflow goes where it went before weft. */
static void other_fault(void)
{
	overflow_arg a = {.stack_size = 16384, .elsewhere = true};
	child_result r;
	run_child(fault_child, &a, &r);
	assert_null(strstr(r.err, "overflowed"));
	assert_null(strstr(r.err, "survived"));
	if (WIFSIGNALED(r.status)) {
		assert_int_equal(WTERMSIG(r.status), SIGSEGV);
	} else {
		/* A sanitizer's SEGV handler was there first and reported it. */
		assert_true(UNDER_ASAN || UNDER_TSAN);
		assert_true(WIFEXITED(r.status) && WEXITSTATUS(r.status) != 0);
		assert_non_null(strstr(r.err, "Sanitizer"));
		assert_non_null(strstr(r.err, "SEGV"));
	}

	/* A handler the application installed before weft still gets it. */
	a.prior_handler = true;
	run_child(fault_child, &a, &r);
	assert_true(WIFEXITED(r.status));
	assert_int_equal(WEXITSTATUS(r.status), 42);
	assert_non_null(strstr(r.err, "prior handler ran"));
	assert_null(strstr(r.err, "overflowed"));
}

/* ------------------------------------------------------------ scale */

#if defined(WEFT_TEST_UNDER_SANITIZER)
#define MANY_STACKS 20000
#else
#define MANY_STACKS 1000000
#endif

static void many_stacks(void)
{
	if (!weft__stack_guard_in_mapping()) {
		/* Two VMAs per stack: ~32,000 under the default vm.max_map_count;
		 * map_limit tests that path. */
		skip();
	}
	const size_t n = MANY_STACKS;
	weft__stack **s = malloc(n * sizeof(*s));
	assert_non_null(s);
	weft__stack_pool p;
	assert_rc(0, weft__stack_pool_init(&p, 16384, 64));

	long rss0 = resident_pages(), maps0 = count_mappings();
	double t0 = now_s();
	for (size_t i = 0; i < n; i++) {
		s[i] = weft__stack_get(&p);
		if (!s[i])
			fail_msg("weft__stack_get failed after %zu stacks", i);
	}
	double t1 = now_s();
	long rss1 = resident_pages(), maps1 = count_mappings();
	assert_int_equal(p.live, n);
	double rss_per = (double)(rss1 - rss0) * (double)pg() / (double)n;
	print_message("%zu guarded stacks of %zu usable bytes (%zu mapped): %.2f s to map "
	              "(%.2f us each), RSS %.0f bytes per untouched stack, mappings %ld -> %ld\n",
	              n, p.stack_size, p.map_size, t1 - t0, (t1 - t0) * 1e6 / (double)n, rss_per,
	              maps0, maps1);
	/* The descriptor's page, and little more (page tables). Not under
	 * TSan, whose mmap interceptor writes the shadow of every mapping:
	 * ~100 KB of its own per stack. */
	if (!UNDER_TSAN)
		assert_true(rss_per < 2.0 * (double)pg());
	/* Adjacent stacks share VMAs: far below one each. */
	assert_true(maps1 - maps0 < (long)(n / 4));

	/* The odd ones first: holes in merged VMAs (munmap may be refused
	 * near vm.max_map_count; those are cached), then the rest. */
	for (size_t i = 1; i < n; i += 2)
		weft__stack_put(&p, s[i]);
	for (size_t i = 0; i < n; i += 2)
		weft__stack_put(&p, s[i]);
	double t2 = now_s();
	assert_int_equal(p.live, 0);
	print_message("put back in %.2f s, %zu cached\n", t2 - t1, p.cached);
	weft__stack_pool_destroy(&p);
	assert_int_equal(p.cached, 0);
	free(s);
	long maps2 = count_mappings();
	print_message("destroyed in %.2f s, mappings %ld, RSS %ld -> %ld pages\n", now_s() - t2,
	              maps2, rss1, resident_pages());
	assert_true(maps2 <= maps0 + 4);
}

/* ------------------------------------------------------------ limits */

typedef struct limit_arg {
	bool address_space; /* RLIMIT_AS; otherwise the mapping count */
	size_t got;
	size_t usable; /* of a 16 KiB request, which the message names */
} limit_arg;

static void limit_child(void *varg)
{
	limit_arg *a = varg;
	enum { MAX = 200000 };
	static weft__stack *s[MAX];
	weft__stack_pool p;
	CHILD_CHECK(weft__stack_pool_init(&p, 16384, 8) == 0);
	if (a->address_space) {
		long vm = vm_pages();
		CHILD_CHECK(vm > 0);
		struct rlimit rl;
		CHILD_CHECK(getrlimit(RLIMIT_AS, &rl) == 0);
		rl.rlim_cur = (rlim_t)vm * pg() + (4u << 20);
		CHILD_CHECK(setrlimit(RLIMIT_AS, &rl) == 0);
	} else {
		weft__stack_testing_force_mprotect();
	}
	size_t n = 0;
	while (n < MAX && (s[n] = weft__stack_get(&p)) != NULL)
		n++;
	CHILD_CHECK(n < MAX);
	/* Still refused, quietly. */
	for (int i = 0; i < 3; i++)
		CHILD_CHECK(weft__stack_get(&p) == NULL);
	dprintf(2, "got %zu stacks\n", n);
	/* Back under the limit, stacks come again. */
	for (size_t i = 0; i < n; i++)
		weft__stack_put(&p, s[i]);
	CHILD_CHECK(p.live == 0);
	weft__stack_pool_destroy(&p);
	if (a->address_space) {
		struct rlimit rl;
		CHILD_CHECK(getrlimit(RLIMIT_AS, &rl) == 0);
		rl.rlim_cur = rl.rlim_max;
		CHILD_CHECK(setrlimit(RLIMIT_AS, &rl) == 0);
	}
	CHILD_CHECK(weft__stack_pool_init(&p, 16384, 8) == 0);
	weft__stack *again = weft__stack_get(&p);
	CHILD_CHECK(again != NULL);
	weft__stack_put(&p, again);
	weft__stack_pool_destroy(&p);
	_exit(0);
}

static void check_limit_child(limit_arg *a, child_result *r)
{
	weft__stack_pool p;
	assert_rc(0, weft__stack_pool_init(&p, 16384, 8));
	a->usable = p.stack_size;
	weft__stack_pool_destroy(&p);
	run_child(limit_child, a, r);
	assert_true(WIFEXITED(r->status));
	assert_int_equal(WEXITSTATUS(r->status), 0);
	assert_int_equal(count_of(r->err, "weft:"), 1);
	char want[64];
	snprintf(want, sizeof(want), "cannot map a %zu-byte fiber stack (", a->usable);
	assert_int_equal(count_of(r->err, want), 1);
	assert_non_null(strstr(r->err, strerror(ENOMEM)));
	assert_non_null(strstr(r->err, "vm.max_map_count is "));
	assert_non_null(strstr(r->err, "New tasks wait until a running fiber ends"));
	const char *got = strstr(r->err, "got ");
	assert_non_null(got);
	assert_int_equal(sscanf(got, "got %zu", &a->got), 1);
}

static long max_map_count(void)
{
	FILE *f = fopen("/proc/sys/vm/max_map_count", "re");
	long v = -1;
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/* The vm.max_map_count path without touching the sysctl: the mprotect
 * fallback (as on kernels before 6.13) takes two mappings per stack. */
static void map_limit(void)
{
	long limit = max_map_count();
	if (limit <= 0 || limit > 1000000) {
		print_message("vm.max_map_count is %ld: too high to reach here\n", limit);
		skip();
	}
	limit_arg a = {.address_space = false};
	child_result r;
	check_limit_child(&a, &r);
	char want[96];
	snprintf(want, sizeof(want), "vm.max_map_count is %ld;", limit);
	assert_non_null(strstr(r.err, want));
	assert_non_null(strstr(r.err, "sysctl -w vm.max_map_count="));
	assert_non_null(strstr(r.err, "2 mappings"));
	print_message("limit %ld: %zu guarded stacks with mprotect guards\n", limit, a.got);
	assert_true(a.got > (size_t)limit / 4);
	assert_true(a.got <= (size_t)limit / 2);
}

/* Out of address space: the message must not blame the mapping limit. */
static void address_space_limit(void)
{
	limit_arg a = {.address_space = true};
	child_result r;
	check_limit_child(&a, &r);
	assert_non_null(strstr(r.err, "address space or memory ran out, not the mapping limit"));
	assert_non_null(strstr(r.err, "ulimit -v"));
	assert_null(strstr(r.err, "sysctl -w"));
}

WT_CASES(WT_CASE(reuse), WT_CASE(rounding), WT_CASE(usable_and_guard), WT_CASE(overflow_death),
         WT_CASE(overflow_death_thread), WT_CASE(altstack_per_thread), WT_CASE(other_fault),
         WT_CASE(many_stacks), WT_CASE(map_limit), WT_CASE(address_space_limit));
