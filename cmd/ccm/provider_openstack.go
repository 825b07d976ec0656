//go:build openstack

package main

import _ "github.com/ccm-project/ccm/providers/openstack"
