#!/bin/bash
# The GPU checks as one command, for a machine with a CUDA GPU (5.2 minutes on an H200 at
# commit cade424; figures in docs/scale.md):
# the CUDA tests, then benchmarks/bench_gpu.py eager (one and five epochs per round) and
# compiled (text). Needs tabformer's dependencies importable (`make install`, or skorch
# added to an image that has torch); writes each part's output under ${OUT:-gpu_checks}/.
#
#     bash benchmarks/gpu_checks.sh
set -u
out=${OUT:-gpu_checks}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONWARNINGS=ignore PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$PWD
python=${PYTHON:-python3}
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader

echo "=== CUDA tests"
timeout 300 "$python" -m pytest -q -p no:cacheprovider -o addopts="" -m cuda tests/test_cuda.py tests/test_estimators.py tests/test_persistence.py >"$out/pytest_cuda.txt" 2>&1
tail -3 "$out/pytest_cuda.txt"

for epochs in 1 5; do
    echo "=== bench_gpu.py, eager, $epochs epoch(s) per round"
    timeout 300 "$python" benchmarks/bench_gpu.py --epochs "$epochs" 2>&1 | grep -v Warning | tee "$out/bench_eager_$epochs.txt"
done

echo "=== bench_gpu.py --compile --only text"
timeout 300 "$python" benchmarks/bench_gpu.py --compile --only text 2>&1 | grep -v Warning | tail -5 | tee "$out/bench_compile.txt"
