/* Fiber stacks: see stack.h for the layout, the guard pages, the pool and
 * the overflow handler. Linux's extras (guards inside the mapping, the
 * MAP_NORESERVE and MAP_STACK flags, /proc's mapping count in the failure
 * report) are under WEFT_OS_LINUX (core/os.h); POSIX gets mmap, mprotect
 * guards and madvise(MADV_DONTNEED), which BSDs and macOS have too. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "core/internal.h"
#include "core/os.h"
#include "fiber/stack.h"
#include "fiber/symbolize.h"

#ifdef WEFT_HAVE_VALGRIND
#include <valgrind/valgrind.h>
#endif

#ifdef WEFT_OS_LINUX
/* Linux 6.13 uapi; older headers (glibc 2.36 here) lack it. */
#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif
/* Reserve no swap for a stack's untouched pages; mark it a stack. */
#define STACK_MAP_FLAGS (MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK)
#else
#define STACK_MAP_FLAGS (MAP_PRIVATE | MAP_ANONYMOUS)
#endif

_Static_assert(sizeof(weft__stack) <= WEFT__STACK_DESC, "the descriptor must fit its slot");

/* ------------------------------------------------------------ pages */

static size_t page_size(void)
{
	static _Atomic size_t cached;
	size_t pg = atomic_load_explicit(&cached, memory_order_relaxed);
	if (pg == 0) {
		long v = sysconf(_SC_PAGESIZE);
		pg = v > 0 ? (size_t)v : 4096;
		atomic_store_explicit(&cached, pg, memory_order_relaxed);
	}
	return pg;
}

enum { GUARD_UNKNOWN, GUARD_MADVISE, GUARD_MPROTECT };
static _Atomic int guard_mode = GUARD_UNKNOWN;

/* Makes [addr, addr + len) a guard: MADV_GUARD_INSTALL inside the mapping
 * when the kernel has it (the first EINVAL switches to mprotect for good),
 * PROT_NONE otherwise. Returns 0 or an errno value; *what names the call
 * that failed. */
static int install_guard(void *addr, size_t len, const char **what)
{
#ifdef WEFT_OS_LINUX
	if (atomic_load_explicit(&guard_mode, memory_order_relaxed) != GUARD_MPROTECT) {
		if (madvise(addr, len, MADV_GUARD_INSTALL) == 0) {
			atomic_store_explicit(&guard_mode, GUARD_MADVISE, memory_order_relaxed);
			return 0;
		}
		if (errno != EINVAL) {
			*what = "madvise(MADV_GUARD_INSTALL)";
			return errno;
		}
		atomic_store_explicit(&guard_mode, GUARD_MPROTECT, memory_order_relaxed);
	}
#else
	atomic_store_explicit(&guard_mode, GUARD_MPROTECT, memory_order_relaxed);
#endif
	if (mprotect(addr, len, PROT_NONE) != 0) {
		*what = "mprotect";
		return errno;
	}
	return 0;
}

bool weft__stack_guard_in_mapping(void)
{
	if (atomic_load_explicit(&guard_mode, memory_order_relaxed) == GUARD_UNKNOWN) {
		size_t pg = page_size();
		void *m = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, STACK_MAP_FLAGS, -1, 0);
		if (m != MAP_FAILED) {
			const char *what;
			(void)install_guard(m, pg, &what);
			munmap(m, 2 * pg);
		}
	}
	return atomic_load_explicit(&guard_mode, memory_order_relaxed) == GUARD_MADVISE;
}

void weft__stack_testing_force_mprotect(void)
{
	atomic_store_explicit(&guard_mode, GUARD_MPROTECT, memory_order_relaxed);
}

/* ------------------------------------------------------------ failure report */

#ifdef WEFT_OS_LINUX
/* A number from a /proc/sys file, or -1. */
static long read_long_file(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	char buf[32];
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return strtol(buf, NULL, 10);
}

/* Lines of /proc/self/maps: the process's mappings (VMAs), or -1. */
static long count_mappings(void)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	char buf[4096];
	long lines = 0;
	ssize_t n;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n; i++)
			lines += buf[i] == '\n';
	close(fd);
	return n < 0 ? -1 : lines;
}

/* vm.max_map_count, or -1. */
static long map_limit(void)
{
	return read_long_file("/proc/sys/vm/max_map_count");
}
#else
/* POSIX cannot count a process's mappings; no per-process mapping limit
 * to compare with either (Linux's vm.max_map_count): -1, unknown. */
static long count_mappings(void)
{
	return -1;
}

static long map_limit(void)
{
	return -1;
}
#endif

