/* Symbol visibility and attribute macros shared by every public header. */
#ifndef HETCL_EXPORT_H
#define HETCL_EXPORT_H

#if defined(HETCL_BUILDING_LIBRARY) && defined(__GNUC__)
#define HETCL_API __attribute__((visibility("default")))
#else
#define HETCL_API
#endif

#if defined(__GNUC__)
#define HETCL_NODISCARD         __attribute__((warn_unused_result))
#define HETCL_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define HETCL_NODISCARD
#define HETCL_PRINTF(fmt, args)
#endif

#endif /* HETCL_EXPORT_H */
