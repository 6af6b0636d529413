#!/usr/bin/env bash
# The report's test opens the page in a real headless Chromium, taken from Debian's packages.
# Installs it when missing and this user may (root, or passwordless sudo); otherwise says how.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
    exit 0
fi
SUDO=()
if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        SUDO=(sudo -n)
    else
        echo "note: Chromium is missing and cannot be installed here; the report's browser test will fail." >&2
        echo "      install it with: sudo apt-get install chromium" >&2
        exit 0
    fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "note: no apt-get: install Chromium yourself for the report's browser test" >&2
    exit 0
fi
echo "installing Chromium (Debian package) for the report's browser test"
DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get update -q
DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -q --no-install-recommends chromium
