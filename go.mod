module github.com/nanokv/nanokv

go 1.26.8

require github.com/cespare/xxhash/v2 v2.3.0
