/* file_read: 4 KiB random reads of a file, cached and cold, from weft
 * fibers (weft_pread) next to plain pread on the calling thread and a fixed
 * thread-pool offload, in one run.
 *
 * The cached file is read whole first, so the page cache holds it; the
 * cold file is opened with O_DIRECT, so every read goes to the device (if
 * the file system refuses O_DIRECT the program says so and drops the
 * file's pages with posix_fadvise before each run instead, which the next
 * reads then refill: those figures are then only partly cold).
 *
 * weft rows: `fibers` with 1 worker, with io_uring (WEFT_IO=uring, when
 * the kernel allows it) and with WEFT_IO=epoll (the blocking pool after a
 * RWF_NOWAIT try), and `mn` with 2 workers on io_uring; 1, 32 and 128
 * fibers, each reading its share. The pool row: 4 kernel threads taking
 * requests from a mutex-and-condition queue, with 1, 32 or 128 requests
 * in flight (a closed loop: a completion submits the next). Every figure
 * is ns per read (elapsed / reads: at 1 in flight the latency of a read,
 * above it the throughput), the median of the repetitions; x pread is the
 * ratio to the plain pread of the same file in the same run. Last, the
 * bar as directly as a shared machine allows: weft_pread and pread of the
 * cached file alternating call by call in one fiber, medians of each. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../bench_util.h"
#include <weft/io.h>
#include <weft/weft.h>

#define BLOCK 4096

static long cached_reads = 100000, cold_reads = 4000;
static int reps = 3;
static size_t file_bytes = 64u << 20;
static const char *dir = ".";
static int pool_threads = 4;
static const int inflight[] = {1, 32, 128};
#define NFLIGHT 3

static uint64_t rng(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15u);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

static off_t random_block(uint64_t *s)
{
	return (off_t)(rng(s) % (file_bytes / BLOCK)) * BLOCK;
}

static void die(const char *what)
{
	fprintf(stderr, "file_read: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* ------------------------------------------------------------ the files */

static char path[4096];
static int fd_cached = -1, fd_cold = -1;
static bool direct = true;

static void make_file(void)
{
	snprintf(path, sizeof(path), "%s/file_read.XXXXXX", dir);
	int fd = mkstemp(path);
	if (fd < 0)
		die(path);
	char *buf = malloc(1 << 20);
	if (!buf)
		die("malloc");
	for (size_t i = 0; i < (1u << 20); i++)
		buf[i] = (char)(i * 31);
	for (size_t done = 0; done < file_bytes; done += 1u << 20)
		if (pwrite(fd, buf, 1u << 20, (off_t)done) != 1 << 20)
			die("pwrite");
	if (fsync(fd) != 0)
		die("fsync");
	for (size_t done = 0; done < file_bytes; done += 1u << 20) /* into the page cache */
		if (pread(fd, buf, 1u << 20, (off_t)done) != 1 << 20)
			die("pread");
	free(buf);
	fd_cached = fd;
	fd_cold = open(path, O_RDONLY | O_DIRECT);
	if (fd_cold < 0) {
		direct = false;
		printf("note: %s refuses O_DIRECT (%s): the cold file's pages are dropped with "
		       "posix_fadvise before each run instead\n",
		       dir, strerror(errno));
		fd_cold = open(path, O_RDONLY);
		if (fd_cold < 0)
			die(path);
	}
	unlink(path);
}

static void make_cold(int fd)
{
	if (fd == fd_cold && !direct)
		posix_fadvise(fd, 0, (off_t)file_bytes, POSIX_FADV_DONTNEED);
}

/* ------------------------------------------------------------ plain pread */

static double plain(int fd, long reads)
{
	make_cold(fd);
	char *buf = aligned_alloc(BLOCK, BLOCK);
	uint64_t s = 42;
	double t0 = bench_now_ns();
	for (long i = 0; i < reads; i++)
		if (pread(fd, buf, BLOCK, random_block(&s)) != BLOCK)
			die("pread");
	double ns = (bench_now_ns() - t0) / (double)reads;
	free(buf);
	return ns;
}

/* ------------------------------------------------------------ a fixed pool */

typedef struct request {
	struct request *next;
	off_t off;
	char *buf;
} request;

