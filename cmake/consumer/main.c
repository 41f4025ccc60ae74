/* Uses the installed weft through its public header only. */
#include <stdio.h>
#include <weft/weft.h>

int main(void)
{
	weft_config cfg;
	int rc = weft_config_init(&cfg);
	const char *msg = weft_strerror(0);

	if (rc != 0 || msg == NULL) {
		fprintf(stderr, "consumer: weft_config_init returned %d\n", rc);
		return 1;
	}
	if (weft_config_init(NULL) != WEFT_EINVAL) {
		fprintf(stderr, "consumer: weft_config_init(NULL) did not fail\n");
		return 1;
	}
	printf("consumer: weft %d.%d.%d, weft_strerror(0) = \"%s\"\n", WEFT_VERSION_MAJOR,
	       WEFT_VERSION_MINOR, WEFT_VERSION_PATCH, msg);
	return 0;
}
