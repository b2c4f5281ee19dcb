/* Names and messages of the status codes, from the one table in status.h. */
#include <hetcl/status.h>

const char *hetcl_status_name(hetcl_status s)
{
    switch (s) {
#define X(name, value, msg) \
    case HETCL_##name:      \
        return "HETCL_" #name;
        HETCL_STATUS_MAP(X)
#undef X
    }
    return "HETCL_UNKNOWN_STATUS";
}

const char *hetcl_status_str(hetcl_status s)
{
    switch (s) {
#define X(name, value, msg) \
    case HETCL_##name:      \
        return msg;
        HETCL_STATUS_MAP(X)
#undef X
    }
    return "unknown status";
}
