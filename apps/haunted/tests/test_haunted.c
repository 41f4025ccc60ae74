/* Unit tests of the haunted house's input parser and log checker
 * (apps/haunted/parse.c, check.c): `test_haunted <case>` runs one case,
 * `test_haunted all` every one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../common/unit_main.h"

#include "parse.h"

/* ------------------------------------------------------------ parser */

static void parse_ok(const char *text, const char *want)
{
	haunted_visitors v;
	haunted_error e;
	int rc = haunted_parse(text, strlen(text), &v, &e);
	if (rc != HAUNTED_OK)
		fail_msg("'%s': %lu:%lu: %s", text, e.line, e.column, e.msg);
	assert_int_equal(v.count, strlen(want));
	assert_memory_equal(v.dir, want, v.count);
	haunted_visitors_free(&v);
}

static void parse_bad(const char *text, size_t len, unsigned long line, unsigned long col,
                      const char *msg_part)
{
	haunted_visitors v;
	haunted_error e;
	int rc = haunted_parse(text, len, &v, &e);
	assert_int_equal(rc, HAUNTED_EINPUT);
	assert_null(v.dir);
	assert_int_equal(v.count, 0);
	if (e.line != line || e.column != col || !strstr(e.msg, msg_part))
		fail_msg("got %lu:%lu: %s; want %lu:%lu: ...%s...", e.line, e.column, e.msg, line,
		         col, msg_part);
}

#define BAD(text, line, col, part) parse_bad(text, sizeof(text) - 1, line, col, part)

static void parse_valid(void **state)
{
	(void)state;
	parse_ok("L,R,R,R,R,R,L,L,R", "LRRRRRLLR");
	parse_ok("L", "L");
	parse_ok("R\n", "R");
	parse_ok("L,R\r\n", "LR");
	parse_ok(" L , R\t,L \n\n  \n", "LRL");
	parse_ok("L,R,R,R,R,L,L,R,L,R,L,L,R", "LRRRRLLRLRLLR");
}

static void parse_errors(void **state)
{
	(void)state;
	BAD("", 1, 1, "no visitors");
	BAD("\n", 1, 1, "no visitors");
	BAD("   ", 1, 4, "no visitors");
	BAD("L,R,", 1, 5, "no trailing comma");
	BAD("L,R,\n", 1, 5, "no trailing comma");
	BAD("L,,R", 1, 3, "expected 'L' or 'R' after ',', found ','");
	BAD("L,r", 1, 3, "upper-case");
	BAD("l", 1, 1, "upper-case");
	BAD("LR", 1, 2, "expected ',' between visitors");
	BAD("L R", 1, 3, "expected ',' between visitors");
	BAD("L;R", 1, 2, "expected ',' or end of line after a direction, found ';'");
	BAD("L,X", 1, 3, "found 'X'");
	BAD(",L", 1, 1, "expected 'L' or 'R', found ','");
	BAD("L,R\nL,R\n", 2, 1, "the input is one line");
	BAD("L,R\n\n  x", 3, 3, "unexpected 'x' after the visitor list");
	BAD("L\rR", 1, 2, "byte 0x0d");
	BAD("L,\x01", 1, 3, "byte 0x01");
	parse_bad("L,\0R", 4, 1, 3, "byte 0x00");
	parse_bad("L,R", 2, 1, 3, "end of file (no trailing comma)");
}

static void parse_large(void **state)
{
	(void)state;
	size_t n = 200000;
	char *text = malloc(2 * n);
	assert_non_null(text);
	for (size_t i = 0; i < n; i++) {
		text[2 * i] = i % 3 ? 'L' : 'R';
		text[2 * i + 1] = ',';
	}
	haunted_visitors v;
	haunted_error e;
	assert_int_equal(haunted_parse(text, 2 * n - 1, &v, &e), HAUNTED_OK);
	assert_int_equal(v.count, n);
	assert_int_equal(v.dir[3], 'R');
	assert_int_equal(v.dir[4], 'L');
	haunted_visitors_free(&v);
	free(text);
}

/* ------------------------------------------------------------ checker */

#define REQ(n, d) "Visitor " #n ": Request to cross house (" d ")\n"
#define WAIT(n)   "Visitor " #n ": Waiting\n"
#define IN(n, d, k)                                                         \
	"Visitor " #n ": Cross house request granted (Current crossing: " d \
	", Number of visitors on house: " #k ")\n"
#define OUT(n, d, k)                                                                            \
	"Visitor " #n ": Exit house (Current crossing: " d ", Number of visitors on house: " #k \
	")\n"
#define LR "left to right"
#define RL "right to left"

