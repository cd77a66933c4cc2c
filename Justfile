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

# Benchmark: kit overhead on short processes, each next container created ahead (new) against created just
# before its start (old, PARKBENCH_SERIAL_CONTAINERS=1), PAIRS alternating runs of each study.
bench-overhead PAIRS="3" *STUDIES="results/tasks-vs-threads/study.yaml": driver
    #!/usr/bin/env bash
    set -euo pipefail
    log=$(mktemp); trap 'rm -f "$log"' EXIT
    once() { # study mode -> "wall probe ratio ms"
        if [ "$2" = old ]; then export PARKBENCH_SERIAL_CONTAINERS=1; else unset PARKBENCH_SERIAL_CONTAINERS; fi
        # Invalid samples (exit 3) still give the run's overhead; any other failure prints its end.
        {{bin}} run "$1" --cpus auto >"$log" 2>&1 || [ $? = 3 ] || { tail -20 "$log" >&2; return 1; }
        sed -n 's/^kit overhead: \([0-9.]*\) s wall for \([0-9.]*\) s of probe lifetimes (\([0-9.]*\)×), \([0-9]*\) ms per process$/\1 \2 \3 \4/p' "$log" | tail -1
    }
    printf '%-18s %-4s %9s %9s %8s %14s\n' study path wall_s probe_s ratio ms/process
    for study in {{STUDIES}}; do
        name=$(basename "$(dirname "$study")")
        : >"$log.all"
        for p in $(seq 1 {{PAIRS}}); do
            if [ $((p % 2)) = 1 ]; then order="old new"; else order="new old"; fi
            for mode in $order; do
                r=$(once "$study" "$mode") && [ -n "$r" ] || { echo "no kit overhead line for $study ($mode)" >&2; exit 1; }
                echo "$mode $r" >>"$log.all"
                read -r w pr ra ms <<<"$r"
                printf '%-18s %-4s %9s %9s %8s %14s\n' "$name" "$mode" "$w" "$pr" "$ra" "$ms"
            done
        done
        for mode in old new; do
            # The mean of each column, and the median ms per process (a busy host makes single runs noisy).
            med=$(awk -v m="$mode" '$1 == m { print $5 }' "$log.all" | sort -n | awk '{ v[NR] = $1 }
                END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }')
            awk -v m="$mode" -v n="$name" -v med="$med" '$1 == m { w += $2; p += $3; r += $4; ms += $5; k++ }
                END { printf "%-18s %-4s %9.1f %9.1f %8.3f %14.0f  (mean of %d runs; median %.0f ms/process)\n", n, m, w / k, p / k, r / k, ms / k, k, med }' "$log.all"
        done
        rm -f "$log.all"
    done

# Benchmark: the same probe binaries measured in containers and natively, side by side, at 1M tasks.
bench-fidelity *ARGS: driver
    {{bin}} bench fidelity {{ARGS}}

# Benchmark: peak memory (ru_maxrss) of article 001's single-binary probes, in containers and natively.
bench-fidelity-peak *ARGS: driver
    {{bin}} bench fidelity --study results/sleep-peak-2024/study.yaml --probes rust-tokio-join,rust-async-std,go-sleep {{ARGS}}
