/* sieve: structural and functional hashes of candidate networks.
 *
 *   SieveHash h;
 *   if (!sieve_graph_hash_structural(graph, &h, error)) ...  // or sieve_space_hash (space.h)
 *   char text[SIEVE_HASH_TEXT_LEN];
 *   sieve_hash_format(&h, text);          // 32 lowercase hex digits
 *
 * After Gillard et al., "Unified Functional Hashing in Automatic Machine
 * Learning" (2023): two candidates that compute the same function need one
 * evaluation.
 *
 * structural: the graph is canonicalised (nodes that cannot reach the
 *   output dropped, zero terms of sums dropped, an operation of a zero
 *   zero where f(0) = 0 whatever its parameters (pooling, relu, bias-free
 *   conv; not a batch norm, a bias or sigmoid: those are constants and stay),
 *   identities flattened, the inputs of commutative operations ordered
 *   canonically) and the canonical form hashed (XXH3, 128 bits).  Node order
 *   and dead branches do not change it.
 * functional: the graph runs at a small probe scale on a fixed probe batch
 *   with weights derived from the canonical content of each operation, and
 *   the quantised outputs are hashed.
 * Networks whose output does not depend on the input (structurally: zero or
 * a constant; functionally: equal outputs for every probe example) all get
 * sieve_hash_degenerate().
 */
#pragma once

#include <glib.h>
#include <sieve/abi.h>

/* The graph stays opaque here (sieve/graph.h has it), so that sieve/space.h
 * can include this header without showing optimizers the graph API. */
typedef struct _SieveGraph SieveGraph;

G_BEGIN_DECLS

typedef enum {
  SIEVE_HASH_STRUCTURAL,
  SIEVE_HASH_FUNCTIONAL,
} SieveHashKind;

typedef struct {
  guint64 hi, lo;
} SieveHash;
SIEVE_ABI_SIZE(SieveHash, 16);

/* 32 hex digits and the terminating NUL. */
#define SIEVE_HASH_TEXT_LEN 33

/* "structural" / "functional". */
SIEVE_API const char *sieve_hash_kind_name(SieveHashKind kind);
/* FALSE when name is neither. */
SIEVE_API gboolean sieve_hash_kind_from_name(const char *name, SieveHashKind *out);

/* text: at least SIEVE_HASH_TEXT_LEN bytes; lowercase hex, hi first. */
SIEVE_API void sieve_hash_format(const SieveHash *hash, char *text);
/* FALSE unless text is exactly 32 hex digits. */
SIEVE_API gboolean sieve_hash_parse(const char *text, SieveHash *out);
SIEVE_API gboolean sieve_hash_equal(const SieveHash *a, const SieveHash *b);

/* The structural hash of a finished graph. */
SIEVE_API gboolean sieve_graph_hash_structural(const SieveGraph *graph, SieveHash *out, GError **error);

typedef struct {
  guint batch;         /* probe examples (at least 2); 0 = the default, 4 */
  guint threads;       /* 0 = 1 thread: the hash never depends on it */
  gpointer reserved[4];
} SieveFunctionalHashOptions;
SIEVE_ABI_SIZE(SieveFunctionalHashOptions, 40);

/* The functional hash of a finished graph, run at the graph's own scale
 * (callers that want the probe scale build the graph at it: see
 * sieve_space_hash).  options may be NULL. */
SIEVE_API gboolean sieve_graph_hash_functional(const SieveGraph *graph, const SieveFunctionalHashOptions *options,
                                               SieveHash *out, GError **error);

/* The hash every degenerate network (output independent of the input) gets:
 * all zeros, from both kinds. */
SIEVE_API const SieveHash *sieve_hash_degenerate(void);

G_END_DECLS
