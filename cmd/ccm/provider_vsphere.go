//go:build vsphere

package main

import _ "github.com/ccm-project/ccm/providers/vsphere"
