#!/usr/bin/env bash
# Renders DOT files (graphcap::write_dot, example_debugging's debugging.dot) to PNG with
# Graphviz, installing Debian's graphviz first if `dot` is missing (as root; otherwise says so).
#
#   scripts/render-dot.sh graph.dot [more.dot ...]     writes graph.png next to each file
set -euo pipefail

if [ $# -eq 0 ]; then
  echo "usage: $0 file.dot [file.dot ...]" >&2
  exit 2
fi
if ! command -v dot >/dev/null; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    echo "graphcap: installing graphviz"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz >/dev/null
  else
    echo "graphcap: Graphviz's dot is missing (apt-get install graphviz, as root)" >&2
    exit 1
  fi
fi
for input in "$@"; do
  output="${input%.dot}.png"
  dot -Tpng -Gdpi=110 "$input" -o "$output"
  echo "graphcap: $input -> $output"
done
