/* The engines pbench runs as another process, one row each (fio's struct
 * ioengine_ops): its name, how it starts, what it accepts and how messages
 * name it. The config checks (pb_config_check_engine, config.c), the
 * process starter (bench/run/engine_proc.c) and the reader of its frames
 * (bench/run/engine.c) read the row; nothing else knows an engine's name.
 * The row lives in bench/config because the config checks read it and
 * config sits below run. */
#ifndef PB_ENGINE_ROW_H
#define PB_ENGINE_ROW_H

#include <stdbool.h>
#include <stddef.h>

struct pb_spec;

/* An option value the engine cannot run as pbench means it: in stage (or
 * decoder) `owner`, option `option` must format as one of `allowed`; `why`
 * says what the engine lacks. With `applies`, the rule holds only where it
 * says so (`when` names that setting in the message); `instead` is the
 * setting to use instead (NULL: loader.engine: pbench). */
struct pb_engine_rule {
    const char *owner, *option;
    const char *allowed[4];
    const char *why;
    bool (*applies)(const struct pb_spec *spec);
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
};

/* pbench's own engine: its threads, FFmpeg, libjpeg-turbo, its kernels. */
extern const struct pb_engine_row pb_engine_pbench_row;

/* The torch engine: a real torch.utils.data.DataLoader (engines/torch). */
extern const struct pb_engine_row pb_engine_torch_row;

/* Your own training job, measured in place (engines/torch/pbench_wrap). */
extern const struct pb_engine_row pb_engine_wrap_row;

/* The row of loader.engine's value (enum pb_engine); NULL for none. */
const struct pb_engine_row *pb_engine_row(int engine);

/* The row of the engine that runs Python (dataset.python, python stages). */
const struct pb_engine_row *pb_engine_python_row(void);

/* Writes list ("a, b, c", or with last_join "a, b or c") into buf. */
void pb_engine_row_list(const char *const *list, const char *last_join, char *buf,
                        size_t buflen);

#endif
