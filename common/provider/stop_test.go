package provider

import (
	"testing"
	"time"

	cloudprovider "k8s.io/cloud-provider"
	fakecloud "k8s.io/cloud-provider/fake"
)

type stopping struct {
	fakecloud.Cloud
	ch chan struct{}
}

func (s *stopping) Stopped() <-chan struct{} {
	if s.ch == nil {
		return nil
	}
	return s.ch
}

func TestWaitStopped(t *testing.T) {
	closed := make(chan struct{})
	close(closed)
	late := make(chan struct{})
	for _, tc := range []struct {
		name       string
		c          cloudprovider.Interface
		want       bool
		atLeast    time.Duration
		closeAfter time.Duration // late is closed this long after the case starts
	}{
		{"no Stopper", &fakecloud.Cloud{}, true, 0, 0},
		{"not initialised (nil channel)", &stopping{}, true, 0, 0},
		{"already done", &stopping{ch: closed}, true, 0, 0},
		{"done after 50ms: waited for", &stopping{ch: late}, true, 50 * time.Millisecond, 50 * time.Millisecond},
		{"never done: gives up at the limit", &stopping{ch: make(chan struct{})}, false, 200 * time.Millisecond, 0},
	} {
		start := time.Now()
		if tc.closeAfter > 0 { // timed from this case's start, whatever the machine's load
			time.AfterFunc(tc.closeAfter, func() { close(late) })
		}
		got := WaitStopped(tc.c, 200*time.Millisecond)
		if took := time.Since(start); got != tc.want || took < tc.atLeast {
			t.Errorf("%s: WaitStopped = %v after %v, want %v after at least %v", tc.name, got, took, tc.want, tc.atLeast)
		}
	}
}
