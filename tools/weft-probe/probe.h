/* weft-probe: the seeds' measurements of the machine and of weft, one
 * command per experiment (see docs/seeds/probe.md).
 *
 * Every experiment is a function that takes a probe context, measures, and
 * hands each figure to probe_row() as the raw samples of its repetitions;
 * probe_row() reduces them to median, min and max and prints them (human
 * table or CSV) next to the seed's figure. Prose that belongs in the
 * Markdown report (explanations, the TLB table, the plot) goes through
 * probe_note() (also printed) and probe_md() (report only).
 *
 * Files: probe_main.c (options, experiment table, output, report),
 * probe_os.c (timer, syscall, ctxsw), probe_tlb.c (tlb), probe_threads.c
 * (create, yield, yieldfreq, switch, memory). */
#ifndef WEFT_PROBE_H
#define WEFT_PROBE_H

#include <sched.h>
#include <stdint.h>
#include <stdio.h>

#define PROBE_NAME     "weft-probe"
#define PROBE_MAX_REPS 1000

typedef struct probe {
	int reps;             /* repetitions of every measurement (--reps) */
	int quick;            /* --quick: small sizes, for tests */
	int csv;              /* --csv: machine-readable rows on stdout */
	int text_plot;        /* --text-plot: never call gnuplot */
	const char *report;   /* report path, or NULL for none */
	cpu_set_t allowed;    /* the CPUs sched_getaffinity allows at start */
	int ncpus;            /* how many of them */
	int cpu[2];           /* the first two of them (cpu[1] = -1 with one) */
	struct section *sect; /* the experiment running now */
} probe;

/* Time and statistics. */
double probe_now_ns(void);
double probe_median(const double *v, int n, double *min, double *max);

/* probe_row records one figure: its samples (one per repetition), the unit
 * they are in, and the seed's figure to compare with ("" when the seed has
 * none). */
void probe_row(probe *p, const char *metric, const char *unit, const double *samples, int n,
               const char *seed);
/* probe_note adds a paragraph to the report and prints it (not with --csv). */
void probe_note(probe *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* probe_md adds raw Markdown to the report only. */
void probe_md(probe *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* probe_text prints to stdout only (not with --csv). */
void probe_text(probe *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* probe_asset_path: a path next to the report for an extra file
 * ("<report without .md>-<suffix>"), or NULL without a report. The
 * returned string is the caller's to free. */
char *probe_asset_path(const probe *p, const char *suffix);

/* Pinning: probe_pin(cpu) pins the calling thread (sched_setaffinity(0));
 * cpu < 0 restores the mask allowed at start. Returns 0 or -1. */
int probe_pin(const probe *p, int cpu);

/* probe_in_child runs fn in a forked child and copies the doubles it writes
 * to out[0..n) back; returns 0, or -1 when the child failed. Used where a
 * measurement must start from a fresh process (RSS). */
int probe_in_child(int (*fn)(void *arg, double *out, int n), void *arg, double *out, int n);

/* The experiments. */
void probe_timer(probe *p);
void probe_syscall(probe *p);
void probe_ctxsw(probe *p);
void probe_tlb(probe *p);
void probe_create(probe *p);
void probe_yield(probe *p);
void probe_yieldfreq(probe *p);
void probe_switch(probe *p);
void probe_memory(probe *p);

#endif
