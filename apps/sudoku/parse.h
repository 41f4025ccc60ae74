/* The sudoku file parser and grid checker of weft-sudoku, kept apart from
 * the program so the fuzz target (fuzz/fuzz_sudoku.c) and the unit tests
 * link exactly the code the program runs.
 *
 * A file holds grids in one of two formats, chosen by its first grid line:
 *
 *   lines    one grid per line: 81 cells, row by row;
 *   blocks   one grid per 9 lines of 9 cells (the seed's printout, e.g.
 *            "6  2  4  5  3  9  1  8  7  ").
 *
 * A cell is a digit 1-9, or 0 or '.' for an empty cell (which makes its
 * row, column and box fail). Spaces, tabs and '\r' between cells are
 * ignored. Blank lines, and lines whose first non-blank character is '#',
 * are skipped (in blocks, they may separate grids). Anything else is an
 * error, reported with its line and column.
 *
 * Parallel parsing: the caller cuts the buffer into chunks at line starts.
 * Pass 1 (sudoku_chunk_count) counts each chunk's lines and grid lines; a
 * prefix sum over the chunks gives each chunk its first line number and,
 * in blocks, how many grid lines at its start finish the previous chunk's
 * last grid. Pass 2 (sudoku_chunk_parse) parses and checks the grids that
 * start in the chunk, reading past its end to finish the last block. The
 * chunks share nothing: each writes only its own sudoku_chunk. */
#ifndef WEFT_APPS_SUDOKU_PARSE_H
#define WEFT_APPS_SUDOKU_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* The OR of (1 << value) over a unit that holds 1..9 exactly once. */
#define SUDOKU_UNIT_FULL 0x3FEu

typedef enum sudoku_format {
	SUDOKU_FORMAT_NONE = 0, /* no grid found */
	SUDOKU_FORMAT_LINES,    /* 81 cells per line */
	SUDOKU_FORMAT_BLOCKS,   /* 9 lines of 9 cells */
} sudoku_format;

/* Which units of a grid fail: bit i (0..8) set = row, column or box i+1
 * fails. Boxes are numbered row-major (box 1 top left, box 9 bottom right). */
typedef struct sudoku_fails {
	uint16_t rows, cols, boxes;
} sudoku_fails;

/* One invalid grid: its number (0-based, within the chunk until the caller
 * adds the chunk's base) and the line it starts on (0-based, likewise). */
typedef struct sudoku_invalid {
	uint64_t grid;
	uint64_t line;
	sudoku_fails fails;
} sudoku_invalid;

typedef struct sudoku_chunk {
	/* in: set by the caller */
	const char *buf;   /* the whole input */
	size_t len;        /* its length (no terminator needed) */
	size_t begin, end; /* this chunk: [begin, end), begin at a line start */
	sudoku_format fmt; /* from sudoku_detect */
	unsigned skip;     /* blocks: grid lines at the start that belong to the
	                       previous chunk's last grid (pass 2 input) */
	int keep_invalid;  /* non-zero: list invalid grids, else only count */
	uint8_t *first;    /* if not NULL: receives the cells of the first grid */
	/* out of pass 1 */
	uint64_t lines;     /* newlines in [begin, end) */
	uint64_t gridlines; /* lines in [begin, end) that are not blank or comments */
	/* out of pass 2 */
	uint64_t grids;          /* grids that start in the chunk */
	uint64_t invalid_count;  /* of which invalid */
	sudoku_invalid *invalid; /* the invalid ones (keep_invalid), malloc'd */
	size_t invalid_cap;
	int error;         /* non-zero: parsing stopped at an error */
	uint64_t err_line; /* its line, 0-based from begin */
	unsigned err_col;  /* its column, 1-based (0: whole line) */
	char err_msg[96];
} sudoku_chunk;

/* sudoku_check returns the failing units of a grid (cells row-major, values
 * 0..9, 0 empty); all zero when the grid is valid. */
sudoku_fails sudoku_check(const uint8_t cells[81]);

/* sudoku_unit_mask returns the OR of (1 << v) over the nine cells of unit
 * `unit` (0..8) of kind 'r' (row), 'c' (column) or 'b' (box):
 * SUDOKU_UNIT_FULL when the unit is valid. */
unsigned sudoku_unit_mask(const uint8_t cells[81], char kind, int unit);

/* sudoku_detect finds the format from the first grid line of buf. Returns
 * the format, or SUDOKU_FORMAT_NONE with *err_line (0-based), *err_col and
 * msg set: no grid line at all (*err_line = lines in buf, msg "no grid
 * found"), a bad character, or a cell count that is neither 81 nor 9. */
sudoku_format sudoku_detect(const char *buf, size_t len, uint64_t *err_line, unsigned *err_col,
                            char *msg, size_t msg_size);

/* sudoku_chunk_count is pass 1: sets lines and gridlines. */
void sudoku_chunk_count(sudoku_chunk *c);

/* sudoku_chunk_parse is pass 2: parses and checks the grids that start in
 * the chunk (after skipping `skip` grid lines), setting grids,
 * invalid_count, invalid and error. Allocates only the invalid list; on
 * allocation failure it sets error ("out of memory"). */
void sudoku_chunk_parse(sudoku_chunk *c);

/* sudoku_chunk_free releases what pass 2 allocated. */
void sudoku_chunk_free(sudoku_chunk *c);

/* sudoku_split cuts [0, len) of buf into at most n chunks of about equal size
 * at line starts, writing the n+1 boundaries to bounds[] (bounds[0] = 0,
 * bounds[n] = len; chunks may be empty). */
void sudoku_split(const char *buf, size_t len, size_t n, size_t *bounds);

/* sudoku_format_fails writes "rows 1, 5; columns 2; boxes 4" (only the
 * failing kinds) into out. */
void sudoku_format_fails(sudoku_fails f, char *out, size_t size);

#endif
