package fingerprint

import "testing"

type desired struct {
	Ports []string
	Nodes []string
	Tags  map[string]string
}

func TestOf(t *testing.T) {
	a := desired{Ports: []string{"TCP/80"}, Nodes: []string{"a", "b"}, Tags: map[string]string{"x": "1", "y": "2"}}
	b := desired{Ports: []string{"TCP/80"}, Nodes: []string{"a", "b"}, Tags: map[string]string{"y": "2", "x": "1"}}
	if Of(a) != Of(b) {
		t.Error("map order changes the fingerprint")
	}
	c := a
	c.Nodes = []string{"a", "c"}
	if Of(a) == Of(c) {
		t.Error("different nodes, same fingerprint")
	}
	if len(Of(a)) != 24 {
		t.Errorf("length %d", len(Of(a)))
	}
	if !Changed("", Of(a)) || Changed(Of(a), Of(b)) || !Changed(Of(a), Of(c)) {
		t.Error("Changed")
	}
}
