module example.invalid/polylock/conformance-driver-go

go 1.26.0

require example.invalid/polylock/bindings-go v0.0.0

replace example.invalid/polylock/bindings-go => ../../../../bindings-go
