/* sieve: search spaces, their decisions, and genotypes.
 *
 *   // inside a space plugin's create():
 *   guint opt = sieve_space_add_categorical(space, "optimizer", 2, (const char *[]){"sgd", "adam"});
 *   guint mom = sieve_space_add_float(space, "momentum", 0.0, 0.99, FALSE);
 *   sieve_space_set_condition(space, mom, opt, 1u << 0);   // momentum only for sgd
 *
 *   // anywhere:
 *   g_autoptr(SieveGenotype) g = sieve_space_sample(space, &rng);
 *   g_autofree char *text = sieve_space_format(space, g);  // "optimizer=sgd,momentum=0.5"
 *
 * A genotype is the optimizer's whole view of a candidate: one double per
 * decision (a categorical index, an integer, a float), NAN where a condition
 * makes the decision inactive.  Optimizers never see graphs, which keeps
 * every optimizer usable on every space.  The text form is canonical: equal
 * genotypes format equal, and parse(format(g)) == g.
 */
#pragma once

#include <glib.h>
#include <sieve/abi.h>
#include <sieve/component.h>
#include <sieve/hash.h>
#include <sieve/options.h>
#include <sieve/rng.h>

G_BEGIN_DECLS

typedef enum {
  SIEVE_DECISION_CATEGORICAL,
  SIEVE_DECISION_INT,
  SIEVE_DECISION_FLOAT,
} SieveDecisionKind;

typedef struct {
  const char *name;
  SieveDecisionKind kind;
  guint n_choices;            /* CATEGORICAL */
  const char *const *choices; /* CATEGORICAL, n_choices names */
  double low, high;           /* INT and FLOAT, inclusive */
  gboolean log;               /* sample and mutate on a log scale (low > 0) */
  gint parent;                /* the categorical decision this one depends on, or -1 */
  guint64 parent_mask;        /* active when bit (parent's value) is set */
  gpointer reserved[2];
} SieveDecision;
SIEVE_ABI_SIZE(SieveDecision, 72);

typedef struct _SieveSpace SieveSpace;
typedef struct _SieveGenotype SieveGenotype;
/* Opaque here: spaces that build networks include sieve/graph.h; optimizers
 * need not. */
typedef struct _SieveGraph SieveGraph;

/* Builder calls, made by a space plugin's create(); they return the new
 * decision's index.  Names must be unique and not empty, a categorical's
 * choices distinct, a range low <= high (finite floats; ints within
 * +-2^53, which genotypes' doubles hold exactly), a log scale above 0 (ints
 * from 1), a condition's parent a categorical of at most 64 choices
 * declared before the child.  A call that breaks a rule makes
 * sieve_space_new refuse the space with the first such mistake (a CONFIG
 * error "space 'NAME': its create() declared a decision wrongly: ..."). */
SIEVE_API guint sieve_space_add_categorical(SieveSpace *space, const char *name, guint n_choices,
                                            const char *const *choices);
SIEVE_API guint sieve_space_add_int(SieveSpace *space, const char *name, gint64 low, gint64 high,
                                    gboolean log);
SIEVE_API guint sieve_space_add_float(SieveSpace *space, const char *name, double low, double high,
                                      gboolean log);
/* Decision child is active only when categorical decision parent (< child)
 * takes a value whose bit is set in mask (so at most 64 choices). */
SIEVE_API void sieve_space_set_condition(SieveSpace *space, guint child, guint parent, guint64 mask);

SIEVE_API const char *sieve_space_get_name(const SieveSpace *space); /* the plugin's name */
SIEVE_API guint sieve_space_n_decisions(const SieveSpace *space);
/* (transfer none) */
SIEVE_API const SieveDecision *sieve_space_decision(const SieveSpace *space, guint i);
/* Index of the decision called name, or -1. */
SIEVE_API gint sieve_space_find(const SieveSpace *space, const char *name);
/* The plugin's instance (what its create() returned). (transfer none) */
SIEVE_API gpointer sieve_space_get_instance(const SieveSpace *space);

/* A uniform random genotype: categorical and int uniform over choices,
 * floats uniform (log-uniform where log), conditions respected; drawn again
 * until it is a member where the space has a check (uniform over the
 * members). (transfer full) */
SIEVE_API SieveGenotype *sieve_space_sample(const SieveSpace *space, SieveRng *rng);
/* Canonical text, using the plugin's format or the generic
 * "name=value,name=value" of active decisions. (transfer full) */
