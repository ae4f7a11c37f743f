#!/usr/bin/env bash
# The GPU checks of one session on a lent H100/H200 (torch, timm, scikit-learn, pandas and pytest there; no nbdev, no network):
#   bash tools/gpu_session.sh [OUT]            # OUT: where the logs go (default $OUT, else ./gpu_out); about 8 minutes on an H200
#   bash tools/gpu_session.sh OUT --dry-run    # the same on the CPU with small models (a minute): try it before the device time
# Writes as it goes: nvidia-smi.txt; pytest_gpu.log (tests/test_fast_path.py -k gpu); gpu_speed.log and gpu.json
# (benchmarks/gpu_speed.py --methods all: every method against its own steps' ceiling, the user path, evaluate, Gold);
# gpu_tv.log and gpu_tv.json (LoTUS on resnet18_tv, the network before the authors'); warnings.txt (torch's AccumulateGrad
# stream warning, counted: a normal fast run must print none).
set -u
out=${1:-${OUT:-gpu_out}}; mkdir -p "$out"
export PYTHONPATH=. PYTHONUNBUFFERED=1
speed=(--device cuda); limit=340
if [ "${2:-}" = "--dry-run" ]; then limit=900; speed=(--device cpu --small --models resnet18_small --ft-epochs 2 --more-epochs 1 --check); fi   # tests/test_benchmarks.py reads this run
nvidia-smi > "$out/nvidia-smi.txt" 2>&1
tv=(--device cuda --models resnet18_tv)
if [ "${2:-}" = "--dry-run" ]; then tv=(--device cpu --small --models resnet18_tiny --lotus-epochs 1); fi
timeout 150 python -m pytest -q -p no:cacheprovider tests/test_fast_path.py -k gpu 2>&1 | tee "$out/pytest_gpu.log"
timeout $limit python benchmarks/gpu_speed.py "${speed[@]}" --methods all --json "$out/gpu.json" 2>&1 | tee "$out/gpu_speed.log"
# the earlier network (torchvision's blocks, no max-pool: 'resnet18_tv'), LoTUS alone, beside the authors' ResNet18 timed above
timeout 70 python benchmarks/gpu_speed.py "${tv[@]}" --methods lotus --no-user-path --eval-paths fast --json "$out/gpu_tv.json" 2>&1 | tee "$out/gpu_tv.log"
n=$(cat "$out/pytest_gpu.log" "$out/gpu_speed.log" "$out/gpu_tv.log" | grep -c "AccumulateGrad node's stream")
echo "AccumulateGrad stream warnings: $n" | tee "$out/warnings.txt"
