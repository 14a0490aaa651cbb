#!/usr/bin/env bash
# Install Chromium for the browser tests: the HTML report (tests/report/test_html_report.py) and the
# explorers of notebooks 13 and 00 in JupyterLab (tests/report/test_browser_explorers.py).
#
# The report test opens the report in headless Chromium and fails on console errors, missing figures
# or numbers that differ from results/*.json.  The explorer test drives this same Chromium with
# Playwright for Python (pinned in requirements.lock; it is launched with executable_path, so
# `playwright install`, which downloads its own browsers, is never needed).  Without Chromium both
# are skipped (with the reason).
# Debian / Ubuntu: installs the "chromium" package with apt-get (as root, or through sudo).
# Elsewhere: install Chromium or Google Chrome yourself, or point BIASKIT_CHROMIUM at the binary.
#
# Usage: scripts/install_chromium.sh [--optional]
#   --optional  never fail (print a warning instead): for setups where the browser check may be skipped
set -euo pipefail

optional=0
[[ "${1:-}" == "--optional" ]] && optional=1

fail() {
    echo "install_chromium: $*" >&2
    if [[ $optional -eq 1 ]]; then
        echo "install_chromium: continuing without Chromium (the browser test will be skipped)" >&2
        exit 0
    fi
    exit 1
}

find_chromium() {
    if [[ -n "${BIASKIT_CHROMIUM:-}" && -x "${BIASKIT_CHROMIUM}" ]]; then
        echo "${BIASKIT_CHROMIUM}"
        return 0
    fi
    local name
    for name in chromium chromium-browser google-chrome google-chrome-stable; do
        if command -v "$name" >/dev/null 2>&1; then
            command -v "$name"
            return 0
        fi
    done
    return 1
}

if path=$(find_chromium); then
    echo "Chromium already installed: $path"
    exit 0
fi

command -v apt-get >/dev/null 2>&1 \
    || fail "apt-get not found: install Chromium with your package manager (or set BIASKIT_CHROMIUM)"

sudo=""
if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null 2>&1 || fail "run as root, or install sudo, to install the 'chromium' package"
    sudo="sudo"
fi

echo "Installing Chromium with apt-get (package 'chromium', a few hundred MB)..."
$sudo apt-get update -qq || fail "apt-get update failed"
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    chromium fonts-liberation fonts-dejavu-core \
    || fail "apt-get could not install 'chromium' (on Ubuntu the package may be 'chromium-browser')"

path=$(find_chromium) || fail "Chromium was installed but is not on PATH"
echo "Chromium installed: $path"
