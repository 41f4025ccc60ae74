/* weft-probe: TLB reach (seed 002, OSTEP's tlb.c): the cost of one access
 * when touching one int in each of N pages, for N = 1, 2, 4, ... The cost
 * rises in steps where the pages stop fitting in a level of the TLB; the
 * seed saw them at 8 and 4096 pages.
 *
 * Two access patterns: the seed's (the same offset in every page: with
 * 4 KiB pages every access maps to the same set of a virtually indexed L1
 * cache, so the cache, not the TLB, overflows first) and a staggered one
 * (page i touches cache line i % 64, so the lines spread over every L1
 * set). Where the two agree the step is the TLB's.
 *
 * Memory is mmap'ed with MADV_NOHUGEPAGE: a transparent huge page would map
 * 512 pages with one TLB entry and hide the steps. Does not randomise the
 * page order: hardware prefetchers do not cross 4 KiB pages, so sequential
 * pages are each a fresh translation. */
#define _GNU_SOURCE
#include "probe.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAGE    4096
#define MAX_LOG 16

/* Seed 002 figure 7, the median of its seven runs per column. The caption
 * says column k is 2^k pages from k = 0, but the steps its text reports (8
 * and 4096 pages) are where the columns jump only when they are counted
 * from k = 1, so the columns are 2, 4, ..., 4096 pages. */
static const double seed_ns[MAX_LOG + 1] = {
        -1,    5.40,  3.91,  15.18, 16.91, 17.75, 21.67, 25.52, 22.75,
        22.82, 26.49, 23.73, 41.56, -1,    -1,    -1,    -1,
};

static double access_ns(volatile int *a, long pages, int stagger, long accesses)
{
	long loops = accesses / pages;
	if (loops < 2)
		loops = 2;
	const long ints = PAGE / sizeof(int);
	/* warm: fill the TLB and caches as far as they go */
	for (long i = 0; i < pages; i++)
		a[i * ints + (stagger ? (i % 64) * 16 : 0)] += 1;
	double t0 = probe_now_ns();
	for (long l = 0; l < loops; l++)
		for (long i = 0; i < pages; i++)
			a[i * ints + (stagger ? (i % 64) * 16 : 0)] += 1;
	return (probe_now_ns() - t0) / ((double)loops * (double)pages);
}

/* One line of a text chart, a bar proportional to v / vmax: to stdout, and
 * to the report when to_md. */
static void text_bar(probe *p, int to_md, long pages, double v, double vmax)
{
	char bar[61];
	int n = vmax > 0 ? (int)(v / vmax * 60 + 0.5) : 0;
	if (n > 60)
		n = 60;
	memset(bar, '#', (size_t)n);
	bar[n] = 0;
	probe_text(p, "  %6ld | %-60s %.2f\n", pages, bar, v);
	if (to_md)
		probe_md(p, "%6ld | %-60s %.2f\n", pages, bar, v);
}

