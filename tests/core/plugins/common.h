/* A minimal, valid optimizer the loader tests register under various
 * descriptors: what they test is the loader, not the optimizer. */
#pragma once

#include <sieve/sieve.h>

typedef struct {
  const SieveSpace *space;
  SieveRng rng;
} TestOpt;

static gpointer
test_create(const SieveSpace *space, const SieveOptions *options, const SieveStudyInfo *study, GError **error)
{
  TestOpt *o = g_new0(TestOpt, 1);
  o->space = space;
  sieve_rng_seed(&o->rng, study->seed);
  return o;
}

static gboolean
test_ask(gpointer instance, guint n, GPtrArray *out, GError **error)
{
  TestOpt *o = instance;
  for (guint i = 0; i < n; i++)
    g_ptr_array_add(out, sieve_candidate_new(sieve_space_sample(o->space, &o->rng), NAN));
  return TRUE;
}

static gboolean
test_tell(gpointer instance, const SieveCandidate *c, const SieveResult *r, const double *objectives, GError **error)
{
  return TRUE;
}

static GVariant *
test_save(gpointer instance, GError **error)
{
  return sieve_rng_save(&((TestOpt *) instance)->rng);
}

static gboolean
test_load(gpointer instance, GVariant *state, GError **error)
{
  return sieve_rng_load(&((TestOpt *) instance)->rng, state, error);
}

static const SieveOptimizerClass test_class = {
    .create = test_create, .destroy = g_free, .ask = test_ask, .tell = test_tell, .save = test_save, .load = test_load,
};
