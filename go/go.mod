module github.com/kvcache-ai/libmooncake_meta/go

go 1.24
