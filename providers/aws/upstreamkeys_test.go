package aws

import (
	"testing"
)

// captureNotices replaces logNotice for the test and returns what it was called with.
func captureNotices(t *testing.T) *[]string {
	t.Helper()
	var got []string
	old := logNotice
	logNotice = func(msg string) { got = append(got, msg) }
	t.Cleanup(func() { logNotice = old })
	return &got
}
