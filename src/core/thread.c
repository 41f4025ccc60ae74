/* Creating weft's own kernel threads, with a fault-injection hook.
 *
 * Every thread weft creates (workers of every model, spawn's task threads,
 * weft_blocking's helpers) starts in thread_main, which gives it what the
 * stack-overflow report needs (src/fiber/stack.h): a guard of at least
 * GUARD_BYTES below its stack, an alternate signal stack for the SIGSEGV
 * handler to run on, and its stack bounds recorded, so that a task that
 * recurses too deep on a kernel thread is named as under the fiber models
 * instead of dying of a bare SIGSEGV. The alternate stack is a local array
 * of thread_main, at the top of the thread's own stack: an overflow faults
 * at the other end, and creating a thread costs no extra mapping.
 *
 * A runtime's workers (weft__worker_create) also get, in thread_main, before
 * the model's function runs: a name, weft-<model>-<index>, which top -H, ps
 * -L, gdb and perf show; their CPU when the configuration pins workers; and
 * the configuration's worker hook, called again after the function
 * returned. All of it is copied into the start slot by the creator, so the
 * thread never reads the runtime for it. The two platform calls (name, CPU)
 * sit together below; where they do not exist, workers are not named or
 * pinned. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "core/internal.h"
#include "core/os.h"
#include "core/testing.h"
#include "fiber/stack.h"

/* A guard this big catches frames up to its size that step over the
 * stack's end (alloca, big arrays); it costs address space, no memory. */
#define GUARD_BYTES    (64 * 1024)
#define ALTSTACK_BYTES (64 * 1024)

static _Atomic long fault_countdown; /* 0: disarmed */

void weft__fault_thread_create(long nth)
{
	atomic_store(&fault_countdown, nth);
}

static bool injected_fault(void)
{
	long n = atomic_load(&fault_countdown);
	while (n > 0) {
		if (atomic_compare_exchange_weak(&fault_countdown, &n, n - 1))
			return n == 1;
	}
	return false;
}

/* What a new thread is to run, handed over in one of a few static slots
 * (weft_post under spawn creates a thread and must not allocate): claimed
 * by the creator, released by the thread as soon as it has read it, so a
 * creator finds every slot taken only while that many threads are being
 * born at once, and then yields until one is. */
typedef struct start_arg {
	_Atomic bool used;
	void *(*fn)(void *);
	void *arg;
	char name[16];         /* the thread's name: 15 bytes and the NUL */
	int cpu;               /* pinned to this CPU; -1: not pinned */
	int index;             /* worker index for the hook */
	weft_worker_hook hook; /* NULL: none */
	void *hook_ctx;
	size_t stack_size, guard; /* the attributes it was created with */
} start_arg;

/* weft_config grew into its padding and its reserved tail: the fields that
 * were there keep their offsets and the size stays (LP64). */
_Static_assert(sizeof(void *) != 8 ||
                       (offsetof(weft_config, pin) == 12 &&
                        offsetof(weft_config, queue_capacity) == 16 &&
                        offsetof(weft_config, worker_hook) == 72 && sizeof(weft_config) == 96),
               "weft_config keeps its layout (ABI)");

/* ------------------------------------------------------------ platform */

#if defined(WEFT_OS_LINUX)
/* Linux names a thread with at most 15 bytes; the caller fits the name. */
static void set_thread_name(const char *name)
{
	(void)pthread_setname_np(pthread_self(), name);
}

/* The CPU the index-th pinned worker gets: the (index mod n)-th of the n
 * CPUs in the process's affinity mask (its main thread's, which the
 * worker count was taken from; the caller's own when that cannot be read),
 * or -1 when neither can be read. */
static int pick_cpu(int index)
{
	cpu_set_t set;
	if (sched_getaffinity(getpid(), sizeof(set), &set) != 0 &&
	    sched_getaffinity(0, sizeof(set), &set) != 0)
		return -1;
	int n = CPU_COUNT(&set);
	if (n <= 0)
		return -1;
	int want = index % n;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (CPU_ISSET(cpu, &set) && want-- == 0)
			return cpu;
	}
	return -1;
}

