module parkbench/{{name}}

go 1.26
