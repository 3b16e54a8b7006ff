/* The train evaluator's recipe: the options a candidate's genotype sets.
 *
 *   TrainRecipe *recipe = train_recipe_new(space, train_options, &error);  // at create
 *   SieveTrainOptions o = defaults;
 *   train_recipe_apply(recipe, genotype, &o);                                // per trial
 *
 * Every decision of the space that does not shape the network (the recipe
 * part of a `compose` space, sieve_space_is_architecture) must name an
 * option of the table in train-recipe.c; its domain is checked against the
 * option's range once, at create, so a trial never meets a bad value.
 */
#pragma once

#include <sieve/options.h>
#include <sieve/space.h>
#include <sieve/train.h>

typedef struct _TrainRecipe TrainRecipe;

/* spec: the evaluator's option table, for the ranges and types.  An error
 * names the decision and where it was declared.  (transfer full) */
TrainRecipe *train_recipe_new(const SieveSpace *space, const SieveOptionSpec *spec, GError **error);
void train_recipe_free(TrainRecipe *recipe);
/* Whether a decision of the recipe sets option (some candidates may still
 * leave it at the configured value, where the decision is inactive). */
gboolean train_recipe_sets(const TrainRecipe *recipe, const char *option);
/* Writes the genotype's active recipe decisions into o. */
void train_recipe_apply(const TrainRecipe *recipe, const SieveGenotype *genotype, SieveTrainOptions *o);
/* "epochs, batch_size, lr, ...": what a genotype can set. (transfer none) */
const char *train_recipe_names(void);
