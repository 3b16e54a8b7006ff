/* sieve: the canonical form of a graph, shared by the structural and the
 * functional hash (not installed).
 *
 *   g_autoptr(SieveCanon) c = sieve__canon_new(graph, error);
 *   SieveHash h = c->hash;                        // the structural hash
 *   g_autoptr(SieveGraph) g = sieve__canon_build(c, error); // what the functional hash runs
 *
 * The canonical form is an expression DAG in which every distinct
 * sub-expression appears once (hash-consing on the Merkle hash), listed in
 * an order that depends only on the expression, so that two graphs with
 * equal structural hashes rebuild into the same graph, node for node.
 */
#pragma once

#include <sieve/graph.h>
#include <sieve/hash.h>

G_BEGIN_DECLS

#define SIEVE_CANON_NONE G_MAXUINT

typedef struct {
  SieveOpKind kind;   /* SIEVE_OP_ZERO: a zero tensor, as a concat part or the input of a constant */
  SieveOpAttrs attrs; /* label-free, unused fields zero */
  SieveShape shape;
  guint n_inputs;
  guint *inputs;      /* earlier canonical nodes; an add's are sorted by hash */
  SieveHash hash;     /* Merkle: kind, attributes, shape, the inputs' hashes */
  guint witness;      /* ZERO only: a node of the same shape to build the zero from, or NONE */
} SieveCanonNode;

typedef struct {
  guint n_nodes;
  SieveCanonNode *nodes; /* canonical order: inputs before their consumers, output last */
  guint output;          /* SIEVE_CANON_NONE when degenerate */
  gboolean degenerate;   /* the output is structurally zero: it does not depend on the input */
  SieveHash hash;        /* the output's Merkle hash, or sieve_hash_degenerate() */
} SieveCanon;

/* (transfer full) the canonical form of a finished graph. */
SieveCanon *sieve__canon_new(const SieveGraph *graph, GError **error);
void sieve__canon_free(SieveCanon *canon);
/* (transfer full) the canonical form as a finished graph (not for a
 * degenerate one); node i of the result is canonical node i. */
SieveGraph *sieve__canon_build(const SieveCanon *canon, GError **error);

/* sieve_graph_hash_functional on a canonical form already made. */
gboolean sieve__canon_hash_functional(const SieveCanon *canon, const SieveFunctionalHashOptions *options,
                                      SieveHash *out, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SieveCanon, sieve__canon_free)

/* Words sieve__canon_words writes. */
#define SIEVE_CANON_WORDS 26
/* A node's kind, output shape and attributes as little-endian words, what
 * both hashes cover of a node itself.  Returns SIEVE_CANON_WORDS. */
guint sieve__canon_words(guint32 *words, SieveOpKind kind, const SieveOpAttrs *attrs, SieveShape shape);

/* XXH3-128 of len bytes with a domain seed, as a SieveHash. */
SieveHash sieve__hash_bytes(const void *data, gsize len, guint64 seed);

G_END_DECLS
