/* Uses the installed weft-mpi through its public headers only: a rank that
 * waits for its own message from a fiber (run alone, as an MPI singleton). */
#include <stdio.h>
#include <weft/mpi.h>
#include <weft/weft.h>

typedef struct job {
	int sent, got, rc;
} job;

static void echo(void *arg)
{
	job *j = arg;
	MPI_Request req[2];
	MPI_Irecv(&j->got, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, &req[0]);
	MPI_Isend(&j->sent, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, &req[1]);
	j->rc = weft_mpi_waitall(2, req, MPI_STATUSES_IGNORE);
}

int main(int argc, char **argv)
{
	weft_config cfg;
	weft_config_init(&cfg);
	cfg.model = WEFT_MODEL_FIBERS;
	cfg.workers = 1;
	weft_rt *rt;
	if (weft_rt_create(&rt, &cfg) != 0)
		return 1;
	int provided = 0, differ = -1;
	if (weft_mpi_init(&argc, &argv, rt, &provided) != 0)
		return 1;
	job j = {.sent = 42};
	weft_task t;
	weft_task_init(&t, echo, &j);
	weft_post(rt, &t);
	weft_wait(&t);
	int rc = weft_mpi_check(rt, MPI_COMM_WORLD, &differ);
	weft_rt_destroy(rt);
	weft_mpi_finalize();
	if (j.rc != 0 || j.got != 42 || rc != 0 || differ != 0) {
		fprintf(stderr, "consumer_mpi: waitall %d, got %d, check %d, differ %d\n", j.rc,
		        j.got, rc, differ);
		return 1;
	}
	printf("consumer_mpi: weft-mpi echoed %d, MPI level %d\n", j.got, provided);
	return 0;
}