static int gnuplot_png(const char *dat, const char *png, int has_seed)
{
	char cmd[4096];
	snprintf(cmd, sizeof(cmd),
	         "gnuplot 2>/dev/null <<'EOF'\n"
	         "set terminal png size 900,540\n"
	         "set output '%s'\n"
	         "set title 'weft-probe tlb: cost per access vs pages touched'\n"
	         "set logscale x 2\n"
	         "set xlabel 'pages touched (4 KiB each)'\n"
	         "set ylabel 'ns per access (median)'\n"
	         "set key top left\n"
	         "set grid\n"
	         "plot '%s' using 1:2 with linespoints title 'same offset (seed method)', "
	         "'' using 1:3 with linespoints title 'staggered offset'%s\n"
	         "EOF\n",
	         png, dat,
	         has_seed ? ", '' using 1:($4 > 0 ? $4 : 1/0) with linespoints title "
	                    "'seed 002 (VM, -O0)'"
	                  : "");
	if (system("command -v gnuplot >/dev/null 2>&1") != 0)
		return -1;
	int rc = system(cmd);
	return rc == 0 ? 0 : -1;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

void probe_tlb(probe *p)
{
	const int max_log = p->quick ? 10 : 15;
	const long accesses = p->quick ? (1L << 17) : (1L << 21);
	const long max_pages = 1L << max_log;
	size_t bytes = (size_t)max_pages * PAGE;
	void *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		probe_note(p, "tlb: cannot map %zu bytes: %s", bytes, strerror(errno));
		return;
	}
	madvise(mem, bytes, MADV_NOHUGEPAGE);
	memset(mem, 0, bytes); /* fault every page in before timing */
	volatile int *a = mem;

	double med[2][MAX_LOG + 1], lo[2][MAX_LOG + 1], hi[2][MAX_LOG + 1];
	for (int k = 0; k <= max_log; k++) {
		long pages = 1L << k;
		for (int s = 0; s < 2; s++) {
			double v[PROBE_MAX_REPS];
			for (int r = 0; r < p->reps; r++)
				v[r] = access_ns(a, pages, s, accesses);
			med[s][k] = probe_median(v, p->reps, &lo[s][k], &hi[s][k]);
			if (s == 0 &&
			    (k == 0 || k == 3 || k == 6 || k == 9 || k == 12 || k == max_log)) {
				char name[64], seed[64] = "";
				snprintf(name, sizeof(name), "%ld page(s), same offset", pages);
				if (k <= MAX_LOG && seed_ns[k] > 0)
					snprintf(seed, sizeof(seed),
					         "%.2f ns (seed 002, median of 7)", seed_ns[k]);
				probe_row(p, name, "ns", v, p->reps, seed);
			}
		}
	}
	munmap(mem, bytes);

	/* The table, the steps, the plot. */
	probe_md(p, "| pages | same offset, ns (min .. max) | staggered, ns (min .. max) | "
	            "seed 002, ns |\n|---|---|---|---|\n");
	probe_text(p, "\n  %6s  %-26s %-26s %s\n", "pages", "same offset ns [min..max]",
	           "staggered ns [min..max]", "seed 002");
	double vmax = 0;
	for (int k = 0; k <= max_log; k++) {
		char seed[32] = "-";
		if (seed_ns[k] > 0)
			snprintf(seed, sizeof(seed), "%.2f", seed_ns[k]);
		probe_md(p, "| %ld | %.2f (%.2f .. %.2f) | %.2f (%.2f .. %.2f) | %s |\n", 1L << k,
		         med[0][k], lo[0][k], hi[0][k], med[1][k], lo[1][k], hi[1][k], seed);
		probe_text(p, "  %6ld  %6.2f [%6.2f..%6.2f]     %6.2f [%6.2f..%6.2f]     %s\n",
		           1L << k, med[0][k], lo[0][k], hi[0][k], med[1][k], lo[1][k], hi[1][k],
		           seed);
		if (med[0][k] > vmax)
			vmax = med[0][k];
	}
	probe_md(p, "\n");

	/* A step: the cost rises by a quarter or more from one size to the next
	 * and stays up (the next size is not back below the old level). */
	for (int s = 0; s < 2; s++) {
		char steps[512] = "";
		size_t len = 0;
		for (int k = 1; k <= max_log; k++) {
			double before = med[s][k - 1], now = med[s][k];
			int stays = k == max_log || med[s][k + 1] >= before * 1.25;
			if (now >= before * 1.25 && now - before >= 1.0 && stays &&
			    len < sizeof(steps) - 48)
				len += (size_t)snprintf(steps + len, sizeof(steps) - len,
				                        "%s%ld pages (x%.1f)", len ? ", " : "",
				                        1L << k, now / before);
		}
		probe_note(p, "%s: steps (a rise of 25%% and 1 ns or more that stays) at %s.",
		           s ? "staggered offset" : "same offset (seed method)",
		           len ? steps : "no size");
	}

	char *dat = probe_asset_path(p, "tlb.dat");
	char *png = probe_asset_path(p, "tlb.png");
	int have_png = 0;
	if (dat && png && !p->text_plot) {
		FILE *f = fopen(dat, "w");
		if (f) {
			fprintf(f, "# pages same_offset_ns staggered_ns seed002_ns(-1: none)\n");
			for (int k = 0; k <= max_log; k++)
				fprintf(f, "%ld %.4f %.4f %.2f\n", 1L << k, med[0][k], med[1][k],
				        seed_ns[k]);
			if (fclose(f) == 0 && gnuplot_png(dat, png, 1) == 0)
				have_png = 1;
		}
	}
	if (have_png) {
		probe_md(p, "![TLB: ns per access against pages touched](%s)\n\n", base_name(png));
		probe_text(p, "  plot: %s (data: %s)\n", png, dat);
	}
	/* the text chart goes to stdout always, and to the report without a PNG */
	if (!have_png)
		probe_md(p, "Same offset (seed method), ns per access:\n\n```\n");
	probe_text(p, "\n  same offset (seed method), ns per access:\n");
	for (int k = 0; k <= max_log; k++)
		text_bar(p, !have_png, 1L << k, med[0][k], vmax);
	if (!have_png)
		probe_md(p, "```\n\n");
	free(dat);
	free(png);
	probe_note(p, "Reading the steps: while the pages fit the first-level data TLB, an access "
	              "costs a cache hit; past it, each access also looks in the second-level TLB "
	              "(a few cycles), and past that, walks the page tables (tens of cycles, more "
	              "under a hypervisor's nested paging). With the same offset in every page, "
	              "every access also falls into one set of the L1 cache (and a few sets of "
	              "L2), so the cache overflows long before the TLB: an 8-way L1 holds 8 such "
	              "pages. Where the same-offset column rises and the staggered one does not, "
	              "the step is the cache's, not the TLB's; seed 002's step at 8 pages is more "
	              "likely that than a TLB (first-level data TLBs hold 64 or more 4 KiB "
	              "entries). The seed's figures include -O0 loop overhead: compare their "
	              "shape, not their level.");
}