static atomic_flag reported = ATOMIC_FLAG_INIT;

/* Says why a stack of stack_size usable bytes could not be mapped: always
 * when a pool is created (that failure fails weft_rt_create), once per
 * process for the stacks of running fibers (then new tasks wait for a
 * stack). ENOMEM has two causes the kernel does not tell apart: the
 * mapping count reached vm.max_map_count, or the address space (RLIMIT_AS)
 * or memory ran out. The count of our mappings against the limit says
 * which. */
static void report_failure(const char *what, int err, size_t stack_size, bool at_init)
{
	if (!at_init && atomic_flag_test_and_set(&reported))
		return;
	const char *then = at_init ? "The runtime cannot be created (WEFT_ENOMEM)."
	                           : "New tasks wait until a running fiber ends and frees "
	                             "its stack.";
	char msg[1024];
	int len;
	if (err == ENOMEM) {
		long maps = count_mappings();
		long limit = map_limit();
		bool in_mapping =
		        atomic_load_explicit(&guard_mode, memory_order_relaxed) == GUARD_MADVISE;
		const char *per_stack =
		        in_mapping ? "1 mapping (guard installed with MADV_GUARD_INSTALL)"
		                   : "2 mappings (a PROT_NONE guard page: "
		                     "MADV_GUARD_INSTALL is not in use)";
		if (maps >= 0 && limit > 0 && maps + 8 >= limit) {
			len = snprintf(
			        msg, sizeof(msg),
			        "weft: cannot map a %zu-byte fiber stack (%s: %s): this "
			        "process has %ld memory mappings and vm.max_map_count is %ld; "
			        "each guarded stack takes %s. Raise the limit as root, e.g. "
			        "`sysctl -w vm.max_map_count=%ld` (a file in /etc/sysctl.d/ "
			        "keeps it), or run fewer fibers at once. %s\n",
			        stack_size, what, strerror(err), maps, limit, per_stack,
			        limit < 262144 ? 1048576 : limit * 4, then);
		} else {
			struct rlimit as;
			char as_text[48] = "unlimited";
			if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY)
				snprintf(as_text, sizeof(as_text), "%llu bytes",
				         (unsigned long long)as.rlim_cur);
			len = snprintf(
			        msg, sizeof(msg),
			        "weft: cannot map a %zu-byte fiber stack (%s: %s): the "
			        "address space or memory ran out, not the mapping limit (this "
			        "process has %ld memory mappings, vm.max_map_count is %ld; "
			        "each guarded stack takes %s). The address-space limit "
			        "(RLIMIT_AS, ulimit -v) is %s. Use fewer fibers or smaller "
			        "stacks (WEFT_STACK_SIZE), or raise the limit. %s\n",
			        stack_size, what, strerror(err), maps, limit, per_stack, as_text,
			        then);
		}
	} else {
		len = snprintf(msg, sizeof(msg),
		               "weft: cannot map a %zu-byte fiber stack (%s: %s). %s\n", stack_size,
		               what, strerror(err), then);
	}
	if (len > 0) {
		size_t n = (size_t)len < sizeof(msg) ? (size_t)len : sizeof(msg) - 1;
		ssize_t w = write(STDERR_FILENO, msg, n);
		(void)w;
	}
}

/* ------------------------------------------------------------ stacks */

/* An odd number of pages: stacks mapped one after another then start at
 * every page offset of a cache's set span (a 1 MiB 16-way L2 spans 64 KiB
 * of addresses), where an even number (18 by default) put them on 8 of its
 * 16 pages and a fiber's hot lines in half its sets (engine.c's colouring
 * spreads them within a page). The page more is address space only. */
static size_t map_size_for(size_t stack_size)
{
	size_t pg = page_size();
	size_t pages = (stack_size + WEFT__STACK_DESC + pg - 1) / pg + 1;
	return (pages | 1) * pg;
}

/* Tells valgrind (when built with its headers) that s is a stack, or no
 * longer one. Outside valgrind these are a few no-op instructions. */
static void valgrind_tell(weft__stack *s)
{
#ifdef WEFT_HAVE_VALGRIND
	s->valgrind_id = VALGRIND_STACK_REGISTER(s->base, (char *)s->base + s->size);
#else
	s->valgrind_id = 0;
#endif
}

static void valgrind_forget(weft__stack *s)
{
#ifdef WEFT_HAVE_VALGRIND
	VALGRIND_STACK_DEREGISTER(s->valgrind_id);
#else
	(void)s;
#endif
}

