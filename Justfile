# parkbench — reproducible runtime benchmarks in pinned containers.

set shell := ["bash", "-euo", "pipefail", "-c"]

bin := "target/driver/parkbench"
# Where cargo puts the host's build: under CARGO_TARGET_DIR (or CARGO_BUILD_TARGET_DIR) when it is set; a
# target-dir set in a cargo configuration file is not followed.
host_bin := env_var_or_default("CARGO_TARGET_DIR", env_var_or_default("CARGO_BUILD_TARGET_DIR", "target")) + "/x86_64-unknown-linux-gnu/driver/parkbench"
# The integration tests that run alone (tests/it/main.rs says why).
alone := "hostile:: placing:: isolation:: archive::reproduce_makes_a_reference_run"
alone_skipped := "--skip " + replace(alone, " ", " --skip ")

# List the recipes.
default:
    @just --list

# Build the driver archives carry, self-contained (glibc linked statically): first with this host's cargo,
# then with it in the pinned Rust toolchain image, offline, so that the same sources give the same file on
# every machine (`target/driver/parkbench`; with no Engine, the host's build, and its archives say so).
driver: host-driver
    {{quote(host_bin)}} driver --or-host --out {{bin}}

# The driver built with this host's cargo, self-contained: what builds the pinned one.
[private]
host-driver:
    @echo "compiling the driver with this machine's cargo where its sources changed (from nothing: one to a few minutes, quietly)" >&2
    @RUSTFLAGS="-C target-feature=+crt-static" cargo build --locked --quiet --profile driver --target x86_64-unknown-linux-gnu

# Check this machine: Engine, cgroups, CPUs, disk, tools.
doctor: driver
    {{bin}} doctor

# Build every pinned image (a no-op when nothing changed) and print the build manifest.
[positional-arguments]
build *ARGS: driver
    @{{bin}} build --manifest target/manifest.json "$@"

# Run a study (default: article 000) with ARGS passed to `parkbench run`.
[positional-arguments]
run *ARGS: driver
    @{{bin}} run "$@"

# The whole job: doctor → build → run (default study, --cpus auto) → report → verdicts → archive.
# The pinned driver builds (as `just driver`'s second step) while the study's images build, then runs it all.
# What the recipe adds is said in the environment, so that a --cpus given replaces it (rather than being
# refused as given twice) and a mistyped flag's usage line shows only what was typed.
[positional-arguments]
reproduce *ARGS: host-driver
    @PARKBENCH_PINNED_DRIVER={{bin}} PARKBENCH_CPUS="${PARKBENCH_CPUS:-auto}" {{quote(host_bin)}} reproduce "$@"

# Make STUDY's reference run (results/STUDY/reference/), compared with the one it replaces.
[positional-arguments]
reference STUDY *ARGS: host-driver
    @PARKBENCH_PINNED_DRIVER={{bin}} PARKBENCH_CPUS="${PARKBENCH_CPUS:-auto}" {{quote(host_bin)}} reproduce --reference "${@:2}" "results/$1/study.yaml"

# Every test: unit, snapshot, README examples, and integration tests against the real Engine: two at a
# time, runs waiting for each other's CPUs (three at a time was quicker, but a Go build then read a
# directory of its toolchain image with a file listed twice: docs/development.md); then, one at a time,
# those that need the Engine or the machine to themselves (tests/it/main.rs says why). The second part
# runs even when the first fails.
test:
    cargo test --locked --manifest-path docker/sampler/Cargo.toml
    cargo test --locked --manifest-path docker/echo-load/Cargo.toml
    cargo test --locked --lib --bins -- --test-threads 1
    cargo test --locked --doc
    failed=0; PARKBENCH_WAIT_FOR_CPUS=1 cargo test --locked --test it -- --test-threads 2 {{alone_skipped}} || failed=1; cargo test --locked --test it -- --test-threads 1 {{alone}} || failed=1; exit $failed

# Formatting and lints, as CI wants them.
lint:
    cargo fmt --all -- --check
    cargo fmt --manifest-path docker/sampler/Cargo.toml -- --check
    cargo fmt --manifest-path docker/echo-load/Cargo.toml -- --check
    cargo clippy --locked --all-targets -- -D warnings

