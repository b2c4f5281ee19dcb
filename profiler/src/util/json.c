/* Small cJSON helpers of the report builders (util/json.h). */
#include "util/json.h"

#include <math.h>

bool hetcl__json_add(cJSON *obj, const char *name, cJSON *item)
{
    if (!obj || !item) {
        cJSON_Delete(item);
        return false;
    }
    if (!cJSON_AddItemToObject(obj, name, item)) {
        cJSON_Delete(item);
        return false;
    }
    return true;
}

cJSON *hetcl__json_number_or_null(double v, bool valid)
{
    return valid && isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}
