package livecfg

import (
	"os"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// PodWarner returns a Warn for Watcher that records Warning Events on ccm's own Pod, named by
// the environment variables POD_NAME and POD_NAMESPACE (the downward API, as deploy/base sets
// them): the operator who changed the config sees the refusal with `kubectl describe pod`, and
// no tenant does. Without them (or a client) it returns nil: the log line and the metric
// remain.
func PodWarner(client kubernetes.Interface, component string, stop <-chan struct{}) func(reason, msg string) {
	name, ns := os.Getenv("POD_NAME"), os.Getenv("POD_NAMESPACE")
	if client == nil || name == "" || ns == "" {
		return nil
	}
	bc := record.NewBroadcaster()
	bc.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events(ns)})
	rec := bc.NewRecorder(scheme.Scheme, v1.EventSource{Component: component})
	go func() { <-stop; bc.Shutdown() }()
	pod := &v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: ns, Name: name}
	return func(reason, msg string) { rec.Event(pod, v1.EventTypeWarning, reason, msg) }
}
