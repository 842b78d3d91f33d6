module scalarkit

go 1.22