SIEVE_API char *sieve_space_format(const SieveSpace *space, const SieveGenotype *genotype);
/* Inverse of format; the error says what is wrong where. (transfer full) */
SIEVE_API SieveGenotype *sieve_space_parse(const SieveSpace *space, const char *text, GError **error);
/* Checks domains and conditions (values in range, NAN exactly where
 * inactive), then the space's own membership rule (SieveSpaceClass.check). */
SIEVE_API gboolean sieve_space_validate(const SieveSpace *space, const SieveGenotype *genotype,
                                        GError **error);
/* Whether decision i is active given the values of its ancestors. */
SIEVE_API gboolean sieve_space_is_active(const SieveSpace *space, const SieveGenotype *genotype,
                                         guint i);
/* Genotype as a JSON object {name: value}: categorical as the choice name,
 * int as integer, float as number; inactive decisions left out. (transfer full) */
SIEVE_API char *sieve_space_to_json(const SieveSpace *space, const SieveGenotype *genotype);
/* The JSON value choice k of categorical decision i stands for in
 * sieve_space_to_json, where it is not its name as a string: a number or
 * true/false (hpo's `choices: [32, 0.5, true]` written unquoted, as
 * Optuna's suggest_categorical keeps their types) (ABI 2.3).  FALSE, and
 * nothing set, when json is no finite JSON number nor true/false. */
SIEVE_API gboolean sieve_space_set_choice_json(SieveSpace *space, guint i, guint k, const char *json);
/* (transfer none) (nullable: a string, the choice's name) */
SIEVE_API const char *sieve_space_choice_json(const SieveSpace *space, guint i, guint k);
/* One value as text (choice name, integer, shortest round-trip float). (transfer full) */
SIEVE_API char *sieve_space_format_value(const SieveSpace *space, guint i, double value);

/* Where decision i was declared, for messages about it: a space read from
 * YAML records the node (as "origin:line:col") after the builder call (ABI 2.2). */
SIEVE_API void sieve_space_set_decision_where(SieveSpace *space, guint i, const SieveNode *node);
/* "file:line:col", or NULL when the space did not say. (transfer none) (nullable) */
SIEVE_API const char *sieve_space_decision_where(const SieveSpace *space, guint i);
/* Whether decision i shapes the network build() makes: every decision of a
 * space that builds networks, none of one that does not, and in a composite
 * space (`compose`) those of its architecture part.  The others are the
 * recipe: options of the evaluator (learning rate, epochs ...) that the
 * train evaluator takes from the genotype (ABI 2.2). */
SIEVE_API gboolean sieve_space_is_architecture(const SieveSpace *space, guint i);

/* Genotypes: n doubles bound to a space. */
SIEVE_API SieveGenotype *sieve_genotype_new(const SieveSpace *space); /* all NAN (transfer full) */
SIEVE_API SieveGenotype *sieve_genotype_copy(const SieveGenotype *genotype);
SIEVE_API void sieve_genotype_free(SieveGenotype *genotype);
SIEVE_API guint sieve_genotype_size(const SieveGenotype *genotype);
SIEVE_API double sieve_genotype_get(const SieveGenotype *genotype, guint i);
SIEVE_API void sieve_genotype_set(SieveGenotype *genotype, guint i, double value);
/* Set every decision that its conditions make inactive to NAN, and give
 * every active decision left NAN a uniform random value (after mutations). */
SIEVE_API void sieve_genotype_repair(SieveGenotype *genotype, SieveRng *rng);
/* Equality on values (NAN == NAN). */
SIEVE_API gboolean sieve_genotype_equal(const SieveGenotype *a, const SieveGenotype *b);
SIEVE_API const SieveSpace *sieve_genotype_get_space(const SieveGenotype *genotype);

/* What a space plugin implements.  create() declares the decisions with the
 * builder calls above and returns the plugin's instance (may be NULL when it
 * keeps no state: return GINT_TO_POINTER(1) is not needed, NULL + no error is
 * fine).  format/parse may be NULL for the generic text form. */
