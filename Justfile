# parkbench — reproducible runtime benchmarks in pinned containers.

set shell := ["bash", "-euo", "pipefail", "-c"]

bin := "target/release/parkbench"

# List the recipes.
default:
    @just --list

# Build the driver (release).
driver:
    cargo build --release --locked --quiet

# Check this machine: Engine, cgroups, CPUs, disk, tools.
doctor: driver
    {{bin}} doctor

# Build every pinned image (a no-op when nothing changed) and print the build manifest.
build *ARGS: driver
    {{bin}} build --manifest target/manifest.json {{ARGS}}

# Run a study (default: article 000) with ARGS passed to `parkbench run`.
run *ARGS: driver
    {{bin}} run {{ARGS}}

# The whole job: doctor → build → run (default study, --cpus auto) → report → verdicts → archive.
reproduce *ARGS: driver
    {{bin}} reproduce --cpus auto {{ARGS}}

# Every test: unit, snapshot, README examples, and integration tests against the real Engine.
test:
    cargo test --locked --manifest-path docker/sampler/Cargo.toml
    cargo test --locked --manifest-path docker/echo-load/Cargo.toml
    cargo test --locked -- --test-threads 1

# Formatting and lints, as CI wants them.
lint:
    cargo fmt --all -- --check
    cargo clippy --locked --all-targets -- -D warnings

# Benchmark: cold image build (own empty cache and image namespace) and warm no-op build, in seconds.
bench-build: driver
    #!/usr/bin/env bash
    set -euo pipefail
    export PARKBENCH_NAMESPACE=parkbench-bench PARKBENCH_CACHE="$(mktemp -d)"
    trap '{{bin}} clean --images --cache >/dev/null 2>&1 || true' EXIT
    t0=$(date +%s.%N); {{bin}} build >/dev/null; t1=$(date +%s.%N); {{bin}} build >/dev/null; t2=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN { printf "cold build  %7.1f s\nwarm no-op  %7.1f s\n", b - a, c - b }'

# Benchmark: the WSL-like kernel's cold compile, then again without cache; same sha256 or not.
bench-kernels: driver
    #!/usr/bin/env bash
    set -euo pipefail
    export PARKBENCH_NAMESPACE=parkbench-bench-kernels
    trap '{{bin}} clean --images >/dev/null 2>&1 || true' EXIT
    m=$(mktemp -d)
    sha() { python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print([i for i in m["images"] if i["name"]=="kernel-wsl-like"][0]["binaries"]["/boot/vmlinuz"])' "$1"; }
    t0=$(date +%s); {{bin}} build --only kernel-wsl-like --manifest "$m/a.json" >/dev/null
    t1=$(date +%s); {{bin}} build --only kernel-wsl-like --no-cache --manifest "$m/b.json" >/dev/null; t2=$(date +%s)
    a=$(sha "$m/a.json"); b=$(sha "$m/b.json")
    echo "cold compile   $((t1 - t0)) s  vmlinuz $a"
    echo "no-cache again $((t2 - t1)) s  vmlinuz $b"
    [ "$a" = "$b" ] && echo "same sha256: yes" || { echo "same sha256: NO"; exit 1; }

# Benchmark: rerun ARCHIVE (load-and-verify or rebuild time), then `compare` of its new archive.
bench-rerun ARCHIVE *ARGS: driver
    #!/usr/bin/env bash
    set -euo pipefail
    log=$(mktemp); trap 'rm -f "$log"' EXIT
    new=$({{bin}} rerun "{{ARCHIVE}}" --cpus auto {{ARGS}} 2>"$log" | sed -n 's/^archive: //p' | tail -1)
    grep -E "^(loaded|the archive carries)" "$log" || true
    t0=$(date +%s.%N); {{bin}} compare "$new" "$new" >/dev/null; t1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "compare of two archives without images  %.2f s\n", b - a }'

# Benchmark: the same probe binaries measured in containers and natively, side by side, at 1M tasks.
bench-fidelity *ARGS: driver
    {{bin}} bench fidelity {{ARGS}}

