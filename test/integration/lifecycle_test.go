package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ccm-project/ccm/common/testenv"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const shutdownTaint = "node.cloudprovider.kubernetes.io/shutdown"

// The inventory file changes while the ccm runs: a machine shuts down, another disappears.
func TestNodeLifecycle(t *testing.T) {
	inv := filepath.Join(t.TempDir(), "inventory.conf")
	write := func(aState, bState string) { writeInventory(t, inv, "it-life-a", aState, "it-life-b", bState) }
	write("running", "running")
	// The deletion guard is off here (upstream behaviour); TestNodeDeletionGuard tests it. The
	// controllers are named by the aliases the upstream charts use.
	startCCM(t, "ccm-life", fmt.Sprintf("[Global]\ninventory = %s\ninventory-refresh = 1s\n", inv), "--node-deletion-confirmation=0",
		"--controllers=cloud-node,cloud-node-lifecycle")
	newNode(t, "it-life-a")
	newNode(t, "it-life-b")
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
		return err == nil && testenv.HasTaint(nd, shutdownTaint), err
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
		return err == nil && !testenv.HasTaint(nd, shutdownTaint), err
	})
}

// writeInventory replaces the inventory file atomically (as an operator's tooling should) with
// instances given as name, state pairs.
func writeInventory(t *testing.T, path string, nameState ...string) {
	t.Helper()
	var b strings.Builder
	for i := 0; i+1 < len(nameState); i += 2 {
		fmt.Fprintf(&b, "[Instance %q]\ninternal-ip = 10.3.0.%d\nstate = %s\n\n", nameState[i], i/2+1, nameState[i+1])
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// Cloud errors never delete a Node; "not found" deletes it only once it held for the window.
func TestNodeDeletionGuard(t *testing.T) {
	const window = 4 * time.Second
	inv := filepath.Join(t.TempDir(), "inventory.conf")
	writeInventory(t, inv, "it-guard-err", "running", "it-guard-gone", "running")
	startCCM(t, "ccm-guard", fmt.Sprintf("[Global]\ninventory = %s\ninventory-refresh = 1s\n", inv),
		"--node-deletion-confirmation="+window.String())
	for _, n := range []string{"it-guard-err", "it-guard-gone"} {
		newNode(t, n)
		eventually(t, 30*time.Second, n+" initialised", func() (bool, error) {
			nd, err := node(n)
			return err == nil && nd.Spec.ProviderID != "", err
		})
	}

	writeInventory(t, inv, "it-guard-err", "error", "it-guard-gone", "gone")
	time.Sleep(1500 * time.Millisecond) // let the ccm re-read the inventory (refresh 1s)
	changed := time.Now()
	setReady(t, "it-guard-err", "Unknown")
	setReady(t, "it-guard-gone", "Unknown")

	eventually(t, 20*time.Second, "a NodeDeletionHeld event for it-guard-gone", func() (bool, error) {
		evs, err := env.Client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=it-guard-gone,reason=NodeDeletionHeld"})
		return err == nil && len(evs.Items) > 0, err
	})
	eventually(t, 30*time.Second, "it-guard-gone deleted after the window", func() (bool, error) {
		_, err := node("it-guard-gone")
		return apierrors.IsNotFound(err), err
	})
	if took := time.Since(changed); took < window {
		t.Errorf("deleted %v after the cloud said not found, before the %v window", took, window)
	} else {
		t.Logf("not-found Node deleted %v after the change (window %v)", took.Round(100*time.Millisecond), window)
	}
	// Failing look-ups for more than twice the window never delete the Node.
	time.Sleep(time.Until(changed.Add(2 * window)))
	if _, err := node("it-guard-err"); err != nil {
		t.Fatalf("Node deleted while the cloud returned errors: %v", err)
	}
}
