/* sieve: ABI version, export macro, error domain.
 *
 * A plugin compiled against ABI major M, minor m loads into a sieve whose
 * major is M and whose minor is >= m.  Structs a plugin can see only ever
 * grow at the end, inside their reserved padding.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* 2: the structs a plugin fills for the library (SieveSgd,
 * SieveBatcherOptions, SieveTrainReport) gained reserved padding, and every
 * struct a plugin can see has a size guard.
 * 2.1: SieveEvaluatorClass.metrics, in what was reserved.
 * 2.2: SIEVE_OP_MUL, SIEVE_ACT_HARD_SIGMOID, SIEVE_ACT_HARD_SWISH and sieve_graph_mul;
 *      SIEVE_OP_CROP and sieve_graph_crop (a window of a tensor);
 *      SieveSpaceClass.check and .hash (membership, a space's own structural hash);
 *      intermediate values (sieve_candidate_report_intermediate, SIEVE_EVALUATOR_INTERMEDIATE), status pruned;
 *      composite spaces: sieve_space_is_architecture, decisions' where;
 *      sieve_candidate_get_workers (the evaluations run at once);
 *      sieve/latency.h (inference latency measured here, several networks or operations together) and
 *      SIEVE_STATUS_REJECTED;
 *      stores on PostgreSQL: sieve_store_canonical_name, sieve_store_is_url, sieve_store_copy;
 *      the CUDA backend: SieveRuntimeOptions.device "cuda" and "auto", SieveRuntimeOptions.precision,
 *      sieve_runtime_resolve_device;
 *      SieveProxyOptions.device (the runtime device proxies run on);
 *      SieveEvaluatorClass.workers and sieve_evaluator_get_workers (evaluations an evaluator runs at once);
 *      SieveComponentInfo.example (a section that validates, shown by `sieve plugins --describe`);
 *      sieve_text_char_number and sieve_text_quote_at (where a parser stopped and what stands there, in UTF-8);
 *      SieveEvaluatorClass.intermediate_metric and sieve_evaluator_get_intermediate_metric (what a pruner judges);
 *      sieve_json_widen_integers (JSON integers beyond 64 bits read as doubles, not wrapped);
 *      SieveSpaceClass.probe_options_for (a probe scale that depends on the space's own options);
 *      SIEVE_EVALUATOR_BUILDS and sieve_evaluator_builds_networks (one evaluation at a time with a Lua space).
 * 2.3: sieve_space_set_choice_json and sieve_space_choice_json (a categorical choice's typed JSON value). */
#define SIEVE_ABI_MAJOR 2
#define SIEVE_ABI_MINOR 3

#if defined(SIEVE_COMPILATION)
#define SIEVE_API __attribute__((visibility("default"))) extern
#else
#define SIEVE_API extern
#endif

/* Guards the size of a struct a plugin can see, on the LP64 targets sieve is
 * built for (x86-64, aarch64): a field added anywhere but in place of its
 * reserved padding fails the build here, instead of corrupting a plugin
 * compiled against the previous headers.  Change a size only together with
 * SIEVE_ABI_MAJOR. */
#if GLIB_SIZEOF_VOID_P == 8 && GLIB_SIZEOF_LONG == 8
#define SIEVE_ABI_SIZE(type, bytes) G_STATIC_ASSERT(sizeof(type) == (bytes))
#else
#define SIEVE_ABI_SIZE(type, bytes) G_STATIC_ASSERT(sizeof(type) > 0)
#endif

/* Error domain for everything that can fail at run time. */
#define SIEVE_ERROR (sieve_error_quark())
SIEVE_API GQuark sieve_error_quark(void);

typedef enum {
  SIEVE_ERROR_FAILED,      /* anything without a better code */
  SIEVE_ERROR_CONFIG,      /* bad experiment file, option or --set: message starts with where, file:line:col
                            * (file:line from a Lua script, which gives no column), when there is a place */
  SIEVE_ERROR_PLUGIN,      /* a plugin file could not be loaded or registered */
  SIEVE_ERROR_ABI,         /* a plugin built for another ABI */
  SIEVE_ERROR_NOT_FOUND,   /* an unknown component, file or trial */
  SIEVE_ERROR_IO,          /* file or process I/O */
  SIEVE_ERROR_STORE,       /* the SQLite study store */
  SIEVE_ERROR_STORE_BUSY,  /* another process holds the store */
  SIEVE_ERROR_PARSE,       /* a genotype or data text that does not parse */
  SIEVE_ERROR_EVALUATOR,   /* an evaluator that cannot go on (not a failed trial) */
  SIEVE_ERROR_GRAPH,       /* a network that does not fit together (shapes, inputs) */
  SIEVE_ERROR_RUNTIME,     /* a backend failed to compile or run a graph */
  SIEVE_ERROR_DIVERGED,    /* training produced a NaN or infinite loss */
} SieveErrorCode;

/* Version of the library, "MAJOR.MINOR.MICRO". (transfer none) */
SIEVE_API const char *sieve_version_string(void);

G_END_DECLS
