/* sieve: candidates on their way through the pipeline. */
#include <math.h>
#include <sieve/candidate.h>

struct _SieveCandidate {
  SieveGenotype *genotype;
  double fidelity;
  gint64 trial;
  guint workers; /* evaluations at once; 1 until the engine says */
  char *text; /* canonical text, made on first use */
  SieveCandidateReportFunc report;
  gpointer report_data;
  SieveCandidateIntermediateFunc intermediate;
  gpointer intermediate_data;
};

void
sieve_candidate_set_report_func(SieveCandidate *candidate, SieveCandidateReportFunc func, gpointer user_data)
{
  candidate->report = func;
  candidate->report_data = user_data;
}

void
sieve_candidate_report(const SieveCandidate *candidate, const char *text, double fraction_done)
{
  if (candidate->report)
    candidate->report(candidate->report_data, candidate, text, fraction_done);
}

void
sieve_candidate_set_intermediate_func(SieveCandidate *candidate, SieveCandidateIntermediateFunc func,
                                      gpointer user_data)
{
  candidate->intermediate = func;
  candidate->intermediate_data = user_data;
}

gboolean
sieve_candidate_report_intermediate(const SieveCandidate *candidate, gint64 step, double fidelity, double value)
{
  g_return_val_if_fail(candidate != NULL, TRUE);
  if (candidate->intermediate == NULL)
    return TRUE;
  return candidate->intermediate(candidate->intermediate_data, candidate, step, fidelity, value);
}

SieveCandidate *
sieve_candidate_new(SieveGenotype *genotype, double fidelity)
{
  g_return_val_if_fail(genotype != NULL, NULL);
  SieveCandidate *c = g_new0(SieveCandidate, 1);
  c->genotype = genotype;
  c->fidelity = fidelity;
  c->trial = -1;
  c->workers = 1;
  /* Formatting now keeps get_text() free of lazy writes, so candidates can be
   * read from several evaluator threads at once. */
  c->text = sieve_space_format(sieve_genotype_get_space(genotype), genotype);
  return c;
}

void
sieve_candidate_free(SieveCandidate *candidate)
{
  if (candidate == NULL)
    return;
  sieve_genotype_free(candidate->genotype);
  g_free(candidate->text);
  g_free(candidate);
}

const SieveGenotype *
sieve_candidate_get_genotype(const SieveCandidate *candidate)
{
  g_return_val_if_fail(candidate != NULL, NULL);
  return candidate->genotype;
}

const SieveSpace *
sieve_candidate_get_space(const SieveCandidate *candidate)
{
  g_return_val_if_fail(candidate != NULL, NULL);
  return sieve_genotype_get_space(candidate->genotype);
}

double
sieve_candidate_get_fidelity(const SieveCandidate *candidate)
{
  g_return_val_if_fail(candidate != NULL, NAN);
  return candidate->fidelity;
}

gint64
sieve_candidate_get_trial(const SieveCandidate *candidate)
{
  g_return_val_if_fail(candidate != NULL, -1);
  return candidate->trial;
}

void
sieve_candidate_set_trial(SieveCandidate *candidate, gint64 trial)
{
  g_return_if_fail(candidate != NULL);
  candidate->trial = trial;
}

const char *
sieve_candidate_get_text(const SieveCandidate *candidate)
{
  g_return_val_if_fail(candidate != NULL, NULL);
  return candidate->text;
}

guint
sieve_candidate_get_workers(const SieveCandidate *candidate)
{
  g_return_val_if_fail(candidate != NULL, 1);
  return candidate->workers;
}

void
sieve_candidate_set_workers(SieveCandidate *candidate, guint workers)
{
  g_return_if_fail(candidate != NULL && workers >= 1);
  candidate->workers = workers;
}
