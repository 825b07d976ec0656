//go:build dummy

package main

import _ "github.com/ccm-project/ccm/providers/dummy"
