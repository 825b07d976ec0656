package provider

import (
	"bytes"
	"fmt"
	"io"
	"os"

	cloudprovider "k8s.io/cloud-provider"
)

// New builds the named provider from the config file at path ("" means no config file).
// Unlike cloudprovider.InitCloudProvider it never exits the process: a bad name, a missing or
// unreadable file and an invalid config all come back as errors.
func New(name, configPath string) (cloudprovider.Interface, error) {
	p, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	r, err := openConfig(configPath)
	if err != nil {
		return nil, err
	}
	cloud, err := p.Factory(r)
	if err != nil {
		return nil, fmt.Errorf("cloud provider %q: %w", name, withPath(configPath, err))
	}
	if cloud == nil {
		return nil, fmt.Errorf("cloud provider %q returned no cloud and no error", name)
	}
	return cloud, nil
}

// CheckConfig validates the config at path with the provider's own rules, without touching
// the cloud. A nil error means the config is good.
func CheckConfig(name, configPath string) error {
	p, err := Lookup(name)
	if err != nil {
		return err
	}
	r, err := openConfig(configPath)
	if err != nil {
		return err
	}
	if p.CheckConfig != nil {
		err = p.CheckConfig(r)
	} else {
		_, err = p.Factory(r)
	}
	return withPath(configPath, err)
}

// CheckConfigAndNew is CheckConfig that also returns the cloud the config builds (nil when the
// check fails). The config is parsed once: a factory that logs its start-up report (upstream
// keys ccm does not use) logs it once, not once for the check and again for the cloud.
func CheckConfigAndNew(name, configPath string) (cloudprovider.Interface, error) {
	p, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	if p.CheckConfig != nil {
		if err := CheckConfig(name, configPath); err != nil {
			return nil, err
		}
		return New(name, configPath)
	}
	r, err := openConfig(configPath)
	if err != nil {
		return nil, err
	}
	cloud, err := p.Factory(r)
	if err != nil {
		return nil, withPath(configPath, err)
	}
	if cloud == nil {
		return nil, fmt.Errorf("cloud provider %q returned no cloud and no error", name)
	}
	return cloud, nil
}

// openConfig reads the whole file up front so that a missing or unreadable file is reported
// with its path here, not as a parse error later. A nil reader means "no --cloud-config".
func openConfig(path string) (io.Reader, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read --cloud-config %q: %w", path, err)
	}
	return bytes.NewReader(data), nil
}

func withPath(path string, err error) error {
	if err == nil || path == "" {
		return err
	}
	return fmt.Errorf("%s: %w", path, err)
}
