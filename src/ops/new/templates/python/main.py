# {{name}}: a {{kind}} probe, as `parkbench new probe` wrote it. A task here is an asyncio task;
# replace the work with your program's. What a {{kind}} probe prints: docs/study-files.md (kinds of
# measurement) and docker/README.md (the probe protocol, `result`, `latency` and `note` lines).
import asyncio
import sys
# @kind timed,latency
import time
# @end


def arg(index, default):
    """The index-th argument as a number, or default."""
    if len(sys.argv) <= index:
        return default
    try:
        return int(sys.argv[index])
    except ValueError:
        sys.exit(f"probe: argument {index} must be a whole number, got {sys.argv[index]!r}")


def say(line):
    """Prints a line on stdout and flushes it: the sampler reads stdout line by line."""
    print(line, flush=True)


# @kind steady
def wait_line():
    if not sys.stdin.readline():
        sys.exit("probe: stdin closed")


async def main():
    """probe N: the probe protocol. N tasks parked on one event, released at once."""
    n = arg(1, 1000)
    say("baseline")
    wait_line()
    gate = asyncio.Event()
    tasks = [asyncio.create_task(gate.wait()) for _ in range(n)]
    await asyncio.sleep(0)  # every task runs up to its wait
    say(f"ready tasks={n}")
    wait_line()
    gate.set()
    await asyncio.gather(*tasks)
    say(f"done completed={len(tasks)}")
# @end
# @kind peak
async def main():
    """probe N [SLEEP_MS]: N tasks, each sleeping SLEEP_MS (500); the sampler measures the peak
    memory of the whole run."""
    n, sleep_ms = arg(1, 1000), arg(2, 500)
    await asyncio.gather(*(asyncio.sleep(sleep_ms / 1000) for _ in range(n)))
    say("note every task slept and ended")
# @end
# @kind timed
async def main():
    """probe [BATCHES [OPS]]: BATCHES (20) batches of OPS (1000) task starts and awaits, one
    `result` line each."""
    batches, ops = arg(1, 20), arg(2, 1000)
    for _ in range(batches):
        start = time.perf_counter_ns()
        for _ in range(ops):
            await asyncio.create_task(asyncio.sleep(0))
        say(f"result ns_per_op={(time.perf_counter_ns() - start) / ops:.1f}")
# @end
# @kind latency
async def main():
    """probe [OPS]: OPS (1000) times, the time from creating a task to its first statement, each
    printed as one `latency` line (the sampler merges them into one histogram)."""
    async def started():
        return time.perf_counter_ns()

    for _ in range(arg(1, 1000)):
        start = time.perf_counter_ns()
        took = await asyncio.create_task(started()) - start
        say(f"latency value_ns={took} count=1")
# @end
# @kind reported
async def main():
    """probe N: N tasks, each counting itself; prints what it counted as one `result` line (values
    the program computes itself: sizes, counts, limits)."""
    n = arg(1, 1000)
    count = 0

    async def count_me():
        nonlocal count
        count += 1

    await asyncio.gather(*(count_me() for _ in range(n)))
    say(f"result completed={count}")
# @end


if __name__ == "__main__":
    asyncio.run(main())
