/* echo_uring: the floor on io_uring. A single-threaded echo server in C
 * whose socket reads go through one io_uring (liburing), to measure what
 * weft's sockets could gain there over the edge-triggered epoll loop
 * (echo_epoll) before weft builds it (docs/io.md, "Sockets on io_uring").
 *
 * Every connection keeps one receive in the ring: a plain IORING_OP_RECV
 * into the connection's buffer, re-armed after each echo (--recv single),
 * or one multishot receive that picks buffers from a provided-buffer ring
 * and stays armed (--recv multishot; the bytes are copied to the
 * connection's buffer and the ring's buffer given back at once). The echo
 * goes back as an IORING_OP_SEND queued in the same ring (--send ring), or
 * as a send(2) made at once (--send syscall), which is what a fiber would
 * do. Connections come from a multishot accept. The loop submits what it
 * queued and waits for at least one completion in one io_uring_enter;
 * the ring is set up for one thread (SINGLE_ISSUER, DEFER_TASKRUN: the
 * kernel runs completions' work when that thread enters it). A short send
 * closes the connection (64-byte echoes never make one). Listens on
 * 127.0.0.1 only; runs until killed. */
#define _GNU_SOURCE
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "server_common.h"

static const char usage[] =
        "usage: echo_uring --port N [--recv single|multishot] [--send ring|syscall]\n"
        "A single-threaded echo server on one io_uring on 127.0.0.1:N (bench/io),\n"
        "until killed. --recv: one IORING_OP_RECV per message (default) or one\n"
        "multishot receive per connection over provided buffers; --send: the echo\n"
        "as an IORING_OP_SEND (default) or as send(2) at once.\n";

enum { BUF = 4096, RING = 4096, PROVIDED = 4096, GROUP = 1 };
enum { OP_ACCEPT, OP_RECV, OP_SEND };

static struct io_uring ring;
static struct io_uring_buf_ring *provided;
static unsigned char *provided_mem;
static unsigned char **conn_buf; /* by descriptor */
static size_t nconn;
static bool multishot, send_now;

static uint64_t tag(int fd, int op)
{
	return (uint64_t)op << 32 | (uint32_t)fd;
}

static struct io_uring_sqe *sqe(void)
{
	struct io_uring_sqe *s = io_uring_get_sqe(&ring);
	if (!s) { /* the submission ring is full: hand it over, then there is room */
		io_uring_submit(&ring);
		s = io_uring_get_sqe(&ring);
	}
	return s;
}

static unsigned char *buffer_of(int fd)
{
	if ((size_t)fd >= nconn) {
		size_t n = nconn ? nconn : 1024;
		while (n <= (size_t)fd)
			n *= 2;
		unsigned char **b = realloc(conn_buf, n * sizeof(*b));
		if (!b) {
			fprintf(stderr, "echo_uring: out of memory\n");
			exit(1);
		}
		memset(b + nconn, 0, (n - nconn) * sizeof(*b));
		conn_buf = b;
		nconn = n;
	}
	if (!conn_buf[fd] && !(conn_buf[fd] = malloc(BUF))) {
		fprintf(stderr, "echo_uring: out of memory\n");
		exit(1);
	}
	return conn_buf[fd];
}

static void queue_recv(int fd)
{
	struct io_uring_sqe *s = sqe();
	if (multishot) {
		io_uring_prep_recv_multishot(s, fd, NULL, 0, 0);
		s->flags |= IOSQE_BUFFER_SELECT;
		s->buf_group = GROUP;
	} else {
		io_uring_prep_recv(s, fd, buffer_of(fd), BUF, 0);
	}
	io_uring_sqe_set_data64(s, tag(fd, OP_RECV));
}

static void queue_accept(int lfd)
{
	struct io_uring_sqe *s = sqe();
	io_uring_prep_multishot_accept(s, lfd, NULL, NULL, SOCK_CLOEXEC);
	io_uring_sqe_set_data64(s, tag(lfd, OP_ACCEPT));
}

static void give_back(unsigned id)
{
	io_uring_buf_ring_add(provided, provided_mem + (size_t)id * BUF, BUF, (unsigned short)id,
	                      io_uring_buf_ring_mask(PROVIDED), 0);
	io_uring_buf_ring_advance(provided, 1);
}

/* The provided-buffer ring of --recv multishot (liburing 2.3 has no
 * io_uring_setup_buf_ring: mapped and registered here). */
static void provide_buffers(void)
{
	size_t size = PROVIDED * sizeof(struct io_uring_buf);
	provided = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	provided_mem = malloc((size_t)PROVIDED * BUF);
	if (provided == MAP_FAILED || !provided_mem) {
		fprintf(stderr, "echo_uring: out of memory\n");
		exit(1);
	}
	io_uring_buf_ring_init(provided);
	struct io_uring_buf_reg reg = {
	        .ring_addr = (uintptr_t)provided, .ring_entries = PROVIDED, .bgid = GROUP};
	int rc = io_uring_register_buf_ring(&ring, &reg, 0);
	if (rc != 0) {
		fprintf(stderr, "echo_uring: cannot register provided buffers: %s\n",
		        strerror(-rc));
		exit(1);
	}
	for (unsigned i = 0; i < PROVIDED; i++)
		io_uring_buf_ring_add(provided, provided_mem + (size_t)i * BUF, BUF,
		                      (unsigned short)i, io_uring_buf_ring_mask(PROVIDED), (int)i);
	io_uring_buf_ring_advance(provided, PROVIDED);
}

