// Package provider is the registry of the cloud providers compiled into this binary.
//
// It wraps k8s.io/cloud-provider's global registry so that the usual mistakes (an unknown
// name, a provider that was not compiled in, an unreadable --cloud-config) are errors a caller
// can print and test, instead of a klog.Fatal deep inside the library.
package provider

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	cloudprovider "k8s.io/cloud-provider"
)

// Provider describes one cloud provider implementation.
type Provider struct {
	// Name is what --cloud-provider selects; it is also the build tag that compiles it in.
	Name string
	// Factory reads and validates the config and returns the cloud. It must not start
	// goroutines or do network I/O: that belongs in Initialize. The reader is nil when
	// --cloud-config is not set.
	Factory cloudprovider.Factory
	// CheckConfig validates a config offline for `ccm check-config`. It returns every problem
	// it finds. When nil, the Factory is used as the check.
	CheckConfig func(config io.Reader) error
}

var (
	mu       sync.Mutex
	registry = map[string]Provider{}
)

// Register adds p to this registry and to k8s.io/cloud-provider's. It rejects an empty name,
// a nil factory and a second registration of the same name.
func Register(p Provider) error {
	if strings.TrimSpace(p.Name) == "" {
		return errors.New("provider: cannot register a provider with an empty name")
	}
	if p.Factory == nil {
		return fmt.Errorf("provider: cannot register %q: nil factory", p.Name)
	}
	mu.Lock()
	defer mu.Unlock()
	if _, dup := registry[p.Name]; dup {
		return fmt.Errorf("provider: %q is registered twice", p.Name)
	}
	if cloudprovider.IsCloudProvider(p.Name) {
		return fmt.Errorf("provider: %q is already registered with k8s.io/cloud-provider by another package", p.Name)
	}
	registry[p.Name] = p
	cloudprovider.RegisterCloudProvider(p.Name, p.Factory)
	return nil
}

// MustRegister is Register for a provider package's init(). A failure here is a programming
// error in how the binary was put together (two packages claiming one name), never user input.
func MustRegister(p Provider) {
	if err := Register(p); err != nil {
		panic(err)
	}
}

// Names lists the providers compiled into this binary, sorted.
func Names() []string {
	mu.Lock()
	defer mu.Unlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Lookup returns the provider registered as name, or an error that says what is compiled in
// and how to get the missing one.
func Lookup(name string) (Provider, error) {
	if name == "" {
		return Provider{}, fmt.Errorf("--cloud-provider is not set; %s", compiledIn())
	}
	mu.Lock()
	p, ok := registry[name]
	mu.Unlock()
	if !ok {
		return Provider{}, &NotCompiledError{Name: name, Available: Names()}
	}
	return p, nil
}

// NotCompiledError reports a --cloud-provider that this binary does not contain.
type NotCompiledError struct {
	Name      string
	Available []string
}

func (e *NotCompiledError) Error() string {
	return fmt.Sprintf("cloud provider %q is not compiled into this binary; %s. "+
		"If %q is a provider of this repository (providers/%s), rebuild with: go build -tags %s ./cmd/ccm",
		e.Name, describe(e.Available), e.Name, e.Name, e.Name)
}

func compiledIn() string { return describe(Names()) }

func describe(names []string) string {
	if len(names) == 0 {
		return "this binary contains no providers (it was built without provider tags)"
	}
	return "compiled-in providers: " + strings.Join(names, ", ")
}

// Describe is the one-line summary of what is compiled in, for start-up logs and --help.
func Describe() string { return compiledIn() }
