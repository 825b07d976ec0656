package poollb

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// KubeVIPAnnotation is the annotation kube-vip's services mode announces a Service's addresses
// from: it reads that annotation or spec.loadBalancerIP, never the status ccm writes. With
// --write-kube-vip-annotation ccm writes it too, as kube-vip-cloud-provider does, so a kube-vip
// speaker announces what ccm hands out. ccm reads the same annotation as a requested address,
// so the Service keeps its address across restarts and pool changes, as it did under
// kube-vip-cloud-provider.
const KubeVIPAnnotation = "kube-vip.io/loadbalancerIPs"

var writeKubeVIP atomic.Bool

// SetWriteKubeVIPAnnotation records --write-kube-vip-annotation.
func SetWriteKubeVIPAnnotation(on bool) { writeKubeVIP.Store(on) }

// WritesKubeVIPAnnotation says whether --write-kube-vip-annotation is on.
func WritesKubeVIPAnnotation() bool { return writeKubeVIP.Load() }

// AnnotateForSpeaker writes addrs into the Service's KubeVIPAnnotation when the flag is on and
// the annotation differs (one merge patch of that annotation alone; nil client: nothing).
func AnnotateForSpeaker(ctx context.Context, client kubernetes.Interface, svc *v1.Service, addrs []string) error {
	if !WritesKubeVIPAnnotation() || client == nil || len(addrs) == 0 {
		return nil
	}
	want := strings.Join(addrs, ",")
	if svc.Annotations[KubeVIPAnnotation] == want {
		return nil
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{KubeVIPAnnotation: want}}})
	if _, err := client.CoreV1().Services(svc.Namespace).Patch(ctx, svc.Name, types.MergePatchType, patch, metaPatchOptions); err != nil {
		return fmt.Errorf("writing annotation %s for the speaker: %w", KubeVIPAnnotation, err)
	}
	return nil
}

var metaPatchOptions = metav1.PatchOptions{FieldManager: "ccm"}
