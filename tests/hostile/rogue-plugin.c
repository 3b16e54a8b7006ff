/* A plugin whose components break the public API's contracts on purpose,
 * for test_rogue_plugin.py: each misbehaviour must fail one trial (or refuse
 * the study at its start) with a reason naming the component, never stop
 * the study as the store's error or lose what is stored.
 *
 * rogue_space: one int decision x in [0, 1000]; its check refuses odd x without a reason.
 * rogue_opt {mode: M}: M = create_nothing returns NULL and no error from create;
 * M = odd proposes x = 7 from its second ask on.
 * rogue_eval {mode: M}: trial 0 reports score = x; every later trial does M
 * (M = create_nothing: create returns NULL and no error, a stateless
 * evaluator, and every trial reports score = x).
 * rogue_fid {min: A, max: B, steps: S}: offers the fidelity epochs in [A, B];
 * trial 0 reports steps 1, 2, 3, every later trial the steps S (a list),
 * going on after it is told to stop. */
#include <math.h>
#include <string.h>
#include <sieve/candidate.h>
#include <sieve/component.h>
#include <sieve/evaluator.h>
#include <sieve/optimizer.h>
#include <sieve/options.h>
#include <sieve/plugin.h>
#include <sieve/result.h>
#include <sieve/rng.h>
#include <sieve/space.h>

/* ---- space ---- */
static gpointer
space_create(SieveSpace *space, const SieveOptions *options, GError **error)
{
  sieve_space_add_int(space, "x", 0, 1000, FALSE);
  return NULL; /* no state: allowed for a space */
}
/* Odd x is no member, and it says no reason. */
static gboolean
space_check(gpointer instance, const SieveSpace *space, const SieveGenotype *genotype, GError **error)
{
  return (gint64) sieve_genotype_get(genotype, 0) % 2 == 0;
}
static const SieveSpaceClass space_class = {.create = space_create, .check = space_check};
static const SieveComponentInfo space_info = {SIEVE_KIND_SPACE, "rogue_space", "one int decision, even", NULL,
                                              &space_class, NULL, {NULL}};

/* ---- optimizer ---- */
static const SieveOptionSpec opt_options[] = {
  SIEVE_OPTION_STRING("mode", "ok", "how it misbehaves"),
  SIEVE_OPTION_END,
};
typedef struct {
  const SieveSpace *space;
  SieveRng rng;
  gboolean odd;
  guint asked;
} RogueOpt;
static gpointer
opt_create(const SieveSpace *space, const SieveOptions *options, const SieveStudyInfo *study, GError **error)
{
  if (strcmp(sieve_options_get_string(options, "mode"), "create_nothing") == 0)
    return NULL; /* and no error */
  RogueOpt *o = g_new0(RogueOpt, 1);
  o->space = space;
  o->odd = strcmp(sieve_options_get_string(options, "mode"), "odd") == 0;
  sieve_rng_seed(&o->rng, study->seed);
  return o;
}
static gboolean
opt_ask(gpointer instance, guint n, GPtrArray *out, GError **error)
{
  RogueOpt *o = instance;
  for (guint i = 0; i < n; i++) {
    SieveGenotype *g = sieve_space_sample(o->space, &o->rng);
    if (o->odd && o->asked > 0)
      sieve_genotype_set(g, 0, 7);
    g_ptr_array_add(out, sieve_candidate_new(g, NAN));
    o->asked++;
  }
  return TRUE;
}
static gboolean
opt_tell(gpointer instance, const SieveCandidate *c, const SieveResult *r, const double *objectives, GError **error)
{
  return TRUE;
}
static GVariant *
opt_save(gpointer instance, GError **error)
{
  return sieve_rng_save(&((RogueOpt *) instance)->rng);
}
static gboolean
opt_load(gpointer instance, GVariant *state, GError **error)
{
  return sieve_rng_load(&((RogueOpt *) instance)->rng, state, error);
}
static const SieveOptimizerClass opt_class = {.create = opt_create, .destroy = g_free, .ask = opt_ask,
                                              .tell = opt_tell, .save = opt_save, .load = opt_load};
static const SieveComponentInfo opt_info = {SIEVE_KIND_OPTIMIZER, "rogue_opt", "random, misbehaving on demand",
                                            opt_options, &opt_class, NULL, {NULL}};