# Benchmark: cold image build (own empty cache and image namespace) and warm no-op build, in seconds.
bench-build: driver
    #!/usr/bin/env bash
    set -euo pipefail
    export PARKBENCH_NAMESPACE=parkbench-bench PARKBENCH_CACHE="$(mktemp -d)"
    trap '{{bin}} clean --images --cache >/dev/null 2>&1 || true' EXIT
    t0=$(date +%s.%N); {{bin}} build >/dev/null; t1=$(date +%s.%N); {{bin}} build >/dev/null; t2=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN { printf "cold build  %7.1f s\nwarm no-op  %7.1f s\n", b - a, c - b }'

# Benchmark: article 000's images shipped to a fresh Engine over loopback mutual TLS: bytes, seconds, per GiB, IDs equal.
bench-ship:
    cargo test --test it placing::bench_ship -- --ignored --nocapture --test-threads 1

# Benchmark: runs across hosts on this machine's Engine and two extra ones (loopback mutual TLS): overhead per
# process with three hosts against one, and a study --across the three against a plain local run, claim by claim.
bench-fleet:
    cargo test --test it fleet::bench_fleet -- --ignored --nocapture --test-threads 1

# Benchmark: the WSL-like kernel's cold compile (its root filesystems made first, not timed), then again
# without cache; same sha256 or not.
bench-kernels: driver
    #!/usr/bin/env bash
    set -euo pipefail
    export PARKBENCH_NAMESPACE=parkbench-bench-kernels
    trap '{{bin}} clean --images >/dev/null 2>&1 || true' EXIT
    m=$(mktemp -d)
    sha() { python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print([i for i in m["images"] if i["name"]=="kernel-wsl-like"][0]["binaries"]["/boot/vmlinuz"])' "$1"; }
    {{bin}} build --only base,debian-kbuild >/dev/null
    t0=$(date +%s); {{bin}} build --only kernel-wsl-like --manifest "$m/a.json" >/dev/null
    t1=$(date +%s); {{bin}} build --only kernel-wsl-like --no-cache --manifest "$m/b.json" >/dev/null; t2=$(date +%s)
    a=$(sha "$m/a.json"); b=$(sha "$m/b.json")
    echo "cold compile   $((t1 - t0)) s  vmlinuz $a"
    echo "no-cache again $((t2 - t1)) s  vmlinuz $b"
    [ "$a" = "$b" ] && echo "same sha256: yes" || { echo "same sha256: NO"; exit 1; }

# Benchmark: rerun ARCHIVE (load-and-verify or rebuild time), then `compare` of its new archive.
[positional-arguments]
bench-rerun ARCHIVE *ARGS: driver
    #!/usr/bin/env bash
    set -euo pipefail
    log=$(mktemp); trap 'rm -f "$log"' EXIT
    new=$({{bin}} rerun "$1" --cpus auto "${@:2}" 2>"$log" | sed -n 's/^archive: //p' | tail -1)
    grep -E "^(loaded|the archive carries)" "$log" || true
    t0=$(date +%s.%N); {{bin}} compare "$new" "$new" >/dev/null; t1=$(date +%s.%N)
    awk -v a="$t0" -v b="$t1" 'BEGIN { printf "compare of two archives without images  %.2f s\n", b - a }'

# Benchmark: the kit's overhead per process, three ways side by side in one session: each process in a fresh container
# created just before its start (serial, PARKBENCH_SERIAL_CONTAINERS=1), in a fresh container created ahead (container),
# and as a fresh process in a container kept up for its cell (process); PAIRS rounds of each study, the order rotated.
bench-overhead PAIRS="3" *STUDIES="results/tasks-vs-threads/study.yaml results/async-costs/study.yaml": driver
    #!/usr/bin/env bash
    set -euo pipefail
    log=$(mktemp); trap 'rm -f "$log" "$log.all"' EXIT
    once() { # study mode -> "wall probe ratio ms"
        unset PARKBENCH_SERIAL_CONTAINERS PARKBENCH_ISOLATION
        case "$2" in
            serial) export PARKBENCH_SERIAL_CONTAINERS=1 PARKBENCH_ISOLATION=container ;;
            *) export PARKBENCH_ISOLATION="$2" ;;
        esac
        # Invalid samples (exit 3) still give the run's overhead; any other failure prints its end.
        {{bin}} run "$1" --cpus auto >"$log" 2>&1 || [ $? = 3 ] || { tail -20 "$log" >&2; return 1; }
        sed -n 's/^kit overhead: \([0-9.]*\) s wall for \([0-9.]*\) s of probe lifetimes (\([0-9.]*\)×), \([0-9]*\) ms per process$/\1 \2 \3 \4/p' "$log" | tail -1
    }
    modes=(serial container process)
    printf '%-18s %-9s %9s %9s %8s %14s\n' study isolation wall_s probe_s ratio ms/process
    for study in {{STUDIES}}; do
        name=$(basename "$(dirname "$study")")
        : >"$log.all"
        for p in $(seq 1 {{PAIRS}}); do
            for k in 0 1 2; do
                mode=${modes[$(( (p + k) % 3 ))]}
                r=$(once "$study" "$mode") && [ -n "$r" ] || { echo "no kit overhead line for $study ($mode)" >&2; exit 1; }
                echo "$mode $r" >>"$log.all"
                read -r w pr ra ms <<<"$r"
                printf '%-18s %-9s %9s %9s %8s %14s\n' "$name" "$mode" "$w" "$pr" "$ra" "$ms"
            done
        done
        for mode in "${modes[@]}"; do
            # The mean of each column, and the median ms per process (a busy host makes single runs noisy).
            med=$(awk -v m="$mode" '$1 == m { print $5 }' "$log.all" | sort -n | awk '{ v[NR] = $1 }
                END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }')
            awk -v m="$mode" -v n="$name" -v med="$med" '$1 == m { w += $2; p += $3; r += $4; ms += $5; k++ }
                END { printf "%-18s %-9s %9.1f %9.1f %8.3f %14.0f  (mean of %d runs; median %.0f ms/process)\n", n, m, w / k, p / k, r / k, ms / k, k, med }' "$log.all"
        done
    done

