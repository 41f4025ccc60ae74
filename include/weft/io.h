/** @file
 * I/O calls that wait the way the model wants: on a fiber (`fibers`, `mn`)
 * a call that would block parks the fiber and its worker runs others,
 * while the worker's poller watches the fd; on a kernel thread (`threads`
 * and `spawn` workers, threads of the program's own) it waits in poll(2)
 * for the time left. Shaped like POSIX, so short reads and writes behave
 * as read(2) and write(2) do; see docs/io.md. Files (weft_pread and the
 * others at the end) go through each fiber worker's io_uring, or the
 * runtime's blocking pool, instead of blocking the worker.
 *
 * **Deadlines.** Every call takes an absolute deadline on weft_clock_ns()'s
 * clock as its last argument: `INT64_MAX` waits for as long as it takes;
 * 0, or any time already past (`INT64_MIN` too), tries once without
 * waiting. A call that runs out of time returns WEFT_ETIMEDOUT and has
 * moved nothing (the `_all` forms say how much they moved).
 *
 * **Results.** A byte count or fd (>= 0), or a negative code:
 * WEFT_ETIMEDOUT, WEFT_ECANCELED (weft_fd_cancel or weft_close was called
 * on the fd), WEFT_EINVAL (misuse: a negative fd, a NULL buffer with a
 * length), WEFT_ENOMEM, or WEFT_ESYSTEM for every refusal of the system,
 * with `errno` left as the system set it (ECONNRESET, EPIPE, EBADF, ...).
 *
 * **EINTR** is retried inside, never returned. **EAGAIN** is never
 * returned: it is what makes a call wait. **SIGPIPE** is never raised: a
 * write to a socket or pipe whose reader has gone fails with WEFT_ESYSTEM
 * and errno EPIPE (sockets are written with MSG_NOSIGNAL; a pipe's write
 * holds SIGPIPE blocked on the calling thread for the call and discards
 * the one it raised). **Partial transfers**: weft_read, weft_recv and the
 * others return as soon as some bytes moved (a short count, as read(2));
 * 0 from a read is end of file. weft_read_all and weft_write_all loop.
 *
 * **The fds.** The first weft call on an fd sets O_NONBLOCK on it (as Go's
 * net package does), since that is how a fiber's worker is kept from
 * blocking; weft_accept's new fd is non-blocking from the start. An fd
 * used through these calls is closed with weft_close, which ends every
 * wait on it first: closing it with close(2) while a weft call waits on
 * it is a use after close, as it would be for read(2). (weft_accept and
 * weft_connect start a fresh record of the fd, so a number closed with
 * close(2) and reused by them is safe; weft_wait_fd notices a number that
 * came back, for foreign libraries that close their own fds.)
 *
 * Each worker's poller watches an fd once, edge-triggered, while weft uses
 * it, with the readiness cached: a call that comes up short (or says
 * EAGAIN) marks the fd not ready, and the next call parks without a
 * system call until the poller reports it ready again. */
#ifndef WEFT_IO_H
#define WEFT_IO_H

#include "export.h"
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

/** weft_read reads up to len bytes from fd into buf, waiting until some
 * are there, the deadline passes or the fd is cancelled: the count read
 * (0 at end of file, or for len 0), WEFT_ETIMEDOUT, WEFT_ECANCELED,
 * WEFT_EINVAL (fd < 0, buf NULL with len > 0) or WEFT_ESYSTEM (errno).
 * Callable from tasks on every model and from any thread. */
WEFT_EXTERN ssize_t weft_read(int fd, void *buf, size_t len, int64_t deadline);

/** weft_write writes up to len bytes of buf to fd, waiting until the fd
 * takes some: the count written (maybe fewer than len), or an error as
 * weft_read (EPIPE without SIGPIPE). Callable anywhere. */
WEFT_EXTERN ssize_t weft_write(int fd, const void *buf, size_t len, int64_t deadline);

/** weft_readv is weft_read into iovcnt buffers (readv(2)); WEFT_EINVAL for
 * iovcnt outside 0..IOV_MAX or a NULL iov with buffers. Callable anywhere. */
WEFT_EXTERN ssize_t weft_readv(int fd, const struct iovec *iov, int iovcnt, int64_t deadline);

/** weft_writev is weft_write from iovcnt buffers (writev(2)). Callable
 * anywhere. */
WEFT_EXTERN ssize_t weft_writev(int fd, const struct iovec *iov, int iovcnt, int64_t deadline);

/** weft_recv is weft_read on a socket with recv(2)'s flags (MSG_PEEK,
 * ...; for a whole buffer use weft_read_all). Callable anywhere. */
