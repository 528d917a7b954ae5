/* The engines pbench runs, one row each (fio's struct ioengine_ops): its
 * name, how it starts, what it accepts, how messages name it and what a
 * result's readers need to know of it. The config checks
 * (pb_config_check_engine, config.c), the process starter
 * (bench/run/engine_proc.c), the reader of its frames (bench/run/engine.c),
 * the session, the result's readers, the analysis's suggestions and the
 * reports read the row (a result names its engine: pb_engine_row_named);
 * nothing else knows an engine's name. The rows are plain data with no
 * includes of pbench's own, so they sit in bench/base, below every layer
 * that reads them. The torch engine's option rules are also described in
 * engines/engine_rules.json, which its Python reads; tests/test_engine_rules.c
 * holds the rows to that file. */
#ifndef PB_ENGINE_ROW_H
#define PB_ENGINE_ROW_H

#include <stdbool.h>
#include <stddef.h>

/* An option value the engine cannot run as pbench means it: in stage (or
 * decoder) `owner`, option `option` must format as one of `allowed`; `why`
 * says what the engine lacks. With `when` ("loader.torch_decode:
 * torchvision"), the rule holds only where that setting formats as that
 * value, and the message names it; `instead` is the setting to use instead
 * (NULL: loader.engine: pbench). */
struct pb_engine_rule {
    const char *owner, *option;
    const char *allowed[4];
    const char *why;
    const char *when;
    const char *instead;
};

struct pb_engine_row {
    const char *name;  /* loader.engine's value: "torch"                  */
    /* It runs in pbench's process, on pbench's threads (bench/run/runner.h);
     * otherwise it is another process speaking docs/engines.md's protocol
     * (bench/run/engine.h). Which ops the measurement loop drives. */
    bool in_process;
    const char *title; /* in sentences: "the torch engine"                */
    /* How it starts: INTERPRETER ARGS... with PYTHONPATH=<engines>/<folder>
     * (pb_engine_dir) in front of the caller's. The interpreter is
     * loader.python, else $<interpreter_env>, else `interpreter`. */
    const char *interpreter;
    const char *interpreter_env;
    const char *args[4];  /* NULL-ended: {"-m", "pbench_torch"}          */
    const char *folder;   /* under pbench's engines/ folder; NULL: none   */
    const char *needs;    /* what the interpreter needs, for messages     */
    const char *stuck_tag; /* its stderr lines saying where it is stuck    */
    const char *starting;  /* what may hang before ready, for messages     */
    /* What it accepts: stages and decoders (NULL-ended), option rules, and
     * the loader settings it cannot run (the reason; NULL: it runs them). */
    const char *const *stages;
    const char *const *decoders;
    const struct pb_engine_rule *rules;
    size_t rule_count;
    bool runs_python; /* dataset.python and python stages */
    /* A source of records pbench does not drive (the wrapped job): its
     * batches are the size the job makes them, not loader.batch_size. */
    bool job_sizes;
    /* Its fd 5 is pbench's stderr, where the job it runs writes. */
    bool pass_terminal;
    const char *in_order_false_why, *cache_direct_why, *affinity_why;
    /* In `pbench list`: "pbench (SUMMARY), torch (SUMMARY) or ...". */
    const char *summary;
    /* The config section it runs from and the key in it that must be set
     * (the wrapped job: wrap.command), with what the message says of it
     * after "loader.engine NAME "; NULL: none. */
    const char *section, *required, *required_why;
    /* A comparison starts it once, and closes it, before either side is
     * measured, so that its own refusals (at its ready frame) come first. */
    bool checked_first;
    /* The versions its ready frame reports: {key, label} pairs ({"av",
     * "PyAV"}), in the order the result's engines line shows them; ended by
     * a NULL key. */
    const char *versions[8][2];
    /* How a suggestion measures it again: `pbench COMMAND CONFIG` (NULL:
     * run), with -s loader.engine=NAME where engine_option (the config may
     * not name it). */
    const char *command;
    bool engine_option;
    /* Its worker processes start at every epoch unless
     * loader.persistent_workers (a DataLoader's). */
    bool epoch_workers;
};

/* How many values loader.engine has, each with its row (spec.c's
 * pb_engine_names[], spec.h's enum pb_engine). */
#define PB_ENGINE_ROW_COUNT 3

/* pbench's own engine: its threads, in pbench's process. */
extern const struct pb_engine_row pb_engine_pbench_row;

/* The torch engine: a real torch.utils.data.DataLoader (engines/torch). */
extern const struct pb_engine_row pb_engine_torch_row;

/* Your own training job, measured in place (engines/torch/pbench_wrap). */
extern const struct pb_engine_row pb_engine_wrap_row;

/* The row of loader.engine's value (enum pb_engine); NULL for none. */
const struct pb_engine_row *pb_engine_row(int engine);

/* The row of the engine a result names ("torch"), pbench's own included;
 * NULL for a name no row has (or NULL). */
const struct pb_engine_row *pb_engine_row_named(const char *name);

/* "pbench (its own C threads), torch (...) or wrap (...)": each row's name
 * and summary, in loader.engine's order, into buf. */
void pb_engine_rows_text(char *buf, size_t buflen);

/* The row of the engine that runs Python (dataset.python, python stages). */
const struct pb_engine_row *pb_engine_python_row(void);

/* Writes list ("a, b, c", or with last_join "a, b or c") into buf. */
void pb_engine_row_list(const char *const *list, const char *last_join, char *buf,
                        size_t buflen);

#endif