# Benchmark: steal-aware timing. Runs async-costs' timed probes (REPEATS processes each) under the default
# `protocol.drop_batches` and prints per timed cell its batches, how many were dropped and why, and each value's
# CV across processes with the dropped batches and without them (target: ≤ 2 % where they explain the spread).
bench-steal REPEATS="5": driver
    #!/usr/bin/env bash
    set -euo pipefail
    tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
    python3 - "$tmp/study.yaml" {{REPEATS}} <<'EOF'
    import sys, yaml
    study = yaml.safe_load(open("results/async-costs/study.yaml"))
    timed = [p for p in study["probes"] if p.get("kind") == "timed"]
    protocol = dict(study["protocol"], scales=[1], repeats=int(sys.argv[2]))
    out = {"id": "steal-bench", "title": "the timed cells of async-costs", "source": study["source"],
           "protocol": protocol, "probes": timed}
    yaml.safe_dump(out, open(sys.argv[1], "w"), sort_keys=False)
    EOF
    # Invalid samples (exit 3) are counted below; any other failure prints the end of the log.
    {{bin}} run "$tmp/study.yaml" --results "$tmp/runs" --cpus auto >"$tmp/log" 2>&1 || [ $? = 3 ] \
      || { tail -20 "$tmp/log" >&2; exit 1; }
    run=$(realpath "$tmp/runs/steal-bench/runs/latest")
    {{bin}} report "$run" --results "$tmp/runs" >"$tmp/log" 2>&1 || [ $? = 3 ] || { tail -20 "$tmp/log" >&2; exit 1; }
    echo "report: $run/report.md says, per timed cell:"
    grep '^- .* batches dropped' "$run/report.md" || echo "  (no timed cell read its batches)"
    python3 - "$run/summary.json" <<'EOF'
    import json, sys
    summary = json.load(open(sys.argv[1]))
    print(f"{'cell':<18} {'procs':>5} {'batches':>7} {'dropped':>7}  {'why':<32} {'value':<18} {'CV all':>7} {'CV kept':>7}")
    for c in summary["cells"]:
        d = c.get("dropped_batches") or {"batches": 0, "dropped": 0, "by_reason": {}, "cv_with_dropped": {}}
        why = ", ".join(f"{k} {n}" for k, n in d["by_reason"].items()) or "-"
        for key, s in c["stats"].items():
            kept = s.get("cv")
            alls = d["cv_with_dropped"].get(key)
            pct = lambda v: "-" if v is None else f"{v * 100:.2f}%"
            print(f"{c['probe']:<18} {c['valid']:>5} {d['batches']:>7} {d['dropped']:>7}  {why:<32} {key:<18} {pct(alls):>7} {pct(kept):>7}")
    print(f"invalid processes: {summary['invalid']}")
    for i in summary["invalid_samples"]:
        print(f"  {i['probe']} r{i['repeat']}: {i['error']}")
    EOF