# Benchmark: the echo load generator's ceiling, before (OLD, a commit) and now, side by side: each round runs
# a slice of runtimes-compared (echo-baseline and the four runtime servers, SECS s measured) once per side,
# alternating; per side the median rate of each server and generator ceiling ÷ best runtime server.
bench-loadgen OLD="faf5744" ROUNDS="2" SECS="5": driver
    #!/usr/bin/env bash
    set -euo pipefail
    tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
    mkdir -p "$tmp/old" && git archive "{{OLD}}" docker toolchains results | tar -x -C "$tmp/old"
    load='["--", "/usr/local/bin/echo-load", "--cpus", "{other_cpus}", "--connections", "64", "--bytes", "64", "--warmup-s", "1", "--seconds", "{{SECS}}"]'
    {
      echo 'id: loadgen-bench'
      echo 'title: the echo load generator against each server of runtimes-compared'
      echo 'source: {article: "003", environment: this host, cpus: "0-63"}'
      echo 'protocol: {scales: [1], repeats: 1, order: alternate, cpus: "0-63", settle_ms: 100, samples: 2, interval_ms: 50, timeout_s: 120}'
      echo 'probes:'
      echo "  - {id: echo-baseline, image: echo-load, program: /usr/local/bin/echo-baseline, kind: latency, cpus: 1, args: $load}"
      for r in tokio async-std smol glommio; do
        echo "  - {id: $r-echo, image: runtime-$r, program: /usr/local/bin/echo-server, kind: latency, cpus: 1, args: $load}"
      done
    } > "$tmp/study.yaml"
    for round in $(seq {{ROUNDS}}); do
      for side in old new; do
        repo=$([ "$side" = old ] && echo "$tmp/old" || echo .)
        echo "round $round: $side generator" >&2
        {{bin}} run "$tmp/study.yaml" --repo "$repo" --results "$tmp/$side" --cpus auto >/dev/null 2>"$tmp/$side.log" \
          || { tail -5 "$tmp/$side.log" >&2; exit 1; }
      done
    done
    python3 - "$tmp" "{{OLD}}" <<'EOF'
    import glob, json, statistics, sys
    tmp, old = sys.argv[1], sys.argv[2]
    print(f"generator  server          rounds  qps (median)  generator CPU %  server CPU %  requests/server CPU-s")
    ceilings = {}
    for side in ["old", "new"]:
        by_probe = {}
        for f in glob.glob(f"{tmp}/{side}/loadgen-bench/runs/*/samples.jsonl"):
            for line in open(f):
                s = json.loads(line)
                by_probe.setdefault(s["probe"], []).append(s)
        medians = {}
        for probe in ["echo-baseline", "tokio-echo", "async-std-echo", "smol-echo", "glommio-echo"]:
            ok = [s["results"][0] for s in by_probe.get(probe, []) if s["valid"] and s["results"]]
            if not ok:
                why = next((s["error"] for s in by_probe.get(probe, []) if s["error"]), "no sample")
                print(f"{side:<10} {probe:<15} not measured: {why}")
                continue
            med = lambda k: statistics.median(r[k] for r in ok) if all(k in r for r in ok) else None
            medians[probe] = med("qps")
            per_cpu = med("requests_per_server_cpu_s")
            per_cpu = f"{per_cpu:>21,.0f}" if per_cpu is not None else f"{'not reported':>21}"
            print(f"{side:<10} {probe:<15} {len(ok):>6}  {medians[probe]:>12,.0f}  {med('load_cpu_pct'):>15.1f}  {med('server_cpu_pct'):>12.1f}  {per_cpu}")
        runtimes = {p: q for p, q in medians.items() if p != "echo-baseline"}
        if "echo-baseline" in medians and runtimes:
            best = max(runtimes, key=runtimes.get)
            ceilings[side] = (medians["echo-baseline"], best, runtimes[best])
    for side, label in [("old", f"old ({old})"), ("new", "new (this checkout)")]:
        if side in ceilings:
            c, best, q = ceilings[side]
            print(f"{label}: generator ceiling {c:,.0f} qps (echo-baseline) / best server {q:,.0f} qps ({best}) = {c / q:.2f}x (target 1.50x)")
        else:
            print(f"{label}: ratio not measured (echo-baseline or every runtime server has no valid sample)")
    EOF

# Benchmark: peak memory (ru_maxrss) of article 001's single-binary probes, in containers and natively.
bench-fidelity-peak *ARGS: driver
    {{bin}} bench fidelity --study results/sleep-peak-2024/study.yaml --probes rust-tokio-join,rust-async-std,go-sleep {{ARGS}}
