/*
 * Tests the JSON Schema validator (profiler/include/hetcl/schema.h) and hetcl_schema_check.
 *
 * Most cases are one table row: schema, document, expected status, and a substring the error
 * must contain. JSON in the table is written with ' for " (converted before parsing) so that the
 * rows stay readable; no case needs a literal apostrophe.
 *
 * argv[1], when given, is the hetcl_schema_check program, whose exit codes are checked too.
 */
#include "harness.h"

#include <hetcl/schema.h>
#include <hetcl/status.h>

#include <dirent.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

struct schema_case {
    const char *schema;
    const char *doc;
    hetcl_status want;
    const char *err_has; /* substring of the error; NULL when valid */
};

#define OK         HETCL_OK
#define BAD        HETCL_ERR_FORMAT
#define SCHEMA_ERR HETCL_ERR_INVALID_ARG

static const struct schema_case cases[] = {
        /* type */
        {"{'type':'string'}", "'a'", OK, NULL},
        {"{'type':'string'}", "3", BAD, "$: expected string, got 3"},
        {"{'type':'integer'}", "1.0", OK, NULL},
        {"{'type':'integer'}", "-7", OK, NULL},
        {"{'type':'integer'}", "1e300", OK, NULL},
        {"{'type':'integer'}", "1.5", BAD, "$: expected integer, got 1.5"},
        {"{'type':'number'}", "true", BAD, "expected number, got true"},
        {"{'type':'boolean'}", "false", OK, NULL},
        {"{'type':'boolean'}", "0", BAD, "expected boolean, got 0"},
        {"{'type':'null'}", "null", OK, NULL},
        {"{'type':'object'}", "[1,2]", BAD, "expected object, got an array of 2 items"},
        {"{'type':'array'}", "{'a':1}", BAD, "expected array, got an object"},
        {"{'type':['string','null']}", "null", OK, NULL},
        {"{'type':['string','null']}", "2", BAD, "expected string or null, got 2"},
        {"{'type':['integer','number']}", "2.5", OK, NULL},
        {"{'type':'string'}",
         "'a very long string that goes on and on and on and on and on and on'", OK, NULL},
        {"{'type':'integer'}",
         "'a very long string that goes on and on and on and on and on and on'", BAD,
         "got \"a very long string that goes on and on and on and on and on and \"... (66 bytes)"},
        {"{'type':'frob'}", "1", SCHEMA_ERR, "schema error at $: unknown type \"frob\""},
        {"{'type':5}", "1", SCHEMA_ERR, "\"type\" must be a type name"},
        {"{'type':[]}", "1", SCHEMA_ERR, "must not be an empty array"},

        /* enum, const */
        {"{'enum':['a','b',1]}", "'b'", OK, NULL},
        {"{'enum':['a','b',1]}", "1.0", OK, NULL},
        {"{'enum':['a','b',1]}", "'c'", BAD, "$: expected one of [\"a\",\"b\",1], got \"c\""},
        {"{'enum':[{'a':1,'b':[1,2]}]}", "{'b':[1,2],'a':1}", OK, NULL},
        {"{'enum':[{'a':1,'b':[1,2]}]}", "{'b':[2,1],'a':1}", BAD, "expected one of"},
        {"{'enum':[true]}", "1", BAD, "got 1"},
        {"{'enum':'a'}", "'a'", SCHEMA_ERR, "\"enum\" must be an array"},
        {"{'const':'v1'}", "'v1'", OK, NULL},
        {"{'const':'v1'}", "'v2'", BAD, "$: expected \"v1\", got \"v2\""},
        {"{'const':null}", "null", OK, NULL},
        {"{'const':{'x':[1]}}", "{'x':[1,2]}", BAD, "expected {\"x\":[1]}, got an object"},

        /* numeric bounds */
        {"{'type':'number','minimum':0}", "0", OK, NULL},
        {"{'type':'number','minimum':0}", "-0.5", BAD, "$: expected number >= 0, got -0.5"},
        {"{'maximum':10}", "10", OK, NULL},
        {"{'maximum':10}", "11", BAD, "expected number <= 10, got 11"},
        {"{'exclusiveMinimum':0}", "0.001", OK, NULL},
        {"{'exclusiveMinimum':0}", "0", BAD, "expected number > 0, got 0"},
        {"{'exclusiveMaximum':1}", "0.999", OK, NULL},
        {"{'exclusiveMaximum':1}", "1", BAD, "expected number < 1, got 1"},
        {"{'type':'integer','minimum':1,'maximum':8}", "9", BAD,
         "expected integer >= 1 and <= 8, got 9"},
        {"{'type':'integer','minimum':1,'maximum':8}", "0.5", BAD,
         "expected integer >= 1 and <= 8, got 0.5"},
        {"{'minimum':0}", "'not a number'", OK, NULL},
        {"{'minimum':'0'}", "3", SCHEMA_ERR, "\"minimum\" must be a number"},

        /* strings */
        {"{'minLength':2}", "'ab'", OK, NULL},
        {"{'minLength':2}", "'a'", BAD,
         "$: expected a string of at least 2 characters, got \"a\" (1)"},
        {"{'maxLength':2}", "'\\u00e9\\u00e9'", OK, NULL}, /* 2 code points, 4 bytes */
        {"{'maxLength':2}", "'abc'", BAD,
         "expected a string of at most 2 characters, got \"abc\" (3)"},
        {"{'minLength':-1}", "'a'", SCHEMA_ERR, "\"minLength\" must be a non-negative integer"},
        {"{'maxLength':1.5}", "'a'", SCHEMA_ERR, "\"maxLength\" must be a non-negative integer"},
        {"{'minLength':5}", "5", OK, NULL},
        {"{'pattern':'^[a-z0-9_-]+$'}", "'gemm_f32-x'", OK, NULL},
        {"{'pattern':'^[a-z0-9_-]+$'}", "'Gemm'", BAD,
         "$: expected a string matching /^[a-z0-9_-]+$/, got \"Gemm\""},
        {"{'pattern':'f32'}", "'gemm_f32_tiled'", OK, NULL}, /* unanchored, as JSON Schema says */
        {"{'pattern':'^[0-9]+[.][0-9]+([.][0-9]+)?$'}", "'0.1.0'", OK, NULL},
        {"{'pattern':'^[0-9]+[.][0-9]+([.][0-9]+)?$'}", "'0.1.'", BAD, "matching"},
        {"{'pattern':'^a.c*d?$'}", "'abcc'", OK, NULL},
        {"{'pattern':'^a.c*d?$'}", "'abcde'", BAD, "matching"},
        {"{'pattern':'a[b'}", "'ab'", SCHEMA_ERR, "uses an unclosed ["},
        {"{'pattern':'a(b'}", "'ab'", SCHEMA_ERR, "/a(b/ does not compile: "},
        /* ECMA-262 escapes, rewritten for POSIX */
        {"{'pattern':'^\\\\d+$'}", "'123'", OK, NULL},
        {"{'pattern':'^\\\\d+$'}", "'ddd'", BAD, "matching /^\\d+$/, got \"ddd\""},
        {"{'pattern':'^\\\\S+\\\\s\\\\w$'}", "'ab c'", OK, NULL},
        {"{'pattern':'^\\\\S+$'}", "'a b'", BAD, "matching"},
        {"{'pattern':'^\\\\D\\\\W$'}", "'a-'", OK, NULL},
        {"{'pattern':'^[\\\\w.]+$'}", "'a_b.c9'", OK, NULL},
        {"{'pattern':'^[\\\\w.]+$'}", "'a b'", BAD, "matching"},
        {"{'pattern':'^[0-9,\\\\-]*$'}", "'0-3,8'", OK, NULL}, /* devices.schema.json's cpuset */
        {"{'pattern':'^[0-9,\\\\-]*$'}", "'0\\\\1'", BAD, "matching"},
        {"{'pattern':'^[\\\\]a-]+$'}", "']-a'", OK, NULL},
        {"{'pattern':'^[\\\\]a-]+$'}", "'b'", BAD, "matching"},
        {"{'pattern':'^[^\\\\^]$'}", "'a'", OK, NULL},
        {"{'pattern':'^[^\\\\^]$'}", "'^'", BAD, "matching"},
        {"{'pattern':'^[\\\\^]$'}", "'^'", OK, NULL},
        {"{'pattern':'^[\\\\^]$'}", "'a'", BAD, "matching"},
        {"{'pattern':'^[\\\\-\\\\^]+$'}", "'-^'", OK, NULL},
        {"{'pattern':'^[\\\\-\\\\^]+$'}", "'a'", BAD, "matching"},
        {"{'pattern':'^a\\\\.b\\\\/c$'}", "'a.b/c'", OK, NULL},
        {"{'pattern':'^a\\\\.b$'}", "'axb'", BAD, "matching"},
        {"{'pattern':'^x{2,3}$'}", "'xxx'", OK, NULL},
        {"{'pattern':'^x{2,3}$'}", "'x'", BAD, "matching"},
        {"{'pattern':'^(ab|cd)?$'}", "'cd'", OK, NULL},
        {"{'pattern':'^(ab|cd)?$'}", "'ac'", BAD, "matching"},
        {"{'pattern':'^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$'}",
         "'2026-01-31T12:00:59Z'", OK, NULL},
        {"{'pattern':'^a+?$'}", "'a'", SCHEMA_ERR, "uses a lazy quantifier"},
        {"{'pattern':'(?=a)'}", "'a'", SCHEMA_ERR, "uses a (?...) group"},
        {"{'pattern':'\\\\bword'}", "'word'", SCHEMA_ERR, "uses an escape POSIX lacks"},
        {"{'pattern':'[\\\\D]'}", "'a'", SCHEMA_ERR, "an escape inside [...] that POSIX lacks"},
        {"{'pattern':3}", "'ab'", SCHEMA_ERR, "\"pattern\" must be a string"},

        /* arrays */
        {"{'type':'array','items':{'type':'integer'}}", "[1,2,3]", OK, NULL},
        {"{'type':'array','items':{'type':'integer'}}", "[1,2,'x']", BAD,
         "$[2]: expected integer, got \"x\""},
        {"{'minItems':1}", "[]", BAD, "$: expected an array of at least 1 items, got 0"},
        {"{'maxItems':1}", "[1,2]", BAD, "$: expected an array of at most 1 items, got 2"},
        {"{'minItems':1,'maxItems':1}", "[null]", OK, NULL},
        {"{'items':[{'type':'string'}]}", "['a']", SCHEMA_ERR, "tuple validation"},
        {"{'items':false}", "[]", OK, NULL},
        {"{'items':false}", "[0]", BAD, "$[0]: expected nothing here (the schema is false), got 0"},

        /* objects */
        {"{'required':['name','id']}", "{'name':'x','id':1}", OK, NULL},
        {"{'required':['name','id']}", "{'name':'x'}", BAD, "$: missing required property \"id\""},
        {"{'required':['name']}", "'not an object'", OK, NULL},
        {"{'required':'name'}", "{}", SCHEMA_ERR, "\"required\" must be an array of strings"},
        {"{'properties':{'a b':{'type':'string'}}}", "{'a b':1}", BAD,
         "$[\"a b\"]: expected string, got 1"},
        {"{'properties':{'q\\\"x':{'type':'string'}}}", "{'q\\\"x':1}", BAD,
         "$[\"q\\\"x\"]: expected string, got 1"},
        {"{'properties':{'a':{}},'additionalProperties':false}", "{'a':1}", OK, NULL},
        {"{'properties':{'a':{}},'additionalProperties':false}", "{'a':1,'zz':2}", BAD,
         "$.zz: unexpected property (not in \"properties\" and \"additionalProperties\" is false)"},
        {"{'additionalProperties':{'type':'number'}}", "{'x':1,'y':'s'}", BAD,
         "$.y: expected number, got \"s\""},
        {"{'additionalProperties':true}", "{'x':1}", OK, NULL},
        {"{'additionalProperties':3}", "{'x':1}", SCHEMA_ERR, "must be a boolean or a schema"},
        {"{'properties':[]}", "{'x':1}", SCHEMA_ERR, "\"properties\" must be an object"},
        /* the headline case: nested path, type and bounds in one message */
        {"{'type':'object','properties':{'opencl':{'type':'object','properties':{'devices':"
         "{'type':'array','items':{'type':'object','required':['compute_units'],'properties':"
         "{'compute_units':{'type':'integer','minimum':0}}}}}}}}",
         "{'opencl':{'devices':[{'compute_units':'two'}]}}", BAD,
         "$.opencl.devices[0].compute_units: expected integer >= 0, got \"two\""},

        /* $ref */
        {"{'$defs':{'dev':{'type':'object','required':['id']}},'type':'array','items':"
         "{'$ref':'#/$defs/dev'}}",
         "[{'id':1},{}]", BAD, "$[1]: missing required property \"id\""},
        {"{'definitions':{'dev':{'type':'object','required':['id']}},'items':"
         "{'$ref':'#/definitions/dev'}}",
         "[{'id':1},{'id':2}]", OK, NULL},
        {"{'definitions':{'dev':{'type':'object','required':['id']}},'items':"
         "{'$ref':'#/definitions/dev'}}",
         "[{'id':1},5]", BAD, "$[1]: expected object, got 5"},
        {"{'type':'object','properties':{'name':{'type':'string'},'children':{'type':'array',"
         "'items':{'$ref':'#'}}}}",
         "{'children':[{'children':[{'name':3}]}]}", BAD,
         "$.children[0].children[0].name: expected string, got 3"},
        {"{'$defs':{'a/b':{'type':'null'},'t~':{'type':'string'}},'$ref':'#/$defs/a~1b'}", "null",
         OK, NULL},
        {"{'$defs':{'a/b':{'type':'null'},'t~':{'type':'string'}},'$ref':'#/$defs/t~0'}", "1", BAD,
         "expected string, got 1"},
        {"{'$defs':{'list':[{'type':'string'}]},'$ref':'#/$defs/list/0'}", "'x'", OK, NULL},
        {"{'$ref':'#/$defs/nope'}", "1", SCHEMA_ERR, "$ref \"#/$defs/nope\" does not resolve"},
        {"{'$ref':'other.json#/x'}", "1", SCHEMA_ERR, "only same-document references"},
        {"{'$ref':'#node'}", "1", SCHEMA_ERR, "anchors are not supported"},
        {"{'$ref':'#/a~2'}", "1", SCHEMA_ERR, "must be followed by 0 or 1"},
        {"{'$ref':5}", "1", SCHEMA_ERR, "\"$ref\" must be a string"},
        /* cycles: stopped by the depth cap, and reported as schema errors even through anyOf */
        {"{'$defs':{'a':{'$ref':'#/$defs/a'}},'$ref':'#/$defs/a'}", "1", SCHEMA_ERR,
         "schema error at $: subschemas nested deeper than 64 levels (a $ref cycle?)"},
        {"{'$defs':{'a':{'allOf':[{'$ref':'#/$defs/b'}]},'b':{'anyOf':[{'$ref':'#/$defs/a'}]}},"
         "'$ref':'#/$defs/a'}",
         "{}", SCHEMA_ERR, "nested deeper than 64 levels"},
        {"{'not':{'$ref':'#'}}", "1", SCHEMA_ERR, "nested deeper than 64 levels"},

        /* allOf, anyOf, oneOf, not */
        {"{'allOf':[{'type':'number'},{'minimum':5}]}", "6", OK, NULL},
        {"{'allOf':[{'type':'number'},{'minimum':5}]}", "3", BAD, "$: expected number >= 5, got 3"},
        {"{'allOf':{}}", "3", SCHEMA_ERR, "\"allOf\" must be an array"},
        {"{'anyOf':[{'type':'string'},{'type':'integer'}]}", "1", OK, NULL},
        {"{'anyOf':[{'type':'string'},{'type':'integer'}]}", "1.5", BAD,
         "$: expected a match for one of the 2 \"anyOf\" alternatives; closest is #0: $: expected "
         "string, got 1.5"},
        {"{'anyOf':[{'type':'null'},{'type':'object','properties':{'n':{'type':'integer'}}}]}",
         "{'n':'x'}", BAD, "closest is #1: $.n: expected integer, got \"x\""},
        {"{'anyOf':[]}", "1", SCHEMA_ERR, "\"anyOf\" must be a non-empty array"},
        {"{'anyOf':[{'type':'string'},{'type':'wat'}]}", "1", SCHEMA_ERR, "unknown type \"wat\""},
        {"{'oneOf':[{'type':'integer'},{'type':'string'}]}", "1", OK, NULL},
        {"{'oneOf':[{'type':'integer'},{'type':'number'}]}", "1.5", OK, NULL},
        {"{'oneOf':[{'type':'integer'},{'type':'number'}]}", "1", BAD,
         "$: expected exactly one \"oneOf\" alternative to match, but #0 and #1 both do"},
        {"{'oneOf':[{'type':'integer'},{'type':'number'}]}", "'x'", BAD,
         "one of the 2 \"oneOf\" alternatives"},
        {"{'not':{'type':'null'}}", "1", OK, NULL},
        {"{'not':{'type':'null'}}", "null", BAD,
         "$: expected a value that does not match the \"not\" schema, got null"},
        {"{'items':{'anyOf':[{'type':'integer'},{'oneOf':[{'type':'string'},{'type':'null'}]}]}}",
         "[1,'a',null,true]", BAD, "$[3]: expected a match for one of the 2 \"anyOf\""},

        /* whole schemas, annotations, unknown keywords */
        {"true", "{'x':[1]}", OK, NULL},
        {"false", "1", BAD, "$: expected nothing here (the schema is false), got 1"},
        {"{}", "[1,{'a':null}]", OK, NULL},
        {"{'$schema':'https://json-schema.org/draft/2020-12/schema','$id':'x','title':'t',"
         "'description':'d','$comment':'c','format':'date-time','x-unknown':[1]}",
         "'anything'", OK, NULL},
        {"5", "1", SCHEMA_ERR, "schema error at $: a schema must be an object or a boolean"},
        {"{'properties':{'a':{'type':'frob'}}}", "{'b':1}", OK, NULL}, /* not reached: not found */
};

