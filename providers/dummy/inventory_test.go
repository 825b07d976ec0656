package dummy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestInventoryReloadKeepsOldOnBadContent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "inv.conf")
	write := func(body string, mtime time.Time) {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(path, mtime, mtime) // the reload notices mtime and size
	}
	now := time.Now()
	write("[Instance \"a\"]\ninternal-ip = 10.0.0.1\n", now)
	c, err := New(strings.NewReader("[Global]\ninventory = " + path + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, in := c.inventory.find(nodeNamed("a")); in == nil {
		t.Fatal("a not found")
	}
	write("[Instance \"a\"]\ninternal-ip = 10.0.0.1\n[Instance \"b\"]\nstate = broken\n", now.Add(time.Second))
	if err := c.inventory.reload(); err == nil || !strings.Contains(err.Error(), "state") {
		t.Fatalf("bad inventory accepted: %v", err)
	}
	if _, in := c.inventory.find(nodeNamed("a")); in == nil {
		t.Fatal("a lost after a bad reload")
	}
	write("[Instance \"b\"]\ninternal-ip = 10.0.0.2\n", now.Add(2*time.Second))
	if err := c.inventory.reload(); err != nil {
		t.Fatal(err)
	}
	if _, in := c.inventory.find(nodeNamed("a")); in != nil {
		t.Error("a still there after it left the inventory")
	}
	if _, in := c.inventory.find(nodeNamed("b")); in == nil {
		t.Error("b not picked up")
	}
	// A file emptied (e.g. truncated by a non-atomic rewrite) is refused: b must not look gone.
	write("# being rewritten\n", now.Add(3*time.Second))
	if err := c.inventory.reload(); err == nil || !strings.Contains(err.Error(), "no instances") {
		t.Fatalf("empty inventory accepted: %v", err)
	}
	if _, in := c.inventory.find(nodeNamed("b")); in == nil {
		t.Error("b lost to an empty inventory file")
	}
}
