package main

import (
	"bytes"
	"testing"
)

func TestFunclen(t *testing.T) {
	const (
		eight = "testdata/funclen/internal/simulated/eight.go:5: server.eight 8 lines"
		five  = "testdata/funclen/long.go:8: five 5 lines"
		six   = "testdata/funclen/long.go:16: box.six 6 lines"
		seven = "testdata/funclen/simcontrol/seven.go:3: seven 7 lines"
	)
	for _, tc := range []struct {
		max    string
		want   []string
		status int
	}{
		// three (3 lines) is never listed, nor the 9-line functions of long_test.go and of the
		// skipped directories.
		{max: "3", want: []string{eight, five, six, seven}, status: 1},
		{max: "4", want: []string{eight, five, six, seven}, status: 1},
		{max: "5", want: []string{eight, six, seven}, status: 1},
		{max: "7", want: []string{eight}, status: 1},
		{max: "8", want: nil, status: 0},
	} {
		var stdout, stderr bytes.Buffer
		status := run([]string{"funclen", "-max", tc.max, "testdata/funclen"}, &stdout, &stderr)
		want := ""
		for _, w := range tc.want {
			want += w + "\n"
		}
		if stdout.String() != want || status != tc.status {
			t.Errorf("funclen -max %s: status %d, printed\n%swant status %d and\n%s(stderr: %s)",
				tc.max, status, stdout.String(), tc.status, want, stderr.String())
		}
	}
}

func TestFunclenTakesSeveralDirs(t *testing.T) {
	var stdout, stderr bytes.Buffer
	status := run([]string{"funclen", "-max", "6", "testdata/funclen/simcontrol", "testdata/funclen/fake"}, &stdout, &stderr)
	// A directory given by name is checked whatever its name; only those below it are skipped.
	want := "testdata/funclen/simcontrol/seven.go:3: seven 7 lines\ntestdata/funclen/fake/skipped.go:3: skipped 9 lines\n"
	if status != 1 || stdout.String() != want {
		t.Errorf("status %d, printed\n%swant status 1 and\n%s(stderr: %s)", status, stdout.String(), want, stderr.String())
	}
}

func TestSkippedDir(t *testing.T) {
	for name, want := range map[string]bool{
		"fake": true, "fakeaws": true, "fakeneutron": true, "sim": true, "aws-sim": true,
		"vsphere-sim": true, "testdata": true, ".git": true, "_old": true,
		"simcontrol": false, "simulated": false, "internal": false, "unfake": false,
		"aws": false, "cmd": false, "sims": false,
	} {
		if got := skippedDir(name); got != want {
			t.Errorf("skippedDir(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"lines"},
		{"funclen"},
		{"funclen", "-max", "x", "testdata"},
		{"funclen", "testdata/does-not-exist"},
		{"follow"},
		{"follow", "-pkg", "testdata/follow/walk"},
		{"follow", "-pkg", "testdata/follow/walk", "-from", "Root", "-resolve", "guess"},
		{"follow", "-pkg", "testdata/follow/walk", "-from", "NoSuchFunction"},
		{"follow", "-pkg", "testdata/follow/walk", "-from", "helperInTest"},
	} {
		var stdout, stderr bytes.Buffer
		if status := run(args, &stdout, &stderr); status != 2 || stderr.Len() == 0 {
			t.Errorf("%q: status %d, stderr %q; want status 2 and a message", args, status, stderr.String())
		}
	}
}
