#!/usr/bin/env bash
# bench/fleet.py --profile: the module interpreter (ansible_python_interpreter), wrapped. Runs
# $DROVER_BENCH_PYTHON with the arguments it was given and appends to $DROVER_BENCH_MODULE_LOG one record per
# run: "M <start> <end> <module file>", then the output of `times` (this shell's CPU time, then its
# children's: the module process's user and sys seconds). Builtins only around the run, so the wrapper adds
# no process of its own.
start=$EPOCHREALTIME
"$DROVER_BENCH_PYTHON" "$@"
rc=$?
end=$EPOCHREALTIME
{
  printf 'M %s %s %s\n' "$start" "$end" "${1##*/}"
  times
} >>"$DROVER_BENCH_MODULE_LOG"
exit $rc
