/* The parts of a train report that every kind of run shares (train_report.c), for the SLIDE
 * run's report (train_report_slide.c). */
#ifndef HETCL_TRAIN_REPORT_IMPL_H
#define HETCL_TRAIN_REPORT_IMPL_H

#include <hetcl/train_report.h>

/* {before, after, throttled}; NULL when either state is missing. */
cJSON *hetcl__train_report_machine(const struct hetcl_train_machine *m);
/* config.model: name, spec, parameters. */
cJSON *hetcl__train_report_model(const struct hetcl_train_report_options *o);
/* config.dataset: name, files, checksum, sizes. */
cJSON *hetcl__train_report_dataset(const struct hetcl_train_report_data *d);
/* provenance, with the host's core round trip. */
cJSON *hetcl__train_report_provenance(const struct hetcl_train_report_options *o);

#endif /* HETCL_TRAIN_REPORT_IMPL_H */