/* The assignment's sample run (input L,L,R,L). */
static const char sample[] =
        REQ(1, LR) IN(1, LR, 1) REQ(2, LR) IN(2, LR, 2) REQ(3, RL) WAIT(3) OUT(1, LR, 1) REQ(4, LR)
                WAIT(4) OUT(2, LR, 0) IN(3, RL, 1) OUT(3, RL, 0) IN(4, LR, 1) OUT(4, LR, 0);

static int check(const char *log, unsigned long capacity, const char *input,
                 haunted_check_stats *st, haunted_error *e)
{
	haunted_visitors in = {0};
	haunted_check_opts o = {capacity, NULL, 0};
	if (input) {
		haunted_error pe;
		assert_int_equal(haunted_parse(input, strlen(input), &in, &pe), HAUNTED_OK);
		o.input = &in;
	}
	int rc = haunted_check(log, strlen(log), &o, st, e);
	haunted_visitors_free(&in);
	return rc;
}

static void check_ok(const char *log, unsigned long capacity)
{
	haunted_check_stats st;
	haunted_error e;
	if (check(log, capacity, NULL, &st, &e) != HAUNTED_OK)
		fail_msg("%lu:%lu: %s", e.line, e.column, e.msg);
}

static void check_bad(const char *log, unsigned long capacity, const char *input,
                      unsigned long line, const char *msg_part)
{
	haunted_check_stats st;
	haunted_error e;
	assert_int_equal(check(log, capacity, input, &st, &e), HAUNTED_EINPUT);
	if (e.line != line || !strstr(e.msg, msg_part))
		fail_msg("got line %lu: %s; want line %lu: ...%s...", e.line, e.msg, line,
		         msg_part);
}

static void check_sample(void **state)
{
	(void)state;
	haunted_check_stats st;
	haunted_error e;
	assert_int_equal(check(sample, 3, "L,L,R,L", &st, &e), HAUNTED_OK);
	assert_int_equal(st.visitors, 4);
	assert_int_equal(st.waited, 2);
	assert_int_equal(st.max_inside, 2);
	assert_int_equal(st.turns, 2);
	assert_int_equal(st.overtaken, 0);
	/* CRLF logs and a missing final newline are fine. */
	check_ok(REQ(1, RL) IN(1, RL, 1) "Visitor 1: Exit house (Current crossing: right to "
	                                 "left, Number of visitors on house: 0)",
	         1);
	check_ok("Visitor 1: Request to cross house (left to right)\r\n" IN(1, LR, 1) OUT(1, LR, 0),
	         3);
	/* Capacity 1: everyone waits for the one inside. */
	check_ok(REQ(1, LR) IN(1, LR, 1) REQ(2, LR) WAIT(2) OUT(1, LR, 0) IN(2, LR, 1)
	                 OUT(2, LR, 0),
	         1);
}

static void check_input_mismatch(void **state)
{
	(void)state;
	check_bad(sample, 3, "L,L,R,R", 8,
	          "crosses left to right, but the input says right to left");
	check_bad(sample, 3, "L,L,R", 8, "not in the input");
	check_bad(sample, 3, "L,L,R,L,L", 0, "the log has 4 visitors, expected 5");
}

static void check_rules(void **state)
{
	(void)state;
	/* capacity */
	check_bad(REQ(1, LR) IN(1, LR, 1) REQ(2, LR) IN(2, LR, 2), 1, NULL, 4,
	          "capacity 1 exceeded");
	/* both directions inside */
	check_bad(REQ(1, LR) IN(1, LR, 1) REQ(2, RL) IN(2, RL, 2), 3, NULL, 4,
	          "both directions inside");
	/* FIFO: 3 overtakes 2 */
	check_bad(REQ(1, LR) IN(1, LR, 1) REQ(2, RL) WAIT(2) REQ(3, LR) WAIT(3) IN(3, LR, 2), 3,
	          NULL, 7, "granted before visitor 2, who arrived earlier");
	/* exit order */
	check_bad(REQ(1, LR) IN(1, LR, 1) REQ(2, LR) IN(2, LR, 2) OUT(2, LR, 1), 3, NULL, 5,
	          "exits before visitor 1, who entered earlier");
	/* counts */
	check_bad(REQ(1, LR) IN(1, LR, 2), 3, NULL, 2, "says 2 on the house, but 1 are inside");
	check_bad(REQ(1, LR) IN(1, LR, 1) OUT(1, LR, 1), 3, NULL, 3,
	          "1 on the house, but 0 remain");
	/* directions in messages */
	check_bad(REQ(1, LR) IN(1, RL, 1), 3, NULL, 2, "requested left to right but is granted");
	check_bad(REQ(1, LR) IN(1, LR, 1) OUT(1, RL, 0), 3, NULL, 3,
	          "crossed left to right but exits");
	/* once each */
	check_bad(REQ(1, LR) IN(1, LR, 1) IN(1, LR, 2), 3, NULL, 3, "granted a second time");
	check_bad(REQ(1, LR) IN(1, LR, 1) OUT(1, LR, 0) OUT(1, LR, 0), 3, NULL, 4,
	          "exits a second time");
	check_bad(REQ(1, LR) OUT(1, LR, 0), 3, NULL, 2, "without having entered");
	check_bad(IN(1, LR, 1), 3, NULL, 1, "granted before requesting");
	check_bad(REQ(2, LR), 3, NULL, 1, "visitor 1 is next");
	check_bad(REQ(1, LR) REQ(1, LR), 3, NULL, 2, "visitor 2 is next");
	check_bad(WAIT(1), 3, NULL, 1, "waits before requesting");
	check_bad(REQ(1, LR) IN(1, LR, 1) REQ(2, RL) WAIT(2) WAIT(2), 3, NULL, 5,
	          "says Waiting twice");
	/* the end */
	check_bad(REQ(1, LR) IN(1, LR, 1), 3, NULL, 0, "never left");
	check_bad(REQ(1, LR) IN(1, LR, 1) REQ(2, RL) WAIT(2) OUT(1, LR, 0), 3, NULL, 0,
	          "the log ends before visitor 2's grant");
	check_bad("", 3, NULL, 0, "no visitors");
}

