/** @file
 * I/O calls that suit the model (docs/io.md). Every call takes an absolute
 * deadline on weft_clock_ns()'s clock as its last argument: INT64_MAX is
 * none; 0, or any time already past, tries once without waiting. Results
 * are byte counts (>= 0) or a negative WEFT_E* code: WEFT_ETIMEDOUT,
 * WEFT_ECANCELED, WEFT_EINVAL for misuse, and WEFT_ESYSTEM for an error of
 * the system call, with errno left as the system set it. EINTR is retried
 * inside. Callable from tasks on every model and from any thread. */
#ifndef WEFT_IO_H
#define WEFT_IO_H

#include "export.h"
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Files */

/** weft_pread reads up to len bytes of fd at offset off into buf, as
 * pread(2) does (a short count at the end of the file; 0 at or past it).
 * On a fiber model a read the page cache holds is made right away (a
 * RWF_NOWAIT try, not for O_DIRECT files); one that must wait for the
 * device parks the fiber, and its worker runs others, while io_uring reads
 * (where the kernel allows it: WEFT_IO) or a thread of weft's blocking
 * pool does.
 * On kernel-thread workers and plain threads it is pread(2). A deadline
 * that has passed on entry tries once with RWF_NOWAIT: WEFT_ETIMEDOUT if the
 * data is not in the page cache. A later deadline cancels a read still
 * waiting for the device (io_uring) or still queued for a pool thread, and
 * the call returns WEFT_ETIMEDOUT; a read a pool thread has begun, or a
 * plain pread(2), is not interrupted and its result is returned. The call
 * returns only when nothing will write buf any more. WEFT_ECANCELED when
 * weft_fd_cancel(fd) stopped it; WEFT_EINVAL for fd < 0, off < 0 or a NULL
 * buf with len > 0; WEFT_ESYSTEM with errno (EBADF, EISDIR, ESPIPE, EIO,
 * ...) for the system's refusal. For regular files and block devices: a
 * pipe or socket gives ESPIPE, as pread(2) does. */
WEFT_EXTERN ssize_t weft_pread(int fd, void *buf, size_t len, off_t off, int64_t deadline);

/** weft_pwrite writes up to len bytes of buf to fd at offset off, as
 * pwrite(2) does; everything weft_pread says about models, deadlines,
 * cancellation and errors holds (a past deadline tries RWF_NOWAIT, which
 * some file systems refuse for buffered writes: then WEFT_ETIMEDOUT). Returns
 * the bytes written. */
WEFT_EXTERN ssize_t weft_pwrite(int fd, const void *buf, size_t len, off_t off, int64_t deadline);

/** weft_fsync flushes fd's data and metadata to its device, as fsync(2)
 * does, without blocking a fiber's worker (io_uring, else the pool).
 * Returns 0, WEFT_ETIMEDOUT (a deadline that passed before the flush
 * began; fsync cannot be tried without waiting, so a deadline already
 * past on entry returns it at once), WEFT_ECANCELED, WEFT_EINVAL for fd
 * < 0, or WEFT_ESYSTEM with errno. */
WEFT_EXTERN int weft_fsync(int fd, int64_t deadline);

/** weft_fdatasync is weft_fsync flushing only what reading the data back
 * needs, as fdatasync(2) does. */
WEFT_EXTERN int weft_fdatasync(int fd, int64_t deadline);

/** weft_openat opens path relative to dirfd (AT_FDCWD: the working
 * directory) as openat(2) does, without blocking a fiber's worker while
 * the path is resolved (io_uring, else the pool): the new fd (>= 0),
 * WEFT_ETIMEDOUT, WEFT_EINVAL for a NULL path, or WEFT_ESYSTEM with errno
 * (ENOENT, EACCES, EMFILE, ...). O_CLOEXEC is added to flags; O_NONBLOCK
 * is not (a regular file ignores it). A deadline that has passed on entry
 * returns WEFT_ETIMEDOUT; a later one stops an open still queued for a
 * pool thread or cancelled by the kernel. */
WEFT_EXTERN int weft_openat(int dirfd, const char *path, int flags, mode_t mode, int64_t deadline);

#ifdef __cplusplus
}
#endif

#endif
