// Package conformance pins franz-go: `go test github.com/twmb/franz-go/pkg/kgo` runs its integration tests only from
// within a module that requires it (tools/conformance/run.sh).
package conformance

import _ "github.com/twmb/franz-go/pkg/kgo"
