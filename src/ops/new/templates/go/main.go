// Command probe is {{name}}: a {{kind}} probe, as `parkbench new probe` wrote it. A task here is
// a goroutine; replace the work with your program's. What a {{kind}} probe prints:
// docs/study-files.md (kinds of measurement) and docker/README.md (the probe protocol, `result`,
// `latency` and `note` lines).
package main

import (
// @kind steady
	"bufio"
// @end
	"fmt"
	"os"
	"strconv"
	"sync"
// @kind peak,timed,latency
	"time"
// @end
)

// arg is the index-th argument as a number, or def.
func arg(index int, def int) int {
	if len(os.Args) <= index {
		return def
	}
	n, err := strconv.Atoi(os.Args[index])
	if err != nil {
		fmt.Fprintf(os.Stderr, "probe: argument %d must be a whole number, got %q\n", index, os.Args[index])
		os.Exit(2)
	}
	return n
}

// @kind steady
// probe N: the probe protocol. N goroutines parked on one channel, released at once by closing it.
func main() {
	n := arg(1, 1000)
	stdin := bufio.NewReader(os.Stdin)
	waitLine := func() {
		if _, err := stdin.ReadString('\n'); err != nil {
			fmt.Fprintln(os.Stderr, "probe: stdin closed")
			os.Exit(1)
		}
	}
	fmt.Println("baseline")
	waitLine()
	gate := make(chan struct{})
	var started, done sync.WaitGroup
	started.Add(n)
	done.Add(n)
	for i := 0; i < n; i++ {
		go func() {
			started.Done()
			<-gate
			done.Done()
		}()
	}
	started.Wait()
	fmt.Printf("ready tasks=%d\n", n)
	waitLine()
	close(gate)
	done.Wait()
	fmt.Printf("done completed=%d\n", n)
}
// @end
// @kind peak
// probe N [SLEEP_MS]: N goroutines, each sleeping SLEEP_MS (500); the sampler measures the peak
// memory of the whole run.
func main() {
	n, sleepMs := arg(1, 1000), arg(2, 500)
	var wg sync.WaitGroup
	wg.Add(n)
	for i := 0; i < n; i++ {
		go func() {
			time.Sleep(time.Duration(sleepMs) * time.Millisecond)
			wg.Done()
		}()
	}
	wg.Wait()
	fmt.Println("note every goroutine slept and ended")
}
// @end
// @kind timed
// probe [BATCHES [OPS]]: BATCHES (20) batches of OPS (10000) goroutine starts and joins, one
// `result` line each.
func main() {
	batches, ops := arg(1, 20), arg(2, 10000)
	for b := 0; b < batches; b++ {
		start := time.Now()
		for i := 0; i < ops; i++ {
			var wg sync.WaitGroup
			wg.Add(1)
			go wg.Done()
			wg.Wait()
		}
		fmt.Printf("result ns_per_op=%.1f\n", float64(time.Since(start).Nanoseconds())/float64(ops))
	}
}
// @end
// @kind latency
// probe [OPS]: OPS (1000) times, the time from starting a goroutine to its first instruction, each
// printed as one `latency` line (the sampler merges them into one histogram).
func main() {
	ops := arg(1, 1000)
	for i := 0; i < ops; i++ {
		var wg sync.WaitGroup
		var took time.Duration
		wg.Add(1)
		start := time.Now()
		go func() {
			took = time.Since(start)
			wg.Done()
		}()
		wg.Wait()
		fmt.Printf("latency value_ns=%d count=1\n", took.Nanoseconds())
	}
}
// @end
// @kind reported
// probe N: N goroutines, each counting itself; prints what it counted as one `result` line (values
// the program computes itself: sizes, counts, limits).
func main() {
	n := arg(1, 1000)
	var mu sync.Mutex
	var wg sync.WaitGroup
	count := 0
	wg.Add(n)
	for i := 0; i < n; i++ {
		go func() {
			mu.Lock()
			count++
			mu.Unlock()
			wg.Done()
		}()
	}
	wg.Wait()
	fmt.Printf("result completed=%d\n", count)
}
// @end