/* A receive completed with res bytes (or an error): echo them. */
static void received(int fd, int res, unsigned flags)
{
	if (multishot && res == -ENOBUFS) { /* every provided buffer in use: again */
		queue_recv(fd);
		return;
	}
	if (res <= 0) {
		close(fd); /* also cancels its multishot receive */
		return;
	}
	unsigned char *buf = buffer_of(fd);
	if (multishot) {
		unsigned id = flags >> IORING_CQE_BUFFER_SHIFT;
		memcpy(buf, provided_mem + (size_t)id * BUF, (size_t)res);
		give_back(id);
		if (!(flags & IORING_CQE_F_MORE))
			queue_recv(fd); /* the kernel ended the multishot: arm it again */
	}
	if (!send_now) {
		struct io_uring_sqe *s = sqe();
		io_uring_prep_send(s, fd, buf, (size_t)res, MSG_NOSIGNAL);
		io_uring_sqe_set_data64(s, tag(fd, OP_SEND));
		return;
	}
	ssize_t n;
	while ((n = send(fd, buf, (size_t)res, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	if (n != res)
		close(fd);
	else if (!multishot)
		queue_recv(fd);
}

static bool parse(int argc, char **argv, int *port)
{
	static const struct option opts[] = {{"port", required_argument, NULL, 'p'},
	                                     {"recv", required_argument, NULL, 'r'},
	                                     {"send", required_argument, NULL, 's'},
	                                     {"help", no_argument, NULL, 'h'},
	                                     {"version", no_argument, NULL, BENCH_OPT_VERSION},
	                                     {NULL, 0, NULL, 0}};
	unsigned long long p = 0;
	int c;
	cli_check_stdout_at_exit("echo_uring");
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":p:h", opts, NULL)) != -1) {
		if (c == 'p' && cli_parse_u64(optarg, 1, 65535, &p))
			continue;
		if (c == 'r' && (!strcmp(optarg, "single") || !strcmp(optarg, "multishot"))) {
			multishot = !strcmp(optarg, "multishot");
			continue;
		}
		if (c == 's' && (!strcmp(optarg, "ring") || !strcmp(optarg, "syscall"))) {
			send_now = !strcmp(optarg, "syscall");
			continue;
		}
		if (c == 'p' || c == 'r' || c == 's') {
			fprintf(stderr, "echo_uring: bad value '%s' for --%s\n%s", optarg,
			        c == 'p'   ? "port"
			        : c == 'r' ? "recv"
			                   : "send",
			        usage);
			return false;
		}
		exit(bench_help_version_or_error("echo_uring", c, argv, opts, usage));
	}
	if (optind < argc || p == 0) {
		fprintf(stderr, "echo_uring: %s\n%s",
		        p == 0 ? "--port is required" : "unexpected argument", usage);
		return false;
	}
	*port = (int)p;
	return true;
}

int main(int argc, char **argv)
{
	int port;
	if (!parse(argc, argv, &port))
		return 2;
	server_raise_fd_limit();
	int lfd = server_listen("echo_uring", port);
	struct io_uring_params params = {.flags = IORING_SETUP_SUBMIT_ALL |
	                                          IORING_SETUP_COOP_TASKRUN |
	                                          IORING_SETUP_SINGLE_ISSUER |
	                                          IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_CQSIZE,
	                                 .cq_entries = 16 * RING};
	int rc = io_uring_queue_init_params(RING, &ring, &params);
	if (rc != 0) {
		fprintf(stderr, "echo_uring: io_uring refused: %s\n", strerror(-rc));
		return 1;
	}
	if (multishot)
		provide_buffers();
	queue_accept(lfd);
	for (;;) {
		rc = io_uring_submit_and_wait(&ring, 1);
		if (rc < 0 && rc != -EINTR) {
			fprintf(stderr, "echo_uring: io_uring_enter: %s\n", strerror(-rc));
			return 1;
		}
		struct io_uring_cqe *cqe;
		unsigned head, seen = 0;
		io_uring_for_each_cqe(&ring, head, cqe)
		{
			seen++;
			int fd = (int)(uint32_t)cqe->user_data, res = cqe->res;
			switch ((int)(cqe->user_data >> 32)) {
			case OP_ACCEPT:
				if (res >= 0) {
					server_conn_setup(res);
					queue_recv(res);
				}
				if (!(cqe->flags & IORING_CQE_F_MORE))
					queue_accept(lfd);
				break;
			case OP_RECV:
				received(fd, res, cqe->flags);
				break;
			default: /* OP_SEND */
				if (res <= 0)
					close(fd);
				else if (!multishot)
					queue_recv(fd);
			}
		}
		io_uring_cq_advance(&ring, seen);
	}
}
