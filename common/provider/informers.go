package provider

import (
	"k8s.io/client-go/informers"
	cloudprovider "k8s.io/cloud-provider"
)

// PassInformers hands f to inner if it uses informers. Every wrapper ccm puts around a
// provider's cloud (the node guard, the leader gate, in-flight tracking) calls it from its own
// SetInformers: the library hands the informers to the outermost cloud only, and a provider
// whose routes read the Nodes would otherwise never see them.
func PassInformers(inner cloudprovider.Interface, f informers.SharedInformerFactory) {
	if u, ok := inner.(cloudprovider.InformerUser); ok {
		u.SetInformers(f)
	}
}
