/* sieve: evaluator instances: the checks the engine relies on around a
 * plugin's function pointers (a reason for every failure, a fidelity the
 * evaluator offers). */
#include <math.h>

#include <sieve/evaluator.h>

struct _SieveEvaluator {
  const SieveComponent *component;
  const SieveEvaluatorClass *klass;
  gpointer instance;
};

SieveEvaluator *
sieve_evaluator_new(const SieveComponent *component, const SieveSpace *space, const SieveOptions *options,
                    GError **error)
{
  g_return_val_if_fail(component != NULL && space != NULL, NULL);
  g_return_val_if_fail(sieve_component_get_kind(component) == SIEVE_KIND_EVALUATOR, NULL);
  const SieveEvaluatorClass *klass = sieve_component_get_info(component)->klass;
  GError *local = NULL;
  gpointer instance = klass->create(space, options, &local);
  if (local != NULL) {
    g_propagate_error(error, local);
    return NULL;
  }
  /* (NULL and no error is an evaluator that keeps no state: its methods
   * get NULL, as a space's may; an optimizer must keep some.)  Every
   * multi-fidelity optimizer and the store trust the fidelity offered:
   * refused here, before a trial, as candidate.h bounds it. */
  const SieveFidelity *fidelity = klass->fidelity ? klass->fidelity(instance) : NULL;
  if (fidelity != NULL &&
      (fidelity->name == NULL || !(isfinite(fidelity->min) && isfinite(fidelity->max) && fidelity->min > 0 &&
                                   fidelity->min <= fidelity->max))) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_CONFIG,
                "evaluator '%s' offers the fidelity %s in [%g, %g]: a fidelity has a name and 0 < min <= max, "
                "both finite",
                sieve_component_get_name(component), fidelity->name ? fidelity->name : "(no name)", fidelity->min,
                fidelity->max);
    if (klass->destroy != NULL)
      klass->destroy(instance);
    return NULL;
  }
  SieveEvaluator *e = g_new0(SieveEvaluator, 1);
  e->component = component;
  e->klass = klass;
  e->instance = instance;
  return e;
}

void
sieve_evaluator_free(SieveEvaluator *evaluator)
{
  if (evaluator == NULL)
    return;
  if (evaluator->klass->destroy != NULL)
    evaluator->klass->destroy(evaluator->instance);
  g_free(evaluator);
}

/* The trial's result when the evaluator broke the result's contract: failed,
 * with the reason naming it and the seconds it ran, and none of what it
 * returned (which would be stored as something it is not). */
static SieveResult * G_GNUC_PRINTF(4, 5)
refused(const SieveEvaluator *evaluator, SieveResult *returned, double seconds, const char *format, ...)
{
  va_list args;
  va_start(args, format);
  g_autofree char *problem = g_strdup_vprintf(format, args);
  va_end(args);
  sieve_result_free(returned);
  SieveResult *result = sieve_result_new();
  sieve_result_set_failed(result, "evaluator '%s' %s", sieve_component_get_name(evaluator->component), problem);
  sieve_result_set_cost(result, seconds);
  return result;
}

/* What a plugin's result may be, checked before anything stores it:
 * metrics named without control characters; status ok or failed, or pruned from an evaluator that reports
 * intermediate values (the others are the pipeline's: pending, screened,
 * cached, rejected); a cost that is a finite number of seconds >= 0 (the
 * summary and the time budget add them up). (transfer full) */
static SieveResult *
checked_result(const SieveEvaluator *evaluator, SieveResult *result, double seconds)
{
  SieveStatus status = sieve_result_get_status(result);
  if (status != SIEVE_STATUS_OK && status != SIEVE_STATUS_FAILED &&
      !(status == SIEVE_STATUS_PRUNED && sieve_evaluator_reports_intermediate(evaluator))) {
    if ((guint) status <= SIEVE_STATUS_REJECTED)
      return refused(evaluator, result, seconds,
                     "returned a result of status %s; an evaluator returns ok or failed (pruned with "
                     "intermediate values)",
                     sieve_status_to_string(status));
    return refused(evaluator, result, seconds, "returned a result of status %u, not a SieveStatus", (guint) status);
  }
  /* A metric is a column of every table, summary and export: a name it
   * cannot be is the evaluator's mistake, said, not a metric dropped or a
   * table broken by a newline. */
  for (guint i = 0; i < sieve_result_n_metrics(result); i++) {
    const char *name = sieve_result_metric_name(result, i);
    gboolean control = FALSE;
    for (const char *c = name; *c && !control; c++)
      control = (guchar) *c < 0x20 || *c == 0x7f;
    if (name[0] == '\0' || control) {
      g_autofree char *shown = g_strescape(name, NULL);
      return refused(evaluator, result, seconds, "reported a metric named \"%s\": a metric needs a name%s", shown,
                     control ? " without control characters (newlines, tabs)" : "");
    }
  }
  double cost = sieve_result_get_cost(result);
  if (!(isfinite(cost) && cost >= 0))
    return refused(evaluator, result, seconds, "reported cost %g s; a cost is a finite number of seconds >= 0", cost);
  return result;
}

