/* The tick signal and its safe points (tick_signal.h), for both quantum
 * clocks. */
#include <string.h>
#include <ucontext.h>

#if defined(__ELF__)
#include <link.h>
#endif

#include "core/internal.h"
#include "core/testing.h"
#include "fiber/preempt.h"
#include "fiber/tick_signal.h"

static struct sigaction previous;

/* ------------------------------------------------------------ safe points */

#define MAX_RANGES 16

static struct {
	uintptr_t lo, hi;
} app_text[MAX_RANGES];
static int app_ranges;

/* A statically linked program carries libc (malloc, stdio, ...) in its own
 * text, where the rule of preempt.h would count it as the application's: a
 * tick inside malloc would switch away holding malloc's lock or halfway
 * through its lists (found by the aarch64 suite, whose tests are static: a
 * double free in preempt.libc_safe_points). So a static program has no safe
 * point and is never preempted; weft__tick_refuse_static says so once. Also
 * true where the ranges cannot be found (no dl_iterate_phdr: a Mach-O port
 * would walk _dyld_get_image_header(0)'s segments). */
static bool program_is_static;

#if defined(__ELF__)
static int collect_main_program(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	bool dynamic = false;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dynamic = true;
	if (!dynamic) {
		program_is_static = true;
		return 1;
	}
	for (int i = 0; i < info->dlpi_phnum && app_ranges < MAX_RANGES; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			app_text[app_ranges].lo = info->dlpi_addr + ph->p_vaddr;
			app_text[app_ranges].hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
			app_ranges++;
		}
	}
	return 1; /* the first object is the main program: stop after it */
}
#endif

bool weft__pc_in_app(uintptr_t pc)
{
	for (int i = 0; i < app_ranges; i++)
		if (pc >= app_text[i].lo && pc < app_text[i].hi)
			return true;
	return false;
}

/* The one piece of the signal context POSIX leaves to each system
 * (mcontext_t is opaque there). */
uintptr_t weft__tick_interrupted_pc(void *uc_void)
{
	ucontext_t *uc = uc_void;
#if defined(__linux__) && defined(__x86_64__)
	return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__linux__) && defined(__aarch64__)
	return (uintptr_t)uc->uc_mcontext.pc;
#else
	(void)uc;
	return 0; /* unknown: never a safe point, so never preempted */
#endif
}

int weft__tick_refuse_static(void)
{
	if (!program_is_static)
		return 0;
	static atomic_flag said = ATOMIC_FLAG_INIT;
	if (!atomic_flag_test_and_set(&said))
		weft__log(WEFT_LOG_WARN,
		          "weft: timer preemption is off in a statically linked program: "
		          "libc is part of the program there, and a tick inside malloc "
		          "or stdio would switch away holding their state\n");
	return WEFT_ENOTSUP;
}

/* ------------------------------------------------------------ handler */

void weft__tick_chain(int sig, siginfo_t *si, void *uc)
{
	if (previous.sa_flags & SA_SIGINFO) {
		if (previous.sa_sigaction)
			previous.sa_sigaction(sig, si, uc);
	} else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
		previous.sa_handler(sig);
	}
}

int weft__tick_install(void (*handler)(int sig, siginfo_t *si, void *uc))
{
#if defined(__ELF__)
	dl_iterate_phdr(collect_main_program, NULL);
#else
	program_is_static = true;
#endif
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = handler;
	/* The tick is blocked while the handler runs, so the handler (weft's
	 * own code, which the program-counter rule would count as the
	 * application's in a static build) is never interrupted by the next
	 * tick; weft__ticker_unblock lifts that right before the handler
	 * switches to another fiber. */
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	return sigaction(WEFT__TICK_SIGNAL, &sa, &previous) == 0 ? 0 : WEFT_ENOTSUP;
}

void weft__tick_mask(bool block)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, WEFT__TICK_SIGNAL);
	pthread_sigmask(block ? SIG_BLOCK : SIG_UNBLOCK, &set, NULL);
}

void weft__ticker_unblock(void)
{
	weft__tick_mask(false);
}

/* ------------------------------------------------------------ faults */

static _Atomic long fault_countdown; /* 0: disarmed */
static _Atomic int fault_errno;

void weft__fault_timer_create(long nth, int err)
{
	atomic_store(&fault_errno, err);
	atomic_store(&fault_countdown, nth);
}

int weft__tick_injected_fault(void)
{
	long n = atomic_load(&fault_countdown);
	while (n > 0) {
		if (atomic_compare_exchange_weak(&fault_countdown, &n, n - 1))
			return n == 1 ? atomic_load(&fault_errno) : 0;
	}
	return 0;
}
