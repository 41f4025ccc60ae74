/* gen_records: the record set seed 004's external_cal reads, made
 * deterministic. The seed's genRecord.sh appended 4096 lines of
 * `$RANDOM % 65535` to each of ./record/0 .. ./record/9, so every run gave
 * other records (and running it twice doubled the files). This writes the
 * same shape from a fixed-seed generator, truncating the files first, so
 * every run and every machine gets the same records and the same sums:
 *
 *   gen_records [-o DIR | DIR]     (default ./record; created if missing)
 *
 * The values imitate $RANDOM: the 15 high bits of a 32-bit linear
 * congruential generator (0 .. 32767; `% 65535` keeps them as they are). */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/cli.h"

#define RECORD_NUM   10
#define RECORD_LINES 4096
#define SEED         416u /* the course number */

#define PROG  "gen_records"
#define USAGE "usage: " PROG " [-o DIR | DIR]\n"

int main(int argc, char **argv)
{
	static const struct option longopts[] = {{"output-dir", required_argument, NULL, 'o'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {"version", no_argument, NULL, 'V'},
	                                         {0}};
	const char *dir = NULL;
	int c;
	cli_check_stdout_at_exit(PROG);
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			dir = optarg;
			break;
		case 'h':
			printf(USAGE
			       "\n"
			       "Writes seed 004's record set, the input of external_cal: files 0 "
			       ".. %d\n"
			       "of %d numbers each, the same on every run and machine, into DIR\n"
			       "(created if missing; the files are replaced).\n"
			       "\n"
			       "  -o, --output-dir DIR   where to write (default ./record)\n"
			       "  -h, --help             this text\n"
			       "      --version          the weft version\n",
			       RECORD_NUM - 1, RECORD_LINES);
			return 0;
		case 'V':
			return cli_print_version_of(PROG, WEFT_VERSION);
		default:
			cli_option_error(PROG, c, argv, longopts);
			fputs(USAGE, stderr);
			return 2;
		}
	}
	if (optind < argc && !dir)
		dir = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, PROG ": unexpected argument '%s'\n" USAGE, argv[optind]);
		return 2;
	}
	if (!dir)
		dir = "./record";
	if (!*dir) {
		fprintf(stderr, PROG ": the output directory is an empty name\n" USAGE);
		return 2;
	}
	if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
		fprintf(stderr, "gen_records: cannot create %s: %s\n", dir, strerror(errno));
		return 1;
	}
	uint32_t state = SEED;
	for (int k = 0; k < RECORD_NUM; k++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/%d", dir, k);
		FILE *f = fopen(path, "w");
		if (!f) {
			fprintf(stderr, "gen_records: cannot write %s: %s\n", path,
			        strerror(errno));
			return 1;
		}
		for (int i = 0; i < RECORD_LINES; i++) {
			state = state * 1103515245u + 12345u;
			unsigned value = (state >> 16) & 0x7fffu;
			fprintf(f, "%u\n", value % 65535u);
		}
		if (fclose(f) != 0) {
			fprintf(stderr, "gen_records: cannot write %s: %s\n", path,
			        strerror(errno));
			return 1;
		}
	}
	return 0;
}
