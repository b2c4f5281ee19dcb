/* The test harness: see harness.h. */
#include "harness.h"

#include <cjson/cJSON.h>

#include <hetcl/hetcl.h>

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

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

int hetcl_test_sh(const char *dir, const char *cmdline)
{
    size_t len = strlen(cmdline) + 2 * strlen(dir) + 32;
    char *cmd = malloc(len);
    if (!cmd)
        return -1;
    snprintf(cmd, len, "%s >'%s/out' 2>'%s/err'", cmdline, dir, dir);
    int st = system(cmd);
    free(cmd);
    if (st == -1 || !WIFEXITED(st))
        return -1;
    return WEXITSTATUS(st);
}

void hetcl_test_read(const char *dir, const char *name, char *buf, size_t cap)
{
    if (!buf || cap == 0)
        return;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, cap - 1, f) : 0;
    buf[n] = '\0';
    if (f)
        fclose(f);
}

bool hetcl_test_two_pus(void)
{
    hetcl_context *ctx = NULL;
    hetcl_topology *topo = NULL;
    int a, b;
    bool two = hetcl_context_create(NULL, &ctx) == HETCL_OK &&
               hetcl_topology_create(ctx, NULL, &topo) == HETCL_OK &&
               hetcl_core_pair_default(topo, &a, &b);
    hetcl_topology_destroy(topo);
    hetcl_context_destroy(ctx);
    return two;
}

static pthread_mutex_t warnings_lock = PTHREAD_MUTEX_INITIALIZER;

void hetcl_test_warning(void *user, const char *message)
{
    struct hetcl_test_warnings *w = user;
    pthread_mutex_lock(&warnings_lock);
    size_t used = strlen(w->text);
    snprintf(w->text + used, sizeof w->text - used, "%s\n", message);
    w->n++;
    pthread_mutex_unlock(&warnings_lock);
    printf("warning: %s\n", message);
}

static char deadline_msg[512]; /* written when the deadline is set: the handler only writes */

static void deadline_passed(int sig)
{
    (void) sig;
    ssize_t ignored = write(STDERR_FILENO, deadline_msg, strlen(deadline_msg));
    (void) ignored;
    _exit(1);
}

void hetcl_test_deadline(unsigned seconds, const char *what)
{
    snprintf(deadline_msg, sizeof deadline_msg, "%s: still running after %u s (hung)\n",
             what ? what : "test", seconds);
    if (seconds) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = deadline_passed;
        sigaction(SIGALRM, &sa, NULL);
    }
    alarm(seconds);
}

struct cJSON *hetcl_test_load_json(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n - 1, f);
        if (n < cap - 1)
            break;
        char *grown = realloc(buf, cap * 2);
        if (!grown) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = grown;
        cap *= 2;
    }
    fclose(f);
    if (!buf)
        return NULL;
    buf[n] = '\0';
    cJSON *doc = cJSON_Parse(buf);
    free(buf);
    return doc;
}
