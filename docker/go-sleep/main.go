// Command probe is the parkbench probe for article 001, Go side: the article's program. N
// goroutines each sleep, a sync.WaitGroup waits for all of them, and the program exits; it prints
// nothing.
//
//	probe N [SLEEP_MS]
//
// Changes from the article: an optional second argument, the sleep in milliseconds (default
// 10000, the article's 10 s), so that tests need not wait; it is held in a package-level variable,
// so that each goroutine's closure captures only wg, as the article's does; and no "fmt" import,
// which the article's listing imports without using (Go refuses to compile that).
package main

import (
	"os"
	"strconv"
	"sync"
	"time"
)

var sleep = 10 * time.Second

func main() {
	numRoutines, _ := strconv.Atoi(os.Args[1])
	if len(os.Args) > 2 {
		ms, err := strconv.Atoi(os.Args[2])
		if err != nil {
			panic(err)
		}
		sleep = time.Duration(ms) * time.Millisecond
	}
	var wg sync.WaitGroup
	for i := 0; i < numRoutines; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(sleep)
		}()
	}
	wg.Wait()
}
