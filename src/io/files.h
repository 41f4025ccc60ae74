/* The file calls' backends (files.c): which one a runtime uses, chosen
 * once at weft_rt_create, and the hooks core calls (fork, statistics,
 * cancellation).
 *
 * Kernel-thread workers (threads, spawn) and plain threads make the plain
 * system call. Fiber workers (fibers, mn) use io_uring, one ring per worker
 * (uring.h), when WEFT_IO allows it and the kernel lets this process set a
 * ring up; else the blocking pool (pool.h), after a try with RWF_NOWAIT
 * that the page cache answers without a hand-off. */
#ifndef WEFT_SRC_IO_FILES_H
#define WEFT_SRC_IO_FILES_H

#include <stdbool.h>
#include <stdio.h>

#include "core/internal.h"

/* WEFT_IO's values (config.c reads it into rt->io_want). */
typedef enum weft__io_want {
	WEFT__IO_AUTO = 0,  /* io_uring if the kernel allows it, else the pool */
	WEFT__IO_URING = 1, /* the same, but a refusal is said on stderr */
	WEFT__IO_EPOLL = 2, /* never io_uring: files go to the pool */
	WEFT__IO_WANT_COUNT_
} weft__io_want;

/* Sets rt->io_uring from rt->io_want, the model and the probe. */
void weft__io_choose(weft_rt *rt);

/* One statistics line: the files' backend and why, the blocking pool. */
void weft__io_print_stats(weft_rt *rt, FILE *out);

/* Every file call in flight on fd, on any runtime, returns WEFT_ECANCELED
 * soon: queued pool jobs at once, io_uring requests when the kernel
 * cancels them (Linux 5.19), a read already running on a pool thread when
 * it ends (with its result: a read cannot be interrupted). For
 * weft_fd_cancel and weft_close (io.h). Returns how many were reached. */
int weft__file_cancel(int fd);

/* fork(2) hooks (core/runtime.c): the registries' locks around fork; the
 * child forgets the parent's pools and unmaps its rings. */
void weft__io_fork_prepare(void);
void weft__io_fork_parent(void);
void weft__io_fork_child(void);

/* The pool's and the ring's fork hooks (pool.c, uring.c). */
void weft__pool_fork_prepare(void);
void weft__pool_fork_parent(void);
void weft__pool_fork_child(void);

#endif
