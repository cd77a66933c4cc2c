// Article 001's Java program: N virtual threads, each sleeping 10 s, joined; exits when all
// finish. The one change: an optional second argument, the sleep length in milliseconds, held in a
// static field so that the lambda captures nothing and all threads share one Runnable, as the
// article's do.
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

public class VirtualThreads {

    static long sleepMs = 10000;

    public static void main(String[] args) throws InterruptedException {
        int numTasks = Integer.parseInt(args[0]);
        if (args.length > 1) {
            sleepMs = Long.parseLong(args[1]);
        }
        List<Thread> threads = new ArrayList<>();

        for (int i = 0; i < numTasks; i++) {
            Thread thread = Thread.startVirtualThread(() -> {
                try {
                    Thread.sleep(Duration.ofMillis(sleepMs));
                } catch (InterruptedException e) {
                    // Handle exception
                }
            });
            threads.add(thread);
        }

        for (Thread thread : threads) {
            thread.join();
        }
    }
}
