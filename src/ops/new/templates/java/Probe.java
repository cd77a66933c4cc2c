// {{name}}: a {{kind}} probe, as `parkbench new probe` wrote it. A task here is a virtual thread;
// replace the work with your program's. What a {{kind}} probe prints: docs/study-files.md (kinds of
// measurement) and docker/README.md (the probe protocol, `result`, `latency` and `note` lines).
import java.util.ArrayList;
import java.util.List;
// @kind steady
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.concurrent.CountDownLatch;
// @end
// @kind reported
import java.util.concurrent.atomic.AtomicLong;
// @end

public class Probe {
    /** The index-th argument as a number, or def. */
    static long arg(String[] args, int index, long def) {
        if (args.length < index) return def;
        try {
            return Long.parseLong(args[index - 1]);
        } catch (NumberFormatException e) {
            System.err.println("probe: argument " + index + " must be a whole number, got \"" + args[index - 1] + "\"");
            System.exit(2);
            return def;
        }
    }

    /** Prints a line on stdout and flushes it: the sampler reads stdout line by line. */
    static void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    static void joinAll(List<Thread> threads) throws InterruptedException {
        for (Thread t : threads) t.join();
    }

// @kind steady
    static void waitLine(BufferedReader in) throws Exception {
        if (in.readLine() == null) {
            System.err.println("probe: stdin closed");
            System.exit(1);
        }
    }

    /** probe N: the probe protocol. N virtual threads parked on one latch, released at once. */
    public static void main(String[] args) throws Exception {
        long n = arg(args, 1, 1000);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        say("baseline");
        waitLine(in);
        CountDownLatch parked = new CountDownLatch((int) n), gate = new CountDownLatch(1);
        List<Thread> threads = new ArrayList<>();
        for (long i = 0; i < n; i++) {
            threads.add(Thread.ofVirtual().start(() -> {
                parked.countDown();
                try {
                    gate.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }));
        }
        parked.await();
        say("ready tasks=" + n);
        waitLine(in);
        gate.countDown();
        joinAll(threads);
        say("done completed=" + threads.size());
    }
// @end
// @kind peak
    /** probe N [SLEEP_MS]: N virtual threads, each sleeping SLEEP_MS (500); the sampler measures
     * the peak memory of the whole run. */
    public static void main(String[] args) throws Exception {
        long n = arg(args, 1, 1000), sleepMs = arg(args, 2, 500);
        List<Thread> threads = new ArrayList<>();
        for (long i = 0; i < n; i++) {
            threads.add(Thread.ofVirtual().start(() -> {
                try {
                    Thread.sleep(sleepMs);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }));
        }
        joinAll(threads);
        say("note every virtual thread slept and ended");
    }
// @end
// @kind timed
    /** probe [BATCHES [OPS]]: BATCHES (20) batches of OPS (10000) virtual thread starts and joins,
     * one `result` line each. */
    public static void main(String[] args) throws Exception {
        long batches = arg(args, 1, 20), ops = arg(args, 2, 10000);
        for (long b = 0; b < batches; b++) {
            long start = System.nanoTime();
            for (long i = 0; i < ops; i++) Thread.ofVirtual().start(() -> {}).join();
            say(String.format("result ns_per_op=%.1f", (System.nanoTime() - start) / (double) ops));
        }
    }
// @end
// @kind latency
    /** probe [OPS]: OPS (1000) times, the time from starting a virtual thread to its first
     * statement, each printed as one `latency` line (the sampler merges them into one histogram). */
    public static void main(String[] args) throws Exception {
        long ops = arg(args, 1, 1000);
        long[] started = new long[1];
        for (long i = 0; i < ops; i++) {
            long start = System.nanoTime();
            Thread.ofVirtual().start(() -> started[0] = System.nanoTime()).join();
            say("latency value_ns=" + (started[0] - start) + " count=1");
        }
    }
// @end
// @kind reported
    /** probe N: N virtual threads, each counting itself; prints what it counted as one `result`
     * line (values the program computes itself: sizes, counts, limits). */
    public static void main(String[] args) throws Exception {
        long n = arg(args, 1, 1000);
        AtomicLong count = new AtomicLong();
        List<Thread> threads = new ArrayList<>();
        for (long i = 0; i < n; i++) threads.add(Thread.ofVirtual().start(count::incrementAndGet));
        joinAll(threads);
        say("result completed=" + count.get());
    }
// @end
}
