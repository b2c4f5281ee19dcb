/*
 * Tests that reports record only the environment the user set: a variable hetcl sets itself
 * (OCL_ICD_PLATFORM_SORT before it lists OpenCL platforms; OCL_ICD_VENDORS while a device list
 * with broken drivers lives) is not in "environment" but in "environment_set_by_hetcl"
 * (<hetcl/report.h>), from the runtime's record (hetcl_env_set_by_hetcl, <hetcl/device.h>); a
 * value the user set stays the user's. Needs no OpenCL device: the variable is set before the
 * platforms are listed, whether there are any or not.
 */
#include "harness.h"

#include "util/env_set.h"

#include <hetcl/device.h>
#include <hetcl/report.h>

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

static const char *member(const cJSON *o, const char *name)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, name));
}

/* environment and environment_set_by_hetcl's values of name (NULL: absent). */
static void recorded(const char *name, const char **user, const char **hetcl, cJSON **keep)
{
    keep[0] = hetcl_report_environment();
    keep[1] = hetcl_report_environment_set_by_hetcl();
    *user = member(keep[0], name);
    *hetcl = member(keep[1], name);
}

static void release(cJSON **keep)
{
    cJSON_Delete(keep[0]);
    cJSON_Delete(keep[1]);
}

/* hetcl lists platforms with OCL_ICD_PLATFORM_SORT=none: its own setting, not the user's. */
static void check_platform_sort(void)
{
    CHECK_EQ_INT(hetcl_env_set_by_hetcl(NULL, 0), 0);
    hetcl_context *ctx = NULL;
    struct hetcl_device_list *list = NULL;
    CHECK_OK(ctx, hetcl_context_create(NULL, &ctx));
    struct hetcl_enum_options eo = {.timeout_ms = 20000};
    CHECK_OK(ctx, hetcl_device_enumerate(ctx, &eo, &list));
    CHECK_EQ_STR(getenv("OCL_ICD_PLATFORM_SORT"), "none");

    struct hetcl_env_setting set[4];
    CHECK_EQ_INT(hetcl_env_set_by_hetcl(set, 4), 1);
    CHECK_EQ_STR(set[0].name, "OCL_ICD_PLATFORM_SORT");
    CHECK_EQ_STR(set[0].value, "none");
    CHECK(!set[0].replaced_user_value);

    cJSON *keep[2];
    const char *user, *hetcl;
    recorded("OCL_ICD_PLATFORM_SORT", &user, &hetcl, keep);
    CHECK(user == NULL);
    CHECK_EQ_STR(hetcl, "none");
    release(keep);

    /* Every report's provenance carries both. */
    struct hetcl_provenance_options po = {.command = "hetcl", .devices = list};
    cJSON *prov = hetcl_report_provenance(&po);
    const cJSON *host = cJSON_GetObjectItemCaseSensitive(prov, "host");
    CHECK(!member(cJSON_GetObjectItemCaseSensitive(host, "environment"), "OCL_ICD_PLATFORM_SORT"));
    CHECK_EQ_STR(member(cJSON_GetObjectItemCaseSensitive(host, "environment_set_by_hetcl"),
                        "OCL_ICD_PLATFORM_SORT"),
                 "none");
    cJSON_Delete(prov);

    /* A value the application sets afterwards is its own. */
    setenv("OCL_ICD_PLATFORM_SORT", "other", 1);
    CHECK_EQ_INT(hetcl_env_set_by_hetcl(NULL, 0), 0);
    recorded("OCL_ICD_PLATFORM_SORT", &user, &hetcl, keep);
    CHECK_EQ_STR(user, "other");
    CHECK(hetcl == NULL);
    release(keep);
    hetcl_device_list_destroy(list);
    hetcl_context_destroy(ctx);
}

/* An override (OCL_ICD_VENDORS pointed at the working drivers) keeps the user's value in
 * environment; nested overrides undo in order. */
static void check_override(void)
{
    const char *name = "OCL_ICD_VENDORS";
    setenv(name, "/user/vendors", 1);
    hetcl__env_override(name, "/tmp/hetcl-icd-a");
    cJSON *keep[2];
    const char *user, *hetcl;
    recorded(name, &user, &hetcl, keep);
    CHECK_EQ_STR(user, "/user/vendors");
    CHECK_EQ_STR(hetcl, "/tmp/hetcl-icd-a");
    release(keep);

    hetcl__env_override(name, "/tmp/hetcl-icd-b");
    recorded(name, &user, &hetcl, keep);
    CHECK_EQ_STR(user, "/user/vendors"); /* the user's, not the outer override's */
    CHECK_EQ_STR(hetcl, "/tmp/hetcl-icd-b");
    release(keep);

    hetcl__env_restore(name, "/tmp/hetcl-icd-a");
    recorded(name, &user, &hetcl, keep);
    CHECK_EQ_STR(user, "/user/vendors");
    CHECK_EQ_STR(hetcl, "/tmp/hetcl-icd-a");
    release(keep);

    hetcl__env_restore(name, "/user/vendors");
    recorded(name, &user, &hetcl, keep);
    CHECK_EQ_STR(user, "/user/vendors");
    CHECK(hetcl == NULL);
    release(keep);

    /* Over nothing: absent from environment while hetcl's value holds, unset afterwards. */
    unsetenv(name);
    hetcl__env_override(name, "/tmp/hetcl-icd-c");
    recorded(name, &user, &hetcl, keep);
    CHECK(user == NULL);
    CHECK_EQ_STR(hetcl, "/tmp/hetcl-icd-c");
    release(keep);
    hetcl__env_restore(name, NULL);
    CHECK(getenv(name) == NULL);
}

int main(void)
{
    /* As a user who set neither. */
    unsetenv("OCL_ICD_PLATFORM_SORT");
    unsetenv("OCL_ICD_VENDORS");
    check_platform_sort();
    check_override();
    return hetcl_test_finish("test_report_environment");
}
