/* The sudoku file parser and grid checker: see parse.h for the formats and
 * the two-pass chunked parsing. Nothing here reads outside [buf, buf + len)
 * or needs a terminator (fuzz/fuzz_sudoku.c checks both, and that every way
 * of cutting a buffer into chunks gives the same answer as one chunk). */
#include "parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_space(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r';
}

/* The end of the line that starts at p: the '\n' or end. */
static const char *line_end(const char *p, const char *end)
{
	const char *nl = memchr(p, '\n', (size_t)(end - p));
	return nl ? nl : end;
}

/* A blank line: only spaces, or a comment ('#' first non-space). */
static int is_blank(const char *p, const char *eol)
{
	while (p < eol && is_space(*p))
		p++;
	return p == eol || *p == '#';
}

enum { LINE_BAD_CHAR = -1, LINE_TOO_LONG = -2 };

/* Parses the cells of one line [p, eol) into cells[0 .. max-1]. Returns the
 * number of cells (0 for a blank or comment line), LINE_BAD_CHAR with *col
 * (1-based) set, or LINE_TOO_LONG when there are more than max cells. */
static int parse_line(const char *p, const char *eol, uint8_t *cells, int max, unsigned *col)
{
	/* Fast path: exactly max digits and nothing else. */
	if (eol - p == max) {
		int i;
		for (i = 0; i < max; i++) {
			unsigned v = (unsigned)(unsigned char)p[i] - '0';
			if (v > 9)
				break;
			cells[i] = (uint8_t)v;
		}
		if (i == max)
			return max;
	}
	if (is_blank(p, eol))
		return 0;
	int n = 0;
	for (const char *q = p; q < eol; q++) {
		char ch = *q;
		if (is_space(ch))
			continue;
		unsigned v;
		if (ch >= '0' && ch <= '9')
			v = (unsigned)(ch - '0');
		else if (ch == '.')
			v = 0;
		else {
			*col = (unsigned)(q - p) + 1;
			return LINE_BAD_CHAR;
		}
		if (n == max) {
			*col = (unsigned)(q - p) + 1;
			return LINE_TOO_LONG;
		}
		cells[n++] = (uint8_t)v;
	}
	return n;
}

static void describe_char(char ch, char *out, size_t size)
{
	unsigned char u = (unsigned char)ch;
	if (u >= 0x21 && u < 0x7f && u != '\'')
		snprintf(out, size, "'%c'", ch);
	else
		snprintf(out, size, "byte 0x%02x", u);
}

sudoku_fails sudoku_check(const uint8_t cells[81])
{
	/* One bit per cell, then ORs with no dependence from one unit to the
	 * next (the compiler vectorises the column and band loops). */
	uint16_t bit[81];
	for (int i = 0; i < 81; i++)
		bit[i] = (uint16_t)(1u << (cells[i] & 15));
	uint16_t col[9], band[3][9];
	for (int c = 0; c < 9; c++) {
		for (int b = 0; b < 3; b++)
			band[b][c] = bit[27 * b + c] | bit[27 * b + 9 + c] | bit[27 * b + 18 + c];
		col[c] = band[0][c] | band[1][c] | band[2][c];
	}
	sudoku_fails f = {0, 0, 0};
	for (int i = 0; i < 9; i++) {
		const uint16_t *r = bit + 9 * i;
		unsigned row = r[0] | r[1] | r[2] | r[3] | r[4] | r[5] | r[6] | r[7] | r[8];
		const uint16_t *t = band[i / 3] + 3 * (i % 3);
		unsigned box = t[0] | t[1] | t[2];
		f.rows |= (uint16_t)((row != SUDOKU_UNIT_FULL) << i);
		f.cols |= (uint16_t)((col[i] != SUDOKU_UNIT_FULL) << i);
		f.boxes |= (uint16_t)((box != SUDOKU_UNIT_FULL) << i);
	}
	return f;
}

unsigned sudoku_unit_mask(const uint8_t cells[81], char kind, int unit)
{
	unsigned mask = 0;
	for (int i = 0; i < 9; i++) {
		int r, c;
		if (kind == 'r') {
			r = unit;
			c = i;
		} else if (kind == 'c') {
			r = i;
			c = unit;
		} else {
			r = (unit / 3) * 3 + i / 3;
			c = (unit % 3) * 3 + i % 3;
		}
		mask |= 1u << (cells[9 * r + c] & 15);
	}
	return mask;
}

