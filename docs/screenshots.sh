#!/usr/bin/env bash
# Screenshots of the MLflow UI as attnlab sets it up, taken by a headless Chromium.
#
# Trains two models (one epoch each) and a tiny sweep into a temporary store, serves it with
# `attnlab ui`, and opens the experiment link that `attnlab ui` prints. Writes, into OUT_DIR
# (default: docs/), as 256-colour PNGs:
#   mlflow-ui-runs.png     the printed link: the runs table, model-training layout, attnlab's view
#   mlflow-ui-default.png  the same experiment opened without it (MLflow's GenAI overview)
#   explorer.png           the attention explorer page of a 3-epoch multihead run, one output
#                          character hovered (docs/explorer_screenshot.py, Playwright)
#   explorer-attribution.png  the same page explained by integrated gradients (its *explain by*)
#
# Usage: docs/screenshots.sh [OUT_DIR]
# Needs: chromium (Debian: apt-get install chromium) and the project's .venv (or ATTNLAB=path).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "${1:-$root/docs}" && cd "${1:-$root/docs}" && pwd)
attnlab=${ATTNLAB:-$root/.venv/bin/attnlab}
python=$(dirname "$attnlab")/python
work=$(mktemp -d)
ui_pid=
cleanup() {
    # SIGTERM: a background job of a script ignores SIGINT. attnlab ui then stops the MLflow server.
    if [ -n "$ui_pid" ]; then kill -TERM "$ui_pid" 2>/dev/null || true; wait "$ui_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

export ATTNLAB_MLFLOW_DIR=$work/mlflow
unset MLFLOW_TRACKING_URI
tiny=(-o train_size=200 -o validation_size=50 -o test_size=50 -o embedding_dim=16 -o hidden_size=16 -o epochs=1)
echo "training two models and a tiny sweep into $ATTNLAB_MLFLOW_DIR" >&2
failed() { cat "$work/train.log" >&2; exit 1; }
"$attnlab" train --scorer scaled_dot --epochs 1 >/dev/null 2>"$work/train.log" || failed
"$attnlab" train --scorer additive --epochs 1 >/dev/null 2>>"$work/train.log" || failed
"$attnlab" sweep --scorer dot,multihead --runner thread --max-parallel 1 "${tiny[@]}" >/dev/null 2>>"$work/train.log" || failed

port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$attnlab" ui --port "$port" >"$work/ui.log" 2>&1 &
ui_pid=$!
for _ in $(seq 1 300); do
    curl -sf "http://127.0.0.1:$port/health" >/dev/null && break
    sleep 1
done
curl -sf "http://127.0.0.1:$port/health" >/dev/null || { cat "$work/ui.log" >&2; exit 1; }
link=$(sed -n 's/^  attnlab-date: //p' "$work/ui.log")
echo "attnlab ui printed: $link" >&2

shot() {  # shot FILE URL: a 1800x800 screenshot of URL in a fresh browser profile, 256 colours
    rm -rf "$work/profile"
    chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$work/profile" \
        --window-size=1800,800 --virtual-time-budget=15000 --screenshot="$1" "$2" 2>/dev/null
    "$python" -c 'import sys; from PIL import Image; Image.open(sys.argv[1]).convert("RGB").quantize(256).save(sys.argv[1], optimize=True)' "$1"
}
shot "$out/mlflow-ui-runs.png" "$link"
shot "$out/mlflow-ui-default.png" "${link%%/runs?*}"

# Last, so the MLflow pictures above do not show its run: a model still short of the target
# after 3 epochs (a few wrong examples), whose snapshots show the alignment forming.
"$attnlab" train --scorer multihead --epochs 3 -o train_size=800 -o target_exact_match=1.0 >/dev/null 2>>"$work/train.log" || failed
page=$(ls -t "$ATTNLAB_MLFLOW_DIR"/artifacts/attnlab-date/*/artifacts/attention/explorer.html | head -n 1)
"$python" "$root/docs/explorer_screenshot.py" "$page" "$out/explorer.png"
"$python" "$root/docs/explorer_screenshot.py" "$page" "$out/explorer-attribution.png" --explain integrated_gradients
ls -l "$out"/mlflow-ui-*.png "$out/explorer.png" "$out/explorer-attribution.png" >&2