static struct {
	pthread_mutex_t mu;
	pthread_cond_t work, done;
	request *queue;
	long finished;
	bool stop;
	int fd;
} pool = {.mu = PTHREAD_MUTEX_INITIALIZER,
          .work = PTHREAD_COND_INITIALIZER,
          .done = PTHREAD_COND_INITIALIZER};

static void *pool_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&pool.mu);
	for (;;) {
		while (!pool.queue && !pool.stop)
			pthread_cond_wait(&pool.work, &pool.mu);
		if (!pool.queue)
			break;
		request *r = pool.queue;
		pool.queue = r->next;
		pthread_mutex_unlock(&pool.mu);
		if (pread(pool.fd, r->buf, BLOCK, r->off) != BLOCK)
			die("pread (pool)");
		pthread_mutex_lock(&pool.mu);
		pool.finished++;
		r->next = NULL;
		r->off = -1; /* done: the submitter reuses it */
		pthread_cond_signal(&pool.done);
	}
	pthread_mutex_unlock(&pool.mu);
	return NULL;
}

static double offload(int fd, long reads, int flight)
{
	make_cold(fd);
	pool.fd = fd;
	pool.finished = 0;
	pool.stop = false;
	pthread_t *t = calloc((size_t)pool_threads, sizeof(*t));
	request *rq = calloc((size_t)flight, sizeof(*rq));
	for (int i = 0; i < flight; i++)
		rq[i].buf = aligned_alloc(BLOCK, BLOCK);
	for (int i = 0; i < pool_threads; i++)
		if (pthread_create(&t[i], NULL, pool_main, NULL) != 0)
			die("pthread_create");
	uint64_t s = 7;
	long submitted = 0;
	double t0 = bench_now_ns();
	pthread_mutex_lock(&pool.mu);
	for (int i = 0; i < flight && submitted < reads; i++, submitted++) {
		rq[i].off = random_block(&s);
		rq[i].next = pool.queue;
		pool.queue = &rq[i];
		pthread_cond_signal(&pool.work);
	}
	while (pool.finished < reads) {
		pthread_cond_wait(&pool.done, &pool.mu);
		for (int i = 0; i < flight && submitted < reads; i++) {
			if (rq[i].off != -1)
				continue;
			rq[i].off = random_block(&s);
			rq[i].next = pool.queue;
			pool.queue = &rq[i];
			submitted++;
			pthread_cond_signal(&pool.work);
		}
	}
	pool.stop = true;
	pthread_cond_broadcast(&pool.work);
	pthread_mutex_unlock(&pool.mu);
	double ns = (bench_now_ns() - t0) / (double)reads;
	for (int i = 0; i < pool_threads; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < flight; i++)
		free(rq[i].buf);
	free(rq);
	free(t);
	return ns;
}

/* ------------------------------------------------------------ weft */

typedef struct reader {
	int fd;
	long reads;
	uint64_t seed;
	char *buf;
} reader;

static void read_task(void *arg)
{
	reader *r = arg;
	for (long i = 0; i < r->reads; i++) {
		ssize_t n = weft_pread(r->fd, r->buf, BLOCK, random_block(&r->seed), INT64_MAX);
		if (n != BLOCK) {
			fprintf(stderr, "file_read: weft_pread returned %zd (%s; errno %s)\n", n,
			        weft_strerror((int)n), strerror(errno));
			exit(1);
		}
	}
}

/* ns per read from `fibers` fibers on model/workers with WEFT_IO=io; a
 * negative value when io_uring was asked for and the runtime refused it. */
