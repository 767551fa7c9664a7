#!/usr/bin/env bash
# A whole GPU session on lent machines whose calls stop at 10 minutes: the jobs run in their own process
# session (so they outlive a call), and every call waits for them, then packs what has finished into $OUT.
#
# Device calls (carry [".te", ".whl"]), one right after the other:
#   bash scripts/gpu-session.sh start [SECONDS] [PLAN]   install, start the plan, then wait like `wait`
#   bash scripts/gpu-session.sh wait [SECONDS]           wait up to SECONDS (default 540) and pack
# Back here: tar xzf <files_at>/<job>.tar.gz -C .gpu-results, for the jobs below.
#
# Plans:
#   x2 (default; kind nvidia-h200-x2), at the same time
#        GPU 1: the full profile, timed as a whole (`full`);
#        GPU 0: `tewatch campaign` (`campaign`, below);
#      then the distributed suite on both GPUs, world sizes 1 and 2 (`distributed`).
#   campaign (kind nvidia-h200): the campaign alone, then the harness against do_bench on the idle GPU
#        (`harness`).
#   ab (kind nvidia-h200): an A/B campaign in rounds (`campaign_ab`): base and head with the four sized
#        slowdowns (AB_PERTURB='' for the base's own code: an A/A), interleaved round by round (three, as
#        the deadline allows: AB_DEADLINE seconds after the plan started), uploaded as pull request 1;
#        with AB_ARMS=3 also an A/A arm of the base's own code (pull request 2), AB_BENCH a regex of the
#        benchmarks to run (asv --bench; all of the quick profile by default), with CUDA_TESTS=1 the
#        emulation's CUDA tests first (`cuda_tests`), and with CHECKS_UNTIL=SECONDS the full profile's
#        general checks after it (`checks`), in chunks, until that many seconds after the plan started.
#   proofs (kind nvidia-h200): three `tewatch campaign`s side by side on one GPU, each with a store of its own:
#        the training suite with training-ln-wgrad-last-microbatch and an A/A arm (pull requests 1 and 2),
#        the kernel and host cases with host-sync-per-call and kernel-split and an A/A arm (3, 4), then the
#        same cases with host-delay-30us and graph-break-linear against that base (5), all within
#        PROOFS_UNTIL seconds (1300).
#   bisect (kind nvidia-h200; started by a second call while `proofs` runs, carry [.te-2.18.0, .te-slice]):
#        TE 2.18.0 into /opt/te/2.18.0 and an interpreter over it; `tewatch bisect` of the CheckpointParity
#        flip from TE_GOOD to TE_BAD and a `tewatch backfill` of that range at stride 16, both over
#        .te-slice/te.git (git clone --bare --depth 99 --branch release_v2.19 of TE) and uploaded to a
#        `tewatch serve` of their own, whose store comes back as bisect_store/kept.sqlite3.
#   Several plans may run at once: each logs to plan-NAME.log, and `wait` waits for all.
#   Every call while `bisect` runs carries .te-slice again: an ignored path a call does not carry is
#   gone from the machine when the call starts, and a bisection reading it stops (it resumes from its
#   state file).
#   quiet (kind nvidia-h200): alone on the GPU, one after the other: `tewatch campaign` of eager te.Linear and the
#        host suite with host-delay-30us and an A/A arm, two rounds within QUIET_HOST_S seconds (430); then a
#        performance bisection (`slow_bisect`) over a history of TE's installed Python made by
#        scripts/slowdown_history.py, uploaded to a `tewatch serve` of its own (slow_store); then, until
#        QUIET_UNTIL seconds after the plan started (1250), the offload cases once (`offload_check`).
#   slow (kind nvidia-h200): that bisection alone, within SLOW_SECONDS over all its invocations (900); with
#        SLOW_RESUME=DIR (carried) it goes on from an earlier machine's: DIR/state.json (slow_bisect's),
#        DIR/slow-work/runs/ (its steps' results, as in slow_store/work.tar.gz) and DIR/kept.sqlite3 (its store)
#        if kept. scripts/slowdown_history.py makes the same commits again from the same TE and perturb.py,
#        so the state's hold (another perturb.py makes other commits from the 12th on).
#   releases (kind nvidia-h200): the quick profile on each TE release of RELEASES, oldest first, each
#        installed side by side by scripts/gpu-te-prefix.sh into /opt/te/VERSION and made the interpreter's
#        by a .pth file for its run (a plan waits up to
#        10 minutes for a prefix: a later call may still be bringing its wheels) and filed under its
#        release commit (`release_VERSION`); then, until RELEASES_UNTIL seconds after the plan started,
#        the full profile's general checks that quick leaves out, release by release in CHECK_RELEASES
#        order (`checks_VERSION`). One release's wheels fit a call: lay each out here in .te-VERSION (the
#        three TE wheels of `TE_VERSION=... prepare-te.sh`), TE's Python needs in .te-deps and .te-cudnn,
#        then call, back to back: (1) carry [.te-2.18.0, .te-deps]: gpu-te-prefix.sh each into /opt/te/;
#        (2) carry [.te-2.19.0, .te-cudnn, .whl]: the same, then `start SECONDS releases`;
#        (3) carry [.te-2.20.2]: gpu-te-prefix.sh, then `wait`; then `wait` until the plan finishes.
# `campaign`: the quick profile on TE as installed (its base run, timed as a whole) and, as pull request
# 1 on the same GPU, again with two documented changes applied at import.
# Every results folder has its own inductor cache (tewatch run's default), so compile times stay cold.
set -uo pipefail
cmd=${1:-wait}
budget=${2:-540}
plan_name=${3:-x2}
results=.gpu-results
perturb=te-ref-slow-quantize,fp8-current-collapsed-transpose
perturb_ab=gemm-slower-5,te-ref-quantize-slower-6,te-ref-rht-slower-12,fp8-current-extra-pass

