//go:build tools

// Package tools pins actionlint, which `make verify` runs on .github/workflows (GOWORK=off:
// it stays out of the product's module graph).
package tools

import _ "github.com/rhysd/actionlint/cmd/actionlint"
