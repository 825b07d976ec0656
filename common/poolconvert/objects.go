package poolconvert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// object is the part of a Kubernetes object the conversion reads; a List holds Items.
type object struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Data  map[string]string `json:"data"`
	Spec  json.RawMessage   `json:"spec"`
	Items []object          `json:"items"`
}

// maxObjects bounds what a file may hold: a pool file is a handful of objects.
const maxObjects = 10000

// readObjects reads YAML or JSON documents (as kubectl get -o yaml prints them, Lists
// flattened).
func readObjects(r io.Reader) ([]object, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var out []object
	for len(out) < maxObjects {
		var o object
		if err := dec.Decode(&o); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("reading the objects: %w", err)
		}
		if o.Kind == "List" || len(o.Items) > 0 {
			out = append(out, o.Items...)
			continue
		}
		if o.Kind != "" {
			out = append(out, o)
		}
	}
	return nil, fmt.Errorf("reading the objects: more than %d", maxObjects)
}

// ReadKubeVIP reads the kubevip ConfigMap's data from YAML or JSON: the ConfigMap named
// kubevip, or the only ConfigMap there is.
func ReadKubeVIP(r io.Reader) (map[string]string, error) {
	objs, err := readObjects(r)
	if err != nil {
		return nil, err
	}
	var maps []object
	for _, o := range objs {
		if o.Kind == "ConfigMap" {
			maps = append(maps, o)
		}
	}
	for _, o := range maps {
		if o.Metadata.Name == "kubevip" {
			return o.Data, nil
		}
	}
	if len(maps) == 1 {
		return maps[0].Data, nil
	}
	return nil, fmt.Errorf("found %d ConfigMaps and none named kubevip: give the kubevip ConfigMap (kubectl -n kube-system get configmap kubevip -o yaml)", len(maps))
}

// ReadMetalLB reads MetalLB's IPAddressPool objects from YAML or JSON.
func ReadMetalLB(r io.Reader) ([]IPAddressPool, error) {
	objs, err := readObjects(r)
	if err != nil {
		return nil, err
	}
	var out []IPAddressPool
	for _, o := range objs {
		if o.Kind != "IPAddressPool" {
			continue
		}
		p := IPAddressPool{Name: o.Metadata.Name}
		if len(o.Spec) > 0 {
			if err := json.NewDecoder(bytes.NewReader(o.Spec)).Decode(&p.Spec); err != nil {
				return nil, fmt.Errorf("IPAddressPool %s: spec: %w", o.Metadata.Name, err)
			}
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no IPAddressPool found: give MetalLB's pools (kubectl -n metallb-system get ipaddresspools -o yaml)")
	}
	return out, nil
}