job() {  # job NAME COMMAND...: run one job, log it, mark it done with its exit code and wall time
  local name=$1 t0=$SECONDS
  shift
  rm -f "$results/$name.packed"  # a job run again is packed again
  echo "== $name: $*"
  TORCHINDUCTOR_COMPILE_THREADS=$compile_threads "$@" >"$results/$name.log" 2>&1
  echo "exit $? after $((SECONDS - t0)) s" >"$results/$name.done"
  echo "== $name: $(cat "$results/$name.done")"
}

source scripts/gpu-chunks.sh
CHUNKS_CHECKS=("^checks\\.CompiledLayer" "^checks\\.(Determinism|CpuOps|NdUpdate|DcpRoundTrip)"
               "^checks\\.CompileSequence" "^checks\\.OddShapes")
CHUNKS_FULL=("^(contracts|gemm|quantize|rht)\\." "^linear\\..*'(eager|default)'\\)$"
             "^linear\\..*'reduce-overhead'\\)$" "^linear\\..*'max-autotune'\\)$")

campaign() {  # campaign SECONDS
  CUDA_VISIBLE_DEVICES=0 job campaign timeout --signal=INT --kill-after=20 "$1" \
    python3 -m tewatch campaign --profile quick --perturb "$perturb" --pr 1 --out "$results/campaign"
}

plan_x2() {
  compile_threads=$(($(nproc) / 2))  # two jobs at a time: each compiles with half of the host's cores
  CUDA_VISIBLE_DEVICES=1 job full in_chunks "$results/full" 980 --profile full -- "${CHUNKS_FULL[@]}" &
  sleep 20  # the two runs start one after the other: asv's machine file is shared
  campaign 900
  wait
  job distributed in_chunks "$results/distributed" 580 --profile full --backends te --machine h200x2 \
    -- "${CHUNKS_DISTRIBUTED[@]}"
}

plan_campaign() {
  compile_threads=$(nproc)
  campaign 1080
  CUDA_VISIBLE_DEVICES=0 job harness python3 scripts/bench_harness.py --repeats 20
}