# Benchmark: the same probe binaries measured in containers and natively, side by side, at 1M tasks.
[positional-arguments]
bench-fidelity *ARGS: driver
    @{{bin}} bench fidelity "$@"

# Benchmark: the echo load generator's ceiling, before (OLD, a commit) and now, side by side: each round runs
# a slice of runtimes-compared (echo-baseline and the four runtime servers, SECS s measured) once per side,
# alternating; per side the median rate of each server and generator ceiling ÷ best runtime server.
bench-loadgen OLD="faf5744" ROUNDS="2" SECS="5": driver
    #!/usr/bin/env bash
    set -euo pipefail
    tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
    git cat-file -e "{{OLD}}^{commit}" 2>/dev/null \
      || { echo "bench-loadgen: commit {{OLD}} is not in this clone (a shallow clone? git fetch --unshallow)" >&2; exit 1; }
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
    import glob, json, os, statistics, sys
    tmp, old = sys.argv[1], sys.argv[2]
    print("generator  server          procs  qps (median)  generator CPU %  server CPU %  requests/server CPU-s")
    summary = {}
    for side in ["old", "new"]:
        by_probe = {}
        # Each run once (runs/ also holds links to the latest run).
        for f in {os.path.realpath(f) for f in glob.glob(f"{tmp}/{side}/loadgen-bench/runs/*/samples.jsonl")}:
            for line in open(f):
                s = json.loads(line)
                by_probe.setdefault(s["probe"], []).append(s)
        rate, capacity, gen_capacity, gen_cpu = {}, {}, None, []
        for probe in ["echo-baseline", "tokio-echo", "async-std-echo", "smol-echo", "glommio-echo"]:
            ok = [s["results"][0] for s in by_probe.get(probe, []) if s["valid"] and s["results"]]
            if not ok:
                why = next((s["error"] for s in by_probe.get(probe, []) if s["error"]), "no sample")
                print(f"{side:<10} {probe:<15} not measured: {why}")
                continue
            med = lambda f: statistics.median(f(r) for r in ok)
            rate[probe] = med(lambda r: r["qps"])
            # Requests per CPU-second of each side: what it would serve with its CPUs all busy.
            capacity[probe] = med(lambda r: r["qps"] / (r["server_cpu_pct"] / 100))
            if probe == "echo-baseline":
                gen_capacity = med(lambda r: r["qps"] / (r["load_cpu_pct"] / 100))
            gen_cpu.append(med(lambda r: r["load_cpu_pct"]))
            per_cpu = [r.get("requests_per_server_cpu_s") for r in ok]
            per_cpu = f"{statistics.median(per_cpu):>21,.0f}" if None not in per_cpu else f"{'not reported':>21}"
            print(f"{side:<10} {probe:<15} {len(ok):>5}  {rate[probe]:>12,.0f}  {gen_cpu[-1]:>15.1f}  {med(lambda r: r['server_cpu_pct']):>12.1f}  {per_cpu}")
        summary[side] = (rate, capacity, gen_capacity, max(gen_cpu, default=0))
    print()
    for side, label in [("old", f"old ({old})"), ("new", "new (this checkout)")]:
        rate, capacity, gen_capacity, busiest = summary[side]
        runtimes = [p for p in rate if p != "echo-baseline"]
        if "echo-baseline" not in rate or not runtimes:
            print(f"{label}: ratio not measured (echo-baseline or every runtime server has no valid sample)")
            continue
        best = max(runtimes, key=rate.get)
        print(f"{label}: generator ceiling {rate['echo-baseline']:,.0f} qps (echo-baseline) / best server "
              f"{rate[best]:,.0f} qps ({best}) = {rate['echo-baseline'] / rate[best]:.2f}x (target 1.50x)")
        best_cap = max(runtimes, key=capacity.get)
        print(f"{label}: per CPU-second, generator {gen_capacity:,.0f} (its CPUs busy, against echo-baseline) / "
              f"best server {capacity[best_cap]:,.0f} ({best_cap}, its one CPU busy) = {gen_capacity / capacity[best_cap]:.2f}x")
        if busiest < 90:
            print(f"{label}: the generator used at most {busiest:.0f} % of its CPUs: something else held the rate "
                  "(CPUs shared with other work, or round trips), so the rate ratio is not its ceiling; "
                  "the per-CPU-second ratio estimates what a saturated pair would give")
    EOF