static weft__stack *map_stack(size_t map_size, bool at_init)
{
	size_t pg = page_size();
	size_t usable = map_size - pg - WEFT__STACK_DESC;
	char *m = mmap(NULL, map_size, PROT_READ | PROT_WRITE, STACK_MAP_FLAGS, -1, 0);
	if (m == MAP_FAILED) {
		report_failure("mmap", errno, usable, at_init);
		return NULL;
	}
	const char *what = "";
	int err = install_guard(m, pg, &what);
	if (err != 0) {
		munmap(m, map_size);
		report_failure(what, err, usable, at_init);
		return NULL;
	}
	weft__stack *s = (weft__stack *)(m + map_size - WEFT__STACK_DESC);
	s->map = m;
	s->map_size = map_size;
	s->base = m + pg;
	s->size = map_size - pg - WEFT__STACK_DESC;
	s->next = NULL;
	valgrind_tell(s);
	return s;
}

/* Returns false (the stack still mapped) when munmap is refused: unmapping
 * from the middle of a VMA (adjacent stacks merge into one) splits it,
 * which the kernel refuses at vm.max_map_count. */
static bool unmap_stack(weft__stack *s)
{
	valgrind_forget(s);
	if (munmap(s->map, s->map_size) == 0)
		return true;
	valgrind_tell(s);
	return false;
}

/* Gives the stack's pages back, all but the top one (the descriptor's). */
static void release_pages(weft__stack *s)
{
	size_t pg = page_size();
	uintptr_t top_page = (uintptr_t)s / pg * pg;
	if (top_page > (uintptr_t)s->base)
		madvise(s->base, top_page - (uintptr_t)s->base, MADV_DONTNEED);
}

/* Sorts a free list by address (merge sort: no allocation). */
static weft__stack *sort_by_address(weft__stack *list, size_t n)
{
	if (n < 2)
		return list;
	weft__stack *mid = list;
	for (size_t i = 1; i < n / 2; i++)
		mid = mid->next;
	weft__stack *right = mid->next;
	mid->next = NULL;
	weft__stack *a = sort_by_address(list, n / 2), *b = sort_by_address(right, n - n / 2);
	weft__stack head, *tail = &head;
	while (a && b) {
		weft__stack **min = (uintptr_t)a->map < (uintptr_t)b->map ? &a : &b;
		tail->next = *min;
		tail = *min;
		*min = (*min)->next;
	}
	tail->next = a ? a : b;
	return head.next;
}

int weft__stack_pool_init(weft__stack_pool *p, size_t stack_size, size_t max_cached)
{
	if (!p)
		return WEFT_EINVAL;
	/* Far beyond any address space, and keeps map_size_for from wrapping. */
	if (stack_size == 0 || stack_size > SIZE_MAX / 4)
		return WEFT_EINVAL;
	size_t map_size = map_size_for(stack_size);
	*p = (weft__stack_pool){
	        .stack_size = map_size - page_size() - WEFT__STACK_DESC,
	        .map_size = map_size,
	        .max_cached = max_cached,
	};
	/* The reserve: a stack that cannot be mapped fails here, and the pool
	 * never gives its last stack back (put), so a pool with no stack
	 * handed out always has one to hand out. */
	weft__stack *s = map_stack(map_size, true);
	if (!s)
		return WEFT_ENOMEM;
	p->free_list = s;
	p->cached = 1;
	return 0;
}

void weft__stack_pool_destroy(weft__stack_pool *p)
{
	/* Address order, adjacent stacks unmapped in one call: a run of
	 * stacks that fills whole VMAs goes without splitting any, so destroy
	 * does not run into vm.max_map_count however the stacks were freed. */
	size_t n = 0;
	for (weft__stack *s = p->free_list; s; s = s->next)
		n++;
	weft__stack *s = sort_by_address(p->free_list, n);
	while (s) {
		weft__stack *last = s;
		while (last->next && (char *)last->map + last->map_size == (char *)last->next->map)
			last = last->next;
		weft__stack *next = last->next;
		char *start = s->map, *end = (char *)last->map + last->map_size;
		for (weft__stack *r = s; r != next; r = r->next)
			valgrind_forget(r);
		if (munmap(start, (size_t)(end - start)) != 0) {
			/* Stacks of another pool around it, at the limit: the
			 * addresses stay mapped, the memory goes back. */
			for (weft__stack *r = s; r != next; r = r->next) {
				valgrind_tell(r);
				release_pages(r);
			}
		}
		s = next;
	}
	p->free_list = NULL;
	p->cached = 0;
}

weft__stack *weft__stack_get(weft__stack_pool *p)
{
	weft__stack *s = p->free_list;
	if (s) {
		p->free_list = s->next;
		p->cached--;
		s->next = NULL;
	} else {
		s = map_stack(p->map_size, false);
		if (!s)
			return NULL;
	}
	p->live++;
	return s;
}

