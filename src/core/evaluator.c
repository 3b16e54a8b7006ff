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
  if (result == NULL) {
    if (local == NULL)
      local = g_error_new(SIEVE_ERROR, SIEVE_ERROR_EVALUATOR, "evaluate returned no result");
    g_propagate_prefixed_error(error, local, "evaluator '%s': ", sieve_component_get_name(evaluator->component));
    return NULL;
  }
  g_clear_error(&local);
  if (sieve_result_get_cost(result) == 0.0)
    sieve_result_set_cost(result, (g_get_monotonic_time() - start) / 1e6);
  return result;
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