# Benchmark: the ETA of first runs. Each study (default: articles 000, tasks-vs-threads and 001; about 1, 1 and 20
# minutes) runs in its own fresh results folder, so no earlier run helps (its committed reference run, found beside
# its study file, does); every progress line is stamped on arrival and its ETA compared with the time truly left
# until the last process ended. Prints each study's table, then per study: how many lines said `ETA unknown` after
# the first 10 % of the processes (target: none), and the worst ETA error from half-way on (target: within 25 %). RUN_ARGS go to `parkbench run` (e.g. --repeats 1).
[positional-arguments]
bench-eta STUDIES="results/wait-1m/study.yaml results/tasks-vs-threads/study.yaml results/sleep-peak-2024/study.yaml" *RUN_ARGS: driver
    #!/usr/bin/env bash
    set -euo pipefail
    tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
    for study in {{STUDIES}}; do
        name=$(basename "$(dirname "$study")")
        echo "== $name"
        # Invalid samples (exit 3) still time.
        {{bin}} run "$study" --results "$tmp/$name" --cpus auto "${@:2}" 2>&1 \
            | while IFS= read -r line; do printf '%s %s\n' "$(date +%s.%N)" "$line"; done >"$tmp/log" \
            || [ "${PIPESTATUS[0]}" = 3 ] || { tail -20 "$tmp/log" >&2; exit 1; }
        python3 - "$tmp/log" "$name" "$tmp/summary" <<'PY'
    import re, sys
    def seconds(clock):  # "1 h 02 min", "12 min 05 s", "42 s"
        units = {"h": 3600, "min": 60, "s": 1}
        return sum(int(n) * units[u] for n, u in re.findall(r"(\d+) (h|min|s)\b", clock))
    rows = [r.rstrip("\n").partition(" ") for r in open(sys.argv[1])]
    # The measuring starts at the plan line (images and guests are ready by then).
    start = float(next((t for t, _, text in rows if text.startswith("plan:")), rows[0][0]))
    lines = [(float(t), m.group(1)) for t, _, text in rows if (m := re.search(r"\[(ETA [^\]]+|done)\]$", text))]
    if not lines:
        sys.exit("bench-eta: the run printed no progress line with an ETA")
    # A round of processes on demand ends with its own `done`; only the run's last one is the end.
    lines = [l for l in lines[:-1] if l[1] != "done"] + lines[-1:]
    end, n = lines[-1][0], len(lines)
    total = end - start
    print(f"{n} processes; {total:.0f} s from the run's first line to its last process's end")
    print(f"{'processes done':>14} {'time done':>9} {'ETA said':>13} {'truly left':>10} {'error':>7}")
    worst = {"processes": None, "time": None}
    unknown = late_unknown = 0
    shown = {max(1, round(n * k / 20)) for k in range(1, 20)}
    for i, (t, eta) in enumerate(lines[:-1], start=1):
        truth, done = end - t, (t - start) / total
        err = None
        if eta == "ETA unknown":
            unknown += 1
            late_unknown += i > n / 10
        elif truth > 0:
            err = (seconds(eta[4:]) - truth) / truth
            # The last seconds are judged by the clock's own resolution (whole seconds, rounded down), not
            # in per cent: only while 5 % of the run and 10 s are left.
            judged = truth >= max(0.05 * total, 10)
            for half, past in (("processes", i >= n / 2), ("time", done >= 0.5)):
                if judged and past:
                    worst[half] = max(worst[half] or 0.0, abs(err))
        if i in shown:
            e = "-" if err is None else f"{err * 100:+.0f}%"
            said = "unknown" if eta == "ETA unknown" else eta[4:]
            print(f"{i:>5} ({i / n * 100:>3.0f} %) {done * 100:>7.0f} % {said:>13} {truth:>9.0f}s {e:>7}")
    print(f"ETA unknown on {unknown} of {n} progress lines, {late_unknown} of them after the first 10 %")
    print(next((text for _, _, text in rows if text.startswith("kit overhead:")), "no kit overhead line"))
    said = {k: "none judged" if v is None else f"{v * 100:.1f} %" for k, v in worst.items()}
    with open(sys.argv[3], "a") as summary:
        summary.write(f"{sys.argv[2]:<18} {n:>9} {late_unknown:>21} {said['processes']:>23} {said['time']:>18}\n")
    PY
    done
    echo
    echo "worst ETA error while at least 5 % of the run and 10 s were left (targets: no ETA unknown after 10 %, within 25 %)"
    printf '%-18s %9s %21s %23s %18s\n' study processes "unknown after 10 %" "from half the processes" "from half the time"
    cat "$tmp/summary"

