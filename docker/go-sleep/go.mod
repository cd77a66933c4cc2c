module parkbench/probe

go 1.26
