//go:build aws

package main

import _ "github.com/ccm-project/ccm/providers/aws"
