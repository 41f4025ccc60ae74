/* The seed's sudoku validator (CMPE 180C project/sudoku) in its authors'
 * style, rewritten here from its documented behaviour (seed 000 in the
 * list in docs/seeds/README.md): one hard-coded
 * grid, indexed [col][row]; 11 tasks (9 boxes, all rows, all columns)
 * posted held with priority 1 and run by one sched_execute; the grid, then "Valid sudoku
 * map." or "Invalid sudoku map.". As in the seed, what sched_init returns
 * is not looked at. Built unmodified by tests/compat/dropin two ways
 * (docs/seeds/compat.md): with the seed's own sched.h (-I ../sched) and
 * -lweft-sched, and with weft's header (-I<weft>/include/weft/compat) and
 * -lweft.
 *
 *   sudoku <threads> */
#include <sched.h>
#include <stdio.h>

#define TOTAL_TASKS 11
#define QUEUE_DEPTH 11

typedef struct map {
	int (*grid)[9];
	int col, row;
	bool valid;
} map_t;

int valid_sudoku[9][9] = {
        {6, 5, 8, 1, 9, 7, 3, 4, 2}, {2, 1, 3, 4, 5, 6, 7, 9, 8}, {4, 9, 7, 3, 8, 2, 1, 6, 5},
        {5, 7, 6, 8, 2, 3, 9, 1, 4}, {3, 2, 1, 6, 4, 9, 5, 8, 7}, {9, 8, 4, 5, 7, 1, 6, 2, 3},
        {1, 6, 2, 7, 3, 4, 8, 5, 9}, {8, 3, 9, 2, 6, 5, 4, 7, 1}, {7, 4, 5, 9, 1, 8, 2, 3, 6},
};

static bool check_nine(int *cells[9])
{
	int count[10] = {0};
	for (int i = 0; i < 9; i++) {
		int v = *cells[i];
		if (v < 1 || v > 9 || count[v]++)
			return false;
	}
	return true;
}

void validate_box_func(void *arg, int thread_num)
{
	map_t *m = arg;
	int *cells[9], n = 0;
	for (int c = m->col; c < m->col + 3; c++)
		for (int r = m->row; r < m->row + 3; r++)
			cells[n++] = &m->grid[c][r];
	m->valid = check_nine(cells);
}

void validate_rows_func(void *arg, int thread_num)
{
	map_t *m = arg;
	m->valid = true;
	for (int r = 0; r < 9; r++) {
		int *cells[9];
		for (int c = 0; c < 9; c++)
			cells[c] = &m->grid[c][r];
		if (!check_nine(cells))
			m->valid = false;
	}
}

void validate_cols_func(void *arg, int thread_num)
{
	map_t *m = arg;
	m->valid = true;
	for (int c = 0; c < 9; c++) {
		int *cells[9];
		for (int r = 0; r < 9; r++)
			cells[r] = &m->grid[c][r];
		if (!check_nine(cells))
			m->valid = false;
	}
}

bool validate_sudoku_map(int (*grid)[9], int threads)
{
	sched_t sched;
	task_t tasks[TOTAL_TASKS];
	map_t maps[TOTAL_TASKS];
	int i = 0;

	sched_init(&sched, threads, QUEUE_DEPTH);

	for (int col = 0; col < 9; col += 3) {
		for (int row = 0; row < 9; row += 3, i++) {
			maps[i] = (map_t){grid, col, row, false};
			task_init(&tasks[i], 1, validate_box_func, &maps[i]);
		}
	}
	for (; i < TOTAL_TASKS; i++) {
		maps[i] = (map_t){grid, 0, 0, false};
		task_init(&tasks[i], 1, i % 2 == 1 ? validate_rows_func : validate_cols_func,
		          &maps[i]);
	}
	for (i = 0; i < TOTAL_TASKS; i++)
		sched_post(&sched, &tasks[i], false);
	sched_execute(&sched);
	sched_fini(&sched);

	for (i = 0; i < TOTAL_TASKS; i++)
		if (!maps[i].valid)
			return false;
	return true;
}

int main(int argc, char **argv)
{
	int grid[9][9];

	if (argc < 2) {
		printf("Number of threads must be specified.\n");
		return 1;
	}
	memcpy(grid, valid_sudoku, sizeof(grid));
	for (int r = 0; r < 9; r++) {
		for (int c = 0; c < 9; c++)
			printf("%d  ", grid[c][r]);
		printf("\n");
	}
	if (validate_sudoku_map(grid, atoi(argv[1])))
		printf("Valid sudoku map.\n");
	else
		printf("Invalid sudoku map.\n");
	return 0;
}
