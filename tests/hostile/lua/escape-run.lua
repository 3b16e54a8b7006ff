-- Hole 1b and 1c: sieve.run of a config that asks for more than the script has.
local file, store = arg[1], arg[2]
local study = sieve.run(file, {store = store})
print("ran", study:count())
