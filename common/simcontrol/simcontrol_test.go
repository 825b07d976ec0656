package simcontrol

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
)

type recorder struct {
	mu          sync.Mutex
	outage      bool
	burst       int
	rate        float64
	gone        []string
	resource    []Resource
	resourceErr error
}

func (r *recorder) SetOutage(on bool) { r.mu.Lock(); r.outage = on; r.mu.Unlock() }
func (r *recorder) SetThrottle(b int, x float64) {
	r.mu.Lock()
	r.burst, r.rate = b, x
	r.mu.Unlock()
}
func (r *recorder) Terminate(n string) error {
	if n == "missing" {
		return errors.New("no machine for node missing")
	}
	r.mu.Lock()
	r.gone = append(r.gone, n)
	r.mu.Unlock()
	return nil
}
func (r *recorder) Resources() ([]Resource, error) { return r.resource, r.resourceErr }
func (r *recorder) Calls() Calls {
	return Calls{Total: 7, Writes: 2, PerOp: map[string]int{"Create": 2}}
}
func (r *recorder) Secrets() []string { return []string{"s3cret"} }

func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{resource: []Resource{{Kind: "loadbalancer", Name: "lb-1", Service: "default/web"}}}
	file := filepath.Join(t.TempDir(), "control")
	url, stop, err := Serve(rec, file)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if b, _ := os.ReadFile(file); string(b) != url {
		t.Fatalf("url file holds %q, want %q", b, url)
	}
	c := Client{URL: url}
	if err := c.SetOutage(ctx, true); err != nil || !rec.outage {
		t.Fatalf("outage not set: %v", err)
	}
	if err := c.SetThrottle(ctx, 100, 20.5); err != nil || rec.burst != 100 || rec.rate != 20.5 {
		t.Fatalf("throttle = %d/%v, %v", rec.burst, rec.rate, err)
	}
	if err := c.Terminate(ctx, "node-1"); err != nil || !reflect.DeepEqual(rec.gone, []string{"node-1"}) {
		t.Fatalf("terminate: %v %v", rec.gone, err)
	}
	if err := c.Terminate(ctx, "missing"); err == nil || !strings.Contains(err.Error(), "no machine for node missing") {
		t.Fatalf("terminate of an unknown node: %v", err)
	}
	res, err := c.Resources(ctx)
	if err != nil || !reflect.DeepEqual(res, rec.resource) {
		t.Fatalf("resources = %v, %v", res, err)
	}
	// A simulator that cannot read its resources says so: no empty list that passes for clean.
	rec.resourceErr = errors.New("records unreadable")
	if res, err := c.Resources(ctx); err == nil || !strings.Contains(err.Error(), "records unreadable") || res != nil {
		t.Fatalf("resources of a failing simulator = %v, %v; want its error", res, err)
	}
	rec.resourceErr = nil
	calls, err := c.Calls(ctx)
	if err != nil || calls.Total != 7 || calls.Writes != 2 || calls.PerOp["Create"] != 2 {
		t.Fatalf("calls = %+v, %v", calls, err)
	}
	sec, err := c.Secrets(ctx)
	if err != nil || !reflect.DeepEqual(sec, []string{"s3cret"}) {
		t.Fatalf("secrets = %v, %v", sec, err)
	}
}

func TestBadParameters(t *testing.T) {
	u, stop, err := Serve(&recorder{}, "")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	c := Client{URL: u}
	for path, want := range map[string]string{"/outage?on=yes": "on: want true or false", "/throttle?burst=x&rate=1": "burst: want an integer", "/terminate": "node: required"} {
		p, q, _ := strings.Cut(path, "?")
		vals, _ := url.ParseQuery(q)
		if err := c.post(context.Background(), p, vals); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", path, err, want)
		}
	}
}