void weft__stack_put(weft__stack_pool *p, weft__stack *s)
{
	p->live--;
	/* Unmapped beyond max_cached, but never the pool's last stack. */
	if (p->cached >= p->max_cached && p->cached + p->live > 0) {
		if (unmap_stack(s))
			return;
		/* Refused at vm.max_map_count: keep it, without its memory. */
		release_pages(s);
	}
	s->next = p->free_list;
	p->free_list = s;
	p->cached++;
}

/* ------------------------------------------------------------ overflow handler */

_Thread_local const weft__stack *weft__current_stack __attribute__((tls_model("initial-exec")));
_Thread_local const void *weft__current_task __attribute__((tls_model("initial-exec")));
static _Thread_local bool altstack_ready __attribute__((tls_model("initial-exec")));

static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static int install_error;
static struct sigaction previous_segv, previous_bus;
static pthread_key_t altstack_key;
static size_t altstack_size; /* usable; a guard page sits below */
static size_t altstack_min;  /* an existing alternate stack this big is kept */

static char *put_str(char *p, const char *s)
{
	while (*s)
		*p++ = *s++;
	return p;
}

static char *put_hex(char *p, uintptr_t v)
{
	char tmp[2 * sizeof(v)];
	int n = 0;
	do {
		tmp[n++] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	p = put_str(p, "0x");
	while (n)
		*p++ = tmp[--n];
	return p;
}

static char *put_dec(char *p, size_t v)
{
	char tmp[24];
	int n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*p++ = tmp[--n];
	return p;
}

/* The calling kernel thread's own stack (weft__thread_stack_record):
 * [thread_low, thread_low + thread_size) usable, thread_guard bytes of
 * guard below it; 0 when the thread is not one of weft's. */
static _Thread_local uintptr_t thread_low __attribute__((tls_model("initial-exec")));
static _Thread_local size_t thread_size __attribute__((tls_model("initial-exec")));
static _Thread_local size_t thread_guard __attribute__((tls_model("initial-exec")));

void weft__thread_stack_record(void)
{
	uintptr_t low = 0;
	size_t size = 0, guard = 0;
	if (!weft__thread_stack_bounds(&low, &size, &guard) || !low)
		return;
	thread_size = size;
	thread_guard = guard;
	atomic_signal_fence(memory_order_seq_cst);
	thread_low = low;
}

void weft__thread_stack_forget(void)
{
	thread_low = 0;
	atomic_signal_fence(memory_order_seq_cst);
}

/* Whether addr lies in the guard below [low, ...) of guard bytes, or in the
 * page below the guard: a frame that stepped over it. */
static bool in_guard(uintptr_t addr, uintptr_t low, size_t guard)
{
	uintptr_t span = guard + page_size();
	uintptr_t bottom = low > span ? low - span : 0;
	return addr >= bottom && addr < low;
}

/* Async-signal-safe: write(2) and what weft__symbolize calls. Names the
 * task (its address, and the running weft_task's function: its name from
 * the symbol table of the file that maps it, when it has one, and its
 * address), the stack and what to raise. A fiber's task pointer is opaque
 * here (the compat layer sets its own records): its function is that of
 * weft__tls.task, the weft_task whose code runs. */
static void report_overflow(bool fiber, const void *task, size_t size, uintptr_t addr)
{
	char msg[768], *p = msg;
	p = put_str(p, fiber ? "weft: fiber task " : "weft: task ");
	p = put_hex(p, (uintptr_t)task);
	const weft_task *running = fiber ? weft__tls.task : task;
	if (running && running->fn_) {
		uintptr_t fn = (uintptr_t)running->fn_, off = 0;
		char name[256];
		p = put_str(p, " (function ");
		if (weft__symbolize(fn, name, sizeof(name), &off)) {
			p = put_str(p, name);
			if (off) {
				p = put_str(p, "+");
				p = put_hex(p, off);
			}
			p = put_str(p, " at ");
		}
		p = put_hex(p, fn);
		p = put_str(p, ")");
	}
	p = put_str(p, fiber ? " overflowed its " : " overflowed its worker thread's ");
	p = put_dec(p, size);
	p = put_str(p, "-byte stack (fault at ");
	p = put_hex(p, addr);
	if (fiber)
		p = put_str(p, "); raise WEFT_STACK_SIZE\n");
	else
		p = put_str(p, "); weft's kernel threads get the default thread stack size, "
		               "which `ulimit -s` (RLIMIT_STACK) sets; or run it on a fiber "
		               "model with a larger WEFT_STACK_SIZE. See docs/stack-overflow.md\n");
	ssize_t w = write(STDERR_FILENO, msg, (size_t)(p - msg));
	(void)w;
}

/* Dies of the fault as if no handler had been installed: the default
 * action, restored here, takes it when the faulting access repeats on
 * return (or, for a signal somebody sent, when it is sent again). */
static void die_by_default(int sig, const siginfo_t *si)
{
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, NULL);
	if (!si || si->si_code <= 0)
		raise(sig);
}

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	int saved_errno = errno;
	/* si_code > 0: the kernel raised it for a fault, si_addr is real. */
	if (si && si->si_code > 0) {
		uintptr_t addr = (uintptr_t)si->si_addr;
		const weft__stack *s = weft__current_stack;
		uintptr_t low = thread_low;
		if (s &&
		    in_guard(addr, (uintptr_t)s->base, (uintptr_t)s->base - (uintptr_t)s->map)) {
			report_overflow(true, weft__current_task, s->size, addr);
			abort(); /* as fibers always have (fibers.overflow_aborts) */
		}
		if (low && in_guard(addr, low, thread_guard)) {
			report_overflow(false, weft__tls.task, thread_size, addr);
			die_by_default(sig, si);
			errno = saved_errno;
			return;
		}
	}

	/* Not ours: as if weft had never installed a handler. */
	const struct sigaction *prev = sig == SIGSEGV ? &previous_segv : &previous_bus;
	if ((prev->sa_flags & SA_SIGINFO) && prev->sa_sigaction) {
		prev->sa_sigaction(sig, si, uc);
	} else if (!(prev->sa_flags & SA_SIGINFO) && prev->sa_handler != SIG_DFL &&
	           prev->sa_handler != SIG_IGN) {
		prev->sa_handler(sig);
	} else {
		/* SIG_DFL (or SIG_IGN, which cannot ignore a fault). */
		die_by_default(sig, si);
	}
	errno = saved_errno;
}

