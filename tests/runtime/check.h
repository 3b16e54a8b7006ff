/* Shared by the runtime tests: a graph compiled by the runtime beside the
 * reference interpreter, random inputs away from kinks, and the forward and
 * finite-difference comparisons with their tolerances. */
#pragma once

#include <sieve/sieve.h>

#include "reference.h"

G_BEGIN_DECLS

typedef struct {
  SieveGraph *graph; /* owned */
  guint batch;
  SieveRuntime *rt;   /* keep_all, backward */
  SieveRuntime *lean; /* the same without keep_all: buffers shared as in training */
  RefNet *ref;
  gsize in_size, out_size; /* per batch */
  float *x;
  double *xd;
  gint32 *labels;    /* when the output is a loss */
  float *w;          /* projection of a non-loss output: L = sum(w .* y) */
  double *wd;
  guint64 seed;
} Case;

/* (transfer full) takes graph (transfer full, finished); compiles it with
 * keep_all and backward (input_grad as given), 2 threads, parameters from
 * seed; draws an input in [-1, 1], labels and w from seed. */
Case *case_new(SieveGraph *graph, guint batch, guint64 seed, gboolean input_grad);
void case_free(Case *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Case, case_free)

/* Gives every batch norm gamma U[0.5, 1.5] and beta U[-0.5, 0.5] and every
 * bias U[-0.5, 0.5] (the initial 1, 0 and small values would hide mistakes
 * that swap or drop them), through sieve_runtime_set_param. */
void case_randomise_params(Case *c, guint64 seed);
/* Redraws the input (from seeds seed, seed+1, ...) until the reference's
 * kink margin (relu/elu inputs, max pooling ties) is at least margin in a
 * train forward; returns the margin reached. */
double case_pick_input(Case *c, double margin);
/* Reloads the runtime's parameters into the reference and the lean runtime. */
void case_sync(Case *c);

/* Runs both forwards in mode and compares every live node (the loss value
 * for a loss): |rt - ref| <= atol + rtol |ref|.  Returns the worst
 * |rt - ref| / (atol + rtol |ref|). */
double case_check_forward(Case *c, SieveMode mode, double rtol, double atol);
/* Train forward + backward on the runtime; central differences of the
 * reference's objective (step h) for every parameter tensor and, when
 * compiled with input_grad, the input (at most max_entries entries of each,
 * chosen at random when there are more).  The lean runtime's gradients are
 * held to the same finite differences, so that a buffer reused too early
 * (which keep_all would hide) fails too.  Per tensor, with s the largest
 * |finite difference| seen in it: |rt - fd| <= rtol |fd| + atol max(s, S / 100),
 * S the largest |finite difference| of all tensors.
 * Zero gradients everywhere fail (a test that cannot fail is no test);
 * require_all also fails any tensor whose gradient is all zero.  Returns the
 * worst ratio, as case_check_forward. */
double case_check_grads(Case *c, double h, double rtol, double atol, guint max_entries, gboolean require_all);

/* The output node of a loss graph. */
gboolean case_is_loss(const Case *c);

G_END_DECLS
