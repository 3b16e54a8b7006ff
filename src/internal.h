/* sieve: the engine's own interface between libsieve and the `sieve`
 * command (and the tests).  These functions are exported from the shared
 * library so that the command can call them, but they are declared only in
 * headers that are not installed: they are not part of the plugin ABI and
 * may change between any two versions. */
#pragma once

#define SIEVE_INTERNAL_API __attribute__((visibility("default"))) extern
