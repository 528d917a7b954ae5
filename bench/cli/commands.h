/* The sub-commands of pbench, in the order `pbench help` lists them, as a
 * compile-time list X(NAME, USAGE, HELP): bench/cli/help.c binds each NAME to
 * its cmd_NAME function, so a command is declared once with its help. In
 * USAGE and HELP, {formats}, {format-list}, {comparison-formats} and
 * {metrics} (and the tokens bench/cli/help.c lists) are filled in from the
 * format and metric tables. */
#ifndef PB_COMMANDS_H
#define PB_COMMANDS_H

#include "bench/sys/paths.h"

/* What `pbench help` and the manual page say about the exit codes. */
#define PB_EXIT_CODES_TEXT                                                                      \
    "0 success, 1 error, 2 usage or config error, 3 regression, 4 inconclusive (with\n"       \
    "--fail-on-regression: a gated wall-clock verdict withheld because other processes\n"      \
    "disturbed a side, and no gated regression), 5 suspect (history show: a series' newest\n"  \
    "run is outside its run-to-run noise by more than the threshold, one night, not yet a\n"  \
    "step; no regression step), 130 interrupted by Ctrl-C (143 SIGTERM, 129 SIGHUP)."

#define PB_COMMANDS(X) \
    X(run, \
      "pbench run CONFIG [-s key.path=value]... [-a key.path=v1,v2]... [-o results/NAME.json]\n" \
      "                  [--format {formats}] [--quiet] [--overhead] [--trace FILE] [--serve PORT]\n" \
      "                  [--baseline BASE.json [--threshold 5%] [--fail-on-regression] [--gate M,..]]", \
      "Runs the pipeline CONFIG describes under its loader settings, prints a table and writes\n" \
      "the complete result as JSON (default results/NAME-YYYYmmdd-HHMMSS.json). CONFIG is a\n" \
      "file, or the name of a shipped config ('pbench run null': ./configs/null.yaml, else the\n" \
      "installed one; 'pbench list configs' lists them).\n\n" \
      "  -s, --set key.path=value  override one config value, e.g. -s loader.workers=4,\n" \
      "                            -s pipeline.decode.cost_us=500 (repeatable)\n" \
      "  -o, --output PATH         where to write the JSON result\n" \
      "  -f, --format FORMAT       what to print: {format-list} (table is the default)\n" \
      "  -q, --quiet               no progress lines on stderr\n" \
      "      --trace FILE          write the CPU timeline (run.trace) to FILE, Chrome\n" \
      "                            trace-event JSON for Perfetto or chrome://tracing\n" \
      "      --serve [HOST:]PORT   serve the run while it runs: a live page, /metrics for\n" \
      "                            Prometheus, /result.json (127.0.0.1 unless a host is\n" \
      "                            named; docs/live.md)\n" \
      "  -a, --axis key.path=v1,v2 sweep this option over these values (adds to or replaces\n" \
      "                            the config's sweep: section; repeatable)\n" \
      "      --overhead            also measure the instrumentation's own cost: after each\n" \
      "                            repeat, a paired round with stage timing off\n" \
      "      --no-calibrate        skip the one-core calibration a sweep starts with\n" \
      "      --baseline BASE.json  compare the new result with BASE.json (as pbench compare)\n" \
      "      --threshold PCT       practical threshold of that comparison (default 5%)\n" \
      "      --fail-on-regression  exit 3 when the comparison finds a regression of a gated\n" \
      "                            metric ({gated-metrics})\n" \
      "      --gate M,...          gate on these metrics too (cpu_ns_per_sample.STAGE: one\n" \
      "                            stage's): {gate-metrics}\n\n" \
      PB_PATH_RULE "\n\n" \
      "Ctrl-C, SIGTERM or SIGHUP stops after the current batch and still writes what was\n" \
      "measured (exit 130, 143 or 129).") \
    X(wrap, \
      "pbench wrap [-s loader.KEY=V]... [-a loader.KEY=v1,v2]... [--set-new loader.KEY=V]\n" \
      "                  [--set-new-command 'COMMAND']\n" \
      "                  [--warmup-batches N] [--batches N | --time S | --until-exit]\n" \
      "                  [--loader FILE:LINE] [--grace S] [--ideal[=K]] [--listen ADDR[:PORT]]\n" \
      "                  [-o results/NAME.json]\n" \
      "                  [--format {formats}] [--quiet] [--overhead] [--trace FILE]\n" \
      "                  [--baseline BASE.json] -- COMMAND [ARGS...]  (or --command 'COMMAND ARGS...')\n" \
      "       pbench wrap --join HOST:PORT -- COMMAND [ARGS...]  (one node of a job whose\n" \
      "                  launcher starts one pbench per node)", \
      "Runs your training job, unchanged, with pbench's hook loaded at start-up in every\n" \
      "Python process it starts (the main process, its DataLoader workers under fork, spawn\n" \
      "and forkserver, the ranks a launcher starts), and measures its DataLoader: the real\n" \
      "stall in each next(), the job's real step between batches, and per worker process the\n" \
      "time and CPU of __getitem__, of each transform of a torchvision Compose and of collate.\n" \
      "After the window it ends the job (SIGINT, then SIGTERM after --grace) and prints the\n" \
      "table, the verdict and its 'try' lines as pbench run does; the result file, compare\n" \
      "and history read it as any other. The job's output goes to stderr. See docs/wrap.md.\n\n" \
      "  -s loader.KEY=V           set the job's DataLoader argument where it is built:\n" \
      "                            workers (num_workers), batch_size, pin_memory,\n" \
      "                            persistent_workers, prefetch_factor, drop_last;\n" \
      "                            -s run.repeats=N runs the job N times; besides\n" \
      "                            loader.KEY, -s, -a and --set-new take wrap.KEY and\n" \
      "                            run.* window and repeat options (run.step_ms and\n" \
      "                            dataset.* are refused: the job has its own)\n" \
      "  -a loader.KEY=v1,v2       run the job once per value and recommend the fewest\n" \
      "                            workers within noise of the job's best samples/s\n" \
      "                            (withheld where other processes disturbed it)\n" \
      "      --set-new loader.KEY=V  the job against itself with this change, interleaved,\n" \
      "                            4 repeats a side unless -s run.repeats=N; also\n" \
      "                            wrap.KEY=V (wrap.command='COMMAND': another command)\n" \
      "      --set-new-command 'COMMAND'  an A/B of two commands: the new side runs COMMAND\n" \
      "      --warmup-batches N    batches before the measured window (default 5)\n" \
      "      --batches N           measure N batches, then end the job\n" \
      "      --time S              measure S seconds, then end the job\n" \
      "      --until-exit          measure until the job ends by itself\n" \
      "      --loader FILE:LINE    the DataLoader to measure, by where it is created\n" \
      "                            (default: the first that delivers a batch)\n" \
      "      --grace S             seconds between SIGINT and SIGTERM (default 10)\n" \
      "      --ideal[=K]           what a loader that never waits would give: the job\n" \
      "                            against itself with K (8) batches, kept after the\n" \
      "                            warm-up, handed to it again instead of its DataLoader's\n" \
      "                            (4 repeats a side, as --set-new)\n" \
      "      --overhead            also run each repeat with per-sample timing off and say\n" \
      "                            what the hook costs in the job's batches/s\n" \
      "      --trace FILE          a Perfetto timeline: the loop's waits and steps, a track\n" \
      "                            per worker process with a span per sample and transform\n" \
      "      --serve [HOST:]PORT   serve the job's figures while it runs (docs/live.md)\n" \
      "      --listen ADDR[:PORT]  take the records of ranks on other machines over TCP\n" \
      "                            at this address of this machine (port 0 or none: any\n" \
      "                            free one), each connection with the run's token\n" \
      "                            (default: the default route's address where the\n" \
      "                            command runs srun, mpirun or mpiexec, or torchrun\n" \
      "                            --nnodes N; no TCP otherwise; docs/wrap.md)\n" \
      "      --join HOST:PORT      run this node's part of the job (torchrun per node,\n" \
      "                            pbench wrap on each node of a Slurm script) with its\n" \
      "                            records sent to the pbench wrap --listen at HOST:PORT,\n" \
      "                            which holds the one result; the token is taken from\n" \
      "                            PBENCH_WRAP_TOKEN, the same on every node and the head\n" \
      "  -o, -f, -q, --baseline, --threshold, --fail-on-regression: as pbench run.\n\n" \
      "Exit codes as pbench run; 1 when the job fails before its first batch or creates no\n" \
      "DataLoader, 2 when the command is not a Python job. Ctrl-C or SIGTERM ends the job\n" \
      "and still writes what was measured.") \
    X(gen, \
      "pbench gen --kind files|jpeg|video --out DIR [--count N] [--size WxH[-WxH]]\n" \
      "                  [--quality Q] [--progressive-fraction F] [--grayscale-fraction F]\n" \
      "                  [--frames F] [--fps R] [--codec NAME] [--gop G] [--size-bytes B]\n" \
      "                  [--corrupt-fraction F] [--seed S]", \
      "Generates a dataset into DIR (which must not hold files yet): random-byte files, JPEG\n" \
      "images or encoded videos of natural-looking, moving content. The options are those of a\n" \
      "config's dataset.generate block ('pbench list dataset.generate'), with - for _.") \
    X(compare, \
      "pbench compare BASE.json NEW.json [--threshold 5%] [--format {comparison-formats}]\n" \
      "                  [-o FILE] [--fail-on-regression] [--gate M,...] [--force] [--db DB]\n" \
      "pbench compare BASE.yaml NEW.yaml [-s key.path=value]... [-S key.path=value]...\n" \
      "                  [-o results/NAME.json] [--quiet] [--threshold 5%]\n" \
      "                  [--format {comparison-formats}] [--fail-on-regression] [--gate M,...]\n" \
      "                  [--serve [HOST:]PORT]   (watch it: docs/live.md)\n" \
      "pbench compare CONFIG.yaml CONFIG.yaml --set-new key.path=value   (one setting, tested)\n" \
      "pbench compare BOTH.json          (re-prints what a compare of two configs wrote)", \
      "Compares two results point by point (matched by their sweep axes): samples/s, stall %,\n" \
      "accelerator utilization, CPU time per sample (and per pipeline stage:\n" \
      "cpu_ns_per_sample.STAGE), batch assembly p50/p99, peak RSS and the machine's own\n" \
      "reference speed, each with the change, a 95% bootstrap confidence interval over the\n" \
      "repeats, a Mann-Whitney U p-value, and a verdict: improved, regressed, same, ambiguous\n" \
      "(not enough data to tell) or disturbed (a wall-clock figure withheld where other\n" \
      "processes, a CPU quota or a slower machine moved it). A change counts only when it is\n" \
      "significant and at least --threshold (default 5%). Results from different machines or\n" \
      "configs are refused, with every difference listed, unless --force. Each metric also says\n" \
      "the smallest change its repeats could detect given their noise ('never' where too few\n" \
      "repeats can reach p < 0.05: 3 against 3 cannot), and an ambiguous one how many repeats\n" \
      "a side would decide it (-s run.repeats=N), or that it is not decidable here.\n\n" \
      "Two result files are two runs: where the history database (--db, default\n" \
      "results/history.db) holds 5 or more runs of the base's series, each metric's run-to-run\n" \
      "spread widens its interval when larger than the repeats' own. See docs/statistics.md.\n\n" \
      "Given two configs, compare measures both itself, here and now, in interleaved rounds\n" \
      "(A B B A A B ...: a drift of the machine falls on both alike), writes one result holding\n" \
      "both (each point tagged compare: base|new) and prints the same comparison. -s applies to\n" \
      "both configs; --set-new (-S) key.path=value to NEW alone, after the -s ones, so one\n" \
      "config given twice tests one change: pbench compare configs/image.yaml\n" \
      "configs/image.yaml --set-new loader.workers=4 (the suggestions of pbench run give such\n" \
      "commands). Every config difference is listed as a setting change under test. On a\n" \
      "shared CI runner this is the strongest before/after evidence.\n\n" \
      "--fail-on-regression gates on what a training job feels:\n" \
      "  {gated-metrics};\n" \
      "batch assembly, peak RSS and the stages' rows are reported, and gate only when named\n" \
      "with --gate (any of {gate-metrics},\n" \
      "or cpu_ns_per_sample.STAGE). A --gate name that names nothing (an\n" \
      "unknown metric, or a stage neither side ran) exits 2 with the names known. A stage one\n" \
      "side alone ran is a row of its own, new or removed, with its CPU per sample and share\n" \
      "of the pipeline; the verdict names the stages that explain the change of CPU per\n" \
      "sample, largest share first. -o FILE writes the comparison of two results or of\n" \
      "BOTH.json (in --format) instead of printing it; with two configs it names the result,\n" \
      "or, with --format given, the comparison in that format (the result then goes to\n" \
      "results/NAME-DATE.json).\n" \
      "Two configs are checked in full, each torch-engine point started once, before either\n" \
      "is measured.\n\n" \
      "Exit codes: 0 no regression of a gated metric (same, improved or ambiguous; or no\n" \
      "--fail-on-regression), 3 such a regression with --fail-on-regression, 4 inconclusive\n" \
      "(no gated regression, but a gated verdict withheld as disturbed), 1 unreadable files,\n" \
      "2 usage error, incompatible results or no point of one result matching a point of the\n" \
      "other.") \
    X(history, \
      "pbench history add RESULT.json [--db results/history.db] [--revision REV] [--force]\n" \
      "       pbench history show [--db results/history.db] [--config NAME]\n" \
      "                  [--metric {metrics}]\n" \
      "                  [--threshold 5%] [--format {history-formats}] [-o FILE]", \
      "Keeps each run's summary in an SQLite database (one row per point) under its git\n" \
      "revision (--revision, else $GITHUB_SHA, else git rev-parse in the current folder), and\n" \
      "prints the trend of a metric per series, flagging a step change: a shift of the median\n" \
      "beyond the threshold that holds for at least 2 runs in a row. A series is what was\n" \
      "measured: a fingerprint of the config's dataset, pipeline, loader and run settings (not\n" \
      "its name, repeats or measuring times) and the machine, shown beside the config's name;\n" \
      "changing a setting starts a new series, shown as a BREAK naming what changed (as compare\n" \
      "words a config diff). Adding the same result under the same revision\n" \
      "twice stores it once. --db also takes an SQLite URI (file:PATH?mode=ro). The database\n" \
      "is in WAL mode; commands that write it at once take turns (each waits up to 60 s).\n" \
      "add refuses a result whose figures are partial: an interrupted run, a point that failed\n" \
      "(run.on_error: fail keeps the repeat it cut short), a repeat cut short, a point without\n" \
      "a complete repeat; --force adds it anyway.\n" \
      "show --format csv|tsv|json gives the series and their runs as plain data for your own\n" \
      "tools; --format html -o history.html a self-contained page with a trend chart per\n" \
      "series (each run's noise as a band, a step marked with its size and revision);\n" \
      "--format prometheus each series' newest figure as pbench serve history.db's /metrics. -o\n" \
      "writes FILE (atomically) instead of printing.\n" \
      "Each run keeps what else ran on the machine (other processes' CPU, steal, CPU-quota\n" \
      "throttling): a step of a wall-clock metric on a busy machine is withheld, not counted.\n" \
      "Without --metric, show prints samples/s, then gates on every metric the gate of compare\n" \
      "gates on (samples/s, stall, accelerator utilization, CPU per sample), one line each.\n" \
      "--metric cpu_ns_per_sample.STAGE follows one pipeline stage's CPU time per sample.\n" \
      "A series' newest run that is worse than the runs before it by more than the threshold\n" \
      "plus 3 times the series' run-to-run noise is SUSPECT at once, one night before two in\n" \
      "a row make a step; the stages that explain a suspect run or a step are named, from\n" \
      "each run's stage CPU times, a stage new to the series as 'absent before run N'. Each\n" \
      "series names its engine. A --metric no run has (cpu_ns_per_sample.TYPO) is a usage\n" \
      "error that lists the stages the runs have.\n" \
      "Exit codes: 0, or 3 when show finds a step that makes a gated metric (or the --metric)\n" \
      "worse (samples/s down; stall %, CPU per sample, assembly p99, peak RSS up) and neither\n" \
      "other processes nor a slower machine explain it; a step that is an improvement is\n" \
      "reported and exits 0; 5 when no step is a regression but a newest run is suspect;\n" \
      "2 on a --metric no run has; 1 on errors and refused results.") \
    X(calibrate, \
      "pbench calibrate CONFIG [--gpu] [--storage URL] [-s key.path=value]...", \
      "Measures what this machine does at best for CONFIG's data: the pipeline on one core\n" \
      "(one loader worker, no training step), memcpy bandwidth, and the\n" \
      "cores. A sweep runs the same calibration first (unless --no-calibrate) and states each\n" \
      "point's efficiency against it. For a dataset in object storage (--storage s3://B/P/\n" \
      "sets dataset.path) it reads the objects with one request at a time and with\n" \
      "dataset.requests_in_flight (else 8) at once: the store's single- and many-stream rates.") \
    X(report, \
      "pbench report RESULT.json [--format {formats}] [--rows points|repeats] [-o FILE]", \
      "Renders a result file written by pbench run again, in any format; html is one\n" \
      "self-contained page of charts (docs/results.md). -o writes FILE (atomically)\n" \
      "instead of printing. csv and tsv are for your own tools (pandas, R, spreadsheets):\n" \
      "each row names the run, its created time and point, with a column per sweep axis;\n" \
      "a row per point and stage, or with --rows repeats one per repeat. prometheus is\n" \
      "what --serve's /metrics gives for the result, for a Pushgateway (docs/live.md).") \
    X(serve, \
      "pbench serve RESULT.json|history.db [--serve [HOST:]PORT]", \
      "Serves one result file on the live page's server (default 127.0.0.1:8080) until Ctrl-C:\n" \
      "/ the page, /report.html the full HTML report, /metrics for Prometheus, /result.json.\n" \
      "A history database (pbench history add; told by its SQLite header) is opened\n" \
      "read-only: / the history report (as history show --format html), /history.json, and\n" \
      "/metrics the newest figures of each series (config, machine, point).\n" \
      "Only that file is served, read once; no path is taken from a request. While a run,\n" \
      "a sweep, a compare of two configs or a wrapped job runs, --serve [HOST:]PORT on\n" \
      "those commands serves it live (docs/live.md).") \
    X(list, \
      "pbench list [configs | NAME | SECTION.KEY]", \
      "Lists every config section, stage and decoder with its options, defaults and ranges,\n" \
      "and whether it is available in this build (with the reason when not). NAME shows one\n" \
      "section, stage or decoder ('pbench list decode' lists the decoders); SECTION.KEY one\n" \
      "key, e.g. 'pbench list loader.workers' or 'pbench list resize.size'. 'pbench list\n" \
      "configs' lists the shipped configs by name, with their descriptions and where relative\n" \
      "paths in a config lead.") \
    X(version, \
      "pbench version", \
      "Prints the pbench version, the build options and every library version, and the\n" \
      "CUDA runtime and driver when built with CUDA.") \
    X(help, \
      "pbench help [COMMAND]", \
      "Shows help for a command.")

#endif
