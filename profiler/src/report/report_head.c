/* The head every report shares, and writing a report (<hetcl/report.h>). */
#include "util/json.h"

#include <hetcl/fileio.h>
#include <hetcl/report.h>
#include <hetcl/version.h>
#include <hetcl_internal/base.h>

#include <string.h>
#include <time.h>

cJSON *hetcl_report_create(const char *kind, int schema_version)
{
    cJSON *root = cJSON_CreateObject(), *h = cJSON_CreateObject();
    hetcl__json_add(root, "schema_version", cJSON_CreateNumber(schema_version));
    hetcl__json_add(root, "kind", cJSON_CreateString(kind));
    hetcl__json_add(h, "version", cJSON_CreateString(hetcl_version()));
    hetcl__json_add(h, "commit", cJSON_CreateString(hetcl_build_commit()));
    hetcl__json_add(root, "hetcl", h);
    char when[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    hetcl__json_add(root, "generated_at", cJSON_CreateString(when));
    if (root && cJSON_GetArraySize(root) != 4) { /* out of memory on the way */
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

hetcl_status hetcl_report_write(hetcl_context *ctx, const cJSON *report, const char *path)
{
    if (!report || !path)
        return hetcl__fail(ctx, HETCL_ERR_INVALID_ARG, "hetcl_report_write: NULL argument");
    char *text = cJSON_Print(report);
    if (!text)
        return hetcl__fail(ctx, HETCL_ERR_NO_MEMORY, "%s: out of memory printing the report", path);
    hetcl_status st = hetcl_file_write_atomic(ctx, path, text, strlen(text));
    cJSON_free(text);
    return st;
}
