module stackbench

go 1.26
