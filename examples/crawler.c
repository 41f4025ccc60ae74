/* crawler: a web crawler with one task per page, against a local server.
 *
 * The program starts a small HTTP server for a made-up site of PAGES pages
 * (each answers after SERVER_DELAY_MS, as a remote server would, and links
 * to three others), then crawls it from page 0: every page is fetched by
 * its own task, which connects, sends a request, parks in weft_read
 * (weft/io.h) until the answer comes, and posts a task for each link not seen before.
 * Under fibers and mn, hundreds of fetches wait at once on a few threads;
 * under threads, WEFT_WORKERS at a time. Compare:
 *
 *   WEFT_MODEL=threads WEFT_WORKERS=2 ./crawler
 *   WEFT_MODEL=mn WEFT_WORKERS=2 ./crawler
 *
 * The server is a second weft runtime in the same process (runtimes are
 * independent), fed by a plain thread that accepts connections. */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include <weft/weft.h>

/* Every connection is a descriptor: allow as many as the hard limit does. */
static void raise_fd_limit(void)
{
	struct rlimit r;
	if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
		r.rlim_cur = r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
	}
}

/* A TCP socket listening on 127.0.0.1, on a port the kernel picks (in
 * *port); -1 on failure. weft's calls make it non-blocking on first use. */
static int listen_local(int *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 4096) != 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
		close(fd);
		return -1;
	}
	*port = ntohs(a.sin_port);
	return fd;
}

/* A socket connected to 127.0.0.1:port (weft_connect waits for the
 * handshake), or -1. */
static int connect_local(int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons((unsigned short)port),
	                        .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && weft_connect(fd, (struct sockaddr *)&a, sizeof(a), INT64_MAX) != 0) {
		weft_close(fd);
		fd = -1;
	}
	return fd;
}

#define PAGES           500
#define SERVER_DELAY_MS 2

/* ---------------------------------------------------------------- the site */

typedef struct request {
	weft_task task;
	int fd;
	struct request *next; /* the server's list, freed at the end */
} request;

typedef struct server {
	weft_rt *rt;
	int lfd, port;
	request *requests;
	pthread_t acceptor;
} server;

static void answer(void *arg)
{
	request *r = arg;
	char buf[512];
	int page = -1;
	ssize_t n = weft_read(r->fd, buf, sizeof(buf) - 1, INT64_MAX);
	if (n > 0) {
		buf[n] = '\0';
		sscanf(buf, "GET /%d", &page);
	}
	weft_sleep_ns(SERVER_DELAY_MS * 1000000LL); /* a server far away */
	if (page >= 0 && page < PAGES) {
		int len = snprintf(buf, sizeof(buf),
		                   "HTTP/1.0 200 OK\r\n\r\n<a href=\"/%d\"> <a href=\"/%d\"> "
		                   "<a href=\"/%d\">\n",
		                   (page + 1) % PAGES, (page * 7 + 3) % PAGES,
		                   (page * 13 + 5) % PAGES);
		weft_write_all(r->fd, buf, (size_t)len, NULL, INT64_MAX);
	}
	weft_close(r->fd);
}

static void *accept_loop(void *arg)
{
	server *s = arg;
	int fd;
	while ((fd = weft_accept(s->lfd, NULL, NULL, SOCK_CLOEXEC, INT64_MAX)) >= 0) {
		request *r = calloc(1, sizeof(*r));
		if (!r) {
			weft_close(fd);
			continue;
		}
		r->fd = fd;
		r->next = s->requests;
		s->requests = r;
		weft_task_init(&r->task, answer, r);
		if (weft_post(s->rt, &r->task) != 0)
			weft_close(fd);
	}
	return NULL; /* WEFT_ECANCELED: main cancelled the listening socket */
}

/* ------------------------------------------------------------- the crawler */

typedef struct fetch {
	weft_task task;
	int page;
} fetch;

static weft_rt *crawl_rt;
static int server_port;
static fetch fetches[PAGES]; /* one per page: each is fetched once */
static atomic_bool seen[PAGES];
static atomic_int fetched, links;

static void visit(int page);

static void fetch_page(void *arg)
{
	fetch *f = arg;
	char buf[512];
	int len = snprintf(buf, sizeof(buf), "GET /%d HTTP/1.0\r\n\r\n", f->page);
	int fd = connect_local(server_port);
	if (fd < 0 || weft_write_all(fd, buf, (size_t)len, NULL, INT64_MAX) != len) {
		if (fd >= 0)
			weft_close(fd);
		return;
	}
	size_t got = 0; /* the server closes after its answer: read to the end */
	weft_read_all(fd, buf, sizeof(buf) - 1, &got, INT64_MAX);
	buf[got] = '\0';
	weft_close(fd);
	atomic_fetch_add(&fetched, 1);
	for (char *p = strstr(buf, "href=\"/"); p; p = strstr(p + 1, "href=\"/")) {
		atomic_fetch_add(&links, 1);
		visit(atoi(p + 7));
	}
}

/* Posts a fetch of the page unless some task already did. */
static void visit(int page)
{
	if (page < 0 || page >= PAGES || atomic_exchange(&seen[page], true))
		return;
	fetches[page].page = page;
	weft_task_init(&fetches[page].task, fetch_page, &fetches[page]);
	weft_post(crawl_rt, &fetches[page].task);
}

int main(void)
{
	server s = {0};
	raise_fd_limit();
	s.lfd = listen_local(&s.port);
	if (s.lfd < 0 || weft_rt_create(&s.rt, NULL) != 0 ||
	    pthread_create(&s.acceptor, NULL, accept_loop, &s) != 0)
		return 1;
	server_port = s.port;

	if (weft_rt_create(&crawl_rt, NULL) != 0)
		return 1;
	int64_t start = weft_clock_ns();
	visit(0);
	weft_wait_all(crawl_rt); /* includes the fetches that fetches posted */
	double ms = (double)(weft_clock_ns() - start) / 1e6;
	printf("crawled %d of %d pages, %d links followed\n", atomic_load(&fetched), PAGES,
	       atomic_load(&links));
	fprintf(stderr, "crawler: %.0f ms (%d ms per page on the server)\n", ms, SERVER_DELAY_MS);

	/* Stop the site: cancel the acceptor's wait, then drain its runtime. */
	weft_fd_cancel(s.lfd);
	pthread_join(s.acceptor, NULL);
	weft_close(s.lfd);
	int rc = weft_rt_destroy(crawl_rt) | weft_rt_destroy(s.rt);
	while (s.requests) {
		request *r = s.requests;
		s.requests = r->next;
		free(r);
	}
	return rc == 0 && fetched == PAGES ? 0 : 1;
}
