package openstack

import (
	"errors"
	"fmt"
	"os"

	"github.com/gophercloud/utils/v2/openstack/clientconfig"
	"gopkg.in/yaml.v3"
)

// use-clouds = true, as upstream: the [Global] keys the file leaves empty are taken from an entry
// of a clouds.yaml (clouds-file, else the standard places OS_CLIENT_CONFIG_FILE, ./clouds.yaml,
// ~/.config/openstack/clouds.yaml, /etc/openstack/clouds.yaml); the entry is named by cloud, else
// by OS_CLOUD, else it is the file's only one. gophercloud's clientconfig reads the file, so the
// keys (and the secure.yaml / clouds-public.yaml merging) are the OpenStack client's.

// cloudsFile reads only the named file (clouds-file); secure.yaml is not merged for it, and
// public clouds are clientconfig's.
type cloudsFile struct{ path string }

func (f cloudsFile) LoadCloudsYAML() (map[string]clientconfig.Cloud, error) {
	data, err := os.ReadFile(f.path)
	if err != nil {
		return nil, err
	}
	var c clientconfig.Clouds
	if err := yaml.Unmarshal(data, &c); err != nil {
		return nil, errors.New("not a clouds.yaml (YAML with a clouds: map)") // yaml's errors quote the file's text
	}
	return c.Clouds, nil
}

func (f cloudsFile) LoadSecureCloudsYAML() (map[string]clientconfig.Cloud, error) {
	return map[string]clientconfig.Cloud{}, nil
}

func (f cloudsFile) LoadPublicCloudsYAML() (map[string]clientconfig.Cloud, error) {
	return clientconfig.LoadPublicCloudsYAML()
}

// readClouds fills the empty [Global] keys from the clouds.yaml entry (upstream's ReadClouds
// mapping). The error names the file, never a value from it.
func (c *Config) readClouds() error {
	g := &c.Global
	opts := &clientconfig.ClientOpts{Cloud: g.Cloud}
	where := "the standard clouds.yaml locations"
	if g.CloudsFile != "" {
		opts.YAMLOpts, where = cloudsFile{g.CloudsFile}, g.CloudsFile
	}
	cloud, err := clientconfig.GetCloudFromYAML(opts)
	if err != nil {
		return fmt.Errorf("reading %s: %v", where, err)
	}
	fill := func(dst *string, v string) {
		if *dst == "" {
			*dst = v
		}
	}
	if a := cloud.AuthInfo; a != nil {
		fill(&g.AuthURL, a.AuthURL)
		fill(&g.UserID, a.UserID)
		fill(&g.Username, a.Username)
		fill(&g.Password, a.Password)
		fill(&g.TenantID, a.ProjectID)
		fill(&g.TenantName, a.ProjectName)
		fill(&g.DomainID, a.DomainID)
		fill(&g.DomainName, a.DomainName)
		fill(&g.TenantDomainID, a.ProjectDomainID)
		fill(&g.TenantDomainName, a.ProjectDomainName)
		fill(&g.UserDomainID, a.UserDomainID)
		fill(&g.UserDomainName, a.UserDomainName)
		fill(&g.ApplicationCredentialID, a.ApplicationCredentialID)
		fill(&g.ApplicationCredentialName, a.ApplicationCredentialName)
		fill(&g.ApplicationCredentialSecret, a.ApplicationCredentialSecret)
		fill(&g.Token, a.Token)
	}
	fill(&g.Region, cloud.RegionName)
	fill(&g.EndpointType, cloud.EndpointType) // clientconfig folds interface into it
	fill(&g.CAFile, cloud.CACertFile)
	fill(&g.CertFile, cloud.ClientCertFile)
	fill(&g.KeyFile, cloud.ClientKeyFile)
	return nil
}
