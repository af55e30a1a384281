#!/usr/bin/env bash
# Build the documentation site with warnings as errors and check it in headless Chromium.
#   tools/docs_check.sh [OUT] [SCREENSHOT_DIR]
# Needs: the extension built in place (python3 setup.py build_ext --inplace), the packages
# of docs/requirements.txt plus websocket-client and nbformat for $PYTHON (default python3),
# and Debian's chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
out=${1:-docs/_build/html}
shots=${2:-}
"$python" -m sphinx -q -W -b html docs "$out"
"$python" tools/run_notebooks.py --check || [ -n "${DOCS_ALLOW_STALE_NOTEBOOKS:-}" ]
"$python" tools/docs_check.py "$out" ${shots:+--screenshots "$shots"}
