#!/usr/bin/env bash
# plurm on a real NVIDIA GPU, in one command, on a node without network:
#
#     bash tests/gpu/device_check.sh          (from anywhere; it works in the repository root)
#
# 1. installs the wheels in .whl/ (pyzmq, msgspec, lark for this Python) into $PLURM_SITE
#    (default /tmp/site) and puts it on PYTHONPATH; a wheel in .whl/fallback/ (nvidia-ml-py,
#    psutil, pluggy) only where that module is missing or, for pynvml, lacks what plurm calls;
# 2. installs plurm (pip install -e ., pure Python); if that fails, or PLURM_NO_INSTALL=1,
#    puts a `plurm` link to the repository on PYTHONPATH (the commands then run as python -m);
# 3. prints the GPU (nvidia-smi), the versions, and saves plurm's raw NVML probe replies;
# 4. runs the gpu-marked tests (tests/gpu) with PLURM_REQUIRE_GPU=1: a missing GPU fails.
#
# Writes to $OUT (default /tmp/plurm-gpu-check): device_check.log, gpu_tests.log,
# probe_detect.json, probe_usage.json, probe_health.json, pytest/ (the tests' daemon logs, job
# output and configuration files).  Exit status: pytest's.  $PYTHON: the interpreter (python3).

set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 2
OUT=${OUT:-/tmp/plurm-gpu-check}
PY=${PYTHON:-python3}
SITE=${PLURM_SITE:-/tmp/site}
mkdir -p "$OUT"

# Every function plurm's NVML backend (accel/backends/nvml.py) calls in pynvml.
PYNVML_NAMES="nvmlInit nvmlShutdown nvmlDeviceGetCount nvmlDeviceGetHandleByIndex nvmlDeviceGetUUID
nvmlDeviceGetPciInfo nvmlDeviceGetMemoryInfo nvmlDeviceGetNumaNodeId nvmlDeviceGetMinorNumber
nvmlDeviceGetName nvmlDeviceGetUtilizationRates nvmlDeviceGetTotalEccErrors nvmlDeviceGetTemperature
nvmlEventSetCreate nvmlDeviceRegisterEvents nvmlEventSetWait_v2 nvmlEventSetFree
nvmlEventTypeXidCriticalError NVML_MEMORY_ERROR_TYPE_UNCORRECTED NVML_VOLATILE_ECC NVML_TEMPERATURE_GPU
NVMLError NVMLError_LibraryNotFound NVMLError_DriverNotLoaded NVMLError_GpuIsLost"

step() { printf '\n=== %s (at %ss) ===\n' "$*" "$SECONDS"; }

# Install wheels into $SITE: with pip, else by unpacking them (a wheel is a zip of its files).
install_wheels() {
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "$@" ||
        "$PY" -c 'import sys, zipfile; [zipfile.ZipFile(w).extractall(sys.argv[1]) for w in sys.argv[2:]]' "$SITE" "$@"
}

usable() {  # usable MODULE: importable (pynvml: with every function plurm calls)
    if [ "$1" = pynvml ]; then
        "$PY" -c 'import sys, pynvml; missing = [n for n in sys.argv[1:] if not hasattr(pynvml, n)]
sys.exit(f"pynvml {pynvml.__file__} lacks {missing}" if missing else 0)' $PYNVML_NAMES
    else
        "$PY" -c "import $1" 2>/dev/null
    fi
}

install_plurm() {
    if [ "${PLURM_NO_INSTALL:-}" != 1 ] &&
        PLURM_NO_EXTENSIONS=1 timeout 120 "$PY" -m pip install -q --no-deps --no-build-isolation --no-index -e . &&
        (cd /tmp && "$PY" -c 'import plurm.accel.detect, plurm.nodeagent.daemon, plurm.tools.sbatch'); then
        echo "plurm installed (editable)"
        return 0
    fi
    local link
    link=$(mktemp -d /tmp/plurm-path.XXXXXX)
    ln -s "$PWD" "$link/plurm"
    export PYTHONPATH="$link${PYTHONPATH:+:$PYTHONPATH}"
    echo "plurm from $link/plurm -> $PWD on PYTHONPATH (commands run as python -m)"
}

probe() {  # probe OP: plurm's NVML probe, as plurmd runs it, reply saved to $OUT/probe_OP.json
    local rc
    (cd /tmp && timeout 120 "$PY" -m plurm.accel.probe nvml --op "$1") > "$OUT/probe_$1.json" 2> "$OUT/probe_$1.err"
    rc=$?
    echo "probe --op $1 (exit $rc): $(head -c 3000 "$OUT/probe_$1.json")"
    [ -s "$OUT/probe_$1.err" ] && echo "  stderr: $(tail -c 1000 "$OUT/probe_$1.err")"
    return 0
}

