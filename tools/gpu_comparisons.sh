#!/usr/bin/env bash
# The GPU comparisons in one call on a lent H100/H200 (ours after a change against before it, against the authors' code,
# packed units, ViT's time); the machine has torch, timm, scikit-learn, pandas and pytest, no nbdev, no network:
#   bash tools/gpu_comparisons.sh OUT              # about 7-8 minutes on an H200, at most BUDGET seconds (default 515) in all
#   bash tools/gpu_comparisons.sh OUT --dry-run    # every part on the CPU with small models and data (a few minutes)
# Needs, in the repository root: _before/ (the code before the change: _before/lotus_nb, _before/benchmarks) for part c, and
# _authors/src (bash tools/authors_checkout.sh _authors) for part d; a part whose input is missing is skipped and says so.
# Parts, most important first, each under a hard timeout that also never runs past the budget:
#   a  nvidia-smi; the GPU tests (tests/test_fast_path.py -k gpu)
#   b  benchmarks/gpu_speed.py --models resnet18 --methods all: every method against its own ceiling, the user path (this checkout)
#   c  the same for neggrad_plus and salun from _before/ (before the change), in this run
#   d  benchmarks/authors_side_by_side.py: the authors' LoTUS.unlearn and evaluation against ours, same workload and GPU
#   e  benchmarks/packing.py: 1, 2 and 4 LoTUS units at once on one GPU against one at a time
#   f  benchmarks/vit_breakdown.py: where ViT-B/16's LoTUS time goes
# Writes to OUT (8 files at most): summary.txt (the headline lines and the stream-warning count), pytest_gpu.log, gpu_after.json,
# gpu_before.json, side.json, packing.json, vit.json, and all.tgz (every log and JSON); the full logs are in all.tgz.
set -u
out=${1:?usage: tools/gpu_comparisons.sh OUT [--dry-run]}; dry=${2:-}
mkdir -p "$out"; out=$(cd "$out" && pwd)
work=$(mktemp -d /tmp/gpu_comparisons.XXXXXX)
export PYTHONPATH=. PYTHONUNBUFFERED=1
budget=${BUDGET:-515}; start=$SECONDS
sum="$out/summary.txt"; : > "$sum"
say() { echo "$*" | tee -a "$sum"; }
# run PART TIMEOUT LOG CMD...: under min(TIMEOUT, what is left of the budget); its log in $work, its status in the summary
run() {
  local part=$1 limit=$2 log=$3; shift 3
  local left=$(( budget - (SECONDS - start) - 8 ))      # 8 s kept for the packing at the end
  [ "$left" -lt "$limit" ] && limit=$left
  if [ "$limit" -lt 10 ]; then say "[$part] skipped: the budget is spent"; return; fi
  local t0=$SECONDS
  timeout -k 5 "$limit" "$@" > "$work/$log" 2>&1; local rc=$?
  say "[$part] rc=$rc in $((SECONDS - t0)) s (limit $limit s): $*"
}
if [ "$dry" = "--dry-run" ]; then
  dev=cpu
  speed=(--device cpu --small --models resnet18_small --ft-epochs 1 --more-epochs 1 --no-check)
  side=(--device cpu --small --authors-eval-frac 0.5)
  pack=(--device cpu --small); vit=(--device cpu --small)
  T_TEST=200 T_AFTER=150 T_BEFORE=100 T_SIDE=240 T_PACK=200 T_VIT=90; budget=${BUDGET:-1000}
else
  dev=cuda
  speed=(--device cuda --models resnet18 --no-check --gold-frac 0.2 --more-epochs 1)
  side=(--device cuda --authors-eval-frac 0.25)
  pack=(--device cuda); vit=(--device cuda)
  T_TEST=90 T_AFTER=190 T_BEFORE=70 T_SIDE=140 T_PACK=80 T_VIT=45