plan_ab() {
  compile_threads=$(nproc)
  local aa=() bench=() deadline=${AB_DEADLINE:-1480}
  [[ ${AB_ARMS:-2} == 3 ]] && aa=(--aa)
  [[ -n ${AB_BENCH:-} ]] && bench=(--bench "$AB_BENCH")
  if [[ ${CUDA_TESTS:-0} == 1 ]]; then
    CUDA_VISIBLE_DEVICES=0 job cuda_tests python3 -m pytest -q -p no:cacheprovider tests/emulation/test_cuda.py
  fi
  CUDA_VISIBLE_DEVICES=0 job campaign_ab timeout --signal=INT --kill-after=30 $((deadline - SECONDS + 150)) \
    python3 -m tewatch campaign --profile quick --perturb "${AB_PERTURB-$perturb_ab}" --pr 1 "${aa[@]}" "${bench[@]}" \
    --rounds 3 --deadline $((deadline - SECONDS)) --out "$results/campaign_ab"
  if [[ -n ${CHECKS_UNTIL:-} ]]; then
    CUDA_VISIBLE_DEVICES=0 job checks in_chunks "$results/checks" $((CHECKS_UNTIL - SECONDS)) --profile full \
      -- "${CHUNKS_CHECKS[@]}"
  fi
}

# the kernel and host cases: the host suite, compiled and eager te.Linear, the emulation's quantize (which
# kernel-split changes) and the CPU offload cases
KERNEL_BENCH="^(host\\.|offload\\.|linear\\.LinearFwdBwd\\.track_seconds\\('(bf16|fp8-current)', 2, '(eager|default)'\\)"
KERNEL_BENCH+="|quantize\\.Quantize\\.track_seconds\\('torch-ref', 'nvfp4-row')"

campaign_job() {  # campaign_job NAME SECONDS CAMPAIGN-OPTION...: one campaign with a store of its own
  local name=$1 seconds=$2
  shift 2
  CUDA_VISIBLE_DEVICES=0 job "$name" timeout --signal=INT --kill-after=30 "$seconds" \
    python3 -m tewatch campaign --profile quick --out "$results/$name" \
    --db "sqlite:///$PWD/$results/$name.sqlite3" "$@"
}

plan_proofs() {
  # side by side on one GPU, judged on what timing noise does not move (trajectories, kernel names and
  # counts, synchronisations, graph breaks, CPU time): the training suite with its perturbation and an A/A
  # arm (pull requests 1, 2); the kernel and host cases with a host synchronisation and a kernel split and
  # an A/A arm (3, 4), then against the same base a host delay and a graph break (5)
  compile_threads=$(($(nproc) / 4))
  local until=${PROOFS_UNTIL:-1300}
  campaign_job training $((until - 60)) --bench '^training\.' --perturb training-ln-wgrad-last-microbatch \
    --pr 1 --aa --rounds 2 --deadline 60 &
  sleep 20  # one asv machine file
  campaign_job kernels $((until - 380)) --bench "$KERNEL_BENCH" --perturb host-sync-per-call,kernel-split \
    --pr 3 --aa --rounds 2 --deadline $((until - 700))
  campaign_job kernels_host $((until - SECONDS)) --bench "$KERNEL_BENCH" \
    --perturb host-delay-30us,graph-break-linear --pr 5 --base-results "$results/kernels/base-results"
  wait
}

# TE's main between the merge base of 2.18.0 and release_v2.19, and that branch's head
TE_GOOD=868d8d9216da361c666519652115e23688db5211
TE_BAD=b447576330f26e0884909ae054a6f9ad5ec617f2