/* Parses table JSON: ' stands for ". */
static cJSON *parse_quoted(const char *text)
{
    size_t n = strlen(text);
    char *buf = malloc(n + 1);
    if (!buf)
        return NULL;
    for (size_t i = 0; i <= n; i++)
        buf[i] = text[i] == '\'' ? '"' : text[i];
    cJSON *json = cJSON_Parse(buf);
    free(buf);
    return json;
}

static void run_table(void)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct schema_case *c = &cases[i];
        cJSON *schema = parse_quoted(c->schema), *doc = parse_quoted(c->doc);
        CHECK(schema != NULL);
        CHECK(doc != NULL);
        char err[512];
        memset(err, 'x', sizeof err);
        hetcl_status st = hetcl_schema_validate(schema, doc, err, sizeof err);
        bool pass = st == c->want && strlen(err) < sizeof err &&
                    (c->err_has ? strstr(err, c->err_has) != NULL : err[0] == '\0');
        if (!pass) {
            fprintf(stderr, "case %zu: schema %s doc %s\n  want %s \"%s\"\n  got  %s \"%s\"\n", i,
                    c->schema, c->doc, hetcl_status_name(c->want), c->err_has ? c->err_has : "",
                    hetcl_status_name(st), err);
            hetcl_test_failures++;
        }
        cJSON_Delete(schema);
        cJSON_Delete(doc);
    }
    printf("%zu table cases\n", sizeof cases / sizeof cases[0]);
}

