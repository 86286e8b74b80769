#!/bin/bash
# instructions (cachegrind I refs, in millions) of g++ -fsyntax-only on $1, HEAD's include vs the working tree's
f=$1
for side in head work; do
  inc=/tmp/ct/inc_head/include; [ $side = work ] && inc=/work/main/include
  valgrind --tool=cachegrind --cache-sim=no --trace-children=yes --cachegrind-out-file=/dev/null g++ -std=c++20 -I$inc -isystem /usr/local/cuda/include -fsyntax-only $f 2>&1 | grep "I *refs" | awk -v s=$side '{gsub(",","",$4); t+=$4} END{printf "%s %.0f M\n", s, t/1e6}'
done