plan_bisect() {
  # over TE's history (.te-slice/te.git: a shallow bare clone from TE_GOOD to TE_BAD), each commit's Python
  # over TE 2.18.0's binaries: the CheckpointParity flip bisected, and a strided backfill of the checks and
  # contracts, uploaded to a service of its own
  compile_threads=$(($(nproc) / 4))
  local base=/opt/base-2.18.0 site store=$results/bisect_store url=http://127.0.0.1:8791 token
  bash scripts/gpu-te-prefix.sh .te-2.18.0 /opt/te/2.18.0 || return 1
  python3 -m venv --without-pip "$base"
  site=$("$base/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  { echo /opt/te/2.18.0
    python3 -c 'import site; [print(f"import site; site.addsitedir({p!r})") for p in site.getsitepackages()]'
  } >"$site/te-2.18.0.pth"
  "$base/bin/python" -c 'import importlib.metadata as m, transformer_engine.pytorch
print("base: TE", m.version("transformer_engine"))' || return 1
  mkdir -p "$results/bisect_te"
  token=$(local_service "$store" 8791) || return 1
  local common=(--repo .te-slice/te.git --profile quick --base-python "$base/bin/python" --url "$url" --token "$token")
  CUDA_VISIBLE_DEVICES=0 job bisect_te python3 -m tewatch bisect --good "$TE_GOOD" --bad "$TE_BAD" \
    --bench '^contracts\.CheckpointParity\.' --judge correctness --work /tmp/bisect-work \
    --state "$results/bisect_te/state.json" --max-minutes "${BISECT_MINUTES:-14}" "${common[@]}" &
  CUDA_VISIBLE_DEVICES=0 job backfill_te timeout --signal=INT --kill-after=30 "${BACKFILL_SECONDS:-840}" \
    python3 -m tewatch backfill --from "$TE_GOOD" --to "$TE_BAD" --stride 16 --branch main \
    --bench '^(contracts\.(CheckpointParity|CpuRoundTrip|ShapeContract)|checks\.(Determinism|NdUpdate))\.' \
    --work /tmp/backfill-work "${common[@]}" &
  wait
  tar czf "$store/work.tar.gz" --exclude=envs -C /tmp bisect-work backfill-work 2>/dev/null
  python3 -m tewatch detect --branch main --db "sqlite:///$PWD/$store/tewatch.sqlite3" >"$store/detect.log" 2>&1
  keep_store "$store"
}

local_service() {  # local_service STORE PORT: a `tewatch serve` of its own on 127.0.0.1:PORT; prints an admin token
  local store=$1 port=$2 db="sqlite:///$PWD/$1/tewatch.sqlite3"
  mkdir -p "$store"
  if pkill -f "tewatch serve --host 127.0.0.1 --port $port "; then sleep 2; fi  # an earlier plan's, on a warm machine
  python3 -m tewatch db upgrade --db "$db" >/dev/null || return 1
  python3 -m tewatch token create --name gpu-session --scope admin --db "$db" | tail -1
  setsid python3 -m tewatch serve --host 127.0.0.1 --port "$port" --db "$db" --log-level warning \
    >"$store/serve.log" 2>&1 </dev/null &
  local pid=$! waited=0
  until python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
      "http://127.0.0.1:$port/api/v1/health" 2>/dev/null; do
    if ! kill -0 "$pid" 2>/dev/null || ((waited >= 60)); then
      echo "the service on port $port did not start:" >&2
      tail -n 5 "$store/serve.log" >&2
      return 1
    fi
    sleep 1
    waited=$((waited + 1))
  done
  kill -0 "$pid" 2>/dev/null || { echo "port $port answers, but not this service:" >&2; tail -n 5 "$store/serve.log" >&2; return 1; }
}

keep_store() {  # keep_store STORE: a consistent copy of the service's database, and the store marked done
  python3 -c 'import sqlite3, sys; sqlite3.connect(sys.argv[1]).backup(sqlite3.connect(sys.argv[2]))' \
    "$1/tewatch.sqlite3" "$1/kept.sqlite3"
  rm -f "$1.packed"
  touch "$1.done"
}

# eager te.Linear, where host-delay-30us waits (the host suite's linear at 1 and 64 tokens, the linear suite's
# rank 2), and the host suite's quantize beside it, which the delay does not touch
HOST_DELAY_BENCH="^(host\\.HostOverhead\\.track_seconds\\('(bf16|fp8-current|torch-ref)', '(linear|quantize)'"
HOST_DELAY_BENCH+="|linear\\.LinearFwdBwd\\.track_seconds\\('(bf16|fp8-current)', 2, 'eager'\\))"
# TE's GEMMs at the quick profile's shape: what gemm-slower-5 slows down
SLOW_BENCH="^gemm\\.Gemm\\.track_seconds\\('(bf16|fp8-current|fp8-block)'"

