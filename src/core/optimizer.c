/* sieve: optimizer instances: the checks the engine relies on around a
 * plugin's function pointers (every failure has a reason that names the
 * optimizer; ask proposes valid genotypes of its space, no more than asked;
 * save returns a state). */
#include <sieve/optimizer.h>

struct _SieveOptimizer {
  const SieveComponent *component;
  const SieveOptimizerClass *klass;
  const SieveSpace *space;
  guint n_objectives;
  gpointer instance;
};

SieveOptimizer *
sieve_optimizer_new(const SieveComponent *component, const SieveSpace *space, const SieveOptions *options,
                    const SieveStudyInfo *study, GError **error)
{
  g_return_val_if_fail(component != NULL && space != NULL && study != NULL, NULL);
  g_return_val_if_fail(study->n_objectives >= 1 && study->objective_names != NULL, NULL);
  g_return_val_if_fail(sieve_component_get_kind(component) == SIEVE_KIND_OPTIMIZER, NULL);
  const SieveOptimizerClass *klass = sieve_component_get_info(component)->klass;
  GError *local = NULL;
  gpointer instance = klass->create(space, options, study, &local);
  if (local != NULL) {
    g_propagate_error(error, local);
    return NULL;
  }
  /* The engine calls the instance's methods with it: nothing there and no
   * error is the plugin's bug, refused here rather than met in the study. */
  if (instance == NULL) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_FAILED, "optimizer '%s': create returned nothing and no error",
                sieve_component_get_name(component));
    return NULL;
  }
  SieveOptimizer *o = g_new0(SieveOptimizer, 1);
  o->component = component;
  o->klass = klass;
  o->space = space;
  o->n_objectives = study->n_objectives;
  o->instance = instance;
  return o;
}

void
sieve_optimizer_free(SieveOptimizer *optimizer)
{
  if (optimizer == NULL)
    return;
  if (optimizer->klass->destroy != NULL)
    optimizer->klass->destroy(optimizer->instance);
  g_free(optimizer);
}

gboolean
sieve_optimizer_ask(SieveOptimizer *optimizer, guint n, GPtrArray *out, GError **error)
{
  g_return_val_if_fail(optimizer != NULL && out != NULL, FALSE);
  guint before = out->len;
  GError *local = NULL;
  if (!optimizer->klass->ask(optimizer->instance, n, out, &local) || local != NULL) {
    if (local == NULL)
      local = g_error_new(SIEVE_ERROR, SIEVE_ERROR_FAILED, "ask failed without a reason");
    g_propagate_prefixed_error(error, local, "optimizer '%s': ", sieve_component_get_name(optimizer->component));
    return FALSE;
  }
  /* A plugin's genotype that breaks its space's domains would poison the
   * store and every later tell: catch it here, naming the optimizer. */
  for (guint i = before; i < out->len; i++) {
    const SieveCandidate *c = out->pdata[i];
    if (c == NULL) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_FAILED, "optimizer '%s' appended a NULL candidate (item %u of its ask)",
                  sieve_component_get_name(optimizer->component), i - before + 1);
      return FALSE;
    }
    if (sieve_candidate_get_space(c) != optimizer->space ||
        !sieve_space_validate(optimizer->space, sieve_candidate_get_genotype(c), &local)) {
      g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_FAILED, "optimizer '%s' proposed an invalid genotype: %s",
                  sieve_component_get_name(optimizer->component),
                  local ? local->message : "it belongs to another space");
      g_clear_error(&local);
      return FALSE;
    }
  }
  if (out->len - before > n) {
    g_set_error(error, SIEVE_ERROR, SIEVE_ERROR_FAILED, "optimizer '%s' returned %u candidates for ask(%u)",
                sieve_component_get_name(optimizer->component), out->len - before, n);
    return FALSE;
  }
  return TRUE;
}

gboolean
sieve_optimizer_tell(SieveOptimizer *optimizer, const SieveCandidate *candidate, const SieveResult *result,
                     const double *objectives, GError **error)
{
  g_return_val_if_fail(optimizer != NULL && candidate != NULL && result != NULL && objectives != NULL, FALSE);
  GError *local = NULL;
  if (!optimizer->klass->tell(optimizer->instance, candidate, result, objectives, &local) || local != NULL) {
    if (local == NULL)
      local = g_error_new(SIEVE_ERROR, SIEVE_ERROR_FAILED, "tell failed without a reason");
    g_propagate_prefixed_error(error, local, "optimizer '%s': ", sieve_component_get_name(optimizer->component));
    return FALSE;
  }
  return TRUE;
}

GVariant *
sieve_optimizer_save(SieveOptimizer *optimizer, GError **error)
{
  g_return_val_if_fail(optimizer != NULL, NULL);
  GError *local = NULL;
  GVariant *state = optimizer->klass->save(optimizer->instance, &local);
  if (state == NULL) {
    if (local == NULL)
      local = g_error_new(SIEVE_ERROR, SIEVE_ERROR_FAILED, "save returned no state");
    g_propagate_prefixed_error(error, local, "optimizer '%s': ", sieve_component_get_name(optimizer->component));
    return NULL;
  }
  return g_variant_ref_sink(state);
}

gboolean
sieve_optimizer_load(SieveOptimizer *optimizer, GVariant *state, GError **error)
{
  g_return_val_if_fail(optimizer != NULL && state != NULL, FALSE);
  GError *local = NULL;
  if (!optimizer->klass->load(optimizer->instance, state, &local) || local != NULL) {
    if (local == NULL)
      local = g_error_new(SIEVE_ERROR, SIEVE_ERROR_FAILED, "load failed without a reason");
    g_propagate_prefixed_error(error, local, "optimizer '%s': cannot restore its saved state: ",
                               sieve_component_get_name(optimizer->component));
    return FALSE;
  }
  return TRUE;
}

guint
sieve_optimizer_n_objectives(const SieveOptimizer *optimizer)
{
  g_return_val_if_fail(optimizer != NULL, 0);
  return optimizer->n_objectives;
}

const SieveComponent *
sieve_optimizer_get_component(const SieveOptimizer *optimizer)
{
  g_return_val_if_fail(optimizer != NULL, NULL);
  return optimizer->component;
}
