module example.com/mooncake-consumer

go 1.24

require github.com/kvcache-ai/libmooncake_meta/go v0.0.0
