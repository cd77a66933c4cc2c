package main

import (
	"fmt"
	"os"
	"strings"
)

// Config is read from the command line.
type Config struct {
	Tasks   int
	Workers int
}

func parse(args []string) Config {
	c := Config{Tasks: 1000, Workers: 4}
	if len(args) > 1 {
		fmt.Sscan(args[1], &c.Tasks)
	}
	if len(args) > 2 {
		fmt.Sscan(args[2], &c.Workers)
	}
	return c
}

func run(c Config) int {
	done := 0
	for i := 0; i < c.Tasks; i++ {
		done++
	}
	return done
}

func main() {
	c := parse([]string{"probe", "10"})
	fmt.Println(strings.Repeat("=", 3), run(c))
}
