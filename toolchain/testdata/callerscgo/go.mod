module example.com/callerscgo

go 1.26