static int pin_thread(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) == 0 ? 0 : errno;
}
#elif defined(__APPLE__)
/* macOS names only the calling thread, with up to 63 bytes, and has no CPU
 * affinity (thread_policy_set's affinity tags are hints): not pinned. */
static void set_thread_name(const char *name)
{
	(void)pthread_setname_np(name);
}

static int pick_cpu(int index)
{
	(void)index;
	return -1;
}

static int pin_thread(int cpu)
{
	(void)cpu;
	return ENOTSUP;
}
#else
static void set_thread_name(const char *name)
{
	(void)name;
}

static int pick_cpu(int index)
{
	(void)index;
	return -1;
}

static int pin_thread(int cpu)
{
	(void)cpu;
	return ENOTSUP;
}
#endif

#ifndef WEFT_OS_LINUX
/* What POSIX lets a thread know of its own stack: the size and guard it
 * was created with (weft's own threads: thread_main notes them) and an
 * address near its top (thread_main's frame). The C library may keep its
 * thread descriptor and TLS above that frame, inside the size, and may or
 * may not count the guard in the size, so the bottom is known to within
 * the guard and MARGIN: taken off the room, and added to the guard's
 * window on both sides (a fault inside the mapped stack cannot happen, so
 * a wider window names no false overflow). */
#define MARGIN ((uintptr_t)64 * 1024)
static _Thread_local uintptr_t est_low;
static _Thread_local size_t est_size, est_guard;

static void note_stack(const void *frame, size_t size, size_t guard)
{
	uintptr_t top = (uintptr_t)frame;
	if (size <= 2 * (guard + MARGIN) || top < size)
		return;
	/* Whether the size counts the guard or not (C libraries differ), the
	 * bottom lies within guard + MARGIN above top - size. */
	est_low = top - size + guard + MARGIN;
	est_size = size - guard - MARGIN;
	est_guard = 2 * (guard + MARGIN);
}
#else
static void note_stack(const void *frame, size_t size, size_t guard)
{
	(void)frame, (void)size, (void)guard; /* pthread_getattr_np knows */
}
#endif

bool weft__thread_stack_bounds(uintptr_t *low, size_t *size, size_t *guard)
{
#ifdef WEFT_OS_LINUX
	pthread_attr_t a;
	void *addr = NULL;
	if (pthread_getattr_np(pthread_self(), &a) != 0)
		return false;
	if (pthread_attr_getstack(&a, &addr, size) != 0 ||
	    pthread_attr_getguardsize(&a, guard) != 0)
		addr = NULL;
	pthread_attr_destroy(&a);
	*low = (uintptr_t)addr;
	return addr != NULL;
#else
	/* An estimate for weft's own threads (note_stack), none for others.
	 * FreeBSD's pthread_attr_get_np and macOS's pthread_get_stackaddr_np
	 * and pthread_get_stacksize_np would give every thread's exactly. */
	if (!est_low)
		return false;
	*low = est_low;
	*size = est_size;
	*guard = est_guard;
	return true;
#endif
}

/* "weft-<kind>-<index>" in buf[16]. When that is longer than 15 bytes, the
 * kind is cut so that the index stays whole: weft-threads-99, then
 * weft-thread-100, weft-threa-1000. */
static void format_name(char buf[16], const char *kind, int index)
{
	char digits[12];
	size_t nd = (size_t)snprintf(digits, sizeof(digits), "%d", index);
	if (nd > 9) /* not with at most 1024 workers */
		digits[nd = 9] = '\0';
	size_t kl = strlen(kind), room = 15 - 5 - 1 - nd; /* "weft-", "-" */
	if (kl > room)
		kl = room;
	memcpy(buf, "weft-", 5);
	memcpy(buf + 5, kind, kl);
	buf[5 + kl] = '-';
	memcpy(buf + 6 + kl, digits, nd + 1);
}

