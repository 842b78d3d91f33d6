module conformance-adapter

go 1.21
