module linetopc

go 1.26
