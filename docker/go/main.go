// Command probe is the parkbench probe for article 000, Go side: N goroutines, each blocked
// receiving from one shared channel, released at once by closing it.
//
//	probe --tasks N
//
// Probe protocol (see docker/README.md): prints "baseline", waits for a line on stdin, starts
// the goroutines and prints "ready ..." once all of them are parked, waits for a line on stdin,
// closes the channel, waits until every goroutine has finished and prints "done completed=<n>".
//
// The ready line reports:
//
//	goroutines          runtime.NumGoroutine() (N + the main goroutine)
//	stack_inuse_bytes   runtime/metrics "/memory/classes/heap/stacks:bytes", the runtime/metrics
//	                    equivalent of runtime.MemStats.StackInuse (goroutine stacks; in a program
//	                    without cgo it also covers the OS threads' stacks)
//	heap_inuse_bytes    "/memory/classes/heap/objects:bytes" + "/memory/classes/heap/unused:bytes",
//	                    the equivalent of MemStats.HeapInuse
//	waiting_goroutines  "/sched/goroutines/waiting:goroutines" (approximate; includes the
//	                    runtime's own goroutines)
//	gomaxprocs          runtime.GOMAXPROCS(0)
//
// No GC is forced and no memory limit is set; GOGC and GOMAXPROCS come from the environment.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

const (
	mStacks      = "/memory/classes/heap/stacks:bytes"
	mHeapObjects = "/memory/classes/heap/objects:bytes"
	mHeapUnused  = "/memory/classes/heap/unused:bytes"
	mRunnable    = "/sched/goroutines/runnable:goroutines"
	mRunning     = "/sched/goroutines/running:goroutines"
	mWaiting     = "/sched/goroutines/waiting:goroutines"
)

// readMetrics reads the named uint64 metrics of runtime/metrics.
func readMetrics(names ...string) map[string]uint64 {
	samples := make([]metrics.Sample, len(names))
	for i, name := range names {
		samples[i].Name = name
	}
	metrics.Read(samples)
	out := make(map[string]uint64, len(names))
	for _, s := range samples {
		if s.Value.Kind() == metrics.KindUint64 {
			out[s.Name] = s.Value.Uint64()
		}
	}
	return out
}

// waitParked returns once all n goroutines have started, the runtime counts exactly n+1
// goroutines, and the scheduler shows none of them runnable and only the main goroutine
// running, on several polls in a row. It gives up on the scheduler part after a while (the
// metrics are approximate) and reports whether it saw the state settle.
func waitParked(started *atomic.Int64, n int64) bool {
	for started.Load() < n {
		time.Sleep(time.Millisecond)
	}
	const stablePolls = 3
	giveUp := time.Now().Add(10 * time.Second)
	stable := 0
	for stable < stablePolls {
		m := readMetrics(mRunnable, mRunning)
		if int64(runtime.NumGoroutine()) == n+1 && m[mRunnable] == 0 && m[mRunning] <= 1 {
			stable++
		} else {
			stable = 0
			if time.Now().After(giveUp) {
				return false
			}
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

func main() {
	tasks := flag.Int64("tasks", -1, "number of goroutines to park (required)")
	flag.Parse()
	if *tasks < 0 || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: probe --tasks N")
		os.Exit(2)
	}
	n := *tasks
	stdin := bufio.NewReader(os.Stdin)
	waitLine := func() {
		if _, err := stdin.ReadString('\n'); err != nil {
			if err == io.EOF {
				err = fmt.Errorf("stdin closed")
			}
			fmt.Fprintln(os.Stderr, "probe:", err)
			os.Exit(1)
		}
	}

	fmt.Println("baseline")
	waitLine()

	gate := make(chan struct{})
	var started, completed atomic.Int64
	var wg sync.WaitGroup
	wg.Add(int(n))
	for i := int64(0); i < n; i++ {
		go func() {
			started.Add(1)
			<-gate
			completed.Add(1)
			wg.Done()
		}()
	}
	settled := waitParked(&started, n)
	goroutines := runtime.NumGoroutine()
	m := readMetrics(mStacks, mHeapObjects, mHeapUnused, mWaiting)
	settledFlag := 0
	if settled {
		settledFlag = 1
	}
	fmt.Printf("ready tasks=%d goroutines=%d stack_inuse_bytes=%d heap_inuse_bytes=%d waiting_goroutines=%d gomaxprocs=%d settled=%d\n",
		n, goroutines, m[mStacks], m[mHeapObjects]+m[mHeapUnused], m[mWaiting], runtime.GOMAXPROCS(0), settledFlag)
	waitLine()

	close(gate)
	wg.Wait()
	fmt.Printf("done completed=%d\n", completed.Load())
}
