/* libFuzzer target for the haunted house's parsers: the input file parser
 * and the log checker, on the same bytes (scripts/fuzz haunted 180). The
 * first byte also picks the checker's capacity, so logs with several
 * visitors inside are reached. Built with gcc as a replay test too
 * (apps/common/fuzz_replay.c runs the checked-in corpus through it). */
// fuzz-sources: apps/haunted/parse.c apps/haunted/check.c
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	haunted_visitors v;
	haunted_error e;
	haunted_check_stats st;

	int rc = haunted_parse(text, size, &v, &e);
	if (rc == HAUNTED_OK) {
		if (v.count == 0 || v.count > size)
			abort();
		for (size_t i = 0; i < v.count; i++)
			if (v.dir[i] != HAUNTED_LEFT && v.dir[i] != HAUNTED_RIGHT)
				abort();
	} else if (rc == HAUNTED_EINPUT) {
		if (e.line == 0 || e.column == 0 || e.column > size + 1 ||
		    !memchr(e.msg, 0, sizeof e.msg))
			abort();
	}

	haunted_check_opts o = {size ? (unsigned long)(data[0] % 4) + 1 : 3, NULL, 0};
	rc = haunted_check(text, size, &o, &st, &e);
	if (rc == HAUNTED_OK && (st.max_inside > o.capacity || st.overtaken != 0))
		abort();
	if (v.dir) {
		o.input = &v;
		haunted_check(text, size, &o, &st, &e);
	}
	haunted_visitors_free(&v);
	return 0;
}
