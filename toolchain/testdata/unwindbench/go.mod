module example.com/unwindbench

go 1.26
