package poollb

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// The annotation is written only with the flag, only when it differs, and holds every address.
func TestAnnotateForSpeaker(t *testing.T) {
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}
	client := fake.NewClientset(svc)
	ctx := context.Background()
	patches := func() int {
		n := 0
		for _, a := range client.Actions() {
			if a.GetVerb() == "patch" {
				n++
			}
		}
		return n
	}
	if err := AnnotateForSpeaker(ctx, client, svc, []string{"192.0.2.1"}); err != nil || patches() != 0 {
		t.Fatalf("flag off: %v, %d patches", err, patches())
	}
	SetWriteKubeVIPAnnotation(true)
	defer SetWriteKubeVIPAnnotation(false)
	if err := AnnotateForSpeaker(ctx, client, svc, []string{"192.0.2.1", "2001:db8::1"}); err != nil || patches() != 1 {
		t.Fatalf("flag on: %v, %d patches", err, patches())
	}
	got, _ := client.CoreV1().Services("ns").Get(ctx, "web", metav1.GetOptions{})
	if v := got.Annotations[KubeVIPAnnotation]; v != "192.0.2.1,2001:db8::1" {
		t.Errorf("annotation %q", v)
	}
	if err := AnnotateForSpeaker(ctx, client, got, []string{"192.0.2.1", "2001:db8::1"}); err != nil || patches() != 1 {
		t.Errorf("the same addresses again: %v, %d patches, want no new one", err, patches())
	}
	if err := AnnotateForSpeaker(ctx, nil, svc, []string{"192.0.2.1"}); err != nil {
		t.Errorf("no client: %v", err)
	}
}
