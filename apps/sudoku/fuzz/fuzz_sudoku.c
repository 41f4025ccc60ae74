/* fuzz_sudoku: libFuzzer target for weft-sudoku's file parser (parse.c).
 *
 * Feeds the input through format detection and the two-pass chunked parser
 * as the program does, once as a single chunk and again cut into 2..9
 * chunks at line starts (the cut count taken from the first byte), and
 * aborts when the cuts disagree with the single chunk: number of grids,
 * invalid grids, their numbers and lines, and where the first error is.
 * ASan and UBSan (scripts/fuzz) catch reads outside the buffer.
 *
 * Built by scripts/fuzz with clang -fsanitize=fuzzer, and by CMake with gcc
 * as the replay test app.sudoku.fuzz-replay (apps/common/fuzz_replay.c runs every file of
 * corpus_sudoku/ through it).
 *
 * fuzz-sources lists the parser for scripts/fuzz: */
// fuzz-sources: apps/sudoku/parse.c
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

typedef struct result {
	int error;
	uint64_t err_line;
	unsigned err_col;
	uint64_t grids, invalid;
	uint64_t hash; /* over the invalid grids' numbers, lines and units */
} result_t;

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h;
}

static void run(const char *buf, size_t len, sudoku_format fmt, size_t n, result_t *r)
{
	size_t bounds[10];
	sudoku_chunk chunks[9];
	sudoku_split(buf, len, n, bounds);
	for (size_t i = 1; i <= n; i++)
		if (bounds[i] < bounds[i - 1] ||
		    (bounds[i] > 0 && bounds[i] < len && buf[bounds[i] - 1] != '\n'))
			abort(); /* a cut not at a line start */
	uint64_t gridlines = 0, lines = 0, grids = 0;
	memset(r, 0, sizeof(*r));
	for (size_t i = 0; i < n; i++) {
		chunks[i] = (sudoku_chunk){.buf = buf,
		                           .len = len,
		                           .begin = bounds[i],
		                           .end = bounds[i + 1],
		                           .fmt = fmt,
		                           .keep_invalid = 1};
		sudoku_chunk_count(&chunks[i]);
		chunks[i].skip = (unsigned)((9 - gridlines % 9) % 9);
		gridlines += chunks[i].gridlines;
	}
	for (size_t i = 0; i < n; i++)
		sudoku_chunk_parse(&chunks[i]);
	for (size_t i = 0; i < n; i++) {
		sudoku_chunk *c = &chunks[i];
		if (c->error && !r->error) {
			r->error = 1;
			r->err_line = lines + c->err_line;
			r->err_col = c->err_col;
		}
		if (!r->error) {
			if (c->invalid_count > c->grids)
				abort();
			for (size_t k = 0; k < c->invalid_count; k++) {
				r->hash = mix(r->hash, grids + c->invalid[k].grid);
				r->hash = mix(r->hash, lines + c->invalid[k].line);
				r->hash = mix(r->hash,
				              c->invalid[k].fails.rows |
				                      (uint64_t)c->invalid[k].fails.cols << 16 |
				                      (uint64_t)c->invalid[k].fails.boxes << 32);
			}
			r->grids += c->grids;
			r->invalid += c->invalid_count;
		}
		grids += c->grids;
		lines += c->lines;
		sudoku_chunk_free(c);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	size_t n = 2 + data[0] % 8;
	/* A copy of exactly size bytes, so ASan sees any read past the end. */
	char *buf = malloc(size - 1 ? size - 1 : 1);
	if (!buf)
		return 0;
	memcpy(buf, data + 1, size - 1);
	size_t len = size - 1;

	uint64_t line;
	unsigned col;
	char msg[96];
	sudoku_format fmt = sudoku_detect(buf, len, &line, &col, msg, sizeof(msg));
	if (fmt != SUDOKU_FORMAT_NONE) {
		result_t one, many;
		run(buf, len, fmt, 1, &one);
		run(buf, len, fmt, n, &many);
		/* After an error only where it is counts. */
		if (one.error != many.error || one.err_line != many.err_line ||
		    one.err_col != many.err_col ||
		    (!one.error && (one.grids != many.grids || one.invalid != many.invalid ||
		                    one.hash != many.hash))) {
			fprintf(stderr,
			        "fuzz_sudoku: 1 chunk: error %d line %llu col %u grids %llu "
			        "invalid "
			        "%llu; %zu chunks: error %d line %llu col %u grids %llu invalid "
			        "%llu\n",
			        one.error, (unsigned long long)one.err_line, one.err_col,
			        (unsigned long long)one.grids, (unsigned long long)one.invalid, n,
			        many.error, (unsigned long long)many.err_line, many.err_col,
			        (unsigned long long)many.grids, (unsigned long long)many.invalid);
			abort();
		}
	}
	free(buf);
	return 0;
}
