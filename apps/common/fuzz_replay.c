/* The main of every app's fuzz replay test: the libFuzzer target
 * (apps/<app>/fuzz/fuzz_<name>.c) built with the project's compiler and
 * this file instead of libFuzzer, so the targets stay buildable and the
 * checked-in corpora run in ctest under every sanitizer.
 *
 *   <app>_fuzz_replay FILE|DIR...     (and --help, --version)
 *
 * feeds every file (every regular file of a directory) to
 * LLVMFuzzerTestOneInput once and prints "replayed N inputs, 0 errors"; a
 * crash or sanitizer report fails the test. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return -1;
	}
	size_t cap = 1 << 16, n = 0;
	uint8_t *buf = malloc(cap);
	while (buf) {
		n += fread(buf + n, 1, cap - n, f);
		if (n < cap)
			break;
		uint8_t *nb = realloc(buf, cap * 2);
		if (!nb)
			free(buf);
		buf = nb;
		cap *= 2;
	}
	fclose(f);
	if (!buf)
		return -1;
	/* An exact-size copy, so reading past the end is caught under ASan. */
	uint8_t *exact = malloc(n ? n : 1);
	if (!exact) {
		free(buf);
		return -1;
	}
	memcpy(exact, buf, n);
	free(buf);
	LLVMFuzzerTestOneInput(exact, n);
	free(exact);
	return 0;
}

int main(int argc, char **argv)
{
	const char *slash = strrchr(argv[0], '/');
	int first =
	        cli_help_version_only(argc, argv, slash ? slash + 1 : argv[0], "FILE|DIR...",
	                              "Feeds every file (every regular file of each DIR) to the "
	                              "fuzz target once.\n");
	int files = 0;
	for (int i = first; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) != 0) {
			perror(argv[i]);
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (run_file(argv[i]) != 0)
				return 1;
			files++;
			continue;
		}
		DIR *d = opendir(argv[i]);
		if (!d) {
			perror(argv[i]);
			return 1;
		}
		struct dirent *de;
		while ((de = readdir(d)) != NULL) {
			char path[4096];
			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof path, "%s/%s", argv[i], de->d_name);
			if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
				continue;
			if (run_file(path) != 0) {
				closedir(d);
				return 1;
			}
			files++;
		}
		closedir(d);
	}
	printf("replayed %d input%s, 0 errors\n", files, files == 1 ? "" : "s");
	return files > 0 ? 0 : 1;
}
