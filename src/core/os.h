/* Which operating system weft may lean on outside its platform files.
 *
 * The platform files (core/futex_*.c, core/membarrier_*.c,
 * fiber/preempt_*.c, io/poller_*.c, io/wakefd_*.c, io/uring*.c) are chosen
 * whole by CMake. What remains are Linux (and glibc) extensions with a
 * POSIX fallback a few lines long: naming and pinning threads, the CPU
 * count from the affinity mask and the cgroup limit, a thread's own stack
 * bounds, guard pages inside a mapping, RWF_NOWAIT reads, /proc reports.
 * Those test WEFT_OS_LINUX, never __linux__, so that a portable build
 * (WEFT_PORTABLE, docs/platforms.md) compiles none of them on Linux either
 * and the suite run with it tests exactly what a port to another system
 * stands on. */
#ifndef WEFT_SRC_CORE_OS_H
#define WEFT_SRC_CORE_OS_H

#if defined(__linux__) && !defined(WEFT_PORTABLE)
#define WEFT_OS_LINUX 1
#endif

#endif
