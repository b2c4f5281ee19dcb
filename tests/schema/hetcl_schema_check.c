/*
 * hetcl_schema_check SCHEMA.json DOC.json: validates a report for shell and CTest tests.
 *
 * Exit 0: valid. 1: the document breaks the schema (the first violation on stderr). 2: unusable
 * input (wrong arguments, a file missing, unreadable or not JSON, a broken schema), so that a
 * test expecting 1 cannot pass because of a typo in a path.
 */
#include <hetcl/schema.h>

#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: hetcl_schema_check SCHEMA.json DOC.json\n"
                        "exit 0 valid, 1 invalid, 2 unusable input\n");
        return 2;
    }
    char err[1024];
    cJSON *schema = NULL, *doc = NULL;
    int rc = 2;
    hetcl_status st = hetcl_schema_read_json(argv[1], &schema, err, sizeof err);
    if (st == HETCL_OK)
        st = hetcl_schema_read_json(argv[2], &doc, err, sizeof err);
    if (st != HETCL_OK) {
        fprintf(stderr, "hetcl_schema_check: %s\n", err);
        goto done;
    }
    st = hetcl_schema_validate(schema, doc, err, sizeof err);
    if (st == HETCL_OK) {
        printf("%s: valid against %s\n", argv[2], argv[1]);
        rc = 0;
    } else if (st == HETCL_ERR_FORMAT) {
        fprintf(stderr, "%s: invalid against %s: %s\n", argv[2], argv[1], err);
        rc = 1;
    } else {
        fprintf(stderr, "hetcl_schema_check: %s: %s (%s)\n", argv[1], err, hetcl_status_name(st));
    }
done:
    cJSON_Delete(doc);
    cJSON_Delete(schema);
    return rc;
}