/* The message format other tools print: pinned exactly once. */
static void test_exact_message(void)
{
    const struct schema_case *c = NULL;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (cases[i].err_has && strncmp(cases[i].err_has, "$.opencl.", 9) == 0)
            c = &cases[i];
    CHECK(c != NULL);
    if (!c)
        return;
    cJSON *schema = parse_quoted(c->schema), *doc = parse_quoted(c->doc);
    char err[256];
    CHECK_EQ_INT(hetcl_schema_validate(schema, doc, err, sizeof err), HETCL_ERR_FORMAT);
    CHECK_EQ_STR(err, "$.opencl.devices[0].compute_units: expected integer >= 0, got \"two\"");
    cJSON_Delete(schema);
    cJSON_Delete(doc);
}

/* Builds [[[...[leaf]...]]] nested n deep. */
static cJSON *nested_arrays(int n)
{
    cJSON *inner = cJSON_CreateNumber(1);
    for (int i = 0; i < n && inner; i++) {
        cJSON *outer = cJSON_CreateArray();
        if (!outer || !cJSON_AddItemToArray(outer, inner)) {
            cJSON_Delete(outer);
            cJSON_Delete(inner);
            return NULL;
        }
        inner = outer;
    }
    return inner;
}

/* A legitimately recursive schema: deep enough documents hit the cap, as a schema error. */
static void test_depth_cap(void)
{
    cJSON *schema = parse_quoted("{'type':['array','integer'],'items':{'$ref':'#'}}");
    cJSON *shallow = nested_arrays(20), *deep = nested_arrays(HETCL_SCHEMA_MAX_DEPTH * 4);
    CHECK(schema && shallow && deep);
    char err[512];
    CHECK_EQ_INT(hetcl_schema_validate(schema, shallow, err, sizeof err), HETCL_OK);
    CHECK_EQ_INT(hetcl_schema_validate(schema, deep, err, sizeof err), HETCL_ERR_INVALID_ARG);
    CHECK(strstr(err, "nested deeper than 64 levels") != NULL);
    CHECK(strncmp(err, "schema error at $[0][0][0]", 26) == 0);
    cJSON_Delete(schema);
    cJSON_Delete(shallow);
    cJSON_Delete(deep);
}

