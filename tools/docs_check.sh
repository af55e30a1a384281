#!/usr/bin/env bash
# Build the documentation site with warnings as errors and check it in headless Chromium.
#   tools/docs_check.sh [OUT] [SCREENSHOT_DIR]
# Needs, for $PYTHON (default python3): gpuhost's docs extra (python3 -m pip install '.[docs]',
# which also builds the extension into the checkout), websocket-client and nbformat; and
# Debian's chromium. Every page is checked at 1280 and 390 px (tools/docs_check.py).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
out=${1:-docs/_build/html}
shots=${2:-}
"$python" -m sphinx -q -W -b html docs "$out"
"$python" tools/run_notebooks.py --check || [ -n "${DOCS_ALLOW_STALE_NOTEBOOKS:-}" ]
"$python" tools/docs_check.py "$out" ${shots:+--screenshots "$shots"}