plan_quiet() {
  # alone on the GPU, one after the other: the host delay in A/B rounds with an A/A arm (pull requests 1
  # and 2), then a performance bisection over a history of TE's installed Python made by
  # scripts/slowdown_history.py (17 commits, the 12th slows general_gemm by 5 %)
  compile_threads=$(nproc)
  local until=${QUIET_UNTIL:-1250} host_s=${QUIET_HOST_S:-430}
  campaign_job host_delay $((host_s + 150)) --bench "$HOST_DELAY_BENCH" --perturb host-delay-30us --pr 1 --aa \
    --rounds 2 --deadline "$host_s"
  slow_bisect $((until - SECONDS))
  if ((until - SECONDS > 150)); then  # the offload cases' verdicts once more, as the suites now check them
    CUDA_VISIBLE_DEVICES=0 job offload_check in_chunks "$results/offload_check" $((until - SECONDS)) \
      --profile quick -- "^offload\\."
  fi
}

plan_slow() {  # the bisection of plan quiet alone, or resumed from its state file
  compile_threads=$(nproc)
  slow_bisect "${SLOW_SECONDS:-900}"
}

slow_bisect() {  # slow_bisect SECONDS: the bisection's time over every invocation (its state's spent_s included)
  local store=$results/slow_store repo=/tmp/slow-history url=http://127.0.0.1:8792 token package good bad
  package=$(python3 -c 'import importlib.util; print(importlib.util.find_spec("transformer_engine").submodule_search_locations[0])')
  rm -rf "$repo" && mkdir -p "$results/slow_bisect" "$store"
  if [[ -d ${SLOW_RESUME:-} ]]; then  # an earlier machine's state, its steps' results and its store
    cp "$SLOW_RESUME/state.json" "$results/slow_bisect/state.json"
    cp -r "$SLOW_RESUME/slow-work" /tmp/
    [[ -f $SLOW_RESUME/kept.sqlite3 ]] && cp "$SLOW_RESUME/kept.sqlite3" "$store/tewatch.sqlite3"
  else  # a bisection of its own: no state or steps' results left by an earlier plan on this machine
    rm -rf "${results:?}/slow_bisect/state.json" /tmp/slow-work
  fi
  python3 scripts/slowdown_history.py --package-dir "$package" --repo "$repo" >"$results/slow_bisect/history.txt" \
    || return 1
  git -C "$repo" log --reverse --format='%H %s' >>"$results/slow_bisect/history.txt"
  good=$(awk '$1 == "good" {print $2}' "$results/slow_bisect/history.txt")
  bad=$(awk '$1 == "bad" {print $2}' "$results/slow_bisect/history.txt")
  token=$(local_service "$store" 8792) || return 1
  CUDA_VISIBLE_DEVICES=0 job slow_bisect python3 -m tewatch bisect --repo "$repo" --good "$good" --bad "$bad" \
    --bench "$SLOW_BENCH" --judge performance --rounds 2 --profile quick --work /tmp/slow-work \
    --state "$results/slow_bisect/state.json" --max-minutes $(($1 / 60)) --url "$url" --token "$token" \
    --github local/slow-history
  tar czf "$store/work.tar.gz" --exclude=envs -C /tmp slow-work 2>/dev/null
  keep_store "$store"
}

# release -> its commit in TE's repository (the tag; 2.19: release_v2.19's head); none: the version's stand-in
declare -A RELEASE_COMMIT=([2.18.0]=27486e03cfc1fa41f6932dcecdc47c71c47eac3e
                           [2.19.0]=b447576330f26e0884909ae054a6f9ad5ec617f2)
CHUNKS_QUICK=("^(contracts|gemm|quantize|rht)\\." "^linear\\." "^checks\\.")
CHECKS_NOT_QUICK="^checks\\.(OddShapes|CompileSequence|CompiledLayer|DcpRoundTrip)"