WEFT_EXTERN ssize_t weft_recv(int fd, void *buf, size_t len, int flags, int64_t deadline);

/** weft_send is weft_write on a socket with send(2)'s flags (MSG_NOSIGNAL
 * is always added). Callable anywhere. */
WEFT_EXTERN ssize_t weft_send(int fd, const void *buf, size_t len, int flags, int64_t deadline);

/** weft_recvfrom receives one datagram (or stream bytes) as recvfrom(2),
 * with the sender's address in from / fromlen when from is not NULL; a
 * datagram longer than len is cut as recvfrom cuts it. Callable anywhere. */
WEFT_EXTERN ssize_t weft_recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *from,
                                  socklen_t *fromlen, int64_t deadline);

/** weft_sendto sends one datagram to `to` as sendto(2) (to NULL: the
 * connected peer). Callable anywhere. */
WEFT_EXTERN ssize_t weft_sendto(int fd, const void *buf, size_t len, int flags,
                                const struct sockaddr *to, socklen_t tolen, int64_t deadline);

/** weft_accept waits for a connection on the listening socket fd and
 * returns its new fd (non-blocking, with SOCK_CLOEXEC when flags has it;
 * SOCK_NONBLOCK is allowed and implied, any other flag is WEFT_EINVAL),
 * the peer's address in addr / addrlen when addr is not NULL; or an error
 * as weft_read. Callable anywhere. */
WEFT_EXTERN int weft_accept(int fd, struct sockaddr *addr, socklen_t *addrlen, int flags,
                            int64_t deadline);

/** weft_connect connects the socket fd to addr, waiting for the handshake:
 * 0, WEFT_ETIMEDOUT (the socket is left half-connected: close it),
 * WEFT_ECANCELED, or WEFT_ESYSTEM with errno (ECONNREFUSED, ...).
 * Callable anywhere. */
WEFT_EXTERN int weft_connect(int fd, const struct sockaddr *addr, socklen_t addrlen,
                             int64_t deadline);

/** weft_read_all reads until len bytes are in buf, end of file or an
 * error: len; at end of file the count read (< len); else an error code.
 * *moved (when moved is not NULL) receives the bytes read in every case.
 * Callable anywhere. */
WEFT_EXTERN ssize_t weft_read_all(int fd, void *buf, size_t len, size_t *moved, int64_t deadline);

/** weft_write_all writes all len bytes of buf: len, or an error code with
 * *moved (when not NULL) the bytes written before it. Callable anywhere. */
WEFT_EXTERN ssize_t weft_write_all(int fd, const void *buf, size_t len, size_t *moved,
                                   int64_t deadline);

/** weft_wait_fd_until is weft_wait_fd with an absolute deadline: the ready
 * events (> 0, as poll's revents), WEFT_ETIMEDOUT, WEFT_ECANCELED, or
 * WEFT_EINVAL for a bad fd or no events. It reports the fd as it is now
 * (a level check), so it suits fds that a foreign library reads and writes
 * itself. Callable anywhere. */
WEFT_EXTERN int weft_wait_fd_until(int fd, short events, int64_t deadline);

/** weft_wait_fds waits until one of nfds fds is ready, as poll(2): fills
 * every revents and returns how many fds have some (> 0), WEFT_ETIMEDOUT,
 * WEFT_ECANCELED when one of the fds is cancelled, WEFT_EINVAL (fds NULL
 * with nfds > 0, nfds over 1024, an fd >= 0 with no events, or every fd
 * negative with no deadline). Negative fds are ignored, as poll does.
 * Callable anywhere. */
WEFT_EXTERN int weft_wait_fds(struct pollfd *fds, size_t nfds, int64_t deadline);

/** weft_fd_cancel ends every wait on fd, now and until fd is closed with
 * weft_close: each weft call waiting on fd (on any fiber or thread)
 * returns WEFT_ECANCELED within a millisecond, and later calls on fd
 * return it at once. For one task to stop another's blocked read before
 * closing the fd. Returns 0, or WEFT_EINVAL for fd < 0. Callable anywhere. */
WEFT_EXTERN int weft_fd_cancel(int fd);

/** weft_close cancels every wait on fd (as weft_fd_cancel), forgets what
 * weft knew of it, and closes it: 0, WEFT_EINVAL for fd < 0, or
 * WEFT_ESYSTEM with errno (EBADF). Callable anywhere. */
WEFT_EXTERN int weft_close(int fd);

/* ------------------------------------------------------------ files */

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
