/* The test harness: see harness.h. */
#include "harness.h"

int hetcl_test_failures = 0;

uint64_t hetcl_test_seed(void)
{
    const char *env = getenv("HETCL_TEST_SEED");
    uint64_t seed = env ? strtoull(env, NULL, 0) : 20261122u;
    printf("seed %" PRIu64 " (set HETCL_TEST_SEED to change)\n", seed);
    return seed;
}

int hetcl_test_finish(const char *name)
{
    if (hetcl_test_failures) {
        printf("%s: %d check(s) failed\n", name, hetcl_test_failures);
        return 1;
    }
    printf("%s: all checks passed\n", name);
    return 0;
}

void hetcl_test_skip(const char *why)
{
    printf("SKIP: %s\n", why);
    exit(HETCL_TEST_SKIP);
}