static double on_weft(weft_model model, int workers, const char *io, int fd, long reads, int fibers)
{
	make_cold(fd);
	setenv("WEFT_IO", io, 1);
	weft_config cfg;
	weft_config_init(&cfg);
	cfg.model = model;
	cfg.workers = workers;
	weft_rt *rt;
	if (weft_rt_create(&rt, &cfg) != 0) {
		fprintf(stderr, "file_read: cannot create a %s runtime\n", weft_model_name(model));
		exit(1);
	}
	unsetenv("WEFT_IO");
	weft_task *t = calloc((size_t)fibers, sizeof(*t));
	reader *r = calloc((size_t)fibers, sizeof(*r));
	for (int i = 0; i < fibers; i++) {
		r[i] = (reader){fd, reads / fibers, (uint64_t)i + 1, aligned_alloc(BLOCK, BLOCK)};
		weft_task_init(&t[i], read_task, &r[i]);
	}
	double t0 = bench_now_ns();
	for (int i = 0; i < fibers; i++)
		if (weft_post(rt, &t[i]) != 0)
			exit(1);
	weft_wait_all(rt);
	double ns = (bench_now_ns() - t0) / (double)(reads / fibers * fibers);
	weft_rt_destroy(rt);
	for (int i = 0; i < fibers; i++)
		free(r[i].buf);
	free(r);
	free(t);
	return ns;
}

/* ------------------------------------------------------------ per call */

/* The bar, measured as directly as the machine allows: one fiber
 * alternates weft_pread and pread of the cached file, call by call, each
 * timed on its own, so both see the same moments of a shared machine;
 * medians of each. */
typedef struct alternate {
	long calls;
	double *weft, *plain;
} alternate;

static void alternate_task(void *arg)
{
	alternate *a = arg;
	char *buf = aligned_alloc(BLOCK, BLOCK);
	uint64_t s = 99;
	for (long i = 0; i < a->calls; i++) {
		double t0 = bench_now_ns();
		if (weft_pread(fd_cached, buf, BLOCK, random_block(&s), INT64_MAX) != BLOCK)
			die("weft_pread");
		double t1 = bench_now_ns();
		if (pread(fd_cached, buf, BLOCK, random_block(&s)) != BLOCK)
			die("pread");
		double t2 = bench_now_ns();
		a->weft[i] = t1 - t0;
		a->plain[i] = t2 - t1;
	}
	free(buf);
}

static void per_call(const char *io, long calls)
{
	setenv("WEFT_IO", io, 1);
	weft_config cfg;
	weft_config_init(&cfg);
	cfg.model = WEFT_MODEL_FIBERS;
	weft_rt *rt;
	if (weft_rt_create(&rt, &cfg) != 0)
		exit(1);
	unsetenv("WEFT_IO");
	alternate a = {calls, calloc((size_t)calls, sizeof(double)),
	               calloc((size_t)calls, sizeof(double))};
	weft_task t;
	weft_task_init(&t, alternate_task, &a);
	if (weft_post(rt, &t) != 0 || weft_wait_all(rt) != 0)
		exit(1);
	weft_rt_destroy(rt);
	double w = bench_median(a.weft, (int)calls), p = bench_median(a.plain, (int)calls);
	printf("cached, per call, alternating in one fiber (WEFT_IO=%s): weft_pread %.0f ns, "
	       "pread %.0f ns: %.2fx\n",
	       io, w, p, w / p);
	free(a.weft);
	free(a.plain);
}

/* Whether a fiber runtime's files go to io_uring here (its statistics). */
static bool uring_in_use(void)
{
	weft_config cfg;
	weft_config_init(&cfg);
	cfg.model = WEFT_MODEL_FIBERS;
	weft_rt *rt;
	if (weft_rt_create(&rt, &cfg) != 0)
		return false;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	weft_stats_print(rt, f);
	fclose(f);
	weft_rt_destroy(rt);
	bool yes = text && strstr(text, "files on io_uring");
	free(text);
	return yes;
}

/* ------------------------------------------------------------ main */

enum { ROW_PREAD, ROW_POOL, ROW_URING, ROW_EPOLL, ROW_MN, NROWS };
static const char *const row_names[NROWS] = {"pread, calling thread", "4-thread pool offload",
                                             "weft fibers w1 io_uring",
                                             "weft fibers w1 WEFT_IO=epoll", "weft mn w2 io_uring"};