with_release() {  # with_release VERSION COMMAND...: the command with that release's TE importable
  local version=$1 waited=0 site
  shift
  while [[ ! -f /opt/te/$version/.installed ]] && ((waited < 600)); do sleep 5; waited=$((waited + 5)); done
  [[ -f /opt/te/$version/.installed ]] || { echo "TE $version was never installed"; return 1; }
  # a .pth in the interpreter's site-packages, not PYTHONPATH: asv starts the cases without PYTHONPATH
  site=$(python3 -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
  printf '%s\n' "/opt/te/$version" /opt/te/deps /opt/te/cudnn >"$site/tewatch-te-release.pth"
  env -u PYTHONPATH python3 -c 'import importlib.metadata as m, transformer_engine.pytorch
print("TE", m.version("transformer_engine"), "imports as the cases will import it")' || return 1
  "$@"
}

release_run() {  # release_run VERSION RESULTS-DIR SECONDS PROFILE CHUNK...
  local version=$1 dir=$2 seconds=$3 profile=$4 commit=()
  shift 4
  [[ -n ${RELEASE_COMMIT[$version]:-} ]] && commit=(--commit "${RELEASE_COMMIT[$version]}")
  with_release "$version" in_chunks "$dir" "$seconds" --profile "$profile" "${commit[@]}" -- "$@"
}

plan_releases() {
  compile_threads=$(nproc)
  local version until=${RELEASES_UNTIL:-1350}
  for version in ${RELEASES:-2.18.0 2.19.0 2.20.2}; do
    CUDA_VISIBLE_DEVICES=0 job "release_$version" release_run "$version" "$results/release_$version" 600 quick \
      "${CHUNKS_QUICK[@]}"
  done
  for version in ${CHECK_RELEASES:-2.20.2 2.18.0 2.19.0}; do
    ((until - SECONDS < 90)) && break
    CUDA_VISIBLE_DEVICES=0 job "checks_$version" release_run "$version" "$results/checks_$version" \
      $((until - SECONDS)) full "$CHECKS_NOT_QUICK"
  done
}

pack() {
  local done name
  for done in "$results"/*.done; do
    [[ -f $done ]] || continue
    name=$(basename "$done" .done)
    if [[ ! -f $results/$name.packed ]]; then
      tar czf "$OUT/$name.tar.gz" -C "$results" --exclude=.inductor-cache --ignore-failed-read "$name" \
        "$name.log" "$name.done" \
        && touch "$results/$name.packed"
    fi
  done
  tail -n 5 "$results"/*.log >"$OUT/progress.txt" 2>/dev/null
  cat "$results"/plan-*.log >"$OUT/plans.log" 2>/dev/null
  true
}

plans_running() {  # true while a plan that was started has not finished
  local log
  for log in "$results"/plan-*.log; do
    [[ -f $log && ! -f ${log%.log}.finished ]] && return 0
  done
  return 1
}

wait_for_plan() {
  local until=$((SECONDS + budget))
  while ((SECONDS < until)) && plans_running; do sleep 5; done
  pack
  cat "$results"/plan-*.log
}

case $cmd in
  start)
    source scripts/gpu-env.sh || exit 1
    nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm --format=csv,noheader
    nvidia-smi topo -m
    [[ $(type -t "plan_$plan_name") == function ]] || { echo "no plan $plan_name (x2, campaign, ab, releases, proofs, bisect, quiet, slow)" >&2; exit 2; }
    # before the plan starts, so that waiting sees it running (an earlier run of it on this machine finished)
    : >"$results/plan-$plan_name.log" && rm -f "$results/plan-$plan_name.finished"
    setsid bash -c "source scripts/gpu-session.sh plan-only; plan_$plan_name; touch $results/plan-$plan_name.finished" \
      >"$results/plan-$plan_name.log" 2>&1 </dev/null &
    budget=$((budget - SECONDS))
    wait_for_plan ;;
  wait)
    export PYTHONPATH=$PWD/service:$PWD/dashboards:$PWD${PYTHONPATH:+:$PYTHONPATH}
    wait_for_plan ;;
  plan-only) ;;  # sourced by the background shell for its functions
  *) echo "usage: $0 start [SECONDS] [x2|campaign|ab|releases|proofs|bisect|quiet|slow] | wait [SECONDS]" >&2; exit 2 ;;
esac