/* err: NULL with cap 0, truncation, NUL termination, NULL arguments. */
static void test_err_buffer(void)
{
    cJSON *schema = parse_quoted("{'type':'string'}"), *doc = parse_quoted("12345");
    CHECK_EQ_INT(hetcl_schema_validate(schema, doc, NULL, 0), HETCL_ERR_FORMAT);
    char small[8];
    memset(small, 'x', sizeof small);
    CHECK_EQ_INT(hetcl_schema_validate(schema, doc, small, sizeof small), HETCL_ERR_FORMAT);
    CHECK_EQ_STR(small, "$: expe");
    char one[1] = {'x'};
    CHECK_EQ_INT(hetcl_schema_validate(schema, doc, one, sizeof one), HETCL_ERR_FORMAT);
    CHECK(one[0] == '\0');
    char err[128];
    CHECK_EQ_INT(hetcl_schema_validate(NULL, doc, err, sizeof err), HETCL_ERR_INVALID_ARG);
    CHECK(strstr(err, "must not be NULL") != NULL);
    CHECK_EQ_INT(hetcl_schema_validate(schema, NULL, err, sizeof err), HETCL_ERR_INVALID_ARG);
    /* a long path is cut, but the message stays one NUL-terminated line */
    cJSON *deep_schema = parse_quoted("{'additionalProperties':{'$ref':'#'},'type':'object'}");
    cJSON *deep_doc = cJSON_CreateObject(), *cur = deep_doc;
    char key[64];
    memset(key, 'k', sizeof key - 1);
    key[sizeof key - 1] = '\0';
    for (int i = 0; i < 25 && cur; i++)
        cur = cJSON_AddObjectToObject(cur, key);
    CHECK(cur != NULL);
    if (cur)
        CHECK(cJSON_AddNumberToObject(cur, key, 1) != NULL);
    char big[2048];
    CHECK_EQ_INT(hetcl_schema_validate(deep_schema, deep_doc, big, sizeof big), HETCL_ERR_FORMAT);
    CHECK(strchr(big, '\n') == NULL && strstr(big, "expected object, got 1") != NULL);
    cJSON_Delete(deep_schema);
    cJSON_Delete(deep_doc);
    cJSON_Delete(schema);
    cJSON_Delete(doc);
}

