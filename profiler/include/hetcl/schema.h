/*
 * A small JSON Schema validator (draft 2020-12 style) for the reports hetcl writes, so that tests
 * and `hetcl compare` can check a report against reports/schema/<name>.schema.json without Python.
 *
 *     char err[512];
 *     hetcl_status s = hetcl_schema_validate_files("reports/schema/devices.schema.json",
 *                                                  "out/devices.json", err, sizeof err);
 *     if (s == HETCL_ERR_FORMAT)
 *         fprintf(stderr, "invalid report: %s\n", err);
 *     // -> "$.opencl.devices[0].compute_units: expected integer >= 0, got "two""
 *
 * Supported keywords (the subset our schemas use):
 *   type               a name or an array of names: null boolean object array number string
 *                      integer ("integer" = a finite number with no fractional part, so 1.0 is one)
 *   enum, const        deep equality (numbers by value, object members in any order)
 *   minimum, maximum, exclusiveMinimum, exclusiveMaximum   (numbers; the 2020-12 number form)
 *   minLength, maxLength   counted in Unicode code points, as JSON Schema says
 *   pattern            an ECMA-262 subset, rewritten to POSIX extended regex (regcomp) and
 *                      unanchored like JSON Schema (use ^...$ to match the whole string):
 *                      literals, ., ^ $, [a-z0-9_-] and [^...], * + ? {n} {n,m}, ( | ),
 *                      escapes \. \- \/ \\ ..., \d \w \s \D \W \S (\d \w \s also inside
 *                      [...]), \n \t. Lazy quantifiers, (?...) groups, \b, \u, back-references
 *                      are rejected as schema errors rather than matched differently. ASCII
 *                      only ranges; "." matches any byte, newline included.
 *   properties, required, additionalProperties (true, false or a schema)
 *   items (one schema for every element), minItems, maxItems
 *   allOf, anyOf, oneOf, not
 *   $ref               same-document JSON pointers only: "#", "#/$defs/name", "#/definitions/name",
 *                      or any "#/a/b" path (~0 and ~1 escapes; no %-decoding, no $id/$anchor)
 *   true / false       as whole schemas
 * Ignored: $schema $id title description $comment default examples, and every other keyword,
 * among them format, patternProperties, prefixItems, contains, multipleOf, dependentRequired,
 * if/then/else, unevaluated*: a schema that relies on them is checked less than it says.
 *
 * Errors are one line: the JSON path of the first violation in the document ("$" is the root,
 * then .name or ["odd name"] and [index]), a colon, and what was expected; validation stops
 * there. Object members are checked in document order after `required`; sibling keywords in
 * the order listed above. When no anyOf/oneOf alternative matches, the message quotes the
 * alternative whose violation lies deepest ("closest is #1: $.n: expected integer, got "x"").
 * Numbers are cJSON doubles: integers beyond 2^53 compare approximately.
 *
 * A schema that cannot be applied (a keyword of the wrong type, an unresolvable $ref, a pattern
 * that does not compile, recursion deeper than HETCL_SCHEMA_MAX_DEPTH) is reported as
 * HETCL_ERR_INVALID_ARG with a message starting "schema error", so that a test expecting a
 * document to be rejected cannot pass because its schema is broken. Schema defects are found
 * only where validation reaches them.
 *
 * Thread safety: hetcl_schema_validate keeps no global state; concurrent calls are safe on
 * distinct or shared (read-only) inputs.
 */
#ifndef HETCL_SCHEMA_H
#define HETCL_SCHEMA_H

#include <hetcl/export.h>
#include <hetcl/status.h>

#include <cjson/cJSON.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Nesting cap for subschemas ($ref, allOf, properties, items...): a $ref cycle such as
 * {"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"} stops here instead of
 * overflowing the stack. Each level of the document costs one or more levels (two through a
 * "$ref"), so a recursive schema admits documents about 30 levels deep; report schemas need
 * well under 20 levels. */
#define HETCL_SCHEMA_MAX_DEPTH 64

/* Largest file hetcl_schema_validate_files reads; reports are far smaller. */
#define HETCL_SCHEMA_MAX_FILE_BYTES ((size_t) 64 * 1024 * 1024)

