#!/usr/bin/env bash
# One source for Kafka's error codes: src/kafka/messages/errors.txt, from
# which tools/kgen generates LS_KERR_* into src/kafka/msg_gen.h. Any other
# definition of an LS_KERR_ name (a #define, an enum member) in the C sources
# fails the check: add the code to errors.txt (Kafka's list) and run
# `make gen` instead. Prints one PASS or FAIL line and, on failure, each
# offending file:line.
#
#   tools/lint/check-kafka-errors.sh [ROOT]
set -uo pipefail
ROOT=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
cd "$ROOT" || exit 1
dirs=()
for d in src tests/unit tools bench; do [ -d "$d" ] && dirs+=("$d"); done
# the generated header and its generator are where the names come from
out=$(grep -rnE --include='*.[ch]' \
    -e '^[[:space:]]*#[[:space:]]*define[[:space:]]+LS_KERR_' \
    -e '^[[:space:]]*LS_KERR_[A-Z0-9_]+[[:space:]]*=[^=]' \
    "${dirs[@]}" | grep -vE '^(src/kafka/msg_gen\.[ch]|tools/kgen/kgen\.c):')
if [ -z "$out" ]; then
    echo "PASS lint.kafka_errors_one_source"
    exit 0
fi
printf '%s\n' "$out" | sed 's/^/  /'
echo "FAIL lint.kafka_errors_one_source: LS_KERR_ defined by hand; list the code in src/kafka/messages/errors.txt and run \`make gen\`"
exit 1
