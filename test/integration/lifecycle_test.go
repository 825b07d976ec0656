package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

const shutdownTaint = "node.cloudprovider.kubernetes.io/shutdown"

// The inventory file changes while the ccm runs: a machine shuts down, another disappears.
func TestNodeLifecycle(t *testing.T) {
	inv := filepath.Join(t.TempDir(), "inventory.conf")
	write := func(aState, bState string) {
		t.Helper()
		body := fmt.Sprintf("[Instance \"it-life-a\"]\ninternal-ip = 10.3.0.1\nstate = %s\n\n[Instance \"it-life-b\"]\ninternal-ip = 10.3.0.2\nstate = %s\n", aState, bState)
		tmp := inv + ".tmp"
		if err := os.WriteFile(tmp, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, inv); err != nil { // atomic, as an operator's tooling should
			t.Fatal(err)
		}
	}
	write("running", "running")
	startCCM(t, "ccm-life", fmt.Sprintf("[Global]\ninventory = %s\ninventory-refresh = 1s\n", inv))
	newNode(t, "it-life-a", true)
	newNode(t, "it-life-b", true)
	for _, n := range []string{"it-life-a", "it-life-b"} {
		eventually(t, 30*time.Second, n+" initialised", func() (bool, error) {
			nd, err := node(n)
			return err == nil && nd.Spec.ProviderID != "", err
		})
	}

	// Machine a is shut down and its Node goes NotReady: it gets the shutdown taint and stays.
	// Machine b is gone: its NotReady Node is deleted.
	write("shutdown", "gone")
	setReady(t, "it-life-a", "False")
	setReady(t, "it-life-b", "Unknown")
	eventually(t, 30*time.Second, "shutdown taint on it-life-a", func() (bool, error) {
		nd, err := node("it-life-a")
		return err == nil && hasTaint(nd, shutdownTaint), err
	})
	eventually(t, 30*time.Second, "it-life-b deleted", func() (bool, error) {
		_, err := node("it-life-b")
		return apierrors.IsNotFound(err), err
	})
	if _, err := node("it-life-a"); err != nil {
		t.Errorf("shut-down node was deleted: %v", err)
	}

	// Back up and Ready: the shutdown taint goes away.
	write("running", "gone")
	setReady(t, "it-life-a", "True")
	eventually(t, 30*time.Second, "shutdown taint removed", func() (bool, error) {
		nd, err := node("it-life-a")
		return err == nil && !hasTaint(nd, shutdownTaint), err
	})
}
