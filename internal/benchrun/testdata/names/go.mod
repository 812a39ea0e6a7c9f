module names

go 1.26