sudoku_format sudoku_detect(const char *buf, size_t len, uint64_t *err_line, unsigned *err_col,
                            char *msg, size_t msg_size)
{
	const char *p = buf, *end = buf + len;
	uint64_t line = 0;
	uint8_t cells[81];
	while (p < end) {
		const char *eol = line_end(p, end);
		unsigned col = 0;
		int n = parse_line(p, eol, cells, 81, &col);
		if (n != 0) {
			*err_line = line;
			*err_col = col;
			if (n == 81)
				return SUDOKU_FORMAT_LINES;
			if (n == 9)
				return SUDOKU_FORMAT_BLOCKS;
			if (n == LINE_BAD_CHAR) {
				char what[16];
				describe_char(p[col - 1], what, sizeof(what));
				snprintf(msg, msg_size, "unexpected %s (want 1-9, 0 or '.')", what);
			} else if (n == LINE_TOO_LONG) {
				snprintf(msg, msg_size, "more than 81 cells on a line");
			} else {
				*err_col = 0;
				snprintf(msg, msg_size,
				         "%d cells: want 81 (a grid per line) or 9 (a grid per 9 "
				         "lines)",
				         n);
			}
			return SUDOKU_FORMAT_NONE;
		}
		line++;
		p = eol < end ? eol + 1 : end;
	}
	/* Count a last line without '\n' only if it holds anything. */
	*err_line = line;
	*err_col = 0;
	snprintf(msg, msg_size, "no grid found");
	return SUDOKU_FORMAT_NONE;
}

void sudoku_chunk_count(sudoku_chunk *c)
{
	const char *p = c->buf + c->begin, *lim = c->buf + c->end;
	uint64_t lines = 0, gridlines = 0;
	while (p < lim) {
		const char *eol = line_end(p, lim);
		gridlines += !is_blank(p, eol);
		if (eol < lim) {
			lines++;
			p = eol + 1;
		} else {
			p = lim;
		}
	}
	c->lines = lines;
	c->gridlines = gridlines;
}

static void set_error(sudoku_chunk *c, uint64_t line, unsigned col, const char *msg)
{
	c->error = 1;
	c->err_line = line;
	c->err_col = col;
	snprintf(c->err_msg, sizeof(c->err_msg), "%s", msg);
}

static void line_error(sudoku_chunk *c, const char *p, uint64_t line, int n, unsigned col, int want)
{
	char msg[96];
	if (n == LINE_BAD_CHAR) {
		char what[16];
		describe_char(p[col - 1], what, sizeof(what));
		snprintf(msg, sizeof(msg), "unexpected %s (want 1-9, 0 or '.')", what);
	} else if (n == LINE_TOO_LONG) {
		snprintf(msg, sizeof(msg), "more than %d cells on a line", want);
	} else {
		snprintf(msg, sizeof(msg), "%d cells, want %d", n, want);
		col = 0;
	}
	set_error(c, line, col, msg);
}

static int record(sudoku_chunk *c, uint64_t grid, uint64_t line, sudoku_fails f)
{
	c->invalid_count++;
	if (!c->keep_invalid)
		return 0;
	if (c->invalid_count > c->invalid_cap) {
		size_t cap = c->invalid_cap ? 2 * c->invalid_cap : 64;
		sudoku_invalid *v = realloc(c->invalid, cap * sizeof(*v));
		if (!v) {
			set_error(c, line, 0, "out of memory");
			return -1;
		}
		c->invalid = v;
		c->invalid_cap = cap;
	}
	c->invalid[c->invalid_count - 1] = (sudoku_invalid){grid, line, f};
	return 0;
}

