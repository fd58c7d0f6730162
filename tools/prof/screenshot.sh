#!/usr/bin/env bash
# Loads a reprise-prof page in headless Chromium (Debian's `chromium` package) and saves a
# screenshot: the check that the page renders in a real browser.
#   tools/prof/screenshot.sh page.html out.png
set -euo pipefail
page=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,760 \
         --screenshot="$2" "file://$page" 2>/dev/null
test -s "$2"
