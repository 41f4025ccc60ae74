/* The haunted house's two parsers, kept apart from the program so the fuzz
 * target (fuzz/fuzz_haunted.c) and the unit tests link them alone.
 *
 *   haunted_parse   the seed's input file: one line of comma-separated L and
 *                   R, e.g. "L,R,R,L" (visitor 1 is the first letter)
 *   haunted_check   a log the program printed: the four messages, verified
 *                   against every rule of the house (check.c)
 *
 * Both take a buffer and its length (no NUL needed; NUL bytes are errors),
 * allocate only their own results and report the first problem with its
 * 1-based line and column (bytes). */
#ifndef HAUNTED_PARSE_H
#define HAUNTED_PARSE_H

#include <stddef.h>

/* Directions: a visitor who arrives at the left door crosses left to right. */
#define HAUNTED_LEFT  'L'
#define HAUNTED_RIGHT 'R'

/* The most visitors an input or a log may name. */
#define HAUNTED_MAX_VISITORS 10000000UL

typedef struct haunted_error {
	unsigned long line, column; /* 1-based; 0 when the problem has no place */
	char msg[200];
} haunted_error;

typedef struct haunted_visitors {
	char *dir;    /* dir[i] is HAUNTED_LEFT or HAUNTED_RIGHT for visitor i + 1 */
	size_t count; /* at least 1 after a successful parse */
} haunted_visitors;

/* Return values of haunted_parse and haunted_check. */
#define HAUNTED_OK     0
#define HAUNTED_EINPUT -1 /* the text breaks the format or a rule: see *err */
#define HAUNTED_ENOMEM -2

/* haunted_parse reads the visitor list in text[0 .. len): blanks (space,
 * tab) may surround letters and commas, the line may end with LF or CRLF,
 * and only blank lines may follow it. On success *out owns a new array
 * (free it with haunted_visitors_free); on failure *out is empty and *err
 * says where and why. */
int haunted_parse(const char *text, size_t len, haunted_visitors *out, haunted_error *err);
void haunted_visitors_free(haunted_visitors *v);

/* The direction's words as printed in the messages: "left to right" for
 * HAUNTED_LEFT, "right to left" for HAUNTED_RIGHT. */
const char *haunted_dir_words(char dir);

typedef struct haunted_check_opts {
	unsigned long capacity;        /* most visitors inside at once (>= 1) */
	const haunted_visitors *input; /* the input the run read, or NULL */
	unsigned long expect_visitors; /* how many visitors must appear; 0: any */
} haunted_check_opts;

typedef struct haunted_check_stats {
	unsigned long visitors;   /* visitors who requested, entered and left */
	unsigned long waited;     /* of them, those who printed Waiting */
	unsigned long max_inside; /* the most inside at once */
	unsigned long turns;      /* times the crossing direction changed */
	unsigned long overtaken;  /* grants to a visitor while an earlier one waited (always 0) */
} haunted_check_stats;

/* haunted_check verifies the log in text[0 .. len) (see check.c for the
 * rules). HAUNTED_OK and *stats filled, HAUNTED_EINPUT with *err at the
 * first line that breaks a rule (line 0 for what is missing at the end), or
 * HAUNTED_ENOMEM. */
int haunted_check(const char *text, size_t len, const haunted_check_opts *opts,
                  haunted_check_stats *stats, haunted_error *err);

#endif