/* ---- evaluator ---- */
static const SieveOptionSpec eval_options[] = {
  SIEVE_OPTION_STRING("mode", "ok", "what every trial after the first does"),
  SIEVE_OPTION_END,
};
static gpointer
eval_create(const SieveSpace *space, const SieveOptions *options, GError **error)
{
  const char *mode = sieve_options_get_string(options, "mode");
  if (strcmp(mode, "create_nothing") == 0)
    return NULL; /* and no error */
  return g_strdup(mode);
}
static const char *const eval_metric_names[] = {"score", NULL};
static const char *const *
eval_metrics(gpointer instance)
{
  return eval_metric_names;
}
static SieveResult *
eval_evaluate(gpointer instance, const SieveCandidate *c, GError **error)
{
  const char *mode = sieve_candidate_get_trial(c) == 0 || instance == NULL ? "ok" : instance;
  if (strcmp(mode, "no_result") == 0)
    return NULL; /* and no error */
  if (strcmp(mode, "null_error") == 0) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_EVALUATOR, "cannot work at all");
    return NULL;
  }
  SieveResult *r = sieve_result_new();
  sieve_result_set_metric(r, "score", sieve_genotype_get(sieve_candidate_get_genotype(c), 0));
  if (g_str_has_prefix(mode, "status_")) {
    SieveStatus status = 99;
    sieve_status_from_string(mode + 7, &status); /* status_99: left at 99 */
    sieve_result_set_status(r, status);
  }
  if (strcmp(mode, "name_empty") == 0)
    sieve_result_set_metric(r, "", 1);
  if (strcmp(mode, "name_newline") == 0)
    sieve_result_set_metric(r, "a\nb", 2);
  if (strcmp(mode, "name_odd") == 0)
    sieve_result_set_metric(r, "<b>a,b\"c\u00e9</b>", 3); /* odd, but a name */
  if (strcmp(mode, "cost_negative") == 0)
    sieve_result_set_cost(r, -5);
  if (strcmp(mode, "cost_nan") == 0)
    sieve_result_set_cost(r, NAN);
  if (strcmp(mode, "cost_inf") == 0)
    sieve_result_set_cost(r, INFINITY);
  if (strcmp(mode, "cost_huge") == 0)
    sieve_result_set_cost(r, 1e300); /* absurd, but a number of seconds */
  return r;
}
static const SieveEvaluatorClass eval_class = {.create = eval_create, .destroy = g_free, .evaluate = eval_evaluate,
                                               .metrics = eval_metrics};
static const SieveComponentInfo eval_info = {SIEVE_KIND_EVALUATOR, "rogue_eval", "misbehaves after trial 0",
                                             eval_options, &eval_class, NULL, {NULL}};

/* ---- an evaluator with a fidelity ---- */
static const SieveOptionSpec fid_options[] = {
  SIEVE_OPTION_FLOAT("min", "1", -G_MAXDOUBLE, G_MAXDOUBLE, "the fidelity's min"),
  SIEVE_OPTION_FLOAT("max", "9", -G_MAXDOUBLE, G_MAXDOUBLE, "the fidelity's max"),
  SIEVE_OPTION_BOOL("inf_max", "false", "max = infinity"),
  SIEVE_OPTION_STRING_LIST("steps", NULL, "the steps every trial after the first reports"),
  SIEVE_OPTION_END,
};
typedef struct {
  SieveFidelity fidelity;
  char **steps;
} RogueFid;
static gpointer
fid_create(const SieveSpace *space, const SieveOptions *options, GError **error)
{
  RogueFid *f = g_new0(RogueFid, 1);
  f->fidelity.name = "epochs";
  f->fidelity.min = sieve_options_get_double(options, "min");
  f->fidelity.max =
      sieve_options_get_bool(options, "inf_max") ? INFINITY : sieve_options_get_double(options, "max");
  f->fidelity.integer = TRUE;
  const char *const *steps = sieve_options_get_strv(options, "steps");
  f->steps = g_strdupv((char **) (steps ? steps : (const char *const[]){"1", "2", "3", NULL}));
  return f;
}
static void
fid_destroy(gpointer instance)
{
  RogueFid *f = instance;
  g_strfreev(f->steps);
  g_free(f);
}
static const SieveFidelity *
fid_fidelity(gpointer instance)
{
  return &((RogueFid *) instance)->fidelity;
}
static SieveResult *
fid_evaluate(gpointer instance, const SieveCandidate *c, GError **error)
{
  RogueFid *f = instance;
  double x = sieve_genotype_get(sieve_candidate_get_genotype(c), 0);
  const char *const first[] = {"1", "2", "3", NULL};
  const char *const *steps = sieve_candidate_get_trial(c) == 0 ? first : (const char *const *) f->steps;
  for (guint i = 0; steps[i]; i++)
    sieve_candidate_report_intermediate(c, g_ascii_strtoll(steps[i], NULL, 10), NAN, x * (i + 1));
  SieveResult *r = sieve_result_new();
  sieve_result_set_metric(r, "score", x);
  return r;
}
static const SieveEvaluatorClass fid_class = {.create = fid_create, .destroy = fid_destroy, .evaluate = fid_evaluate,
                                              .flags = SIEVE_EVALUATOR_INTERMEDIATE, .fidelity = fid_fidelity,
                                              .metrics = eval_metrics};
static const SieveComponentInfo fid_info = {SIEVE_KIND_EVALUATOR, "rogue_fid", "offers a fidelity it is told",
                                            fid_options, &fid_class, NULL, {NULL}};

static gboolean
rogue_init(SieveRegistry *registry, GError **error)
{
  return sieve_registry_add(registry, &space_info, error) && sieve_registry_add(registry, &opt_info, error) &&
         sieve_registry_add(registry, &eval_info, error) &&
         sieve_registry_add(registry, &fid_info, error);
}

SIEVE_PLUGIN_DEFINE("rogue", "0.1.0", "breaks the plugin contracts on purpose", "MIT", rogue_init);