static void run_file(const char *title, int fd, long reads)
{
	double *v = calloc((size_t)NROWS * NFLIGHT * (size_t)reps, sizeof(double));
#define AT(row, f, r) v[((size_t)(row)*NFLIGHT + (size_t)(f)) * (size_t)reps + (size_t)(r)]
	for (int r = 0; r < reps; r++) {
		AT(ROW_PREAD, 0, r) = plain(fd, reads);
		for (int f = 0; f < NFLIGHT; f++) {
			AT(ROW_POOL, f, r) = offload(fd, reads, inflight[f]);
			AT(ROW_URING, f, r) =
			        on_weft(WEFT_MODEL_FIBERS, 1, "uring", fd, reads, inflight[f]);
			AT(ROW_EPOLL, f, r) =
			        on_weft(WEFT_MODEL_FIBERS, 1, "epoll", fd, reads, inflight[f]);
			AT(ROW_MN, f, r) =
			        on_weft(WEFT_MODEL_MN, 2, "uring", fd, reads, inflight[f]);
		}
	}
	double base = bench_median(&AT(ROW_PREAD, 0, 0), reps);
	printf("\n%s: %ld random 4 KiB reads of a %zu MiB file, ns per read (median of %d)\n",
	       title, reads, file_bytes >> 20, reps);
	printf("%-30s %10s %10s %10s %8s\n", "", "1", "32", "128", "x pread");
	printf("%-30s %10.0f %10s %10s %8.2f\n", row_names[ROW_PREAD], base, "", "", 1.0);
	for (int row = ROW_POOL; row < NROWS; row++) {
		double m[NFLIGHT];
		for (int f = 0; f < NFLIGHT; f++)
			m[f] = bench_median(&AT(row, f, 0), reps);
		printf("%-30s %10.0f %10.0f %10.0f %8.2f\n", row_names[row], m[0], m[1], m[2],
		       m[0] / base);
	}
#undef AT
	free(v);
}

int main(int argc, char **argv)
{
	cli_check_stdout_at_exit("file_read");
	static const struct option opts[] = {{"reads", required_argument, NULL, 'n'},
	                                     {"cold-reads", required_argument, NULL, 'c'},
	                                     {"file-mb", required_argument, NULL, 'm'},
	                                     {"dir", required_argument, NULL, 'd'},
	                                     {"reps", required_argument, NULL, 'r'},
	                                     {"help", no_argument, NULL, 'h'},
	                                     {"version", no_argument, NULL, BENCH_OPT_VERSION},
	                                     {NULL, 0, NULL, 0}};
	static const char usage[] =
	        "usage: file_read [--reads N] [--cold-reads N] [--file-mb M] [--dir D] [--reps R]\n"
	        "       file_read --help | --version\n"
	        "4 KiB random reads of a cached and of a cold (O_DIRECT) file: weft_pread from\n"
	        "1, 32 and 128 fibers (io_uring and WEFT_IO=epoll) against plain pread on the\n"
	        "calling thread and a 4-thread pool offload, ns per read, medians of R runs.\n"
	        "Defaults: 100000 cached and 4000 cold reads, a 64 MiB file in the current\n"
	        "directory, 3 repetitions.\n";
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":n:c:m:d:r:h", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			cached_reads = atol(optarg);
			break;
		case 'c':
			cold_reads = atol(optarg);
			break;
		case 'm':
			file_bytes = (size_t)atol(optarg) << 20;
			break;
		case 'd':
			dir = optarg;
			break;
		case 'r':
			reps = atoi(optarg);
			break;
		default:
			return bench_help_version_or_error("file_read", c, argv, opts, usage);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "file_read: unexpected argument '%s'\n%s", argv[optind], usage);
		return 2;
	}
	if (cached_reads < 128 || cold_reads < 128 || file_bytes < (1u << 20) || reps < 1) {
		fprintf(stderr,
		        "file_read: --reads and --cold-reads at least 128, --file-mb and "
		        "--reps at least 1\n%s",
		        usage);
		return 2;
	}
	if (!uring_in_use())
		printf("note: io_uring is refused to this process: the io_uring rows run on the "
		       "blocking pool\n");
	make_file();
	run_file("cached", fd_cached, cached_reads);
	printf("\n");
	per_call("uring", cached_reads);
	per_call("epoll", cached_reads);
	run_file(direct ? "cold (O_DIRECT)" : "cold (posix_fadvise DONTNEED, not O_DIRECT)",
	         fd_cold, cold_reads);
	close(fd_cached);
	close(fd_cold);
	return 0;
}
