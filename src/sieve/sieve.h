/* sieve: the whole public API, for an embedder that wants all of it.  The
 * bundled plugins include each header they use instead, so that a file says
 * what it depends on and keeps compiling when one header stops including
 * another. */
#pragma once

#include <sieve/abi.h>
#include <sieve/candidate.h>
#include <sieve/component.h>
#include <sieve/csv.h>
#include <sieve/data.h>
#include <sieve/evaluator.h>
#include <sieve/graph.h>
#include <sieve/hash.h>
#include <sieve/latency.h>
#include <sieve/model.h>
#include <sieve/node.h>
#include <sieve/optimizer.h>
#include <sieve/options.h>
#include <sieve/plugin.h>
#include <sieve/proxy.h>
#include <sieve/registry.h>
#include <sieve/result.h>
#include <sieve/rng.h>
#include <sieve/runtime.h>
#include <sieve/space.h>
#include <sieve/store.h>
#include <sieve/text.h>
#include <sieve/train.h>
