#!/usr/bin/env bash
# Prints the line of orders.csv (in the workspace, the current folder) for one order number.
set -euo pipefail
order="${1:?usage: lookup.sh <order>}"
grep -F -- "$order," orders.csv || { echo "order $order not found in orders.csv" >&2; exit 1; }
