module minimalbench

go 1.22
