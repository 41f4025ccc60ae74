/* gen_records: the record set seed 004's external_cal reads, made
 * deterministic. The seed's genRecord.sh appended 4096 lines of
 * `$RANDOM % 65535` to each of ./record/0 .. ./record/9, so every run gave
 * other records (and running it twice doubled the files). This writes the
 * same shape from a fixed-seed generator, truncating the files first, so
 * every run and every machine gets the same records and the same sums:
 *
 *   gen_records [dir]      (default ./record; created if missing)
 *
 * The values imitate $RANDOM: the 15 high bits of a 32-bit linear
 * congruential generator (0 .. 32767; `% 65535` keeps them as they are). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define RECORD_NUM   10
#define RECORD_LINES 4096
#define SEED         416u /* the course number */

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "./record";
	if (argc > 2) {
		fprintf(stderr, "usage: %s [dir]\n", argv[0]);
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