static void free_altstack(void *map)
{
	stack_t cur;
	char *usable = (char *)map + page_size();
	if (sigaltstack(NULL, &cur) == 0 && cur.ss_sp == usable) {
		stack_t off = {.ss_flags = SS_DISABLE};
		if (sigaltstack(&off, NULL) != 0)
			return; /* still in use: leave it mapped */
	}
	munmap(map, altstack_size + page_size());
}

static void install_process(void)
{
	long min = sysconf(_SC_SIGSTKSZ);
	size_t pg = page_size();
	altstack_min = min > 0 ? (size_t)min : SIGSTKSZ;
	size_t want = altstack_min > 65536 ? altstack_min : 65536;
	altstack_size = (want + pg - 1) / pg * pg;

	if (pthread_key_create(&altstack_key, free_altstack) != 0) {
		install_error = WEFT_ENOMEM;
		return;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_ONSTACK | SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	/* Read the previous actions before installing, so the handler never
	 * sees them half-written. */
	if (sigaction(SIGSEGV, NULL, &previous_segv) != 0 ||
	    sigaction(SIGBUS, NULL, &previous_bus) != 0 || sigaction(SIGSEGV, &sa, NULL) != 0 ||
	    sigaction(SIGBUS, &sa, NULL) != 0)
		install_error = WEFT_EINVAL;
}

int weft__stack_overflow_handler_install(void)
{
	pthread_once(&install_once, install_process);
	if (install_error)
		return install_error;
	if (altstack_ready)
		return 0;

	stack_t cur;
	if (sigaltstack(NULL, &cur) == 0 && !(cur.ss_flags & SS_DISABLE) &&
	    cur.ss_size >= altstack_min) {
		altstack_ready = true; /* the application's (or a sanitizer's) */
		return 0;
	}

	size_t pg = page_size();
	char *m = mmap(NULL, altstack_size + pg, PROT_READ | PROT_WRITE, STACK_MAP_FLAGS, -1, 0);
	if (m == MAP_FAILED)
		return WEFT_ENOMEM;
	const char *what;
	if (install_guard(m, pg, &what) != 0) {
		munmap(m, altstack_size + pg);
		return WEFT_ENOMEM;
	}
	stack_t ss = {.ss_sp = m + pg, .ss_size = altstack_size, .ss_flags = 0};
	if (sigaltstack(&ss, NULL) != 0) {
		munmap(m, altstack_size + pg);
		return WEFT_EINVAL;
	}
	/* Should this fail, the stack lives as long as the thread's memory. */
	(void)pthread_setspecific(altstack_key, m);
	altstack_ready = true;
	return 0;
}
