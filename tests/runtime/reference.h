/* A naive reference interpreter for SieveGraph, in double precision, that
 * the runtime's forward values and (through central finite differences) its
 * gradients are checked against.  Written from graph.h's definitions alone,
 * loop by loop, with no cleverness a bug could share with a backend.
 *
 *   RefNet *ref = ref_net_new(graph, batch);
 *   ref_net_load_params(ref, runtime, &error);  // the runtime's current values
 *   ref_net_forward(ref, x, labels, SIEVE_MODE_TRAIN);
 *   double loss = ref_net_loss(ref);
 *   const double *y = ref_net_output(ref, node);  // batch * c*h*w, NCHW
 *   ref_net_update_running(ref);                // as a training forward does
 */
#pragma once

#include <sieve/graph.h>
#include <sieve/runtime.h>

G_BEGIN_DECLS

typedef struct _RefNet RefNet;

/* (transfer full) graph must be finished and outlive the RefNet.  Batch norm
 * running statistics start at mean 0, variance 1 (as the runtime's). */
RefNet *ref_net_new(const SieveGraph *graph, guint batch);
void ref_net_free(RefNet *ref);

/* Copies every parameter of runtime (plain layouts, graph.h's shapes),
 * matched by node and name; FALSE + error on a shape the graph disagrees
 * with. */
gboolean ref_net_load_params(RefNet *ref, SieveRuntime *runtime, GError **error);
/* The runtime's parameter i as the reference holds it (transfer none; write
 * through it to perturb the parameter); NULL when not loaded. */
double *ref_net_param(RefNet *ref, guint i);
guint64 ref_net_param_size(RefNet *ref, guint i);

/* Evaluates every live node.  x: batch * input size, plain NCHW; labels:
 * batch class ids, needed when the output is a softmax_ce loss.  Train mode
 * normalises with the batch statistics (biased variance), eval mode with the
 * running ones; neither updates them. */
void ref_net_forward(RefNet *ref, const double *x, const gint32 *labels, SieveMode mode);
/* The same from node `from` on, keeping the outputs of the nodes before it
 * (nodes only read earlier ones): after a change to node from's parameters,
 * what finite differences need.  The kink margin then covers only those
 * nodes. */
void ref_net_forward_from(RefNet *ref, guint from, const double *x, const gint32 *labels, SieveMode mode);
/* (transfer none) node's output of the last forward: batch * c*h*w doubles
 * (batch doubles for a loss: its value repeated, one per example). */
const double *ref_net_output(RefNet *ref, guint node);
/* Frozen ReLUs, as sieve_runtime_freeze_activations: every ReLU and leaky
 * ReLU passes the elements whose input was > 0 in the last forward (and no
 * kink margin is recorded for them); FALSE unfreezes. */
void ref_net_freeze(RefNet *ref, gboolean freeze);
/* (transfer none) the same, writable: perturbing a node's output and
 * running ref_net_forward_from(node + 1) differentiates with respect to it. */
double *ref_net_output_writable(RefNet *ref, guint node);
/* (transfer none) a batch norm node's running mean and variance (c
 * doubles each, writable); NULL for other nodes. */
double *ref_net_running_mean(RefNet *ref, guint node);
double *ref_net_running_var(RefNet *ref, guint node);
/* The loss of the last forward (NAN when the output is not a loss). */
double ref_net_loss(RefNet *ref);
/* The scalar the gradient tests differentiate: the loss when the output is
 * one, else sum(w .* output) (w: batch * output size). */
double ref_net_objective(RefNet *ref, const double *w);
/* The closest the last forward came to a kink: min |x| over the inputs of
 * relu, leaky_relu and elu, |x + 3| and |x - 3| over those of
 * hard_sigmoid and hard_swish, and the gap between the largest and second
 * largest values of every max pooling window.  Finite differences and
 * float32 rounding both need it well away from 0.  G_MAXDOUBLE when none. */
double ref_net_kink_margin(RefNet *ref);
/* Running statistics after the last (train) forward, PyTorch's rule:
 * running = (1 - m) running + m batch, the variance unbiased by n/(n-1). */
void ref_net_update_running(RefNet *ref);

G_END_DECLS
