/* `hetcl bench` and its subcommands, one file each. */
#ifndef HETCL_CLI_BENCH_H
#define HETCL_CLI_BENCH_H

/* argv[0] is the subcommand's name ("runtime", "ops", "model"). */
int cli_bench_runtime(int argc, char **argv);
int cli_bench_ops(int argc, char **argv);
int cli_bench_model(int argc, char **argv);
int cli_bench_allreduce(int argc, char **argv);

#endif /* HETCL_CLI_BENCH_H */