/* ---- files ------------------------------------------------------------------------------- */

static char tmpdir[64];

static const char *tmp_path(const char *name)
{
    static char path[4][128];
    static int next;
    char *p = path[next++ % 4];
    snprintf(p, sizeof path[0], "%s/%s", tmpdir, name);
    return p;
}

static void write_file(const char *name, const char *text, size_t len)
{
    FILE *f = fopen(tmp_path(name), "wb");
    CHECK(f != NULL);
    if (!f)
        return;
    CHECK(fwrite(text, 1, len, f) == len);
    CHECK(fclose(f) == 0);
}

#define WRITE(name, literal) write_file(name, literal, sizeof(literal) - 1)

static void test_files(void)
{
    char err[512];
    WRITE("schema.json", "{\"type\":\"object\",\"required\":[\"version\"],\"properties\":"
                         "{\"version\":{\"const\":1}}}");
    WRITE("good.json", "{\"version\": 1}\n");
    WRITE("bad.json", "{\"version\": 2}\n");
    WRITE("malformed.json", "{\n  \"a\": 1,\n  oops\n}\n");
    WRITE("trailing.json", "{} x");
    WRITE("empty.json", "");
    WRITE("nul.json", "{}\0{}");
    WRITE("badschema.json", "{\"type\":\"frob\"}");

    CHECK_EQ_INT(hetcl_schema_validate_files(tmp_path("schema.json"), tmp_path("good.json"), err,
                                             sizeof err),
                 HETCL_OK);
    CHECK_EQ_STR(err, "");
    CHECK_EQ_INT(hetcl_schema_validate_files(tmp_path("schema.json"), tmp_path("bad.json"), err,
                                             sizeof err),
                 HETCL_ERR_FORMAT);
    CHECK_EQ_STR(err, "$.version: expected 1, got 2");

    CHECK_EQ_INT(hetcl_schema_validate_files(tmp_path("missing.json"), tmp_path("good.json"), err,
                                             sizeof err),
                 HETCL_ERR_IO);
    CHECK(strstr(err, "missing.json: cannot open: No such file or directory") != NULL);
    CHECK_EQ_INT(hetcl_schema_validate_files(tmp_path("schema.json"), tmpdir, err, sizeof err),
                 HETCL_ERR_IO); /* a directory opens but cannot be read */
    CHECK(strstr(err, ": read failed: ") != NULL);

    cJSON *json = (cJSON *) 1;
    CHECK_EQ_INT(hetcl_schema_read_json(tmp_path("malformed.json"), &json, err, sizeof err),
                 HETCL_ERR_FORMAT);
    CHECK(json == NULL);
    /* cJSON points one past the byte it rejected (the 'o' of oops, line 3 column 3) */
    CHECK(strstr(err, "malformed.json: JSON parse error at byte 15 (line 3, column 4)") != NULL);
    CHECK_EQ_INT(hetcl_schema_read_json(tmp_path("trailing.json"), &json, err, sizeof err),
                 HETCL_ERR_FORMAT);
    CHECK(strstr(err, "trailing.json: JSON parse error at byte 3 (line 1, column 4)") != NULL);
    CHECK_EQ_INT(hetcl_schema_read_json(tmp_path("empty.json"), &json, err, sizeof err),
                 HETCL_ERR_FORMAT);
    CHECK(strstr(err, "empty.json: JSON parse error at byte 0 (line 1, column 1): empty file"));
    CHECK_EQ_INT(hetcl_schema_read_json(tmp_path("nul.json"), &json, err, sizeof err),
                 HETCL_ERR_FORMAT);
    CHECK(strstr(err, "nul.json: JSON parse error at byte 3") != NULL); /* cJSON skips the NUL */
    CHECK_EQ_INT(hetcl_schema_validate_files(tmp_path("malformed.json"), tmp_path("good.json"), err,
                                             sizeof err),
                 HETCL_ERR_FORMAT);
    CHECK(strstr(err, "malformed.json: JSON parse error") != NULL);
    CHECK_EQ_INT(hetcl_schema_validate_files(tmp_path("badschema.json"), tmp_path("good.json"), err,
                                             sizeof err),
                 HETCL_ERR_INVALID_ARG);
    CHECK(strstr(err, "schema error at $: unknown type \"frob\"") != NULL);

    CHECK_EQ_INT(hetcl_schema_read_json(tmp_path("good.json"), &json, err, sizeof err), HETCL_OK);
    CHECK(cJSON_IsObject(json));
    cJSON_Delete(json);
    CHECK_EQ_INT(hetcl_schema_read_json(NULL, &json, err, sizeof err), HETCL_ERR_INVALID_ARG);
    CHECK_EQ_INT(hetcl_schema_read_json(tmp_path("good.json"), NULL, err, sizeof err),
                 HETCL_ERR_INVALID_ARG);

    /* The same parser on text in memory: not terminated (the bytes after len are not read),
     * the same messages. */
    const char text[] = "{\"a\": [1, 2]}garbage";
    CHECK_EQ_INT(hetcl_schema_parse_json("mem.json", text, 13, &json, err, sizeof err), HETCL_OK);
    CHECK(cJSON_IsArray(cJSON_GetObjectItem(json, "a")));
    cJSON_Delete(json);
    CHECK_EQ_INT(hetcl_schema_parse_json("mem.json", text, sizeof text - 1, &json, err, sizeof err),
                 HETCL_ERR_FORMAT);
    CHECK(json == NULL);
    CHECK(strstr(err, "mem.json: JSON parse error at byte 13 (line 1, column 14)") != NULL);
    CHECK_EQ_INT(hetcl_schema_parse_json("mem.json", "{\"a\": t\0rue}", 12, &json, err, sizeof err),
                 HETCL_ERR_FORMAT);
    CHECK_EQ_INT(hetcl_schema_parse_json("mem.json", NULL, 0, &json, err, sizeof err),
                 HETCL_ERR_FORMAT);
    CHECK(strstr(err, "empty file") != NULL);
    CHECK_EQ_INT(hetcl_schema_parse_json("mem.json", NULL, 3, &json, err, sizeof err),
                 HETCL_ERR_INVALID_ARG);
    CHECK_EQ_INT(hetcl_schema_parse_json(NULL, "{}", 2, &json, err, sizeof err),
                 HETCL_ERR_INVALID_ARG);
}

