/* Small cJSON helpers shared by the profiler's report builders. Internal to the profiler. */
#ifndef HETCL_PROFILER_JSON_H
#define HETCL_PROFILER_JSON_H

#include <cjson/cJSON.h>
#include <stdbool.h>

/* Adds a member to obj; returns false (and deletes item) when either is NULL or adding fails,
 * so that a builder can chain additions and check the tree once (cJSON moves item into obj). */
bool hetcl__json_add(cJSON *obj, const char *name, cJSON *item);

/* v as a number, or null when !valid or v is not finite. */
cJSON *hetcl__json_number_or_null(double v, bool valid);

#endif /* HETCL_PROFILER_JSON_H */