main() {
    step "machine"
    uname -a; id; nproc
    free -m 2>/dev/null | head -2
    echo "python: $(command -v "$PY") -> $("$PY" -c 'import sys; print(sys.executable, sys.version)')"

    step "wheels"
    mkdir -p "$SITE"
    export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
    local wheels=(.whl/*.whl)
    if [ -e "${wheels[0]}" ]; then
        install_wheels "${wheels[@]}" || { echo "FAILED: installing ${wheels[*]}"; return 2; }
        echo "installed into $SITE: ${wheels[*]##*/}"
    else
        echo "no wheels in .whl/"
    fi
    local wheel module
    for wheel in .whl/fallback/*.whl; do
        [ -e "$wheel" ] || continue
        case ${wheel##*/} in
            nvidia_ml_py-*) module=pynvml ;;
            *) module=${wheel##*/}; module=${module%%-*} ;;
        esac
        if usable "$module"; then
            echo "$module: the machine's own"
        else
            install_wheels "$wheel" && echo "$module: installed from $wheel"
        fi
    done
    local missing=0
    for module in zmq msgspec lark pluggy psutil pynvml pytest; do
        usable "$module" || { echo "FAILED: python module $module unusable"; missing=1; }
    done
    [ "$missing" = 0 ] || return 2

    step "plurm"
    install_plurm
    (cd /tmp && "$PY" -c 'import plurm, plurm.corescheduler.controller as c; print("import plurm:", plurm.__file__)') ||
        { echo "FAILED: import plurm"; return 2; }

    step "nvidia-smi"
    if command -v nvidia-smi; then
        timeout 60 nvidia-smi
        timeout 60 nvidia-smi -q | head -60
        timeout 60 nvidia-smi --query-gpu=index,name,uuid,pci.bus_id,memory.total --format=csv,noheader,nounits
    else
        echo "nvidia-smi: not found"
    fi
    ls -l /dev/nvidia* 2>&1 | head -20

    step "versions"
    "$PY" - <<'EOF'
import importlib.metadata as md
import sys

print("python", sys.version.split()[0], sys.executable)
for dist in ("torch", "nvidia-ml-py", "pyzmq", "msgspec", "lark", "pluggy", "psutil", "pytest", "pytest-timeout",
             "setuptools", "Cython", "plurm"):
    try:
        print(f"  {dist} {md.version(dist)}")
    except md.PackageNotFoundError:
        print(f"  {dist}: not installed")
import pynvml
print("pynvml from", pynvml.__file__)
try:
    import torch
    print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available(),
          "devices", torch.cuda.device_count())
except Exception as exc:
    print("torch:", type(exc).__name__, exc)
EOF

    step "plurm NVML probe (raw replies)"
    echo '{}' > "$OUT/probe_request_detect.json"
    probe detect < "$OUT/probe_request_detect.json"
    "$PY" -c 'import json, sys; reply = json.load(open(sys.argv[1]))
json.dump({"devices": reply.get("result") or []}, sys.stdout)' "$OUT/probe_detect.json" > "$OUT/probe_request.json"
    probe usage < "$OUT/probe_request.json"
    probe health < "$OUT/probe_request.json"

    step "tests (tests/gpu, -m gpu)"
    # The tests' files stay on local disk (the controller's SQLite state wants a real file
    # system); their logs, job output and configuration files are copied to $OUT after.
    local rc tmp=/tmp/plurm-gpu-pytest
    PLURM_REQUIRE_GPU=1 timeout -k 15 300 "$PY" -m pytest -m gpu tests/gpu -v -rA -p no:cacheprovider -o addopts="" \
        --basetemp="$tmp" 2>&1 | tee "$OUT/gpu_tests.log"
    rc=${PIPESTATUS[0]}
    mkdir -p "$OUT/pytest"
    (cd "$tmp" 2>/dev/null && find . -type f \( -name '*.log' -o -name '*.out' -o -name '*.conf' \) \
        -exec cp --parents {} "$OUT/pytest" \;)
    if [ "$rc" = 0 ]; then echo "DEVICE CHECK PASSED"; else echo "DEVICE CHECK FAILED (pytest exit $rc)"; fi
    return "$rc"
}

SECONDS=0
main 2>&1 | tee "$OUT/device_check.log"
rc=${PIPESTATUS[0]}
echo "device_check.sh: exit $rc after ${SECONDS}s" | tee -a "$OUT/device_check.log"
exit "$rc"