#define START_SLOTS 64
static start_arg slots[START_SLOTS];
static _Atomic unsigned next_slot;

/* In a forked child no thread is being created: a slot claimed in the
 * parent by a thread that was creating one would stay claimed for ever. */
void weft__thread_fork_child(void)
{
	for (unsigned i = 0; i < START_SLOTS; i++)
		atomic_store_explicit(&slots[i].used, false, memory_order_relaxed);
}

static start_arg *claim_slot(void)
{
	for (;;) {
		unsigned first = atomic_fetch_add_explicit(&next_slot, 1, memory_order_relaxed);
		for (unsigned i = 0; i < START_SLOTS; i++) {
			start_arg *s = &slots[(first + i) % START_SLOTS];
			bool free_ = false;
			if (!atomic_load_explicit(&s->used, memory_order_relaxed) &&
			    atomic_compare_exchange_strong(&s->used, &free_, true))
				return s;
		}
		sched_yield();
	}
}

static void *thread_main(void *p)
{
	start_arg *slot = p;
	start_arg s = {.fn = slot->fn,
	               .arg = slot->arg,
	               .cpu = slot->cpu,
	               .index = slot->index,
	               .hook = slot->hook,
	               .hook_ctx = slot->hook_ctx};
	memcpy(s.name, slot->name, sizeof(s.name));
	size_t stack_size = slot->stack_size, guard = slot->guard;
	atomic_store_explicit(&slot->used, false, memory_order_release);
	note_stack(__builtin_frame_address(0), stack_size, guard);
	weft__thread_stack_record();
	set_thread_name(s.name);
	if (s.cpu >= 0) {
		int err = pin_thread(s.cpu);
		if (err)
			weft__log(WEFT_LOG_WARN,
			          "weft: %s runs unpinned: cannot pin it to CPU %d (%s)\n", s.name,
			          s.cpu, strerror(err));
	}

	char alt[ALTSTACK_BYTES] __attribute__((aligned(64)));
	long need = sysconf(_SC_SIGSTKSZ);
	stack_t cur, ss = {.ss_sp = alt, .ss_size = sizeof(alt), .ss_flags = 0};
	/* A sanitizer may have given the thread one already: keep it. */
	bool mine = need <= (long)sizeof(alt) && sigaltstack(NULL, &cur) == 0 &&
	            (cur.ss_flags & SS_DISABLE) && sigaltstack(&ss, NULL) == 0;
	/* The process-wide handler (once); the thread's alternate stack is
	 * ours or the sanitizer's, else it maps one. */
	(void)weft__stack_overflow_handler_install();

	if (s.hook)
		s.hook(WEFT_WORKER_START, s.index, s.hook_ctx);
	void *r = s.fn(s.arg);
	if (s.hook)
		s.hook(WEFT_WORKER_EXIT, s.index, s.hook_ctx);

	weft__thread_stack_forget();
	if (mine) {
		stack_t off = {.ss_flags = SS_DISABLE};
		sigaltstack(&off, NULL);
	}
	return r;
}

#ifdef WEFT_OS_LINUX
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

/* The system's thread limit (kernel.threads-max), or -1. */
static long threads_max(void)
{
	return read_long_file("/proc/sys/kernel/threads-max");
}
#else
static long threads_max(void)
{
	return -1; /* a Linux setting: not known here */
}
#endif

/* Says why a thread could not be created: errno's text and the limits
 * that cause EAGAIN. At most once a second (spawn may fail every post). */
