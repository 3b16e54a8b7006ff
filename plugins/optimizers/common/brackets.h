/* sieve optimizers: successive-halving brackets over an evaluator's
 * fidelity, the scheduler under `successive_halving`, `hyperband` and
 * `bohb`.
 *
 *   OptBrackets b;
 *   if (!opt_brackets_init(&b, space, study, options, hyperband, "hyperband", error)) ...
 *   SieveCandidate *c = opt_brackets_next(&b, sample, self);   // NULL: nothing to propose now
 *   opt_brackets_tell(&b, candidate, fitness);
 *
 * A bracket (Jamieson & Talwalkar, "Non-stochastic Best Arm Identification
 * and Hyperparameter Optimization", AISTATS 2016) is a list of rungs: rung
 * i evaluates n_i configurations at fidelity r_i, and once every one of
 * them has finished the best n_(i+1) go up to rung i + 1, where
 * r_(i+1) = eta r_i.  Hyperband (Li, Jamieson, DeSalvo, Rostamizadeh &
 * Talwalkar, JMLR 2018) cycles through brackets s = s_max .. 0, with
 * s_max = floor(log_eta(max / min)), n = ceil((s_max + 1) eta^s / (s + 1))
 * configurations starting at fidelity max eta^-s; successive halving runs
 * the most aggressive bracket again and again.
 *
 * Asynchronous use: a bracket whose next rung waits for pending results
 * does not hold anything up: the next bracket is opened alongside (as
 * HpBandSter runs brackets in parallel), and any bracket's promotion is
 * proposed first as soon as it is ready.  With one worker the order is
 * exactly the sequential algorithm's.
 */
#pragma once

#include <sieve/candidate.h>
#include <sieve/optimizer.h>
#include <sieve/options.h>
#include <sieve/space.h>

#include "optcommon.h"

G_BEGIN_DECLS

typedef struct {
  guint rungs;      /* number of rungs */
  guint *size;      /* configurations per rung */
  double *fidelity; /* per rung */
  GPtrArray **entries; /* per rung: Entry* */
  guint64 id;       /* order in which brackets were opened */
} OptBracket;

typedef struct {
  const SieveSpace *space;
  double eta, min_fidelity, max_fidelity;
  gboolean integer;
  guint s_max;
  gboolean hyperband; /* cycle s_max..0; else always s_max */
  guint n_first;      /* successive halving: configurations in rung 0 */
  GPtrArray *active;  /* OptBracket*, oldest first */
  guint64 opened;
  GHashTable *pending; /* key (opt_key) -> Entry* of the active brackets (not owned) */
  OptSeen sampled;     /* texts of every configuration started in a rung 0 */
} OptBrackets;

/* Most configurations a rung 0 may need (eta^s_max): a million, past which
 * a fidelity range is taken for a mistake (1 to 1e20 epochs). */
#define OPT_BRACKETS_MAX_CONFIGS 1000000

/* New configurations for rung 0 of a bracket: a genotype not in
 * b->sampled (which the scheduler fills), or NULL when none is left.
 * fidelity: the rung's. (transfer full) (nullable) */
typedef SieveGenotype *(*OptBracketSample)(gpointer user, OptBrackets *b, double fidelity);

/* Options read: eta, min_fidelity (and n_configs when not hyperband).
 * Fails (located at the option) when the study has no fidelity, the
 * options do not fit it, or the brackets would need more than
 * OPT_BRACKETS_MAX_CONFIGS configurations in a first rung. */
gboolean opt_brackets_init(OptBrackets *b, const SieveSpace *space, const SieveStudyInfo *study,
                           const SieveOptions *options, gboolean hyperband, const char *who, GError **error);
void opt_brackets_clear(OptBrackets *b);

/* The next candidate to evaluate (transfer full), or NULL when sample gave
 * nothing new and no promotion is ready (one may be once pending results
 * come back: a rung 0 that sample could not fill makes do with what it has,
 * and its best 1/eta go up as in a full bracket). */
SieveCandidate *opt_brackets_next(OptBrackets *b, OptBracketSample sample, gpointer user);
/* A result: fitness larger is better (-INFINITY for a failure or a
 * rejection, never promoted: a rung with fewer good results than it keeps
 * promotes fewer, one with none ends its bracket).  Returns FALSE for a
 * candidate the scheduler never proposed (ignored). */
gboolean opt_brackets_tell(OptBrackets *b, const SieveCandidate *candidate, double fitness);
/* A candidate the pipeline never trained (screened out by the proxies,
 * rejected by a constraint): at rung 0 it leaves its rung, whose place a
 * configuration of a later bracket still filling a first rung at that
 * fidelity takes, else a new one (it stays sampled, never drawn again), so that a
 * rung's n are n trained results and its best 1/eta go up, not the best
 * 1/eta of everything proposed; at a higher rung it is a result of
 * -INFINITY.  Returns FALSE for a candidate the scheduler never proposed. */
gboolean opt_brackets_withdraw(OptBrackets *b, const SieveCandidate *candidate);

/* {"opened": t, "brackets": a(tauadaa(addy)), "sampled": ay (NUL-ended
 * texts; "as" before 2026-11-27, still read)} into dict. */
void opt_brackets_save(const OptBrackets *b, GVariantDict *dict);
gboolean opt_brackets_load(OptBrackets *b, GVariant *state, GError **error);

/* The option entries the three plugins share. */
#define OPT_BRACKET_OPTIONS                                                                               \
  SIEVE_OPTION_FLOAT("eta", "3", 2, 1e3, "keep the best 1/eta of each rung; fidelity grows eta-fold per rung"), \
  {"min_fidelity", SIEVE_OPTION_TYPE_FLOAT, NULL, 0, INFINITY, NULL,                                      \
   "lowest fidelity a configuration starts at, whole for an integer fidelity (default: the evaluator's min)", \
   SIEVE_OPTION_HAS_MIN | SIEVE_OPTION_HAS_MAX, {NULL}}

G_END_DECLS
