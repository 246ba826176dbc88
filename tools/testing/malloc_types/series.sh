#!/usr/bin/env bash
# `make series`: the kernel patch series, as git format-patch writes it, with
# its cover letter, in DIR (default: outgoing/ in the repository).
#   series.sh [DIR]
# SIGNOFF="Name <email>" sets From: and Signed-off-by: (default: the
# repository's git identity). See series.py.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
mt_step "series"
export MT_ROOT KERNEL_PKG KERNEL_PKG_VERSION
exec python3 "$MT_DIR/series.py" write "${1:-$MT_ROOT/outgoing}"
