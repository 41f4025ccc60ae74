/* The main of the applications' cmocka unit tests (test_<name>, built
 * beside the programs by weft_add_cmocka_test):
 *
 *   test_<name> [CASE|all]   one case, or every case (the default)
 *
 * with --help (listing the cases) and --version, as every program of the
 * project answers them. Include it in the one file that has the cases. */
#ifndef WEFT_APPS_COMMON_UNIT_MAIN_H
#define WEFT_APPS_COMMON_UNIT_MAIN_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cli.h"

static inline int unit_main(int argc, char **argv, const char *group,
                            const struct CMUnitTest *cases, size_t n)
{
	const char *slash = strrchr(argv[0], '/');
	const char *prog = slash ? slash + 1 : argv[0];
	const char *want = argc > 1 ? argv[1] : "all";
	cli_check_stdout_at_exit(prog);
	if (argc > 2) {
		fprintf(stderr, "usage: %s [CASE|all]\n", prog);
		return 2;
	}
	if (!strcmp(want, "--version"))
		return cli_print_version_of(prog, WEFT_VERSION);
	if (!strcmp(want, "--help")) {
		printf("usage: %s [CASE|all]\nRuns one cmocka case of %s, or all of "
		       "them.\nCases:\n",
		       prog, group);
		for (size_t i = 0; i < n; i++)
			printf("  %s\n", cases[i].name);
		return 0;
	}
	if (!strcmp(want, "all"))
		return _cmocka_run_group_tests(group, cases, n, NULL, NULL);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(cases[i].name, want))
			return _cmocka_run_group_tests(group, &cases[i], 1, NULL, NULL);
	fprintf(stderr, "%s: no case '%s' (--help lists them)\n", prog, want);
	return 2;
}

#endif
