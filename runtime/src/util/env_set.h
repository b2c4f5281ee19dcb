/* The environment variables hetcl sets itself (for the OpenCL ICD loader), recorded so that
 * reports can tell them from what the user set (hetcl_env_set_by_hetcl, <hetcl/device.h>).
 * Internal to the runtime. */
#ifndef HETCL_ENV_SET_H
#define HETCL_ENV_SET_H

/* Sets name=value in this process's environment unless it is set already (the user's choice
 * wins), and records it as set by hetcl when it was not. Thread-safe. */
void hetcl__env_set_default(const char *name, const char *value);

/* Sets name=value whatever was set before, and records it as set by hetcl, over the user's
 * value (or its absence). Undone by hetcl__env_restore; overrides nest. Thread-safe. */
void hetcl__env_override(const char *name, const char *value);

/* Undoes the latest hetcl__env_override of name: sets it back to previous (unsets it when
 * previous is NULL) and drops that record. Thread-safe. */
void hetcl__env_restore(const char *name, const char *previous);

#endif /* HETCL_ENV_SET_H */