fi
say "gpu_comparisons $(date -u +%FT%TZ) $(git rev-parse --short HEAD 2>/dev/null) dev=$dev budget=${budget}s"
# a: the card, the GPU tests (on the CPU they are skipped; the dry run runs the CPU tests of the changed code instead)
nvidia-smi > "$work/nvidia-smi.txt" 2>&1 || echo "no nvidia-smi" > "$work/nvidia-smi.txt"
head -n 12 "$work/nvidia-smi.txt" >> "$sum"
if [ "$dev" = cuda ]; then
  run a.tests "$T_TEST" pytest_gpu.log python -m pytest -q -p no:cacheprovider tests/test_fast_path.py -k gpu
else
  run a.tests "$T_TEST" pytest_gpu.log python -m pytest -q -p no:cacheprovider tests/test_fast_path.py -k "gpu or stream or saliency"
fi
tail -n 3 "$work/pytest_gpu.log" >> "$sum"; cp "$work/pytest_gpu.log" "$out/"
# b: after (this checkout)
run b.after "$T_AFTER" gpu_after.log python benchmarks/gpu_speed.py "${speed[@]}" --user-inputs 3 --methods all --json "$work/gpu_after.json"
[ -f "$work/gpu_after.json" ] && cp "$work/gpu_after.json" "$out/"
grep -E "^ +resnet18[_a-z]* +(lotus|neggrad_plus|salun|finetune) " "$work/gpu_after.log" | head -n 12 >> "$sum"
# c: before (the code before the change, from _before/): NegGrad+ and SalUn
if [ -f _before/benchmarks/gpu_speed.py ]; then
  run c.before "$T_BEFORE" gpu_before.log bash -c 'cd _before && PYTHONPATH=. python benchmarks/gpu_speed.py "$@"' _ "${speed[@]}" --methods neggrad_plus,salun --no-user-path --json "$work/gpu_before.json"
  [ -f "$work/gpu_before.json" ] && cp "$work/gpu_before.json" "$out/"
  grep -E "^ +resnet18[_a-z]* +(neggrad_plus|salun) " "$work/gpu_before.log" | sed 's/^/before: /' >> "$sum"
else say "[c.before] skipped: no _before/benchmarks/gpu_speed.py (copy the tree to compare with into _before/)"; fi
# d: the authors' code, side by side
if [ -f _authors/src/unlearning_methods/lotus_class.py ]; then
  run d.side "$T_SIDE" side.log python benchmarks/authors_side_by_side.py --authors _authors "${side[@]}" --json "$work/side.json"
  [ -f "$work/side.json" ] && cp "$work/side.json" "$out/"
  grep -E "^(the same network|ours|theirs|side by side|WARNING)" "$work/side.log" >> "$sum"
else say "[d.side] skipped: no _authors/src (bash tools/authors_checkout.sh _authors)"; fi
# e: packing, f: ViT-B/16's breakdown
run e.packing "$T_PACK" packing.log python benchmarks/packing.py "${pack[@]}" --json "$work/packing.json"
[ -f "$work/packing.json" ] && cp "$work/packing.json" "$out/"; grep -E "^(packing|units|WARNING)" "$work/packing.log" >> "$sum"
run f.vit "$T_VIT" vit.log python benchmarks/vit_breakdown.py "${vit[@]}" --json "$work/vit.json"
[ -f "$work/vit.json" ] && cp "$work/vit.json" "$out/"; grep -E "^(vit|  )" "$work/vit.log" | head -n 12 >> "$sum"
# torch's AccumulateGrad stream warning, counted per log (a normal fast run prints none)
for f in "$work"/*.log; do say "AccumulateGrad stream warnings in $(basename "$f"): $(grep -c "AccumulateGrad node's stream" "$f")"; done
say "total $((SECONDS - start)) s"
cp "$sum" "$work/"; tar -czf "$out/all.tgz" -C "$work" . && rm -rf "$work"
ls -la "$out"
