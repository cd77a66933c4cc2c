// Article 001's Java program: N virtual threads, each sleeping 10 s, joined; exits when all
// finish. The one change: an optional second argument, the sleep length in milliseconds.
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

public class VirtualThreads {

    public static void main(String[] args) throws InterruptedException {
        int numTasks = Integer.parseInt(args[0]);
        Duration sleep = Duration.ofMillis(args.length > 1 ? Long.parseLong(args[1]) : 10000);
        List<Thread> threads = new ArrayList<>();

        for (int i = 0; i < numTasks; i++) {
            Thread thread = Thread.startVirtualThread(() -> {
                try {
                    Thread.sleep(sleep);
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