/* Exit status of `prog args...`, or -1. */
static int run_check(const char *prog, const char *schema, const char *doc)
{
    char cmd[1024];
    if (schema)
        snprintf(cmd, sizeof cmd, "'%s' '%s' '%s'", prog, schema, doc);
    else
        snprintf(cmd, sizeof cmd, "'%s'", prog);
    int st = system(cmd);
    return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_cli(const char *prog)
{
    /* paths come from the same static ring, four at a time: copy them */
    char schema[128], bad_schema[128], good[128], bad[128], malformed[128], missing[128];
    snprintf(schema, sizeof schema, "%s", tmp_path("schema.json"));
    snprintf(bad_schema, sizeof bad_schema, "%s", tmp_path("badschema.json"));
    snprintf(good, sizeof good, "%s", tmp_path("good.json"));
    snprintf(bad, sizeof bad, "%s", tmp_path("bad.json"));
    snprintf(malformed, sizeof malformed, "%s", tmp_path("malformed.json"));
    snprintf(missing, sizeof missing, "%s", tmp_path("missing.json"));
    CHECK_EQ_INT(run_check(prog, schema, good), 0);
    CHECK_EQ_INT(run_check(prog, schema, bad), 1);
    CHECK_EQ_INT(run_check(prog, schema, missing), 2);
    CHECK_EQ_INT(run_check(prog, schema, malformed), 2);
    CHECK_EQ_INT(run_check(prog, bad_schema, good), 2);
    CHECK_EQ_INT(run_check(prog, NULL, NULL), 2);
}

/* Every schema in reports/schema parses; where reports/samples/<name>.json exists, it is
 * valid against reports/schema/<name>.schema.json. */
static void test_repo_schemas(void)
{
    const char *src = getenv("HETCL_SOURCE_DIR");
    if (!src)
        return;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/reports/schema", src);
    DIR *d = opendir(dir);
    if (!d)
        return;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name), suffix = strlen(".schema.json");
        if (len <= suffix || strcmp(e->d_name + len - suffix, ".schema.json") != 0)
            continue;
        char schema_path[1024], sample[1024], err[512];
        snprintf(schema_path, sizeof schema_path, "%s/%s", dir, e->d_name);
        snprintf(sample, sizeof sample, "%s/reports/samples/%.*s.json", src, (int) (len - suffix),
                 e->d_name);
        cJSON *schema = NULL;
        hetcl_status st = hetcl_schema_read_json(schema_path, &schema, err, sizeof err);
        if (st != HETCL_OK)
            fprintf(stderr, "%s\n", err);
        CHECK_EQ_INT(st, HETCL_OK);
        cJSON_Delete(schema);
        struct stat sb;
        if (stat(sample, &sb) == 0) {
            st = hetcl_schema_validate_files(schema_path, sample, err, sizeof err);
            if (st != HETCL_OK)
                fprintf(stderr, "%s: %s\n", sample, err);
            CHECK_EQ_INT(st, HETCL_OK);
        }
        n++;
    }
    closedir(d);
    printf("%d report schema(s) in %s\n", n, dir);
}

static void remove_tmpdir(void)
{
    static const char *const names[] = {"schema.json",    "good.json",     "bad.json",
                                        "malformed.json", "trailing.json", "empty.json",
                                        "nul.json",       "badschema.json"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        unlink(tmp_path(names[i]));
    rmdir(tmpdir);
}

int main(int argc, char **argv)
{
    run_table();
    test_exact_message();
    test_depth_cap();
    test_err_buffer();

    snprintf(tmpdir, sizeof tmpdir, "/tmp/hetcl-schema-XXXXXX");
    CHECK(mkdtemp(tmpdir) != NULL);
    test_files();
    if (argc > 1)
        test_cli(argv[1]);
    remove_tmpdir();

    test_repo_schemas();
    return hetcl_test_finish("test_schema");
}