/*
 * Validates doc against schema.
 *
 * schema   the schema (an object or true/false); borrowed, not modified. "$ref"s resolve
 *          against this root.
 * doc      the document; borrowed, not modified.
 * err      where to write one line describing the first violation (or "" on success); may be
 *          NULL when err_cap is 0. When err_cap > 0 it is always NUL-terminated, truncated to
 *          err_cap - 1 bytes if need be (512 bytes fit nearly every message; long paths
 *          and nested anyOf quotes are cut).
 * err_cap  size of err in bytes.
 *
 * Returns HETCL_OK when doc is valid; HETCL_ERR_FORMAT when it is not (err: "<path>: expected
 * ..., got ..."); HETCL_ERR_INVALID_ARG for a NULL schema or doc, or when the schema cannot be
 * applied (err starts with "schema error"); HETCL_ERR_NO_MEMORY when a scratch buffer cannot
 * be allocated.
 */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_schema_validate(const cJSON *schema, const cJSON *doc,
                                                             char *err, size_t err_cap);

/*
 * Reads and parses one JSON file.
 *
 * path     file path; borrowed.
 * out      receives the parsed tree, owned by the caller (free with cJSON_Delete); set to NULL
 *          on failure.
 * err, err_cap   as for hetcl_schema_validate; messages name the path:
 *          "x.json: cannot open: No such file or directory",
 *          "x.json: JSON parse error at byte 17 (line 2, column 5)".
 *
 * Returns HETCL_OK; HETCL_ERR_INVALID_ARG for a NULL path or out; HETCL_ERR_IO when the file
 * cannot be opened or read; HETCL_ERR_FORMAT when it is not one JSON value (trailing bytes
 * other than whitespace included) or is larger than HETCL_SCHEMA_MAX_FILE_BYTES;
 * HETCL_ERR_NO_MEMORY. The error offset is where cJSON stopped (its parse end, the pointer
 * cJSON_GetErrorPtr would return, read without touching that global); cJSON 1.7.15 still writes
 * the global on failure, so concurrent failing parses race inside cJSON, harmlessly for us.
 */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_schema_read_json(const char *path, cJSON **out,
                                                              char *err, size_t err_cap);

/*
 * Parses JSON text held in memory, as hetcl_schema_read_json parses a file's content (the
 * same size limit, the same error messages).
 *
 * name     what messages call the text ("x.json"); borrowed.
 * text     len bytes, which need not be NUL-terminated; borrowed.
 * out      receives the parsed tree, owned by the caller (free with cJSON_Delete); set to NULL
 *          on failure.
 * err, err_cap   as for hetcl_schema_validate.
 *
 * Returns HETCL_OK; HETCL_ERR_INVALID_ARG for a NULL name, out, or text with len > 0;
 * HETCL_ERR_FORMAT when the text is not one JSON value or is larger than
 * HETCL_SCHEMA_MAX_FILE_BYTES; HETCL_ERR_NO_MEMORY. Thread-safe as hetcl_schema_read_json is.
 */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_schema_parse_json(const char *name, const char *text,
                                                               size_t len, cJSON **out, char *err,
                                                               size_t err_cap);

/*
 * Reads both files with hetcl_schema_read_json, then validates the document with
 * hetcl_schema_validate. Nothing stays allocated after the call.
 *
 * schema_path, doc_path   file paths; borrowed.
 * err, err_cap            as for hetcl_schema_validate.
 *
 * Returns the first failure of the schema file's read, the document's read, then validation.
 * Note that HETCL_ERR_FORMAT then means either "a file is not JSON" (err starts with its path)
 * or "the document is invalid" (err starts with "$"); callers that must tell these apart, as
 * hetcl_schema_check does, call hetcl_schema_read_json and hetcl_schema_validate themselves.
 */
HETCL_API HETCL_NODISCARD hetcl_status hetcl_schema_validate_files(const char *schema_path,
                                                                   const char *doc_path, char *err,
                                                                   size_t err_cap);

#ifdef __cplusplus
}
#endif

#endif /* HETCL_SCHEMA_H */