void sudoku_chunk_parse(sudoku_chunk *c)
{
	const char *p = c->buf + c->begin, *lim = c->buf + c->end, *end = c->buf + c->len;
	uint64_t line = 0;
	unsigned skip = c->fmt == SUDOKU_FORMAT_BLOCKS ? c->skip : 0;
	uint8_t cells[81];

	c->grids = 0;
	c->invalid_count = 0;
	c->error = 0;

	/* Grid lines that finish the previous chunk's last grid. */
	while (skip > 0 && p < lim) {
		const char *eol = line_end(p, end);
		skip -= !is_blank(p, eol);
		line++;
		p = eol < end ? eol + 1 : end;
	}

	while (p < lim) {
		const char *eol = line_end(p, end);
		unsigned col = 0;
		if (c->fmt == SUDOKU_FORMAT_LINES) {
			int n = parse_line(p, eol, cells, 81, &col);
			if (n == 81) {
				if (c->grids == 0 && c->first)
					memcpy(c->first, cells, 81);
				sudoku_fails f = sudoku_check(cells);
				if ((f.rows | f.cols | f.boxes) &&
				    record(c, c->grids, line, f) != 0)
					return;
				c->grids++;
			} else if (n != 0) {
				line_error(c, p, line, n, col, 81);
				return;
			}
			line++;
			p = eol < end ? eol + 1 : end;
			continue;
		}
		/* Blocks: a grid line here starts a grid of 9 grid lines. */
		if (is_blank(p, eol)) {
			line++;
			p = eol < end ? eol + 1 : end;
			continue;
		}
		uint64_t first = line;
		int rows = 0;
		while (rows < 9) {
			if (p >= end) {
				char msg[96];
				snprintf(msg, sizeof(msg),
				         "incomplete grid: %d of 9 lines (the grid starts on line "
				         "%llu)",
				         rows, (unsigned long long)first + 1);
				/* The line after the last one: the caller adds the base. */
				set_error(c, line, 0, msg);
				return;
			}
			eol = line_end(p, end);
			int n = parse_line(p, eol, cells + 9 * rows, 9, &col);
			if (n == 9) {
				rows++;
			} else if (n != 0) {
				line_error(c, p, line, n, col, 9);
				return;
			}
			line++;
			p = eol < end ? eol + 1 : end;
		}
		if (c->grids == 0 && c->first)
			memcpy(c->first, cells, 81);
		sudoku_fails f = sudoku_check(cells);
		if ((f.rows | f.cols | f.boxes) && record(c, c->grids, first, f) != 0)
			return;
		c->grids++;
	}
}

void sudoku_chunk_free(sudoku_chunk *c)
{
	free(c->invalid);
	c->invalid = NULL;
	c->invalid_cap = 0;
}

void sudoku_split(const char *buf, size_t len, size_t n, size_t *bounds)
{
	bounds[0] = 0;
	for (size_t i = 1; i < n; i++) {
		size_t at = len / n * i + len % n * i / n;
		if (at < bounds[i - 1])
			at = bounds[i - 1];
		/* Move to the start of the next line (or the end). */
		if (at > 0 && at < len && buf[at - 1] != '\n') {
			const char *nl = memchr(buf + at, '\n', len - at);
			at = nl ? (size_t)(nl - buf) + 1 : len;
		}
		bounds[i] = at;
	}
	bounds[n] = len;
}

static size_t list_units(char *out, size_t size, const char *one, const char *many, uint16_t mask)
{
	if (!mask)
		return 0;
	size_t used = 0;
	int w = snprintf(out, size, "%s", (mask & (mask - 1)) ? many : one);
	used += (size_t)(w > 0 ? w : 0);
	const char *sep = " ";
	for (int i = 0; i < 9; i++) {
		if (!(mask & (1u << i)))
			continue;
		w = snprintf(out + (used < size ? used : size), used < size ? size - used : 0,
		             "%s%d", sep, i + 1);
		used += (size_t)(w > 0 ? w : 0);
		sep = ", ";
	}
	return used;
}

void sudoku_format_fails(sudoku_fails f, char *out, size_t size)
{
	char part[3][48];
	const char *one[3] = {"row", "column", "box"};
	const char *many[3] = {"rows", "columns", "boxes"};
	uint16_t masks[3] = {f.rows, f.cols, f.boxes};
	size_t used = 0;
	out[0] = '\0';
	for (int k = 0; k < 3; k++) {
		if (!list_units(part[k], sizeof(part[k]), one[k], many[k], masks[k]))
			continue;
		int w = snprintf(out + used, size - used, "%s%s", used ? "; " : "", part[k]);
		if (w < 0 || (size_t)w >= size - used)
			return;
		used += (size_t)w;
	}
}
