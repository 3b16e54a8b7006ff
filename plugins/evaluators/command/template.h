/* command evaluator: argument templates with {placeholders}.
 *
 *   CommandTemplate *t = command_template_parse("--lr={lr}", space, &problem);
 *   char *arg = command_template_expand(t, candidate);   // "--lr=0.01"
 *
 * Placeholders: {genotype} (canonical text), {trial} (number), {fidelity}
 * (empty when the evaluator decides), {json} (the parameters as a JSON
 * object) and {NAME} for each decision of the space (empty while the
 * decision is inactive).  The built-in names win over a decision of the
 * same name.  {{ and }} write literal braces.  Templates are parsed once at
 * create() and are read-only afterwards, so expanding is thread-safe.
 */
#pragma once

#include <sieve/candidate.h>
#include <sieve/space.h>

typedef struct _CommandTemplate CommandTemplate;

/* NULL with *problem (transfer full) set to a sentence saying what is wrong
 * ("unknown placeholder {lrr} (did you mean {lr}?); valid: ..."). */
CommandTemplate *command_template_parse(const char *text, const SieveSpace *space, char **problem);
void command_template_free(CommandTemplate *tmpl);
/* (transfer full) */
char *command_template_expand(const CommandTemplate *tmpl, const SieveCandidate *candidate);


G_DEFINE_AUTOPTR_CLEANUP_FUNC(CommandTemplate, command_template_free)
