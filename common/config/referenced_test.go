package config

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestStatReferenced(t *testing.T) {
	t.Cleanup(func() { SetOffline(false) })
	missing := filepath.Join(t.TempDir(), "ca.pem")
	if err := StatReferenced("[Global] ca-file", missing); !os.IsNotExist(err) {
		t.Errorf("online, a missing file: %v", err)
	}
	SetOffline(true)
	if err := StatReferenced("[Global] ca-file", missing); err != nil {
		t.Errorf("offline: %v", err)
	}
	_ = StatReferenced("[Global] ca-file", missing) // noted once
	if got := NotChecked(); !slices.Equal(got, []string{"[Global] ca-file = " + missing}) {
		t.Errorf("noted %q", got)
	}
}
