#!/usr/bin/env bash
# screenshot.sh renders a runner HTML report to a PNG with headless Chromium,
# to look at the report without a browser.
#
#   bench/screenshot.sh report.html [out.png] [width] [height]
#   bench/screenshot.sh report.json [out.png] [width] [height]
#
# A JSON report is first rendered to HTML (next to the PNG) with
# reports.HTML through `go test ./reports -run TestHTMLFile`, so run it from
# the repository. Needs chromium (Debian: apt-get install -y chromium).
# Defaults: out.png next to the input, 1400 × 3000 pixels.
set -euo pipefail

in=${1:?usage: $0 report.html|report.json [out.png] [width] [height]}
out=${2:-${in%.*}.png}
width=${3:-1400}
height=${4:-3000}

browser=""
for b in chromium chromium-browser google-chrome; do
	if command -v "$b" >/dev/null 2>&1; then
		browser=$b
		break
	fi
done
if [[ -z $browser ]]; then
	echo "screenshot.sh: no chromium found (apt-get install -y chromium)" >&2
	exit 2
fi

case $in in
*.json)
	html=${out%.*}.html
	repo=$(cd "$(dirname "$0")/.." && pwd)
	(cd "$repo" && RUNNER_HTML_REPORT="$(realpath "$in"):$(realpath -m "$html")" \
		go test ./reports/ -run 'TestHTMLFile$' -count=1 >/dev/null)
	;;
*) html=$in ;;
esac

# --no-sandbox: headless runs as root in containers. The report fetches
# nothing, and the --disable flags keep the browser's own services off the
# network. --virtual-time-budget lets the page's script draw the charts
# (uPlot, inlined) before the shot.
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
	--disable-background-networking --disable-component-update --disable-sync \
	--disable-default-apps --disable-extensions --user-data-dir="$profile" \
	--virtual-time-budget=10000 \
	--screenshot="$(realpath -m "$out")" --window-size="$width,$height" \
	"file://$(realpath "$html")" 2>/dev/null
echo "$out"