static void check_liveness(void **state)
{
	(void)state;
	/* Waiting with room and the same way. */
	check_bad(REQ(1, LR) IN(1, LR, 1) REQ(2, LR) WAIT(2), 3, NULL, 4,
	          "expected visitor 2's grant");
	/* Not waiting though the house is crossed the other way. */
	check_bad(REQ(1, LR) IN(1, LR, 1) REQ(2, RL) OUT(1, LR, 0), 3, NULL, 4,
	          "expected visitor 2's Waiting here (the house is crossed the other way)");
	/* The house empties and the first in line is left outside. */
	check_bad(REQ(1, LR) IN(1, LR, 1) REQ(2, RL) WAIT(2) OUT(1, LR, 0) REQ(3, RL), 3, NULL, 6,
	          "expected visitor 2's grant here (it is first in line");
	/* Someone arriving behind a waiter waits too, even with room its way (the
	 * sample's visitor 4). */
	check_bad(REQ(1, LR) IN(1, LR, 1) REQ(2, RL) WAIT(2) REQ(3, LR) IN(3, LR, 2), 3, NULL, 6,
	          "granted before visitor 2");
}

static void check_garbage(void **state)
{
	(void)state;
	haunted_check_stats st;
	haunted_error e;
	assert_int_equal(
	        check("Visitor 1: Request to cross house (left to rigth)\n", 3, NULL, &st, &e),
	        HAUNTED_EINPUT);
	assert_int_equal(e.line, 1);
	assert_int_equal(e.column, 47);
	assert_non_null(strstr(e.msg, "not one of the four messages"));
	assert_int_equal(check(REQ(1, LR) "visitor 2: Waiting\n", 3, NULL, &st, &e),
	                 HAUNTED_EINPUT);
	assert_int_equal(e.line, 2);
	assert_int_equal(e.column, 1);
	assert_int_equal(check(REQ(1, LR) "Visitor 1: waiting\n", 3, NULL, &st, &e),
	                 HAUNTED_EINPUT);
	assert_int_equal(e.column, 12);
	assert_int_equal(check("Visitor 99999999999: Waiting\n", 3, NULL, &st, &e), HAUNTED_EINPUT);
	assert_int_equal(e.column, 9);
	assert_int_equal(check(REQ(1, LR) "\n", 3, NULL, &st, &e), HAUNTED_EINPUT);
	assert_int_equal(e.line, 2);
	assert_int_equal(check(REQ(1, LR) IN(1, LR, 1) OUT(1, LR, 0) " ", 3, NULL, &st, &e),
	                 HAUNTED_EINPUT);
	assert_int_equal(e.line, 4);
}

/* ------------------------------------------------------------ main */

int main(int argc, char **argv)
{
	static const struct CMUnitTest all[] = {
	        cmocka_unit_test(parse_valid),          cmocka_unit_test(parse_errors),
	        cmocka_unit_test(parse_large),          cmocka_unit_test(check_sample),
	        cmocka_unit_test(check_input_mismatch), cmocka_unit_test(check_rules),
	        cmocka_unit_test(check_liveness),       cmocka_unit_test(check_garbage),
	};
	return unit_main(argc, argv, "haunted", all, sizeof all / sizeof all[0]);
}
