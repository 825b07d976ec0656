package app

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ccm-project/ccm/common/nodeguard"
)

// skipNodeDeletionEnv is the environment variable the upstream vSphere CCM reads: present (with
// any value), a Node whose instance is not found is never deleted. ccm honours it for every
// provider, as its manifests and charts may still set it.
const skipNodeDeletionEnv = "SKIP_NODE_DELETION"

// nodeSettings builds the node guard's settings from the flags and the environment, and
// checks --node-labels as the API server would check the labels (so a bad one stops ccm at
// start with the flag's name, not each Node's initialisation later).
func nodeSettings(window time.Duration, labels map[string]string, lookupEnv func(string) (string, bool)) (nodeguard.Settings, error) {
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return nodeguard.Settings{}, fmt.Errorf("--node-labels: key %q: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(labels[k]); len(errs) > 0 {
			return nodeguard.Settings{}, fmt.Errorf("--node-labels: value of %q: %s", k, strings.Join(errs, "; "))
		}
	}
	_, never := lookupEnv(skipNodeDeletionEnv)
	return nodeguard.Settings{Window: window, NeverDelete: never, Labels: labels}, nil
}
