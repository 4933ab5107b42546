#!/usr/bin/env bash
# Install the official AG-UI client from the npm registry and bundle it for the page
# (agui-client.js beside index.html): the page loads nothing from a CDN.
set -euo pipefail
cd "$(dirname "$0")"
npm install --prefix .npm --no-audit --no-fund "@ag-ui/client@~1.0.0" "esbuild@~0.28.0"
NODE_PATH=.npm/node_modules .npm/node_modules/.bin/esbuild entry.mjs --bundle --format=esm \
  --platform=browser --outfile=agui-client.js --log-level=warning
echo "built $(pwd)/agui-client.js"
