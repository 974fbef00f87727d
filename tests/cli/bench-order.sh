#!/usr/bin/env bash
# `overlapsim-validate bench --list` names every testcase of the order table
# (validate/src/testcases/order.hpp), once and in its order: a table entry no
# file registers, or one registered twice, fails here.
#   bench-order.sh OVERLAPSIM_VALIDATE ORDER_HPP
set -euo pipefail
diff <(grep -o '^ *"[a-z0-9_]*",$' "$2" | tr -d ' ",') <("$1" bench --list)
echo "bench order: $(grep -c '^ *"[a-z0-9_]*",$' "$2") testcases, as the table lists them"
