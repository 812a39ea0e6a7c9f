module example.com/selfwalk

go 1.26