typedef struct {
  gpointer (*create)(SieveSpace *space, const SieveOptions *options, GError **error);
  void (*destroy)(gpointer instance);
  char *(*format)(gpointer instance, const SieveSpace *space, const SieveGenotype *genotype);
  SieveGenotype *(*parse)(gpointer instance, const SieveSpace *space, const char *text,
                          GError **error);
  /* The network a genotype stands for, ending in its logits (no loss);
   * NULL for spaces that are not architectures (hyper-parameter spaces).
   * (transfer full) the graph, finished (sieve_graph_finish), or NULL + error. */
  SieveGraph *(*build)(gpointer instance, const SieveSpace *space, const SieveGenotype *genotype, GError **error);
  /* NULL-terminated "option=value" overrides that make build() produce the
   * small networks the functional hash runs (few channels, small input),
   * applied over the space's own options; NULL: hash at the space's scale. */
  const char *const *probe_options;
  /* 2.2: membership beyond the decisions' domains, for spaces whose decisions
   * can combine into something that is not one of their candidates (nb101: a
   * cell whose input reaches its output over at most 9 edges).  NULL: every
   * genotype inside the domains is a member.  sieve_space_validate (and so
   * parse) refuses a non-member with this error (FALSE without one: "space
   * 'NAME' rejected it without a reason"), sieve_space_sample draws until it
   * holds, and the bundled optimizers propose members only. */
  gboolean (*check)(gpointer instance, const SieveSpace *space, const SieveGenotype *genotype, GError **error);
  /* 2.2: the structural hash as the space defines it (nb101: NAS-Bench-101's
   * own graph hash, so that isomorphic cells share it); NULL: the hash of the
   * built network (sieve_graph_hash_structural). */
  gboolean (*hash)(gpointer instance, const SieveSpace *space, const SieveGenotype *genotype, SieveHash *out,
                   GError **error);
  /* 2.2: probe_options for this instance, when they depend on its options
   * (darts: as many cells as the network has, up to 6, so that the probe
   * has the very kinds of cells the network has).  (transfer none) a
   * NULL-terminated list that outlives the instance, or NULL: hash at the
   * space's scale.  NULL callback: probe_options. */
  const char *const *(*probe_options_for)(gpointer instance, const SieveSpace *space);
  gpointer reserved[7];
} SieveSpaceClass;
SIEVE_ABI_SIZE(SieveSpaceClass, 128);

/* An instance of a space component: runs its create() with the validated
 * options.  The space keeps a reference to nothing it was given. (transfer full) */
SIEVE_API SieveSpace *sieve_space_new(const SieveComponent *component, const SieveOptions *options,
                                      GError **error);
SIEVE_API void sieve_space_free(SieveSpace *space);
/* Number of distinct genotypes (conditions respected): INFINITY when a
 * float decision is active anywhere.  Optimizers use it to know when a
 * finite space is exhausted. */
SIEVE_API double sieve_space_size(const SieveSpace *space);
/* Whether the space builds networks (its class has build()). */
SIEVE_API gboolean sieve_space_can_build(const SieveSpace *space);
/* (transfer full) the genotype's network; a clear error when the space
 * builds none or the genotype does not belong to it. */
SIEVE_API SieveGraph *sieve_space_build(const SieveSpace *space, const SieveGenotype *genotype, GError **error);
/* (transfer full) the network of a genotype drawn by sieve_space_sample
 * from a generator seeded with seed: what a component that needs the shape
 * of the space's networks (its input, its outputs) before any candidate
 * builds. */
SIEVE_API SieveGraph *sieve_space_build_sample(const SieveSpace *space, guint64 seed, GError **error);
/* A candidate's hash: the space builds the genotype's network (for the
 * functional kind at the probe scale the space declares, see
 * SieveSpaceClass.probe_options) and it is hashed (sieve/hash.h).  The
 * functional kind does not see the values the probe options replace (nb201:
 * C, N, size): compare functional hashes within one configuration of a
 * space.  A composite space hashes its architecture part's network: two
 * genotypes that differ only in their recipe hash equal (the engine's dedupe
 * adds the recipe to its key).  An error when the space builds no networks.  Thread-safe (the
 * probe space and a memo of functional hashes are kept with the space); the
 * space's own build() runs on the calling thread. */
SIEVE_API gboolean sieve_space_hash(const SieveSpace *space, const SieveGenotype *genotype, SieveHashKind kind,
                                    SieveHash *out, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(SieveGenotype, sieve_genotype_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SieveSpace, sieve_space_free)

G_END_DECLS