# Each archive is a whole run of the default study on a hardware class of its own, made of its reference run's
# sample lines by `parkbench bench scale`; peak memory is each command's own max RSS (wait4). Targets: cost linear
# in the archives; 1,000 merged and verified in ≤ 60 s and ≤ 1 GiB (docs/fleet.md#many-archives).
# Benchmark: SIZES archives merged, the merged run verified and compared with the reference: seconds and MiB each.
bench-scale SIZES="10 100 1000": driver
    #!/usr/bin/env bash
    set -euo pipefail
    tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
    python3 - "{{bin}}" "$tmp" {{SIZES}} <<'PY'
    import glob, os, re, subprocess, sys, time
    exe, tmp, sizes = sys.argv[1], sys.argv[2], [int(n) for n in sys.argv[3:]]
    reference = "results/wait-1m/reference/run.tar.gz"
    def timed(log, *args):  # -> (seconds, MiB): wall time and the child's own peak RSS (wait4's rusage)
        t0 = time.monotonic()
        with open(log + ".out", "w") as out, open(log + ".err", "w") as err:
            child = subprocess.Popen([exe, *args], stdout=out, stderr=err)
            _, status, usage = os.wait4(child.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            sys.stderr.write(open(log + ".err").read()[-3000:])
            sys.exit(f"bench-scale: `parkbench {args[0]}` failed")
        return time.monotonic() - t0, usage.ru_maxrss / 1024
    print(f"{'archives':>8} {'samples':>8} {'merge s':>8} {'MiB':>6} {'verify s':>8} {'MiB':>6} {'compare s':>9} {'MiB':>6}")
    rows = []
    for n in sizes:
        d = f"{tmp}/{n}"
        subprocess.run([exe, "bench", "scale", "--runs", str(n), "--out", f"{d}/archives"], check=True, stdout=subprocess.DEVNULL)
        archives = sorted(glob.glob(f"{d}/archives/*.tar.gz"))
        merge = timed(f"{d}/merge", "merge", *archives, "--out", f"{d}/merged")
        merged = re.findall(r"^archive: (\S+)$", open(f"{d}/merge.out").read(), re.M)[-1]
        verify = timed(f"{d}/verify", "verify", merged)
        compare = timed(f"{d}/compare", "compare", reference, merged, "--out", f"{d}/compare")
        folder = merged.removesuffix(".tar.gz")
        samples = sum(1 for _ in open(f"{folder}/samples.jsonl"))
        sizes_mib = {f: os.path.getsize(f"{folder}/{f}") / 2**20 for f in os.listdir(folder) if os.path.isfile(f"{folder}/{f}")}
        rows.append((n, samples, merge, verify, compare, sizes_mib))
        print(f"{n:>8} {samples:>8} {merge[0]:>8.2f} {merge[1]:>6.0f} {verify[0]:>8.2f} {verify[1]:>6.0f} {compare[0]:>9.2f} {compare[1]:>6.0f}", flush=True)
    (n0, _, m0, v0, c0, _), (n1, _, m1, v1, c1, files) = rows[-2] if len(rows) > 1 else rows[0], rows[-1]
    if n1 > n0:
        grow = lambda a, b: (b[0] / n1) / (a[0] / n0)
        print(f"time per archive at {n1} ÷ at {n0} (1.0 is linear): merge {grow(m0, m1):.2f}, verify {grow(v0, v1):.2f}, compare {grow(c0, c1):.2f}")
    for n, _, m, v, _, _ in rows:
        if n == 1000:
            ok = m[0] + v[0] <= 60 and max(m[1], v[1]) <= 1024
            print(f"1,000 archives merged and verified: {m[0] + v[0]:.1f} s, peak {max(m[1], v[1]):.0f} MiB (target ≤ 60 s and ≤ 1024 MiB): {'met' if ok else 'NOT met'}")
    # What a run's files may hold when read back (by merge itself, verify, compare), MiB: the first to fill.
    limits = {"samples.jsonl": 32, "classes.json": 32, **{f: 8 for f in ("summary.json", "verdicts.json", "merge.json", "run.json", "report.md", "classes.md")}}
    full = sorted((int(n1 * limit / files[f]), f, files[f], limit) for f, limit in limits.items() if files.get(f))
    print("merged run of", n1, "read back:", ", ".join(f"{f} {mib:.1f} of {limit} MiB (full at about {at:,} archives)" for at, f, mib, limit in full[:3]))
    print(f"at 100,000 archives, linearly: merge {m1[0] / n1 * 1e5 / 60:.0f} min and {m1[1] / n1 * 1e5 / 1024:.0f} GiB; where it breaks first: docs/fleet.md#many-archives")
    PY

# Benchmark: peak memory (ru_maxrss) of article 001's single-binary probes, in containers and natively.
[positional-arguments]
bench-fidelity-peak *ARGS: driver
    @{{bin}} bench fidelity --study results/sleep-peak-2024/study.yaml --probes rust-tokio-join,rust-async-std,go-sleep "$@"

# Benchmark: a guest process's VM overhead (its VM container's wall time minus the probe's own lifetime) with the
# image's filesystem on a virtio disk (new) and as the whole initramfs (old, PARKBENCH_GUEST_ROOT=initramfs), under
# KERNEL: ROUNDS runs per side, alternating, each one process per probe (article 000's Go and Rust at TASKS tasks);
# prints every process's overhead, then per probe the median of each side and new ÷ old.
bench-guest ROUNDS="2" TASKS="10000" KERNEL="debian-6.1": driver
    #!/usr/bin/env bash
    set -euo pipefail
    tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
    {
      echo 'id: guest-bench'
      echo 'title: the VM overhead of a process under a guest kernel'
      echo 'source: {article: "000", environment: this host, cpus: "0-1"}'
      echo 'protocol: {scales: [{{TASKS}}], repeats: 1, order: alternate, cpus: "0-1", settle_ms: 200, samples: 5, interval_ms: 50, timeout_s: 120, kernels: [{{KERNEL}}]}'
      echo 'probes:'
      echo '  - {id: go, image: go, args: ["--tasks", "{tasks}"], env: {GOMAXPROCS: "{workers}", GOGC: "100"}}'
      echo '  - {id: rust-tokio, image: rust-tokio, args: ["--tasks", "{tasks}", "--workers", "{workers}"]}'
    } > "$tmp/study.yaml"
    for round in $(seq {{ROUNDS}}); do
      if [ $((round % 2)) = 1 ]; then order="old new"; else order="new old"; fi
      for side in $order; do
        if [ "$side" = old ]; then export PARKBENCH_GUEST_ROOT=initramfs; else unset PARKBENCH_GUEST_ROOT; fi
        echo "round $round: $side" >&2
        # Invalid samples (exit 3) still have their times; any other failure prints its end.
        {{bin}} run "$tmp/study.yaml" --results "$tmp/$side" --cpus auto >/dev/null 2>"$tmp/$side.log" \
          || [ $? = 3 ] || { tail -20 "$tmp/$side.log" >&2; exit 1; }
      done
    done
    python3 - "$tmp" <<'EOF'
    import glob, json, statistics, sys
    rows = {}
    print(f"{'side':4} {'probe':11} {'root':9} {'container_s':>11} {'probe_s':>8} {'overhead_s':>10}  valid")
    for side in ("old", "new"):
        for path in sorted(glob.glob(f"{sys.argv[1]}/{side}/*/runs/2*/samples.jsonl")):
            run = json.load(open(path.replace("samples.jsonl", "run.json")))
            root = next((g.get("root", "initramfs") for g in run.get("guests", [])), "?")
            for line in open(path):
                s = json.loads(line)
                t = s.get("timings") or {}
                if t.get("container_ms") is None or t.get("probe_ms") is None:
                    print(f"{side:4} {s['probe']:11} {root:9} not measured: {s.get('error')}")
                    continue
                over = (t["container_ms"] - t["probe_ms"]) / 1000
                rows.setdefault((s["probe"], side), []).append(over)
                print(f"{side:4} {s['probe']:11} {root:9} {t['container_ms'] / 1000:11.2f} {t['probe_ms'] / 1000:8.2f} {over:10.2f}  {s['valid']}")
    print(f"\n{'probe':11} {'old_s':>7} {'new_s':>7} {'new/old':>8}   (median VM overhead per process)")
    for probe in sorted({p for p, _ in rows}):
        old, new = rows.get((probe, "old")), rows.get((probe, "new"))
        if not old or not new:
            print(f"{probe:11} not measured on both sides"); continue
        o, n = statistics.median(old), statistics.median(new)
        print(f"{probe:11} {o:7.2f} {n:7.2f} {n / o:8.3f}")
    EOF

# Benchmark: first run from a clean clone (empty build folder, namespace, cache) to verdicts, per VARIANT, and the
# size of the archive it writes, with the driver inside and with its record alone (`--no-driver`, the one the 3 MB
# target is for: the driver alone is larger). `new` is `just reproduce` as it is: the host's build, then the pinned
# driver built beside the study's images, which it then runs; `serial` builds the pinned driver first, then the
# images (as `just driver` then `reproduce`). Crates are fetched first: a fresh machine downloads them once, the
# network's time.
bench-fresh *VARIANTS="serial new":
    #!/usr/bin/env bash
    set -euo pipefail
    tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
    git clone --quiet --no-hardlinks . "$tmp/repo"
    (cd "$tmp/repo" && cargo fetch --locked --quiet)
    printf '%-6s %9s %9s %9s %10s %9s %12s %14s\n' variant host_s images_s run_s archive_s total_s archive_MB no_driver_MB
    for v in {{VARIANTS}}; do
        case "$v" in
            new|serial) ;;
            *) echo "bench-fresh: unknown variant $v (serial or new)" >&2; exit 2 ;;
        esac
        export PARKBENCH_NAMESPACE="parkbench-fresh-$v" PARKBENCH_CACHE="$tmp/cache-$v"
        target="$tmp/target-$v"; bin="$target/driver/parkbench"; host="$target/x86_64-unknown-linux-gnu/driver/parkbench"
        cleanup() { [ -x "$bin" ] && "$bin" clean --images --cache >/dev/null 2>&1 || true; }
        t0=$(date +%s.%N)
        (cd "$tmp/repo" && RUSTFLAGS="-C target-feature=+crt-static" CARGO_TARGET_DIR="$target" \
            cargo build --locked --quiet --profile driver --target x86_64-unknown-linux-gnu)
        t1=$(date +%s.%N)
        # Every line of the rest, stamped with the seconds since the epoch.
        stamp() { while IFS= read -r line; do printf '%s %s\n' "$(date +%s.%N)" "$line"; done; }
        case "$v" in
            serial) (cd "$tmp/repo" && "$host" driver --out "$bin" 2>&1 && "$bin" reproduce --cpus auto 2>&1) ;;
            *) (cd "$tmp/repo" && "$host" reproduce --pinned-driver "$bin" --cpus auto 2>&1) ;;
        esac | stamp >"$tmp/$v.log" || { cleanup; tail -20 "$tmp/$v.log" >&2; exit 1; }
        t2=$(date +%s.%N)
        archive=$(sed -n 's/^[0-9.]* archive: \(.*\.tar\.gz\) (.*/\1/p' "$tmp/$v.log" | tail -1)
        [ -f "$archive" ] || { cleanup; echo "bench-fresh: no archive in $v's log:" >&2; tail -20 "$tmp/$v.log" >&2; exit 1; }
        full=$(stat -c %s "$archive")
        mv "$archive" "$tmp/$v.tar.gz"
        (cd "$tmp/repo" && "$bin" archive --no-driver "${archive%.tar.gz}" >"$tmp/$v-no-driver.log" 2>&1) \
            || { cleanup; cat "$tmp/$v-no-driver.log" >&2; exit 1; }
        named=$(stat -c %s "$archive")
        cleanup
        grep -E "built in|rootfs ready|imported|^[0-9.]* driver: " "$tmp/$v.log" | cut -d' ' -f2- | sed "s/^/  $v: /" >&2 || true
        # The builds (the driver's and the images') and the machine's check end at the run's image table; the run at
        # the kit overhead line; the rest is report and archive.
        images=$(awk '/ IMAGE +TAG / { t = $1 } END { printf "%.3f", t }' "$tmp/$v.log")
        run=$(awk '/ kit overhead: / { t = $1 } END { printf "%.3f", t }' "$tmp/$v.log")
        awk -v v="$v" -v a="$t0" -v b="$t1" -v c="$t2" -v i="$images" -v r="$run" -v f="$full" -v n="$named" 'BEGIN {
            if (i == 0) i = b; if (r == 0) r = i
            printf "%-6s %9.1f %9.1f %9.1f %10.1f %9.1f %12.2f %14.2f  (targets: total 240 s, no_driver 3 MB)\n", v, b - a, i - b, r - i,
                c - r, c - a, f / 1e6, n / 1e6 }'
    done