SieveResult *
sieve_evaluator_evaluate(SieveEvaluator *evaluator, const SieveCandidate *candidate, GError **error)
{
  g_return_val_if_fail(evaluator != NULL && candidate != NULL, NULL);
  /* A fidelity the evaluator cannot honour is the optimizer's mistake, and
   * evaluating anyway would store a result under a false label. */
  double fidelity = sieve_candidate_get_fidelity(candidate);
  if (!isnan(fidelity)) {
    const SieveFidelity *offered = sieve_evaluator_get_fidelity(evaluator);
    if (offered == NULL) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_EVALUATOR,
                  "evaluator '%s' offers no fidelity, but trial %" G_GINT64_FORMAT " asks for fidelity %g",
                  sieve_component_get_name(evaluator->component), sieve_candidate_get_trial(candidate), fidelity);
      return NULL;
    }
    if (!(fidelity >= offered->min && fidelity <= offered->max) ||
        (offered->integer && fidelity != floor(fidelity))) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_EVALUATOR,
                  "evaluator '%s': trial %" G_GINT64_FORMAT " asks for %s = %g, outside [%g, %g]%s",
                  sieve_component_get_name(evaluator->component), sieve_candidate_get_trial(candidate),
                  offered->name, fidelity, offered->min, offered->max, offered->integer ? " or not whole" : "");
      return NULL;
    }
  }
  gint64 start = g_get_monotonic_time();
  GError *local = NULL;
  SieveResult *result = evaluator->klass->evaluate(evaluator->instance, candidate, &local);
  double seconds = (g_get_monotonic_time() - start) / 1e6;
  if (result == NULL && local == NULL) /* no reason to stop the study: this trial's failure */
    return refused(evaluator, NULL, seconds, "returned no result and no error");
  if (result == NULL) {
    g_propagate_prefixed_error(error, local, "evaluator '%s': ", sieve_component_get_name(evaluator->component));
    return NULL;
  }
  g_clear_error(&local);
  if (sieve_result_get_cost(result) == 0.0)
    sieve_result_set_cost(result, seconds);
  return checked_result(evaluator, result, seconds);
}

gboolean
sieve_evaluator_is_concurrent(const SieveEvaluator *evaluator)
{
  g_return_val_if_fail(evaluator != NULL, FALSE);
  return (evaluator->klass->flags & SIEVE_EVALUATOR_CONCURRENT) != 0;
}

gboolean
sieve_evaluator_builds_networks(const SieveEvaluator *evaluator)
{
  g_return_val_if_fail(evaluator != NULL, FALSE);
  return (evaluator->klass->flags & SIEVE_EVALUATOR_BUILDS) != 0;
}

guint
sieve_evaluator_get_workers(const SieveEvaluator *evaluator)
{
  g_return_val_if_fail(evaluator != NULL, 1);
  if (!sieve_evaluator_is_concurrent(evaluator) || evaluator->klass->workers == NULL)
    return 1;
  return MAX(evaluator->klass->workers(evaluator->instance), 1);
}

gboolean
sieve_evaluator_reports_intermediate(const SieveEvaluator *evaluator)
{
  g_return_val_if_fail(evaluator != NULL, FALSE);
  return (evaluator->klass->flags & SIEVE_EVALUATOR_INTERMEDIATE) != 0;
}

const char *
sieve_evaluator_get_intermediate_metric(const SieveEvaluator *evaluator, const char *objective)
{
  g_return_val_if_fail(evaluator != NULL, NULL);
  if (!sieve_evaluator_reports_intermediate(evaluator))
    return NULL;
  if (evaluator->klass->intermediate_metric == NULL)
    return objective;
  return evaluator->klass->intermediate_metric(evaluator->instance);
}

const SieveFidelity *
sieve_evaluator_get_fidelity(const SieveEvaluator *evaluator)
{
  g_return_val_if_fail(evaluator != NULL, NULL);
  return evaluator->klass->fidelity ? evaluator->klass->fidelity(evaluator->instance) : NULL;
}

const char *const *
sieve_evaluator_get_metrics(const SieveEvaluator *evaluator)
{
  g_return_val_if_fail(evaluator != NULL, NULL);
  return evaluator->klass->metrics ? evaluator->klass->metrics(evaluator->instance) : NULL;
}

const SieveComponent *
sieve_evaluator_get_component(const SieveEvaluator *evaluator)
{
  g_return_val_if_fail(evaluator != NULL, NULL);
  return evaluator->component;
}
