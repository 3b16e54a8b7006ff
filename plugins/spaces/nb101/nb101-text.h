/* The nb101 genotype text: the benchmark's ModelSpec(matrix, ops) (private
 * to the plugin).
 *
 *   matrix=[[0,1,1,1,0,1,0],[0,0,0,0,0,0,1],...,[0,0,0,0,0,0,0]],ops=[input,conv1x1-bn-relu,...,output]
 *
 * parse also takes what Python prints or a NASLib user pastes: an optional
 * `ModelSpec(` ... `)` around it, spaces anywhere between tokens, quoted op
 * names, and a matrix of fewer than 7 vertices (its output becomes vertex 6,
 * the vertices between stay unconnected). */
#pragma once

#include "nb101-cell.h"

/* (transfer full) the canonical text of a 7-vertex cell as written (not pruned). */
char *nb101_text_format(const Nb101Cell *raw);

/* The 7-vertex cell a text writes (not pruned, not checked beyond the
 * form: a square 0/1 matrix, zero on and below the diagonal, ops that start
 * with input and end with output).  FALSE + an error naming the character
 * and what was expected. */
gboolean nb101_text_parse(const char *text, Nb101Cell *raw, GError **error);