static void report_failure(int err, bool injected)
{
	static _Atomic int64_t last_s = -1;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	int64_t last = atomic_load_explicit(&last_s, memory_order_relaxed);
	if (last == (int64_t)ts.tv_sec ||
	    !atomic_compare_exchange_strong(&last_s, &last, (int64_t)ts.tv_sec))
		return;
	struct rlimit nproc;
	char nproc_text[32] = "unlimited";
	if (getrlimit(RLIMIT_NPROC, &nproc) == 0 && nproc.rlim_cur != RLIM_INFINITY)
		snprintf(nproc_text, sizeof(nproc_text), "%llu",
		         (unsigned long long)nproc.rlim_cur);
	weft__log(WEFT_LOG_ERROR,
	          "weft: cannot create a thread (pthread_create: %s%s); the limits are "
	          "RLIMIT_NPROC (ulimit -u) %s, kernel.threads-max %ld, memory for the "
	          "thread's stack (ulimit -s) and address space (ulimit -v)\n",
	          strerror(err), injected ? ", injected by a test" : "", nproc_text, threads_max());
}

/* Creates the thread that runs fn(arg) as the start slot says; rt NULL: a
 * helper thread named weft-<kind>, not pinned, no hook. */
static int create(pthread_t *thread, void *(*fn)(void *), void *arg, const weft_rt *rt, int index,
                  const char *kind, bool quiet)
{
	if (injected_fault()) {
		report_failure(EAGAIN, true);
		return WEFT_EAGAIN;
	}
	pthread_attr_t attr;
	size_t guard = 0;
	if (pthread_attr_init(&attr) != 0) {
		report_failure(ENOMEM, false);
		return WEFT_EAGAIN;
	}
	start_arg *s = claim_slot();
	s->fn = fn;
	s->arg = arg;
	s->index = index;
	s->cpu = -1;
	s->hook = NULL;
	s->hook_ctx = NULL;
	if (rt) {
		format_name(s->name, weft_model_name(rt->cfg.model), index);
		if (rt->cfg.pin == WEFT_PIN_CORES)
			s->cpu = pick_cpu(index);
		s->hook = rt->cfg.worker_hook;
		s->hook_ctx = rt->cfg.worker_hook_ctx;
	} else {
		snprintf(s->name, sizeof(s->name), "weft-%.10s", kind);
	}
	if (pthread_attr_getguardsize(&attr, &guard) != 0 || guard < GUARD_BYTES)
		(void)pthread_attr_setguardsize(&attr, GUARD_BYTES);
	if (pthread_attr_getguardsize(&attr, &s->guard) != 0)
		s->guard = GUARD_BYTES;
	if (pthread_attr_getstacksize(&attr, &s->stack_size) != 0)
		s->stack_size = 0; /* unknown: no estimate (thread_main) */
	/* Tasks run with the program's signal mask: the one the thread that
	 * created the runtime had (a child a task forks and execs inherits
	 * it, and a mask survives exec, so a mask blocking SIGTERM would make
	 * that child unkillable); a helper running program code keeps its
	 * creator's. A helper running weft's code only blocks everything, so
	 * that no process-directed signal lands on it. Faults stay unblocked:
	 * they concern the thread that faulted (a fiber running into its
	 * guard page must reach the overflow handler), and a blocked fault
	 * signal kills the process without running any handler. The
	 * preemption signal is unblocked by the ticker of the thread that
	 * uses it (fiber/preempt_linux.c). */
	sigset_t mask, old;
	pthread_sigmask(SIG_SETMASK, NULL, &old);
	if (rt)
		mask = rt->sigmask;
	else if (quiet)
		sigfillset(&mask);
	else
		mask = old;
	static const int faults[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP};
	for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); i++)
		sigdelset(&mask, faults[i]);
	pthread_sigmask(SIG_SETMASK, &mask, NULL);
	int rc = pthread_create(thread, &attr, thread_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (rc == 0)
		return 0;
	atomic_store_explicit(&s->used, false, memory_order_release);
	report_failure(rc, false);
	return WEFT_EAGAIN;
}

int weft__thread_create(pthread_t *thread, void *(*fn)(void *), void *arg, const char *kind,
                        bool quiet)
{
	return create(thread, fn, arg, NULL, -1, kind, quiet);
}

int weft__worker_create(pthread_t *thread, void *(*fn)(void *), void *arg, const weft_rt *rt,
                        int index)
{
	return create(thread, fn, arg, rt, index, NULL, false);
}
